"""Any LlamaIndex `BaseEmbedding` as the core's `Embedder` protocol.

LlamaIndex embedding models return lists of floats; the core wants float32 numpy
arrays, a model identity for its embedding cache and saved indexes, and a batch query
method. `LlamaIndexEmbedder` adds exactly that. The model is called through its public
methods (``get_text_embedding_batch`` for documents, ``get_query_embedding`` for
queries, ``aget_query_embedding`` for async queries), so LlamaIndex's batching
(``embed_batch_size``), callbacks, instrumentation and its own embeddings cache all
still apply.

Model identity: ``model_id=`` when given; otherwise ``"<class name>(<model_name>)"``,
e.g. ``"HuggingFaceEmbedding(BAAI/bge-small-en-v1.5)"``. A model whose ``model_name`` is
LlamaIndex's placeholder ``"unknown"`` (or empty) has no identity (``None``): the
embedding cache then refuses it rather than risk mixing two models' vectors under one
name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from numpy.typing import NDArray

__all__ = ["LlamaIndexEmbedder", "as_embedder"]

_PLACEHOLDER_NAMES = frozenset({"", "unknown"})


class LlamaIndexEmbedder:
    """Wrap a LlamaIndex `BaseEmbedding` so a `hybrid_retrievers.VectorIndex` can use it.

    Args:
        embed_model: Any ``llama_index.core`` `BaseEmbedding` instance.
        model_id: Identity for caches and saved indexes; derived from the model when
            omitted (see the module docstring).
        dimension: The vector length, when known up front; otherwise taken from the
            model's ``embed_dim`` attribute if it has one, else learned from the first
            vectors the model returns.

    Example:
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> emb = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
        >>> emb.embed_documents(["a", "b"]).shape, emb.dimension
        ((2, 8), 8)
    """

    def __init__(
        self,
        embed_model: BaseEmbedding,
        *,
        model_id: str | None = None,
        dimension: int | None = None,
    ) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise TypeError(
                "embed_model must be a llama_index BaseEmbedding instance, got "
                f"{type(embed_model).__name__}; pass e.g. HuggingFaceEmbedding(...)"
            )
        if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
            raise TypeError(f"model_id must be a non-empty str or None, got {model_id!r}")
        if dimension is None:
            dimension = _positive_int(getattr(embed_model, "embed_dim", None))
        elif _positive_int(dimension) is None:
            raise ValueError(f"dimension must be a positive int or None, got {dimension!r}")
        self._model = embed_model
        self._model_id = model_id if model_id is not None else _derive_model_id(embed_model)
        self._dimension = None if dimension is None else int(dimension)

    @property
    def embed_model(self) -> BaseEmbedding:
        """The wrapped LlamaIndex model."""
        return self._model

    @property
    def model_id(self) -> str | None:
        """Identity for caches and saved indexes (``None``: unknown, not cacheable)."""
        return self._model_id

    @property
    def dimension(self) -> int | None:
        """Vector length: as given or declared, else learned, else ``None``."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Document vectors, shape ``(len(texts), dimension)``, float32."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        raw = self._model.get_text_embedding_batch(texts)
        return self._matrix(raw, len(texts), "get_text_embedding_batch()")

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The vector of one query, shape ``(dimension,)``, float32."""
        return self._matrix([self._model.get_query_embedding(text)], 1, "get_query_embedding()")[0]

    def embed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Query vectors, one ``get_query_embedding`` call each (as LlamaIndex does)."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        raw = [self._model.get_query_embedding(t) for t in texts]
        return self._matrix(raw, len(texts), "get_query_embedding()")

    async def aembed_query(self, text: str) -> NDArray[np.float32]:
        """Async `embed_query` through the model's ``aget_query_embedding``."""
        raw = await self._model.aget_query_embedding(text)
        return self._matrix([raw], 1, "aget_query_embedding()")[0]

    async def aembed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Async `embed_queries` (one ``aget_query_embedding`` each, in order)."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        raw = [await self._model.aget_query_embedding(t) for t in texts]
        return self._matrix(raw, len(texts), "aget_query_embedding()")

    def _matrix(self, raw: Any, n: int, name: str) -> NDArray[np.float32]:
        model = type(self._model).__name__
        try:
            matrix = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{model}.{name} must return lists of floats ({exc})") from None
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] < 1:
            raise ValueError(
                f"{model}.{name} must return {n} vector(s), one per text, got an array of "
                f"shape {matrix.shape}"
            )
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise ValueError(
                f"{model}.{name} returned {matrix.shape[1]}-d vectors, expected "
                f"{self._dimension}-d; an embedding model must keep one dimension"
            )
        return np.ascontiguousarray(matrix)

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({type(self._model).__name__}, model_id={self._model_id!r})"


def _positive_int(value: Any) -> int | None:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
        return int(value)
    return None


def _derive_model_id(embed_model: BaseEmbedding) -> str | None:
    name = getattr(embed_model, "model_name", None)
    if not isinstance(name, str) or name.strip() in _PLACEHOLDER_NAMES:
        return None
    return f"{type(embed_model).__name__}({name})"


def as_embedder(embed_model: Any) -> Any:
    """Return ``embed_model`` as a core `Embedder`.

    A LlamaIndex `BaseEmbedding` is wrapped in `LlamaIndexEmbedder`; anything already
    following the core protocol (``embed_documents`` and ``embed_query``:
    `SentenceTransformerEmbedder`, `HashingEmbedder`, a `LlamaIndexEmbedder`) is
    returned unchanged.

    Raises:
        TypeError: for anything else (including ``None``).
    """
    if isinstance(embed_model, BaseEmbedding):
        return LlamaIndexEmbedder(embed_model)
    if callable(getattr(embed_model, "embed_documents", None)) and callable(
        getattr(embed_model, "embed_query", None)
    ):
        return embed_model
    raise TypeError(
        "embed_model must be a llama_index BaseEmbedding or a hybrid_retrievers Embedder "
        "(with embed_documents and embed_query), got "
        f"{type(embed_model).__name__}: {embed_model!r:.80}"
    )
