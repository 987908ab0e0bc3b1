"""LangChain parent-document retriever over the core `ParentChildSearcher`.

Small child chunks are matched; their parents come back, ``k`` distinct parents per
query, each with its score and the matched children. The splitting, the grouping, the
"fetch more children until k parents" loop and the auto-merge rule are the core's;
this module converts documents, wraps a LangChain ``BaseStore[str, Document]`` as a
parent store and keeps search off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import BaseStore
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from pydantic import ConfigDict, field_validator

from hybrid_retrievers import Doc
from hybrid_retrievers.documents import make_docs
from hybrid_retrievers.validation import check_k
from hybrid_retrievers.parent import ParentChildSearcher, ParentStore, default_child_index
from hybrid_retrievers.ids import content_id
from hybrid_retrievers.splitting import (
    CHILD_INDEX_KEY,
    PARENT_ID_KEY,
    START_INDEX_KEY,
    SentenceSplitter,
    split_parents,
)
from hybrid_retrievers.types import Hit

from ._base import StrictRetriever, accepts_k, core_call_config, core_calls_as_children
from ._convert import (
    RANK_KEY,
    SCORE_KEYS,
    check_score_key,
    copy_metadata,
    document_score,
    documents_to_columns,
)
from .embeddings import as_embedder
from ._base import Filter

__all__ = ["DocumentStoreParents", "LangChainChildIndex", "ParentDocumentRetriever"]

SOURCE_ID_KEY = "source_id"
"""Metadata key of a parent cut by ``parent_splitter``: the id of the document it came from."""

_CHILD_KEYS = (PARENT_ID_KEY, CHILD_INDEX_KEY, START_INDEX_KEY)

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


class LangChainChildIndex:
    """A LangChain vector store (or an editable retriever) as the core's child index.

    The core's `ParentChildSearcher` needs a child index it can search, add children
    to and delete them from; this adapts LangChain's spelling of those:

    * search: a vector store's ``similarity_search_with_relevance_scores`` (its raw
      ``similarity_search_with_score`` when the store defines no relevance function),
      or a retriever's ``invoke(query, k=...)`` (scores read from its documents'
      metadata, ``1 / rank`` when there are none), run as a child run of the
      `ParentDocumentRetriever` call;
    * add: ``add_documents(children, ids=...)`` (children keep their ids and carry
      ``parent_id`` in their metadata, as LangChain's own ``ParentDocumentRetriever``
      stores its ``doc_id``); delete: ``delete(ids)``.

    A mapping filter is passed to the store as its ``filter=`` argument (in the store's
    own filter syntax; most accept ``{key: value}`` equality); a callable filter
    (receiving a `hybrid_retrievers.Doc`) is applied to the children it returns.
    """

    def __init__(self, target: Any, *, search_kwargs: Mapping[str, Any] | None = None) -> None:
        if not (callable(getattr(target, "add_documents", None))
                and callable(getattr(target, "delete", None))):
            raise TypeError(
                f"child_retriever {type(target).__name__} cannot index children: pass a "
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
            doc = Doc(document.id if document.id is not None else content_id(
                document.page_content), document.page_content, document.metadata)
            if predicate is not None and not predicate(doc):
                continue
            rank = len(hits) + 1
            hits.append(Hit(doc, 1.0 / rank if score is None else float(score), rank))
        return hits[:k]

    def add_docs(self, docs: Sequence[Doc]) -> list[str]:
        ids = [d.id for d in docs]
        self._target.add_documents(
            [Document(id=d.id, page_content=d.text, metadata=copy_metadata(d.metadata))
             for d in docs], ids=ids)
        self._ids.update(ids)
        return ids

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        self._target.delete(ids)
        self._ids.difference_update(ids)

    def __contains__(self, doc_id: object) -> bool:
        # Children added through this object; the store's own content is not listed.
        return doc_id in self._ids


def _as_child_searcher(child: Any) -> Any:
    """A core searcher from a core index, this package's retriever or LangChain's store."""
    if isinstance(child, VectorStore):
        return LangChainChildIndex(child)
    if isinstance(child, VectorStoreRetriever):
        if child.search_type not in ("similarity", "similarity_score_threshold"):
            raise ValueError(
                f"child_retriever has search_type={child.search_type!r}; parent/child search "
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


def _split_into_parents(parents: list[Doc], parent_splitter: Any) -> list[Doc]:
    """Cut the given documents into parents (LangChain's ``parent_splitter``).

    Each parent chunk gets id ``"<document id>:p<i>"`` and its document's metadata plus
    ``source_id`` (the document's id), so the chunks can be traced back.
    """
    chunks = split_parents(parents, parent_splitter)
    out = []
    for chunk in chunks:
        metadata = {k: v for k, v in chunk.metadata.items() if k not in _CHILD_KEYS}
        source = chunk.metadata[PARENT_ID_KEY]
        metadata[SOURCE_ID_KEY] = source
        position = chunk.metadata[CHILD_INDEX_KEY]
        out.append(Doc(f"{source}:p{position}", chunk.text, metadata))
    return out


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
        parents = make_docs(texts, ids, metadatas)
        if not parents:
            raise ValueError("documents must hold at least one parent Document, got none")
        if parent_splitter is not None:
            parents = _split_into_parents(parents, parent_splitter)
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
        if self.score_threshold is not None:
            hits = [h for h in hits if h.score >= self.score_threshold]
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
        with core_calls_as_children(run_manager):
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
        with core_calls_as_children(run_manager):
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
