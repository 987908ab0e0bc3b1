"""Any LangChain `Embeddings` as the core's `Embedder` protocol.

`LangChainEmbedder` is a `hybrid_retrievers.models.EmbedderAdapter`: this module only
names the LangChain methods to call and how a model's identity is derived when
``model_id=`` is not given: the class name plus the first non-empty string among its
``model``, ``model_name``, ``model_id``, ``deployment`` and ``repo_id`` attributes
(``"OpenAIEmbeddings(text-embedding-3-small)"``), else ``None`` (the embedding cache
refuses it). Pass ``model_id=`` when an option such as an output dimension matters.
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from hybrid_retrievers.integration import EmbedderAdapter, adapt_embedder

from ._base import checks_keywords
from .clip import ClipEmbeddings

__all__ = ["LangChainEmbedder", "as_embedder"]

_NAME_FIELDS = ("model", "model_name", "model_id", "deployment", "repo_id")


class LangChainEmbedder(EmbedderAdapter):
    """Wrap a LangChain `Embeddings` so a `hybrid_retrievers.VectorIndex` can use it.

    ``model_id`` and ``dimension`` are as for `EmbedderAdapter` (the identity is derived
    as the module docstring says).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> emb = LangChainEmbedder(DeterministicFakeEmbedding(size=8), model_id="fake-8")
        >>> emb.embed_documents(["a", "b"]).shape, emb.embed_query("a").dtype
        ((2, 8), dtype('float32'))
    """

    native_type = Embeddings
    argument = "embeddings"
    native_name = "langchain_core.embeddings.Embeddings"
    example = "HuggingFaceEmbeddings(...)"
    document_method = "embed_documents"
    query_method = "embed_query"
    async_query_method = "aembed_query"

    @checks_keywords()
    def __init__(self, embeddings: Embeddings, *, model_id: str | None = None,
                 dimension: int | None = None) -> None:
        super().__init__(embeddings, model_id=model_id, dimension=dimension)

    @property
    def embeddings(self) -> Embeddings:
        """The wrapped LangChain model."""
        return self._model  # type: ignore[no-any-return]

    @staticmethod
    def _derive_model_id(model: Any) -> str | None:
        for field in _NAME_FIELDS:
            value = getattr(model, field, None)
            if isinstance(value, str) and value.strip():
                return f"{type(model).__name__}({value})"
        return None


def as_embedder(embedding: Any) -> Any:
    """``embedding`` as a core `Embedder`: a LangChain `Embeddings` wrapped, a core
    embedder as it is (`adapt_embedder`; TypeError for anything else, even ``None``).

    A `ClipEmbeddings` gives its core `ClipEmbedder`: the index keeps ``embed_images``
    and the model's own identity, the one `VectorIndex.from_images` records."""
    if isinstance(embedding, ClipEmbeddings):
        return embedding.clip
    return adapt_embedder(embedding, Embeddings, LangChainEmbedder, argument="embedding",
                          native_name="a LangChain Embeddings")
