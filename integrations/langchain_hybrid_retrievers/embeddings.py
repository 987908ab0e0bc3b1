"""Any LangChain `Embeddings` as the core's `Embedder` protocol.

`LangChainEmbedder` is a `hybrid_retrievers.models.EmbedderAdapter` (float32 arrays,
one dimension, model identity, batch and async queries, the error messages): this
module only says which LangChain methods to call. The model is called as LangChain
documents it (``embed_documents`` for documents, ``embed_query`` for queries,
``aembed_query`` for async queries), so models whose document and query encodings
differ keep working; LangChain's default ``aembed_query`` runs ``embed_query`` in an
executor thread, models with a native async client (HTTP APIs) await it without one.

Model identity: ``model_id=`` when given; otherwise the class name plus the first
non-empty string among the model's ``model``, ``model_name``, ``model_id``,
``deployment`` and ``repo_id`` attributes, e.g. ``"OpenAIEmbeddings(text-embedding-3-small)"``.
A model without any such attribute has no identity (``None``): the embedding cache then
refuses it rather than risk mixing two models' vectors under one name. Pass
``model_id=`` when an option such as an output dimension or an instruction changes the
document vectors, since it is not part of the derived name.
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from hybrid_retrievers.models import EmbedderAdapter, adapt_embedder

__all__ = ["LangChainEmbedder", "as_embedder"]

_NAME_FIELDS = ("model", "model_name", "model_id", "deployment", "repo_id")


class LangChainEmbedder(EmbedderAdapter):
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

    native_type = Embeddings
    argument = "embeddings"
    native_name = "langchain_core.embeddings.Embeddings"
    example = "HuggingFaceEmbeddings(...)"
    document_method = "embed_documents"
    query_method = "embed_query"
    async_query_method = "aembed_query"

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
    """Return ``embedding`` as a core `Embedder`.

    A LangChain `Embeddings` is wrapped in `LangChainEmbedder`; anything already
    following the core protocol (``embed_documents`` and ``embed_query`` returning
    arrays: `SentenceTransformerEmbedder`, `HashingEmbedder`, a `LangChainEmbedder`)
    is returned unchanged.

    Raises:
        TypeError: for anything else (including ``None``).
    """
    return adapt_embedder(embedding, Embeddings, LangChainEmbedder, argument="embedding",
                          native_name="a LangChain Embeddings")
