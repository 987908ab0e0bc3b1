"""LangChain retriever over any core `Searcher` (a sharded index, a custom searcher...).

`BM25Retriever` and `DenseRetriever` hold a concrete core index (and add editing and
persistence); `SearcherRetriever` holds anything with ``search(query, k, filter=...)``,
such as `hybrid_retrievers.distributed.ShardedSearcher`, `FusionSearcher` or
`RerankingSearcher`, so those drop into `FusionRetriever` / `HybridRetriever`
unchanged. Async calls await the searcher's ``asearch`` when it has one (a sharded
searcher awaits its shards concurrently), else run ``search`` in a worker thread.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from ._base import CoreRetriever

__all__ = ["SearcherRetriever"]


class SearcherRetriever(CoreRetriever):
    """LangChain retriever over any core searcher (``search(query, k, filter=...)``).

    Returned documents are new objects: ``id`` is the hit's document id, metadata the
    stored metadata plus the score under ``score_key`` and the 1-based ``"rank"``.
    ``k`` and ``filter`` can be overridden per call (``invoke(q, k=3)``).

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
