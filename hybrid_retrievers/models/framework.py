"""The shared half of every framework embedding adapter: lists of floats to an `Embedder`.

A framework's embedding model (LangChain `Embeddings`, LlamaIndex `BaseEmbedding`, ...)
returns lists of Python floats and knows nothing of the core. The core wants float32
numpy arrays of one fixed dimension, a model identity for its embedding cache and saved
indexes, and batch / async query methods. `EmbedderAdapter` does all of that once; a
framework adapter subclasses it and only names the model's methods to call
(``document_method``, ``query_method``, ``async_query_method``), says how to name the
model (`_derive_model_id`) and, optionally, which attribute declares the model's
dimension (``dimension_attribute``).

It lives in `hybrid_retrievers.models` because it is an `Embedder` implementation like
`SentenceTransformerEmbedder` and `HashingEmbedder`; `hybrid_retrievers.vector` only
*calls* embedders. No framework is imported here: the framework type to accept is a
class attribute of the subclass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["EmbedderAdapter", "adapt_embedder"]


def _positive_int(value: Any) -> int | None:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
        return int(value)
    return None


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
    return list(texts)


class EmbedderAdapter:
    """Base of the adapters that make a framework's embedding model a core `Embedder`.

    Subclasses set the class attributes: the accepted type and how error messages name
    it, and the names of the model's methods, each returning lists of floats.

    Args:
        model: The framework's model; must be an instance of ``native_type``.
        model_id: Identity for caches and saved indexes; `_derive_model_id` when omitted.
        dimension: The vector length when known up front; else the model's
            ``dimension_attribute`` when it is a positive int, else learned from the first vectors the model returns.
    """

    native_type: ClassVar[type]
    """The framework's model class that the constructor accepts."""
    argument: ClassVar[str]
    """The constructor argument's name, for error messages (``embeddings``)."""
    native_name: ClassVar[str]
    """How the type check names ``native_type`` (``langchain_core...Embeddings``)."""
    example: ClassVar[str]
    """An example model to pass, for error messages."""
    document_method: ClassVar[str]
    """The model's method for a list of documents (``embed_documents``)."""
    query_method: ClassVar[str]
    """The model's method for one query (``embed_query``)."""
    async_query_method: ClassVar[str]
    """The model's coroutine method for one query (``aembed_query``)."""
    dimension_attribute: ClassVar[str | None] = None
    """The model attribute that declares its dimension (``embed_dim``), if any."""

    def __init__(self, model: Any, *, model_id: str | None = None,
                 dimension: int | None = None) -> None:
        if not isinstance(model, self.native_type):
            raise TypeError(
                f"{self.argument} must be a {self.native_name} instance, got "
                f"{type(model).__name__}; pass e.g. {self.example}"
            )
        if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
            raise TypeError(f"model_id must be a non-empty str or None, got {model_id!r}")
        if dimension is None and self.dimension_attribute is not None:
            dimension = _positive_int(getattr(model, self.dimension_attribute, None))
        elif dimension is not None and _positive_int(dimension) is None:
            raise ValueError(f"dimension must be a positive int or None, got {dimension!r}")
        self._model = model
        self._model_id = model_id if model_id is not None else self._derive_model_id(model)
        self._dimension = None if dimension is None else int(dimension)

    # ------------------------------------------------------------ subclass hooks

    @staticmethod
    def _derive_model_id(model: Any) -> str | None:
        """The model's identity when ``model_id=`` is not given (``None``: unknown)."""
        return None

    # ---------------------------------------------------------------- properties

    @property
    def model_id(self) -> str | None:
        """Identity for caches and saved indexes (``None``: unknown, not cacheable)."""
        return self._model_id

    @property
    def dimension(self) -> int | None:
        """Vector length: as given or declared, else learned from the first output,
        else ``None``."""
        return self._dimension

    # -------------------------------------------------------------- the protocol

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Document vectors, shape ``(len(texts), dimension)``, float32."""
        texts = _check_texts(texts)
        if not texts:
            return self._empty()
        raw = getattr(self._model, self.document_method)(texts)
        return self._matrix(raw, len(texts), self.document_method)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The vector of one query, shape ``(dimension,)``, float32."""
        raw = getattr(self._model, self.query_method)(text)
        return self._matrix([raw], 1, self.query_method)[0]

    def embed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Query vectors for several queries, one query call each.

        The model's document method may encode differently (instruction models), so
        each query is embedded as a query.
        """
        texts = _check_texts(texts)
        if not texts:
            return self._empty()
        embed = getattr(self._model, self.query_method)
        return self._matrix([embed(t) for t in texts], len(texts), self.query_method)

    async def aembed_query(self, text: str) -> NDArray[np.float32]:
        """Async `embed_query` through the model's own async method (no thread for
        models with a native async client)."""
        raw = await getattr(self._model, self.async_query_method)(text)
        return self._matrix([raw], 1, self.async_query_method)[0]

    async def aembed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Async `embed_queries` (one async query call each, in order)."""
        texts = _check_texts(texts)
        if not texts:
            return self._empty()
        aembed = getattr(self._model, self.async_query_method)
        raw = [await aembed(t) for t in texts]
        return self._matrix(raw, len(texts), self.async_query_method)

    # ------------------------------------------------------------------- helpers

    def _empty(self) -> NDArray[np.float32]:
        return np.zeros((0, self._dimension or 0), dtype=np.float32)

    def _matrix(self, raw: Any, n: int, method: str) -> NDArray[np.float32]:
        """``raw`` (from ``method``) as a float32 ``(n, dimension)`` matrix; learns or
        checks the dimension."""
        name = f"{type(self._model).__name__}.{method}()"
        try:
            matrix = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must return equal-length lists of floats ({exc})") from None
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] < 1:
            raise ValueError(
                f"{name} must return {n} vector{'' if n == 1 else 's'} (one per text), got an "
                f"array of shape {matrix.shape}"
            )
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise ValueError(
                f"{name} returned {matrix.shape[1]}-d vectors, expected {self._dimension}-d; "
                "an embedding model must keep one dimension"
            )
        return np.ascontiguousarray(matrix)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self._model).__name__}, model_id={self._model_id!r})"


def adapt_embedder(value: Any, native_type: type, wrap: Callable[[Any], Any], *,
                   argument: str, native_name: str) -> Any:
    """``value`` as a core `Embedder`: a ``native_type`` model is wrapped with ``wrap``;
    anything with callable ``embed_documents`` and ``embed_query`` is returned unchanged.

    Raises:
        TypeError: for anything else (including ``None``), naming ``argument`` and the
            accepted kinds.
    """
    if isinstance(value, native_type):
        return wrap(value)
    if callable(getattr(value, "embed_documents", None)) and callable(
        getattr(value, "embed_query", None)
    ):
        return value
    raise TypeError(
        f"{argument} must be {native_name} or a hybrid_retrievers Embedder (with "
        f"embed_documents and embed_query), got {type(value).__name__}: {value!r:.80}"
    )
