"""LangChain ``MultiVectorRetriever`` over the core `ParentChildSearcher`.

Built LangChain's way (``vectorstore=``, ``docstore=`` or ``byte_store=``, ``id_key=``,
``search_type=``, ``search_kwargs=``), the children are whatever the vector store holds
(chunks, summaries, hypothetical questions, image descriptions) and each names its parent
under ``id_key``; built over a core searcher (``searcher=``), it is this package's
parent/child retriever. Either way the core does the search: parents in the order of
their best child, each with its score and matched children. `ParentDocumentRetriever`
(in `.parent`) adds the splitting and editing on top.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_core.stores import BaseStore, ByteStore
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from pydantic import Field, field_validator, model_validator

from hybrid_retrievers.integration import check_k, check_threshold
from hybrid_retrievers.parent import ParentChildSearcher
from hybrid_retrievers.types import Hit

from ._base import ARGUMENT_HINTS, CoreRetriever, Filter, check_arguments, count_validator
from .stores import LangChainChildIndex, LangChainParentStore, check_search_type, kv_docstore

__all__ = ["DEFAULT_CHILD_K", "MATCHED_CHILDREN_KEY", "MultiVectorRetriever"]

MATCHED_CHILDREN_KEY = "matched_children"
"""Metadata key of a returned parent: its matched children (``id``, ``rank``, ``score``)."""

DEFAULT_CHILD_K = 4
"""Children searched when ``search_kwargs`` has no ``"k"``: a LangChain vector store's
default ``k``, which LangChain's ``MultiVectorRetriever`` relies on."""


