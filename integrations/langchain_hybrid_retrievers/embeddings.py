"""Any LangChain `Embeddings` as the core's `Embedder` protocol.

LangChain embeddings return lists of Python floats; the core wants float32 numpy
arrays, a model identity for its embedding cache and saved indexes, and (optionally)
a batch query method. `LangChainEmbedder` adds exactly that and nothing else: the
wrapped model is called as LangChain documents it (``embed_documents`` for documents,
``embed_query`` for queries, ``aembed_query`` for async queries), so models whose
document and query encodings differ keep working.

Model identity: ``model_id=`` when given; otherwise the class name plus the first
non-empty string among the model's ``model``, ``model_name``, ``model_id``,
``deployment`` and ``repo_id`` attributes, e.g. ``"OpenAIEmbeddings(text-embedding-3-small)"``.
A model without any such attribute has no identity (``None``): the embedding cache then
refuses it rather than risk mixing two models' vectors under one name. Pass
``model_id=`` when an option such as an output dimension or an instruction changes the
document vectors, since it is not part of the derived name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from numpy.typing import NDArray

__all__ = ["LangChainEmbedder", "as_embedder"]

_NAME_FIELDS = ("model", "model_name", "model_id", "deployment", "repo_id")


class LangChainEmbedder:
    """Wrap a LangChain `Embeddings` so a `hybrid_retrievers.VectorIndex` can use it.

    Args:
        embeddings: Any ``langchain_core.embeddings.Embeddings`` instance.
        model_id: Identity for caches and saved indexes; derived from the model when
            omitted (see the module docstring).
        dimension: The vector length, when known up front; otherwise it is learned
            from the first vectors the model returns.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> emb = LangChainEmbedder(DeterministicFakeEmbedding(size=8), model_id="fake-8")
        >>> emb.embed_documents(["a", "b"]).shape, emb.embed_query("a").dtype
        ((2, 8), dtype('float32'))
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        model_id: str | None = None,
        dimension: int | None = None,
    ) -> None:
        if not isinstance(embeddings, Embeddings):
            raise TypeError(
                "embeddings must be a langchain_core.embeddings.Embeddings instance, got "
                f"{type(embeddings).__name__}; pass e.g. HuggingFaceEmbeddings(...)"
            )
        if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
            raise TypeError(f"model_id must be a non-empty str or None, got {model_id!r}")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer))
            or dimension < 1
        ):
            raise ValueError(f"dimension must be a positive int or None, got {dimension!r}")
        self._embeddings = embeddings
        self._model_id = model_id if model_id is not None else _derive_model_id(embeddings)
        self._dimension = None if dimension is None else int(dimension)

    @property
    def embeddings(self) -> Embeddings:
        """The wrapped LangChain model."""
        return self._embeddings

    @property
    def model_id(self) -> str | None:
        """Identity for caches and saved indexes (``None``: unknown, not cacheable)."""
        return self._model_id

    @property
    def dimension(self) -> int | None:
        """Vector length: as given, else learned from the first output, else ``None``."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Document vectors, shape ``(len(texts), dimension)``, float32."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        raw = self._embeddings.embed_documents(texts)
        return self._matrix(raw, len(texts), "embed_documents()")

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The vector of one query, shape ``(dimension,)``, float32."""
        return self._vector(self._embeddings.embed_query(text), "embed_query()")

    def embed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Query vectors for several queries (one ``embed_query`` call each).

        LangChain has no batch query method, and ``embed_documents`` may encode
        differently (instruction models), so each query is embedded as a query.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        rows = [self.embed_query(t) for t in texts]
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return np.ascontiguousarray(np.stack(rows))

    async def aembed_query(self, text: str) -> NDArray[np.float32]:
        """Async `embed_query` via the model's own ``aembed_query``.

        LangChain's default runs ``embed_query`` in an executor thread; models with a
        native async client (HTTP APIs) await it without a thread.
        """
        return self._vector(await self._embeddings.aembed_query(text), "aembed_query()")

    # ------------------------------------------------------------------ helpers

    def _matrix(self, raw: Any, n: int, name: str) -> NDArray[np.float32]:
        try:
            matrix = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{type(self._embeddings).__name__}.{name} must return equal-length lists of "
                f"floats ({exc})"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] < 1:
            raise ValueError(
                f"{type(self._embeddings).__name__}.{name} must return {n} vectors (one per "
                f"text), got an array of shape {matrix.shape}"
            )
        self._learn(matrix.shape[1], name)
        return np.ascontiguousarray(matrix)

    def _vector(self, raw: Any, name: str) -> NDArray[np.float32]:
        return self._matrix([raw], 1, name)[0]

    def _learn(self, dimension: int, name: str) -> None:
        if self._dimension is None:
            self._dimension = int(dimension)
        elif dimension != self._dimension:
            raise ValueError(
                f"{type(self._embeddings).__name__}.{name} returned {dimension}-d vectors, "
                f"expected {self._dimension}-d; an embedding model must keep one dimension"
            )

    def __repr__(self) -> str:
        return (
            f"LangChainEmbedder({type(self._embeddings).__name__}, model_id={self._model_id!r})"
        )


def _derive_model_id(embeddings: Embeddings) -> str | None:
    for field in _NAME_FIELDS:
        value = getattr(embeddings, field, None)
        if isinstance(value, str) and value.strip():
            return f"{type(embeddings).__name__}({value})"
    return None


def as_embedder(embedding: Any) -> Any:
    """Return ``embedding`` as a core `Embedder`.

    A LangChain `Embeddings` is wrapped in `LangChainEmbedder`; anything already
    following the core protocol (``embed_documents`` and ``embed_query`` returning
    arrays: `SentenceTransformerEmbedder`, `HashingEmbedder`, a `LangChainEmbedder`)
    is returned unchanged.

    Raises:
        TypeError: for anything else (including ``None``).
    """
    if isinstance(embedding, Embeddings):
        return LangChainEmbedder(embedding)
    if callable(getattr(embedding, "embed_documents", None)) and callable(
        getattr(embedding, "embed_query", None)
    ):
        return embedding
    raise TypeError(
        "embedding must be a LangChain Embeddings or a hybrid_retrievers Embedder (with "
        f"embed_documents and embed_query), got {type(embedding).__name__}: {embedding!r:.80}"
    )
