"""Any LlamaIndex `BaseEmbedding` as the core's `Embedder` protocol.

`LlamaIndexEmbedder` is a `hybrid_retrievers.models.EmbedderAdapter`: this module only
names the model's public LlamaIndex methods to call, so its batching, callbacks,
instrumentation and embeddings cache still apply.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding

from hybrid_retrievers.integration import EmbedderAdapter, adapt_embedder

from ._base import checks_keywords
from .clip import ClipEmbedding

__all__ = ["LlamaIndexEmbedder", "as_embedder"]

_PLACEHOLDER_NAMES = frozenset({"", "unknown"})


class LlamaIndexEmbedder(EmbedderAdapter):
    """Wrap a LlamaIndex `BaseEmbedding` so a `hybrid_retrievers.VectorIndex` can use it.

    ``model_id`` and ``dimension`` are as for `EmbedderAdapter`. The derived identity is
    ``"<class name>(<model_name>)"``, e.g. ``"HuggingFaceEmbedding(BAAI/bge-small-en-v1.5)"``;
    a model named LlamaIndex's placeholder ``"unknown"`` (or nothing) has none (``None``),
    so the embedding cache refuses it rather than risk mixing two models' vectors.

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

    @checks_keywords()
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
    """``embed_model`` as a core `Embedder`: a `BaseEmbedding` wrapped, a core embedder as
    it is (`adapt_embedder`; TypeError for anything else, even ``None``).

    A `ClipEmbedding` gives its core `ClipEmbedder`: the index keeps ``embed_images``
    and the model's own identity, the one `VectorIndex.from_images` records."""
    if isinstance(embed_model, ClipEmbedding):
        return embed_model.clip
    return adapt_embedder(embed_model, BaseEmbedding, LlamaIndexEmbedder,
                          argument="embed_model", native_name="a llama_index BaseEmbedding")
