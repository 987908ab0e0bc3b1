"""LangChain vector stores with their scores, for score fusion.

A vector store's ``as_retriever()`` returns documents without scores; a
`ScoredVectorStoreRetriever` asks the store for its relevance scores instead and puts
them in the metadata under ``score_key``. `FusionRetriever` swaps a plain
``VectorStoreRetriever`` child for one by itself when its mode fuses scores.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from pydantic import Field

from hybrid_retrievers.integration import check_k

from ._base import StrictRetriever, checks_keywords, count_validator
from ._convert import with_metadata

__all__ = ["SCORED_SEARCH_TYPES", "ScoredVectorStoreRetriever", "with_store_scores"]

SCORED_SEARCH_TYPES = ("similarity", "similarity_score_threshold")
"""``VectorStoreRetriever.search_type`` values whose search has a relevance score."""


def _scored(pairs: Any, score_key: str) -> list[Document]:
    return [with_metadata(document, {score_key: float(score)}) for document, score in pairs]


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

    _check_k = count_validator("k")

    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of every search (``k``, ``filter``, ``score_threshold``...);
    per-call keywords (``invoke(q, k=3)``) override them."""

    score_key: str = "score"
    """Metadata key of the relevance score in returned documents."""

    score_method: Literal["relevance", "raw"] = "relevance"
    """``"relevance"``: ``similarity_search_with_relevance_scores`` (normalised, higher is
    better); ``"raw"``: ``similarity_search_with_score``, for stores without a relevance
    function (``InMemoryVectorStore``: a cosine), only when higher means more relevant."""

    @classmethod
    @checks_keywords()
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

    def _search(self, kwargs: dict[str, Any], prefix: str = "") -> tuple[Any, dict[str, Any]]:
        """The store's search method (``prefix="a"``: its async one) and its arguments."""
        arguments = {"k": self.k, **self.search_kwargs, **kwargs}
        arguments["k"] = check_k(arguments["k"])  # a per-call k is checked like the field
        if self.score_method == "raw":
            arguments.pop("score_threshold", None)
            return getattr(self.vectorstore, f"{prefix}similarity_search_with_score"), arguments
        return getattr(self.vectorstore,
                       f"{prefix}similarity_search_with_relevance_scores"), arguments

    @contextmanager
    def _relevance_defined(self) -> Iterator[None]:
        try:
            yield
        except NotImplementedError:
            if self.score_method == "raw":
                raise
            raise ValueError(
                f"{type(self.vectorstore).__name__} defines no relevance scores "
                "(similarity_search_with_relevance_scores is not implemented), so score "
                "fusion cannot use it; use mode='rrf' (ranks only), or, if its raw scores "
                "are similarities (higher = better), ScoredVectorStoreRetriever("
                "vectorstore=..., score_method='raw')"
            ) from None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """The store's most relevant documents, each with its score."""
        search, arguments = self._search(kwargs)
        with self._relevance_defined():
            return _scored(search(query, **arguments), self.score_key)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Async `_get_relevant_documents` (the store's own async search)."""
        search, arguments = self._search(kwargs, "a")
        with self._relevance_defined():
            return _scored(await search(query, **arguments), self.score_key)


def with_store_scores(retriever: Any) -> Any:
    """``retriever`` as a `ScoredVectorStoreRetriever` when it is a plain vector-store one."""
    if type(retriever) is VectorStoreRetriever:
        return ScoredVectorStoreRetriever.from_retriever(retriever)
    return retriever
