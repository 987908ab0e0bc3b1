"""LangChain vector stores with their scores: for score fusion and parent/child search.

A vector store's ``as_retriever()`` returns documents without scores, so score fusion
cannot use it. `ScoredVectorStoreRetriever` asks the store for
``similarity_search_with_relevance_scores`` instead (relevance in [0, 1], higher is
better, as the store defines it) and puts the score in each returned document's
metadata under ``score_key``. `FusionRetriever` swaps a plain ``VectorStoreRetriever``
child for one of these by itself when its mode fuses scores.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from pydantic import Field, field_validator

from hybrid_retrievers.validation import check_k

from ._base import StrictRetriever
from ._convert import copy_metadata

__all__ = ["SCORED_SEARCH_TYPES", "ScoredVectorStoreRetriever", "with_store_scores"]

SCORED_SEARCH_TYPES = ("similarity", "similarity_score_threshold")
"""``VectorStoreRetriever.search_type`` values whose search has a relevance score."""


def _scored(pairs: Any, score_key: str) -> list[Document]:
    out = []
    for document, score in pairs:
        metadata = copy_metadata(document.metadata)
        metadata[score_key] = float(score)
        out.append(Document(id=document.id, page_content=document.page_content,
                            metadata=metadata))
    return out


class ScoredVectorStoreRetriever(StrictRetriever):
    """A vector store as a retriever whose documents carry the store's relevance score.

    Example:
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        >>> _ = store.add_texts(["wing lift", "bread"], ids=["w", "b"])
        >>> docs = ScoredVectorStoreRetriever(  # its raw score is a cosine similarity
        ...     vectorstore=store, search_kwargs={"k": 1}, score_method="raw"
        ... ).invoke("wing lift")
        >>> docs[0].id, isinstance(docs[0].metadata["score"], float)
        ('w', True)
    """

    vectorstore: VectorStore
    """The store searched with ``similarity_search_with_relevance_scores``."""

    k: int = 4
    """Documents to return unless ``search_kwargs`` or the call (``invoke(q, k=3)``) say."""

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> int:
        return check_k(value, name="k")

    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of every search (``k``, ``filter``, ``score_threshold``...);
    per-call keywords (``invoke(q, k=3)``) override them."""

    score_key: str = "score"
    """Metadata key of the relevance score in returned documents."""

    score_method: Literal["relevance", "raw"] = "relevance"
    """``"relevance"``: ``similarity_search_with_relevance_scores`` (the store's
    normalised relevance, higher is better); ``"raw"``: ``similarity_search_with_score``,
    the store's own number, for stores that define no relevance function (such as
    ``InMemoryVectorStore``, whose raw score is a cosine similarity). Use ``"raw"`` only
    when higher means more relevant: many stores return a distance."""

    @classmethod
    def from_retriever(cls, retriever: VectorStoreRetriever) -> ScoredVectorStoreRetriever:
        """The same store, search arguments, tags, metadata and run name, with scores.

        Raises:
            ValueError: for a search type without scores (``"mmr"``).
        """
        if retriever.search_type not in SCORED_SEARCH_TYPES:
            raise ValueError(
                f"a VectorStoreRetriever with search_type={retriever.search_type!r} returns "
                f"no scores (only {list(SCORED_SEARCH_TYPES)} do); use mode='rrf' (ranks only)"
            )
        return cls(vectorstore=retriever.vectorstore, search_kwargs=dict(retriever.search_kwargs),
                   tags=retriever.tags, metadata=retriever.metadata,
                   name=retriever.name or type(retriever).__name__)

    def _no_relevance(self) -> ValueError:
        return ValueError(
            f"{type(self.vectorstore).__name__} defines no relevance scores "
            "(similarity_search_with_relevance_scores is not implemented), so score fusion "
            "cannot use it; use mode='rrf' (ranks only), or, if its raw scores are "
            "similarities (higher = better), ScoredVectorStoreRetriever(vectorstore=..., "
            "score_method='raw')"
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """The store's most relevant documents, each with its score."""
        arguments = {"k": self.k, **self.search_kwargs, **kwargs}
        if self.score_method == "raw":
            arguments.pop("score_threshold", None)
            return _scored(self.vectorstore.similarity_search_with_score(query, **arguments),
                           self.score_key)
        try:
            pairs = self.vectorstore.similarity_search_with_relevance_scores(query, **arguments)
        except NotImplementedError:
            raise self._no_relevance() from None
        return _scored(pairs, self.score_key)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Async `_get_relevant_documents` (the store's own async search)."""
        arguments = {"k": self.k, **self.search_kwargs, **kwargs}
        if self.score_method == "raw":
            arguments.pop("score_threshold", None)
            pairs = await self.vectorstore.asimilarity_search_with_score(query, **arguments)
            return _scored(pairs, self.score_key)
        try:
            pairs = await self.vectorstore.asimilarity_search_with_relevance_scores(
                query, **arguments)
        except NotImplementedError:
            raise self._no_relevance() from None
        return _scored(pairs, self.score_key)


def with_store_scores(retriever: Any) -> Any:
    """``retriever`` as a `ScoredVectorStoreRetriever` when it is a plain vector-store one."""
    if type(retriever) is VectorStoreRetriever:
        return ScoredVectorStoreRetriever.from_retriever(retriever)
    return retriever
