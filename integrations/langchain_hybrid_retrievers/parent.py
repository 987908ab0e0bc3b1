"""LangChain parent-document retriever over the core `ParentChildSearcher`.

Small child chunks are matched; their parents come back, ``k`` distinct parents per
query, each with its score and the matched children. The splitting, the grouping, the
"fetch more children until k parents" loop, the auto-merge rule and the
``from_documents`` recipe (`ParentChildSearcher.from_docs`) are the core's; this module
converts documents, maps LangChain's parameter names and keeps search off the event
loop. A LangChain docstore becomes a core parent store in `.parent_store`, a LangChain
vector store a child index in `.child_index`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_core.stores import BaseStore
from pydantic import ConfigDict, field_validator

from hybrid_retrievers.documents import make_docs
from hybrid_retrievers.parent import (
    SOURCE_ID_KEY,  # noqa: F401  (kept for compatibility)
    ParentChildSearcher,
    ParentStore,
)
from hybrid_retrievers.types import Hit
from hybrid_retrievers.validation import check_k

from ._base import CoreRetriever, Filter
from ._convert import RANK_KEY, check_score_key, copy_metadata, documents_to_columns
from .child_index import LangChainChildIndex, as_child_searcher
from .embeddings import as_embedder
from .parent_store import DocumentStoreParents, LangChainParentStore, as_parent_store

__all__ = [
    "DocumentStoreParents",  # the former name of LangChainParentStore
    "LangChainChildIndex",
    "LangChainParentStore",
    "ParentDocumentRetriever",
]

MATCHED_CHILDREN_KEY = "matched_children"
"""Metadata key of a returned parent: its matched children (``id``, ``rank``, ``score``)."""


class ParentDocumentRetriever(CoreRetriever):
    """Match small chunks, return their parent documents (backed by `ParentChildSearcher`).

    Each returned `Document` is a parent (``id`` = parent id) whose metadata is the
    parent's metadata plus its score under ``score_key`` (its best child's score), the
    1-based ``"rank"`` and ``"matched_children"``: a list of ``{"id", "rank", "score"}``
    of the children that matched. With ``merge_threshold`` set, a parent with too small
    a fraction of matched children is replaced by those children (``parent_id`` in
    their metadata). ``k`` counts parents: ``k`` come back whenever that many match.

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

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    searcher: ParentChildSearcher
    """The core parent/child searcher that does all the work; shared, not copied."""

    child_runs: ClassVar[bool] = True  # a LangChain child index's calls are child runs

    k: int = 4
    """Default number of parents to return (>= 1); override per call with ``k=``."""

    fetch_k: int | None = None
    """Children asked for in the first round (default ``max(4k, 20)``; doubled as needed)."""

    filter: Filter | None = None
    """Default filter on the children (which carry their parent's metadata)."""

    merge_threshold: float | None = None
    """Auto-merge: ``None`` always returns parents; a fraction in (0, 1] returns a
    parent only when at least that fraction of its children matched."""

    score_key: str = "score"
    """Metadata key under which each returned `Document` carries its score."""

    score_threshold: float | None = None
    """Drop parents whose score (their best child's) is below this; ``None`` keeps all.
    Parents come best first, so the first ``k`` passing parents are returned. The score
    is the child index's: BM25 for the default index, the store's relevance score for
    a LangChain vector store (its raw score when it has no relevance function)."""

    @field_validator("score_threshold", mode="before")
    @classmethod
    def _check_threshold(cls, value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise ValueError(f"score_threshold must be a number or None, got {value!r}")
        return float(value)

    @field_validator("fetch_k", mode="before")
    @classmethod
    def _check_fetch_k(cls, value: Any) -> int | None:
        return None if value is None else check_k(value, name="fetch_k")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        return check_score_key(value, reserved=MATCHED_CHILDREN_KEY)

    # ------------------------------------------------------------------ build

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
        child_retriever: Any = None,
        vectorstore: Any = None,
        parent_splitter: Any = None,
        docstore: BaseStore[str, Document] | ParentStore | None = None,
        **kwargs: Any,
    ) -> ParentDocumentRetriever:
        """Split parents into children, index the children, store the parents.

        Args:
            documents: The parents; ``Document.id`` is kept (content ids otherwise).
                With ``parent_splitter`` they are first cut into parents.
            k: Default number of parents per query.
            chunk_size, chunk_overlap: Of the default sentence-aware splitter, in characters.
            embedding: When given (LangChain `Embeddings` or core `Embedder`), children
                are indexed hybrid: BM25 and dense fused with RRF. Default: BM25 only.
            child_splitter: Any splitter instead of the default: a LangChain text
                splitter (``RecursiveCharacterTextSplitter``...), an object with
                ``split_text`` or a callable ``str -> list[str]``.
            child_retriever: Index the children into this instead: a LangChain vector
                store or its ``as_retriever()`` (Chroma, PGVector, ``InMemoryVectorStore``...),
                any retriever with ``add_documents`` / ``delete``, one of this package's
                retrievers (e.g. ``BM25Retriever(index=BM25Index())``) or a core index.
                See `LangChainChildIndex` for how a LangChain store is searched.
            vectorstore: LangChain ``ParentDocumentRetriever``'s name for
                ``child_retriever`` (pass one of the two).
            parent_splitter: Cut the documents into parents first (as LangChain's
                ``parent_splitter``): any splitter accepted for ``child_splitter``. Each
                parent gets id ``"<document id>:p<i>"`` and ``source_id`` metadata.
            docstore: Where parents live: any ``BaseStore[str, Document]`` (e.g.
                ``InMemoryStore()``) or a core `ParentStore` (default: a new one).
            **kwargs: Other retriever fields (``fetch_k``, ``filter``,
                ``merge_threshold``, ``score_key``, ``tags``...).
        """
        if vectorstore is not None:
            if child_retriever is not None:
                raise ValueError("pass child_retriever= or vectorstore= (the same), not both")
            child_retriever = vectorstore
        texts, ids, metadatas = documents_to_columns(documents)
        searcher = ParentChildSearcher.from_docs(
            make_docs(texts, ids, metadatas),
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            splitter=child_splitter,
            parent_splitter=parent_splitter,
            embedder=None if embedding is None else as_embedder(embedding),
            child_searcher=None if child_retriever is None else as_child_searcher(child_retriever),
            parent_store=as_parent_store(docstore),
            k=k,
        )
        return cls(searcher=searcher, k=k, **kwargs)

    # ----------------------------------------------------------------- search

    def _to_document(self, hit: Hit) -> Document:
        info = hit.explanation["parent"]
        metadata = copy_metadata(hit.doc.metadata)
        metadata[self.score_key] = float(hit.score)
        metadata[RANK_KEY] = int(hit.rank)
        if info["merged"]:
            metadata[MATCHED_CHILDREN_KEY] = [
                {"id": c["id"], "rank": c["rank"], "score": c["score"]} for c in info["children"]
            ]
        return Document(id=hit.doc.id, page_content=hit.doc.text, metadata=metadata)

    def _search(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        hits = self.searcher.search(
            query,
            k=self.k if k is None else k,
            filter=self.filter if filter is None else filter,
            fetch_k=self.fetch_k,
            merge_threshold=self.merge_threshold,
        )
        if self.score_threshold is not None:
            hits = [h for h in hits if h.score >= self.score_threshold]
        return [self._to_document(h) for h in hits]

    async def _asearch(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        return await asyncio.to_thread(self._search, query, k, filter)

    # ----------------------------------------------------------------- update

    def add_documents(self, documents: Iterable[Document]) -> list[str]:
        """Add parents (split, children indexed); returns the parent ids.

        Raises:
            ValueError: a parent id already present (nothing is added then).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return self.searcher.add(make_docs(texts, ids, metadatas))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove parents and all their children by parent id.

        Raises:
            KeyError: naming unknown parent ids (nothing is deleted then).
        """
        self.searcher.delete(ids)
