"""LangChain parent-document retriever over the core `ParentChildSearcher`.

Splitting, grouping, auto-merge and the recipe (`ParentChildSearcher.from_docs`) are the
core's; this module converts documents and maps LangChain's names: a LangChain docstore
becomes a core parent store (`LangChainParentStore`), a vector store or retriever a child
index (`LangChainChildIndex`), each in its own section below.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import BaseStore
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from pydantic import field_validator

from hybrid_retrievers import Doc
from hybrid_retrievers.integration import check_threshold
from hybrid_retrievers.parent import ParentChildSearcher, ParentStore
from hybrid_retrievers.types import Hit

from ._base import CoreRetriever, Filter, accepts_k, core_call_config, count_validator
from ._convert import (
    SCORE_KEYS,
    copy_metadata,
    doc_to_document,
    document_score,
    document_to_doc,
    documents_to_docs,
)
from .embeddings import as_embedder
from .vectorstores import SCORED_SEARCH_TYPES

__all__ = ["LangChainChildIndex", "LangChainParentStore", "ParentDocumentRetriever"]


# --------------------------------------------- a LangChain docstore as parents

class LangChainParentStore:
    """A LangChain ``BaseStore[str, Document]`` (``InMemoryStore``, a Redis or SQL
    store...) as the core's parent store; parents are stored as `Document`s, ``id`` set."""

    def __init__(self, store: BaseStore[str, Document]) -> None:
        if not isinstance(store, BaseStore):
            raise _not_a_docstore(store)
        self.store = store

    def get_many(self, ids: Sequence[str]) -> list[Doc | None]:
        """The parents for ``ids`` in order, ``None`` for ids the store lacks."""
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
        """Insert or replace parents (by id) as `Document` objects."""
        self.store.mset([(d.id, doc_to_document(d)) for d in docs])

    def delete(self, ids: Iterable[str]) -> None:
        """Remove parents by id."""
        self.store.mdelete(list(ids))

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.store.mget([doc_id])[0] is not None


def as_parent_store(docstore: Any) -> Any:
    """The core parent store for ``docstore``: a new `ParentStore` for ``None``, a
    `LangChainParentStore` for a LangChain ``BaseStore``, a core store as it is."""
    if docstore is None:
        return ParentStore()
    if isinstance(docstore, BaseStore):
        return LangChainParentStore(docstore)
    if all(callable(getattr(docstore, m, None)) for m in ("get_many", "put_many", "delete")):
        return docstore
    raise _not_a_docstore(docstore)


def _not_a_docstore(value: Any) -> TypeError:
    return TypeError("docstore must be a langchain_core.stores.BaseStore[str, Document] (e.g. "
                     f"InMemoryStore()) or a hybrid_retrievers ParentStore, got "
                     f"{type(value).__name__}")


# ------------------------------------- a vector store or retriever as children

class LangChainChildIndex:
    """A LangChain vector store (or an editable retriever) as the core's child index.

    Search: a store's relevance-scored search (raw scores when it defines no relevance
    function), or a retriever's ``invoke(query, k=...)`` as a child run (scores from the
    metadata, else ``1 / rank``). A mapping filter goes to the store as ``filter=``, a
    callable one is applied to the children returned. Edits: ``add_documents`` / ``delete``.
    """

    def __init__(self, target: Any, *, search_kwargs: Mapping[str, Any] | None = None) -> None:
        if not (callable(getattr(target, "add_documents", None))
                and callable(getattr(target, "delete", None))):
            raise TypeError(
                f"vectorstore {type(target).__name__} cannot index children: pass a "
                "LangChain vector store (Chroma, PGVector, InMemoryVectorStore...), its "
                "as_retriever(), a retriever with add_documents() and delete(), or one of "
                "this package's retrievers"
            )
        self._store = target if isinstance(target, VectorStore) else None
        self._target = target
        self._kwargs = {k: v for k, v in (search_kwargs or {}).items() if k != "k"}
        self._ids: set[str] = set()

    def search(self, query: str, k: int, *, filter: Any = None) -> list[Hit]:
        """The top ``k`` children for ``query`` (see the class docstring)."""
        kwargs = dict(self._kwargs)
        predicate = filter if callable(filter) and not isinstance(filter, Mapping) else None
        if isinstance(filter, Mapping):
            kwargs["filter"] = dict(filter)
        if self._store is not None:
            try:
                pairs = self._store.similarity_search_with_relevance_scores(query, k=k, **kwargs)
            except NotImplementedError:
                pairs = self._store.similarity_search_with_score(query, k=k, **kwargs)
        else:
            config = core_call_config()
            if accepts_k(self._target, asynchronous=False):
                kwargs["k"] = k
            docs = self._target.invoke(query, config, **kwargs)
            pairs = [(d, document_score(d.metadata, SCORE_KEYS)) for d in docs]
        hits: list[Hit] = []
        for document, score in pairs:
            doc = document_to_doc(document)
            if predicate is not None and not predicate(doc):
                continue
            rank = len(hits) + 1
            hits.append(Hit(doc, 1.0 / rank if score is None else float(score), rank))
        return hits[:k]

    def add_docs(self, docs: Sequence[Doc]) -> list[str]:
        """Add children with ``add_documents`` (ids kept); returns their ids."""
        ids = [d.id for d in docs]
        self._target.add_documents([doc_to_document(d) for d in docs], ids=ids)
        self._ids.update(ids)
        return ids

    def delete(self, ids: Iterable[str]) -> None:
        """Remove children by id with the target's ``delete``."""
        ids = list(ids)
        self._target.delete(ids)
        self._ids.difference_update(ids)

    def __contains__(self, doc_id: object) -> bool:
        # Children added through this object; the store's own content is not listed.
        return doc_id in self._ids


def as_child_searcher(child: Any) -> Any:
    """A core child searcher for ``child``: a core index as it is, this package's retriever's
    core searcher, or a `LangChainChildIndex` over a LangChain store or retriever."""
    if isinstance(child, VectorStore):
        return LangChainChildIndex(child)
    if isinstance(child, VectorStoreRetriever):
        if child.search_type not in SCORED_SEARCH_TYPES:
            raise ValueError(
                f"vectorstore has search_type={child.search_type!r}; parent/child search "
                "needs ranked children: use 'similarity' (or pass the vector store itself)"
            )
        return LangChainChildIndex(child.vectorstore, search_kwargs=child.search_kwargs)
    if isinstance(child, BaseRetriever):
        for attr in ("searcher", "index"):
            inner = getattr(child, attr, None)
            if inner is not None and callable(getattr(inner, "search", None)):
                return inner
        return LangChainChildIndex(child)
    return child


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
