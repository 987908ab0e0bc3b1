"""LangChain retriever over any core `Searcher` (a sharded index, a custom searcher...)."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from ._base import CoreRetriever

__all__ = ["SearcherRetriever"]


class SearcherRetriever(CoreRetriever):
    """LangChain retriever over any core searcher (``search(query, k, filter=...)``), such
    as a `ShardedSearcher`, `FusionSearcher` or `RerankingSearcher`. Returned documents
    and per-call ``k`` / ``filter`` are as for `BM25Retriever`.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> from langchain_hybrid_retrievers import SearcherRetriever
        >>> index = BM25Index.from_texts(["wing lift", "bread dough"], ids=["a", "b"])
        >>> [d.id for d in SearcherRetriever(searcher=index, k=1).invoke("lift")]
        ['a']
    """

    searcher: Any
    """The core searcher that does all the work; shared, not copied."""

    @field_validator("searcher")
    @classmethod
    def _check_searcher(cls, value: Any) -> Any:
        if not callable(getattr(value, "search", None)):
            raise TypeError(
                "searcher must have a search(query, k, filter=...) method, got "
                f"{type(value).__name__}"
            )
        return value
