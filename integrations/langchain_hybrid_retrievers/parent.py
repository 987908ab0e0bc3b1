"""LangChain parent-document retriever over the core `ParentChildSearcher`.

Splitting, grouping, auto-merge and the recipe (`ParentChildSearcher.from_docs`) are the
core's; this module converts documents and maps LangChain's names. A LangChain docstore
becomes a core parent store in `.parent_store`, a vector store a child index in `.child_index`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_core.stores import BaseStore
from pydantic import field_validator

from hybrid_retrievers.integration import check_threshold
from hybrid_retrievers.parent import ParentChildSearcher, ParentStore
from hybrid_retrievers.types import Hit

from ._arguments import count_validator
from ._base import CoreRetriever, Filter
from ._convert import documents_to_docs
from .child_index import LangChainChildIndex, as_child_searcher
from .embeddings import as_embedder
from .parent_store import LangChainParentStore, as_parent_store

__all__ = [
    "LangChainChildIndex",
    "LangChainParentStore",
    "ParentDocumentRetriever",
]

MATCHED_CHILDREN_KEY = "matched_children"
"""Metadata key of a returned parent: its matched children (``id``, ``rank``, ``score``)."""


class ParentDocumentRetriever(CoreRetriever):
    """Match small chunks, return their parent documents (backed by `ParentChildSearcher`).

    Each returned `Document` is a parent with its best child's score under ``score_key``,
    the ``"rank"`` and ``"matched_children"``; ``k`` counts parents.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_hybrid_retrievers import ParentDocumentRetriever
        >>> retriever = ParentDocumentRetriever.from_documents(
        ...     [Document(id="wings", page_content="Wings make lift. Flaps add lift."),
        ...      Document(id="bread", page_content="Yeast makes bread rise.")],
        ...     k=1, chunk_size=20, chunk_overlap=0,
        ... )
        >>> doc = retriever.invoke("flaps")[0]
        >>> doc.id, doc.metadata["matched_children"][0]["id"]
        ('wings', 'wings:1')
    """

    searcher: ParentChildSearcher
    """The core parent/child searcher that does all the work; shared, not copied."""

    child_runs: ClassVar[bool] = True  # a LangChain child index's calls are child runs
    reserved_key: ClassVar[str | None] = MATCHED_CHILDREN_KEY

    k: int = 4
    """Default number of parents to return (>= 1); override per call with ``k=``."""

    fetch_k: int | None = None
    """Children asked for in the first round (default ``max(4k, 20)``; doubled as needed)."""

    filter: Filter | None = None
    """Default filter on the children (which carry their parent's metadata)."""

    merge_threshold: float | None = None
    """Auto-merge: ``None`` always returns parents; a fraction in (0, 1] returns a
    parent only when at least that fraction of its children matched."""

    score_threshold: float | None = None
    """Drop parents whose score (their best child's, in the child index's units) is below
    this; ``None`` keeps all."""

    @field_validator("score_threshold", mode="before")
    @classmethod
    def _check_threshold(cls, value: Any) -> float | None:
        return check_threshold(value)

    _check_fetch_k = count_validator("fetch_k", optional=True)

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        k: int = 4,
        chunk_size: int = 400,
        chunk_overlap: int = 50,
        embedding: Any = None,
        child_splitter: Any = None,
        vectorstore: Any = None,
        parent_splitter: Any = None,
        docstore: BaseStore[str, Document] | ParentStore | None = None,
        **kwargs: Any,
    ) -> ParentDocumentRetriever:
        """Split parents into children, index the children, store the parents.

        The arguments are `ParentChildSearcher.from_docs`'s in LangChain's spelling:
        ``embedding`` makes the children hybrid; ``vectorstore`` (the name LangChain's own
        ``ParentDocumentRetriever`` gives the child store) indexes them in a LangChain
        vector store, its ``as_retriever()``, an editable retriever or one of this
        package's retrievers (`LangChainChildIndex`);
        ``docstore`` is a ``BaseStore[str, Document]`` or a core `ParentStore`.
        ``**kwargs`` are other retriever fields (``fetch_k``...).
        """
        searcher = ParentChildSearcher.from_docs(
            documents_to_docs(documents), chunk_size=chunk_size, chunk_overlap=chunk_overlap,
            splitter=child_splitter, parent_splitter=parent_splitter,
            embedder=None if embedding is None else as_embedder(embedding),
            child_searcher=None if vectorstore is None else as_child_searcher(vectorstore),
            parent_store=as_parent_store(docstore), k=k)
        return cls(searcher=searcher, k=k, **kwargs)

    def _extra(self, hit: Hit) -> Mapping[str, Any] | None:
        info = hit.explanation["parent"]
        if not info["merged"]:
            return None
        return {MATCHED_CHILDREN_KEY: [{"id": c["id"], "rank": c["rank"], "score": c["score"]}
                                       for c in info["children"]]}

    def _search(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        top, where = self._resolve(k, filter)
        hits = self.searcher.search(query, k=top, filter=where, fetch_k=self.fetch_k,
                                    merge_threshold=self.merge_threshold)
        if self.score_threshold is not None:
            hits = [h for h in hits if h.score >= self.score_threshold]
        return self._documents(hits)

    async def _asearch(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        return await asyncio.to_thread(self._search, query, k, filter)

    def add_documents(self, documents: Iterable[Document]) -> list[str]:
        """Add parents (split, children indexed); returns the parent ids.

        Raises:
            ValueError: a parent id already present (nothing is added then).
        """
        return self.searcher.add(documents_to_docs(documents))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove parents and all their children by parent id.

        Raises:
            KeyError: naming unknown parent ids (nothing is deleted then).
        """
        self.searcher.delete(ids)