class MultiVectorRetriever(CoreRetriever):
    """Search children (chunks, summaries, questions, image descriptions), return parents.

    Drop-in for LangChain's ``MultiVectorRetriever`` (``langchain_classic.retrievers``):
    the children live in ``vectorstore`` and name their parent under ``metadata[id_key]``;
    the parents live in ``docstore`` (or ``byte_store``, wrapped with
    ``create_kv_docstore``). ``search_type`` is ``"similarity"``, ``"mmr"`` or
    ``"similarity_score_threshold"``; ``search_kwargs`` go to that search, and
    ``search_kwargs["k"]`` (default 4) counts **children**, as in LangChain: the result is
    the distinct parents of those children, in the order of their first child, parents
    missing from the docstore left out. Pass ``k=`` (field or per call) to get exactly
    ``k`` parents instead: the search then asks for more children until it has them.

    Each returned `Document` is a parent carrying its best child's score under
    ``score_key``, its ``"rank"`` and ``"matched_children"``.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.stores import InMemoryStore
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> retriever = MultiVectorRetriever(
        ...     vectorstore=InMemoryVectorStore(DeterministicFakeEmbedding(size=16)),
        ...     docstore=InMemoryStore())
        >>> retriever.docstore.mset([("fig1", Document(page_content="<chart image>"))])
        >>> _ = retriever.vectorstore.add_documents([Document(
        ...     page_content="Bar chart of lift by flap angle", metadata={"doc_id": "fig1"})])
        >>> doc = retriever.invoke("Bar chart of lift by flap angle")[0]
        >>> doc.page_content, doc.id
        ('<chart image>', 'fig1')
    """

    searcher: ParentChildSearcher | None = None
    """The core parent/child searcher that does all the work (built from ``vectorstore``
    and ``docstore`` when not given); shared, not copied."""

    vectorstore: VectorStore | None = None
    """The LangChain vector store holding the children (LangChain's way of building)."""

    byte_store: ByteStore | None = None
    """A bytes store for the parents (e.g. ``LocalFileStore``), wrapped as ``docstore``."""

    docstore: BaseStore[str, Document] | None = None
    """The LangChain store of the parents, by parent id."""

    id_key: str = "doc_id"
    """The children's metadata key holding their parent's id."""

    search_type: str = "similarity"
    """``"similarity"``, ``"mmr"`` or ``"similarity_score_threshold"`` (LangChain's
    ``SearchType`` values; the enum is accepted too)."""

    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of the vector store's search (``k`` children, ``filter``,
    ``score_threshold``, ``fetch_k`` and ``lambda_mult`` for MMR...)."""

    k: int | None = None  # type: ignore[assignment]
    """Parents to return: ``None`` returns the parents of the top ``search_kwargs["k"]``
    children (LangChain's rule); a number returns exactly that many when that many match.
    Built over ``searcher=``, the searcher's ``k``. Override per call with ``k=``."""

    fetch_k: int | None = None
    """Children asked for in the first round when ``k`` is set (default
    ``search_kwargs["k"]``, else ``max(4k, 20)``; doubled as needed)."""

    filter: Filter | None = None
    """Default filter on the children: a mapping goes to the vector store's search as
    ``filter=``, a callable receives each child as a `hybrid_retrievers.Doc`."""

    merge_threshold: float | None = None
    """Auto-merge: ``None`` always returns parents; a fraction in (0, 1] returns a
    parent only when at least that fraction of its children matched."""

    score_threshold: float | None = None
    """Drop parents whose score (their best child's, in the child index's units) is below
    this; ``None`` keeps all."""

    child_runs: ClassVar[bool] = True  # a LangChain child index's calls are child runs
    reserved_key: ClassVar[str | None] = MATCHED_CHILDREN_KEY
    langchain_arguments: ClassVar[tuple[str, ...]] = (
        "vectorstore", "docstore", "byte_store", "id_key", "search_type", "search_kwargs")
    """The arguments of LangChain's way of building; refused with ``searcher=``."""

    _check_k = count_validator("k", optional=True)
    _check_fetch_k = count_validator("fetch_k", optional=True)

    @field_validator("score_threshold", mode="before")
    @classmethod
    def _check_threshold(cls, value: Any) -> float | None:
        return check_threshold(value)

    @field_validator("search_type", mode="before")
    @classmethod
    def _check_search_type(cls, value: Any) -> str:
        return check_search_type(value)

    @field_validator("search_kwargs", mode="before")
    @classmethod
    def _check_search_kwargs(cls, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise TypeError(f"search_kwargs must be a dict, got {type(value).__name__}")
        if "k" in value:
            check_k(value["k"], name="search_kwargs['k']")
        return dict(value)

    @field_validator("id_key")
    @classmethod
    def _check_id_key(cls, value: str) -> str:
        if not value:
            raise ValueError("id_key must be a non-empty metadata key, e.g. 'doc_id'")
        return value

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, values: Any) -> Any:  # replaces StrictRetriever's: one order
        if not isinstance(values, Mapping):
            return values
        values = dict(values)
        if "doc_id" in values:  # LangChain ignores it; its own tests mean id_key by it
            doc_id = values.pop("doc_id")
            if values.setdefault("id_key", doc_id) != doc_id:
                raise TypeError(f"doc_id={doc_id!r} and id_key={values['id_key']!r} differ; "
                                "pass id_key= only (the children's parent-id metadata key)")
        check_arguments(cls, values, ARGUMENT_HINTS)
        if values.get("searcher") is not None:
            return cls._searcher_form(values)
        return cls._langchain_form(values)

    @classmethod
    def _searcher_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in cls.langchain_arguments if name in values]
        if given:
            raise TypeError(
                f"{cls.__name__} got unexpected argument(s) "
                f"{', '.join(map(repr, given))} for a retriever over searcher= (what "
                f"from_documents builds): they belong to LangChain's way of building, "
                f"{cls.__name__}(vectorstore=..., docstore=...); here each child names its "
                "parent under 'parent_id' and parents are identified by Document.id; "
                f"accepted: k, fetch_k, filter, merge_threshold, score_threshold, score_key"
            )
        values.setdefault("k", getattr(values["searcher"], "k", None))
        return values

    @classmethod
    def _langchain_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        store = values.get("vectorstore")
        if store is None:
            raise TypeError(
                f"{cls.__name__} needs vectorstore= (the LangChain VectorStore holding the "
                "children) with docstore= or byte_store=, or searcher= (a hybrid_retrievers "
                "ParentChildSearcher)")
        if isinstance(store, VectorStoreRetriever):
            raise TypeError(
                "vectorstore must be a VectorStore, got a VectorStoreRetriever: pass its "
                ".vectorstore, with search_type= and search_kwargs= here")
        if not isinstance(store, VectorStore):
            raise TypeError("vectorstore must be a langchain_core VectorStore (Chroma, "
                            f"InMemoryVectorStore...), got {type(store).__name__}")
        if values.get("byte_store") is not None:
            if values.get("docstore") is not None:
                raise TypeError("pass docstore= or byte_store=, not both (byte_store= "
                                "becomes the docstore through create_kv_docstore)")
            values["docstore"] = kv_docstore(values["byte_store"])
        if values.get("docstore") is None:
            raise TypeError(
                f"{cls.__name__} needs docstore= (a BaseStore[str, Document], e.g. "
                "InMemoryStore()) or byte_store= (e.g. LocalFileStore(path)) for the parents")
        LangChainParentStore(values["docstore"])  # its TypeError names what to pass
        return values

    @model_validator(mode="after")
    def _build_searcher(self) -> MultiVectorRetriever:
        if self.searcher is None:
            children = LangChainChildIndex(
                self.vectorstore, search_kwargs=self.search_kwargs,
                search_type=self.search_type, id_key=self.id_key)
            self.searcher = ParentChildSearcher(
                children, LangChainParentStore(self.docstore),  # type: ignore[arg-type]
                k=self.k or DEFAULT_CHILD_K)
        return self

    def _extra(self, hit: Hit) -> Mapping[str, Any] | None:
        info = hit.explanation["parent"]
        if not info["merged"]:
            return None
        return {MATCHED_CHILDREN_KEY: [{"id": c["id"], "rank": c["rank"], "score": c["score"]}
                                       for c in info["children"]]}

    def _fields_in_force(self) -> contextlib.AbstractContextManager[Any]:
        """The search settings and ``id_key`` as they are now, for the child index's calls
        in this block: LangChain reads its fields at each call (``retriever.search_type =
        SearchType.mmr`` is a documented pattern), and copies share one child index."""
        child = self.searcher.child_searcher if self.searcher is not None else None
        if self.vectorstore is None or not isinstance(child, LangChainChildIndex):
            return contextlib.nullcontext()
        return child.using(search_type=self.search_type, search_kwargs=self.search_kwargs,
                           id_key=self.id_key)

    def _search(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        where = self.filter if filter is None else filter
        top = self.k if k is None else check_k(k, name="k")
        child_k = self.search_kwargs.get("k")
        if child_k is not None:
            check_k(child_k, name="search_kwargs['k']")
        assert self.searcher is not None  # built by _build_searcher
        with self._fields_in_force():
            if top is None:  # LangChain's rule: the parents of the top child_k children
                n = child_k or DEFAULT_CHILD_K
                hits = self.searcher.search(query, k=n, filter=where, fetch_k=n,
                                            refetch=False, merge_threshold=self.merge_threshold)
            else:
                fetch_k = self.fetch_k if self.fetch_k is not None else child_k
                hits = self.searcher.search(query, k=top, filter=where, fetch_k=fetch_k,
                                            merge_threshold=self.merge_threshold)
        if self.score_threshold is not None:
            hits = [h for h in hits if h.score >= self.score_threshold]
        return self._documents(hits)

    async def _asearch(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        return await asyncio.to_thread(self._search, query, k, filter)
