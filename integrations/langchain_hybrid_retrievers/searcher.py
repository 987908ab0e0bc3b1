"""LangChain retriever over any core `Searcher` (a sharded index, a custom searcher...).

`BM25Retriever` and `DenseRetriever` hold a concrete core index (and add editing and
persistence); `SearcherRetriever` holds anything with ``search(query, k, filter=...)``,
such as `hybrid_retrievers.distributed.ShardedSearcher`, `FusionSearcher` or
`RerankingSearcher`, so those drop into `FusionRetriever` / `HybridRetriever`
unchanged. Async calls await the searcher's ``asearch`` when it has one (a sharded
searcher awaits its shards concurrently), else run ``search`` in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, field_validator

from hybrid_retrievers import Doc
from hybrid_retrievers.validation import check_k

from ._convert import check_score_key, hit_to_document

__all__ = ["SearcherRetriever"]

Filter = Mapping[str, Any] | Callable[[Doc], bool]


class SearcherRetriever(BaseRetriever):
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

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    searcher: Any
    """The core searcher that does all the work; shared, not copied."""

    k: int = 4
    """Default number of documents to return (>= 1); override per call with ``k=``."""

    filter: Filter | None = None
    """Default filter passed to the searcher; override per call with ``filter=``."""

    score_key: str = "score"
    """Metadata key under which each returned `Document` carries its score."""

    @field_validator("searcher")
    @classmethod
    def _check_searcher(cls, value: Any) -> Any:
        if not callable(getattr(value, "search", None)):
            raise TypeError(
                "searcher must have a search(query, k, filter=...) method, got "
                f"{type(value).__name__}"
            )
        return value

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> int:
        return check_k(value, name="k")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        return check_score_key(value)

    def _args(self, k: int | None, filter: Filter | None) -> tuple[int, Filter | None]:
        return (self.k if k is None else check_k(k, name="k"),
                self.filter if filter is None else filter)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Return up to ``k`` documents for ``query``, best first."""
        top, where = self._args(k, filter)
        return [hit_to_document(h, self.score_key)
                for h in self.searcher.search(query, top, filter=where)]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Async: awaits ``searcher.asearch`` when it exists, else a worker thread."""
        top, where = self._args(k, filter)
        asearch = getattr(self.searcher, "asearch", None)
        if callable(asearch):
            hits = await asearch(query, top, filter=where)
        else:
            hits = await asyncio.to_thread(self.searcher.search, query, top, filter=where)
        return [hit_to_document(h, self.score_key) for h in hits]
