"""Any LlamaIndex `BaseEmbedding` as the core's `Embedder` protocol.

`LlamaIndexEmbedder` is a `hybrid_retrievers.models.EmbedderAdapter` (float32 arrays,
one dimension, model identity, batch and async queries, the error messages): this
module only says which LlamaIndex methods to call. The model is called through its
public methods (``get_text_embedding_batch`` for documents, ``get_query_embedding`` for
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

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding

from hybrid_retrievers.models import EmbedderAdapter, adapt_embedder

__all__ = ["LlamaIndexEmbedder", "as_embedder"]

_PLACEHOLDER_NAMES = frozenset({"", "unknown"})


class LlamaIndexEmbedder(EmbedderAdapter):
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

    native_type = BaseEmbedding
    argument = "embed_model"
    native_name = "llama_index BaseEmbedding"
    example = "HuggingFaceEmbedding(...)"
    document_method = "get_text_embedding_batch"
    query_method = "get_query_embedding"
    async_query_method = "aget_query_embedding"
    dimension_attribute = "embed_dim"

    def __init__(self, embed_model: BaseEmbedding, *, model_id: str | None = None,
                 dimension: int | None = None) -> None:
        super().__init__(embed_model, model_id=model_id, dimension=dimension)

    @property
    def embed_model(self) -> BaseEmbedding:
        """The wrapped LlamaIndex model."""
        return self._model  # type: ignore[no-any-return]

    @staticmethod
    def _derive_model_id(model: Any) -> str | None:
        name = getattr(model, "model_name", None)
        if not isinstance(name, str) or name.strip() in _PLACEHOLDER_NAMES:
            return None
        return f"{type(model).__name__}({name})"


def as_embedder(embed_model: Any) -> Any:
    """Return ``embed_model`` as a core `Embedder`.

    A LlamaIndex `BaseEmbedding` is wrapped in `LlamaIndexEmbedder`; anything already
    following the core protocol (``embed_documents`` and ``embed_query``:
    `SentenceTransformerEmbedder`, `HashingEmbedder`, a `LlamaIndexEmbedder`) is
    returned unchanged.

    Raises:
        TypeError: for anything else (including ``None``).
    """
    return adapt_embedder(embed_model, BaseEmbedding, LlamaIndexEmbedder,
                          argument="embed_model", native_name="a llama_index BaseEmbedding")
