"""LangChain parent-document retriever over the core `ParentChildSearcher`.

Small child chunks are matched; their parents come back, ``k`` distinct parents per
query, each with its score and the matched children. The splitting, the grouping, the
"fetch more children until k parents" loop and the auto-merge rule are the core's;
this module converts documents, wraps a LangChain ``BaseStore[str, Document]`` as a
parent store and keeps search off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import BaseStore
from pydantic import ConfigDict, field_validator

from hybrid_retrievers import Doc
from hybrid_retrievers._docs import make_docs
from hybrid_retrievers._validation import check_k
from hybrid_retrievers.parent import ParentChildSearcher, ParentStore, default_child_index
from hybrid_retrievers.splitting import SentenceSplitter, split_parents
from hybrid_retrievers.types import Hit

from ._base import StrictRetriever
from ._convert import RANK_KEY, check_score_key, copy_metadata, documents_to_columns
from .embeddings import as_embedder
from .retrievers import Filter

__all__ = ["DocumentStoreParents", "ParentDocumentRetriever"]

MATCHED_CHILDREN_KEY = "matched_children"
"""Metadata key of a returned parent: its matched children (``id``, ``rank``, ``score``)."""


class DocumentStoreParents:
    """A LangChain ``BaseStore[str, Document]`` as the core's parent store.

    Parents are stored as `Document` objects with ``id`` set, so any LangChain store
    (``InMemoryStore``, a Redis or SQL store...) can hold them.
    """

    def __init__(self, store: BaseStore[str, Document]) -> None:
        if not isinstance(store, BaseStore):
            raise TypeError(
                "docstore must be a langchain_core.stores.BaseStore[str, Document] (e.g. "
                f"InMemoryStore()) or a hybrid_retrievers ParentStore, got {type(store).__name__}"
            )
        self.store = store

    def get_many(self, ids: Sequence[str]) -> list[Doc | None]:
        out: list[Doc | None] = []
        for i, value in zip(ids, self.store.mget(list(ids))):
            if value is None:
                out.append(None)
            elif isinstance(value, Document):
                out.append(Doc(i, value.page_content, copy_metadata(value.metadata)))
            else:
                raise TypeError(
                    f"the docstore holds a {type(value).__name__} under {i!r}; a parent "
                    "store must hold langchain Documents"
                )
        return out

    def put_many(self, docs: Sequence[Doc]) -> None:
        self.store.mset(
            [(d.id, Document(id=d.id, page_content=d.text, metadata=copy_metadata(d.metadata)))
             for d in docs]
        )

    def delete(self, ids: Iterable[str]) -> None:
        self.store.mdelete(list(ids))

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.store.mget([doc_id])[0] is not None


def _as_child_searcher(child: Any) -> Any:
    """A core searcher from a core index or one of this package's retrievers."""
    if isinstance(child, BaseRetriever):
        for attr in ("searcher", "index"):
            inner = getattr(child, attr, None)
            if inner is not None and callable(getattr(inner, "search", None)):
                return inner
        raise TypeError(
            f"child_retriever {type(child).__name__} does not wrap a hybrid_retrievers "
            "index; pass a BM25Retriever, DenseRetriever (or another retriever of this "
            "package) or a core BM25Index / VectorIndex / FusionSearcher"
        )
    return child


class ParentDocumentRetriever(StrictRetriever):
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

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> int:
        return check_k(value, name="k")

    @field_validator("fetch_k", mode="before")
    @classmethod
    def _check_fetch_k(cls, value: Any) -> int | None:
        return None if value is None else check_k(value, name="fetch_k")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        if value == MATCHED_CHILDREN_KEY:
            raise ValueError(f"score_key must differ from {MATCHED_CHILDREN_KEY!r}, got {value!r}")
        return check_score_key(value)

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
        docstore: BaseStore[str, Document] | ParentStore | None = None,
        **kwargs: Any,
    ) -> ParentDocumentRetriever:
        """Split parents into children, index the children, store the parents.

        Args:
            documents: The parents; ``Document.id`` is kept (content ids otherwise).
            k: Default number of parents per query.
            chunk_size, chunk_overlap: Of the default sentence-aware splitter, in characters.
            embedding: When given (LangChain `Embeddings` or core `Embedder`), children
                are indexed hybrid: BM25 and dense fused with RRF. Default: BM25 only.
            child_splitter: Any splitter instead of the default: a LangChain text
                splitter (``RecursiveCharacterTextSplitter``...), an object with
                ``split_text`` or a callable ``str -> list[str]``.
            child_retriever: Index the children into this instead: one of this package's
                retrievers (e.g. ``BM25Retriever(index=BM25Index())``) or a core index.
            docstore: Where parents live: any ``BaseStore[str, Document]`` (e.g.
                ``InMemoryStore()``) or a core `ParentStore` (default: a new one).
            **kwargs: Other retriever fields (``fetch_k``, ``filter``,
                ``merge_threshold``, ``score_key``, ``tags``...).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        parents = make_docs(texts, ids, metadatas)
        if not parents:
            raise ValueError("documents must hold at least one parent Document, got none")
        splitter = (SentenceSplitter(chunk_size, chunk_overlap)
                    if child_splitter is None else child_splitter)
        store = _as_store(docstore)
        if child_retriever is None:
            children = split_parents(parents, splitter)
            if not children:
                raise ValueError("no document has any text to split into children")
            child = default_child_index(
                children, None if embedding is None else as_embedder(embedding)
            )
            store.put_many(parents)
            searcher = ParentChildSearcher(child, store, k=k, splitter=splitter)
        else:
            searcher = ParentChildSearcher(
                _as_child_searcher(child_retriever), store, k=k, splitter=splitter
            )
            searcher.add(parents)
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
        return [self._to_document(h) for h in hits]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Return up to ``k`` parents for ``query``, best first."""
        return self._search(query, k, filter)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: the search runs in a worker thread."""
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


def _as_store(docstore: Any) -> Any:
    if docstore is None:
        return ParentStore()
    if isinstance(docstore, BaseStore):
        return DocumentStoreParents(docstore)
    if all(callable(getattr(docstore, m, None)) for m in ("get_many", "put_many", "delete")):
        return docstore
    raise TypeError(
        "docstore must be a langchain BaseStore[str, Document] (e.g. InMemoryStore()) or a "
        f"hybrid_retrievers ParentStore, got {type(docstore).__name__}"
    )
