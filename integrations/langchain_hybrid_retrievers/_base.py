"""What every LangChain retriever of this package shares: the core-adapter contract.

Adapters convert types, map parameter names, wire run config and async, and delegate
to the core. Written once here, in three sections: the argument checks (unknown
arguments refused with a hint, counts, pydantic validators), the caller's run config
(`StrictRetriever` remembers it for child calls), and `CoreRetriever`, `IndexRetriever`
and `accepts_k`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, patch_config
from pydantic import ConfigDict, ValidationInfo, field_validator, model_validator

from hybrid_retrievers.integration import (
    check_k,
    check_keywords,
    field_names,
    keyword_checked,
    keyword_names,
)
from hybrid_retrievers.types import Hit, MetadataFilter

from ._convert import (
    Ids,
    Metadatas,
    check_score_key,
    copy_metadatas,
    documents_to_columns,
    hit_to_document,
)

# ------------------------------------------------------------ argument checks

ARGUMENT_HINTS: Mapping[str, str] = {
    "preprocess_func": (
        "LangChain community's preprocess_func is an argument of "
        "BM25Retriever.from_texts / from_documents, which build the index with it"
    ),
    "bm25_params": (
        "LangChain community's bm25_params is an argument of BM25Retriever.from_texts / "
        "from_documents (or spell it k1=..., b=..., method=..., delta=...)"
    ),
    "bm25_variant": "an argument of BM25Retriever.from_texts / from_documents",
    "c": "EnsembleRetriever's RRF constant c is called k_rrf here (default 60)",
    "id_key": (
        "id_key is not needed here: documents are identified by Document.id (set it on "
        "your documents; dedup='content' also merges equal texts under different ids); "
        "it is the parent-id metadata key of ParentDocumentRetriever and "
        "MultiVectorRetriever built over a LangChain vector store"
    ),
    "top_k": "the number of documents to return is k (top_n on rerankers)",
    "top_n": (
        "a retriever's number of documents to return is k, as on every retriever here "
        "(top_n is the compressors' spelling: CrossEncoderReranker, LLMRerankCompressor)"
    ),
    "search_kwargs": (
        "search_kwargs belongs to a vector store's as_retriever(); here pass k=, filter= "
        "(and fetch_k= where the class has it) directly"
    ),
    "child_retriever": (
        "the child store is vectorstore=, as in LangChain's ParentDocumentRetriever (a "
        "vector store, its as_retriever(), or any editable retriever)"
    ),
    "docs": "pass documents with from_documents(documents, ...) (or texts with from_texts)",
    "vectorizer": "BM25 needs no vectorizer; BM25 parameters are k1=, b=, method=, delta=",
    "weights_key": "weights are given as weights=[...] (or a callable of the query)",
}
"""Arguments of LangChain community classes with a different spelling here, and the hint."""


def check_arguments(cls: type, values: Any, hints: Mapping[str, str] = ARGUMENT_HINTS) -> Any:
    """Refuse constructor keywords that are not fields of ``cls``: `TypeError` naming each
    one with its community equivalent from ``hints``, else the nearest field name, and the
    accepted names (`check_keywords`, the one rule of every class here)."""
    if not isinstance(values, Mapping):
        return values
    check_keywords(cls.__name__, values, field_names(cls), hints)
    return values


def checks_keywords(also: Callable[[type], Iterable[str]] | None = None) -> Any:
    """Decorator of a method (``__init__``, or a factory under ``@classmethod``) of a
    class that is no pydantic model (or a factory of one): unknown keywords are refused
    before any work by `check_arguments`' rule (`keyword_checked`); ``also(cls)`` names
    what the method's ``**kwargs`` are handed to."""
    return keyword_checked(also, ARGUMENT_HINTS)


fields_factory = checks_keywords(field_names)
"""Decorator of a factory whose ``**kwargs`` are the class's fields (under
``@classmethod``): unknown keywords are refused before the index is built, with the
factory's own parameters among the suggestions."""


def refuse_unknown() -> Any:
    """A pydantic "before" model validator running `check_arguments` for its class."""
    def check(cls: type, values: Any) -> Any:
        return check_arguments(cls, values)
    return model_validator(mode="before")(classmethod(check))  # type: ignore[arg-type]


def count_validator(*fields: str, optional: bool = False) -> Any:
    """A pydantic "before" validator: each field is a count >= 1 (`check_k`, named by the
    field); ``None`` passes when ``optional`` (``fetch_k=None`` means "the default")."""
    def check(cls: type, value: Any, info: ValidationInfo) -> int | None:
        return None if optional and value is None else check_k(value, name=info.field_name)
    return field_validator(*fields, mode="before")(classmethod(check))  # type: ignore[arg-type]


def pop_options(kwargs: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """Remove the keys ``names`` from ``kwargs`` and return them (a part's options)."""
    return {name: kwargs.pop(name) for name in names if name in kwargs}


# --------------------------------------------- the caller's run configuration

# The RunnableConfig of the current invoke/ainvoke.
_CONFIG: ContextVar[RunnableConfig | None] = ContextVar("hybrid_retrievers_config", default=None)
# The config for model calls made inside the core (HyDE's generator, a child index).
_CHILD: ContextVar[RunnableConfig | None] = ContextVar("hybrid_retrievers_child", default=None)

_T = TypeVar("_T")


@contextmanager
def _set(var: ContextVar[_T], value: _T) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def current_config() -> RunnableConfig:
    """The config of the innermost `StrictRetriever` call in progress (or a default one)."""
    return _CONFIG.get() or ensure_config()


def child_config(run_manager: Any, tag: str | None = None) -> RunnableConfig:
    """The caller's config with callbacks that make a call a child run of ``run_manager``."""
    return patch_config(current_config(), callbacks=run_manager.get_child(tag=tag))


def core_calls_as_children(run_manager: Any) -> AbstractContextManager[None]:
    """A context in which LangChain models called from the core (which passes them no
    config) run as children of ``run_manager``: the wrappers read `core_call_config`."""
    return _set(_CHILD, child_config(run_manager))


def core_call_config() -> RunnableConfig | None:
    """The config for a LangChain call made from inside the core (see above)."""
    return _CHILD.get()


def check_call_options(retriever: BaseRetriever, options: Mapping[str, Any]) -> None:
    """Refuse ``invoke(query, **options)`` keywords that the retriever's
    ``_get_relevant_documents`` does not declare (`BaseRetriever.invoke` would drop them
    silently when it declares none, or fail with no hint), unless it takes ``**kwargs``."""
    search = type(retriever)._get_relevant_documents
    if not options or any(p.kind is inspect.Parameter.VAR_KEYWORD
                          for p in inspect.signature(search).parameters.values()):
        return
    check_keywords(f"{type(retriever).__name__}.invoke", options,
                   keyword_names(search) - {"query", "run_manager"}, ARGUMENT_HINTS)


class StrictRetriever(BaseRetriever):
    """`BaseRetriever` that refuses unknown arguments (to the constructor, and to
    ``invoke`` / ``ainvoke``) and remembers its run config."""

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid")

    _refuse_unknown = refuse_unknown()

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """`BaseRetriever.invoke`, remembering ``config`` for the child calls."""
        check_call_options(self, kwargs)
        with _set(_CONFIG, ensure_config(config)):
            return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """`BaseRetriever.ainvoke`, remembering ``config`` for the child calls."""
        check_call_options(self, kwargs)
        with _set(_CONFIG, ensure_config(config)):
            return await super().ainvoke(input, config, **kwargs)


Filter = MetadataFilter
"""A filter: a metadata mapping (every key must equal) or a predicate over `Doc`."""


class CoreRetriever(StrictRetriever):
    """A retriever over one core searcher: ``k`` / ``filter`` / ``score_key`` fields and
    their checks, per-call ``k=`` / ``filter=`` overrides (``None`` means "the field"), one
    path from core hits to new `Document` objects, and async (the searcher's ``asearch``
    when it has one, else a worker thread, so the event loop never runs the search).

    Subclasses declare the searcher field (``searcher`` by default; `IndexRetriever`
    uses ``index``) and add their constructors.
    """

    k: int = 4
    """Default number of documents to return (>= 1); override per call with ``k=``."""

    filter: Filter | None = None
    """Default filter applied before top-k: a mapping (every key must equal the
    document's metadata value) or a callable receiving a `hybrid_retrievers.Doc`
    and returning ``True`` to keep it. Override per call with ``filter=``."""

    score_key: str = "score"
    """Metadata key under which each returned `Document` carries its score."""

    core_field: ClassVar[str] = "searcher"
    child_runs: ClassVar[bool] = False
    """Whether the core's own LangChain calls (an LLM's, a child retriever's) are child
    runs of this retriever's run (`core_calls_as_children`)."""
    reserved_key: ClassVar[str | None] = None
    """Another metadata key the retriever writes (`_extra`), which ``score_key`` must not be."""

    _check_k = count_validator("k")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        return check_score_key(value, cls.reserved_key)

    def _core(self) -> Any:
        return getattr(self, self.core_field)

    def _resolve(self, k: int | None, filter: Filter | None) -> tuple[int, Filter | None]:
        """The per-call ``k`` and ``filter``, each the field's value when ``None``."""
        return (check_k(self.k if k is None else k, name="k"),
                self.filter if filter is None else filter)

    def _extra(self, hit: Hit) -> Mapping[str, Any] | None:
        """Metadata added to the returned document of ``hit``, after its score and rank."""
        return None

    def _documents(self, hits: Iterable[Hit]) -> list[Document]:
        return [hit_to_document(hit, self.score_key, self._extra(hit)) for hit in hits]

    def _search(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        top, where = self._resolve(k, filter)
        return self._documents(self._core().search(query, top, filter=where))

    async def _asearch(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        top, where = self._resolve(k, filter)
        asearch = getattr(self._core(), "asearch", None)
        if callable(asearch):
            return self._documents(await asearch(query, top, filter=where))
        return await asyncio.to_thread(self._search, query, top, where)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None,
    ) -> list[Document]:
        """Return up to ``k`` documents for ``query``, best first."""
        with self._runs(run_manager):
            return self._search(query, k, filter)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents` (see `_asearch`)."""
        with self._runs(run_manager):
            return await self._asearch(query, k, filter)

    def _runs(self, run_manager: Any) -> contextlib.AbstractContextManager[Any]:
        return core_calls_as_children(run_manager) if self.child_runs else contextlib.nullcontext()


class IndexRetriever(CoreRetriever):
    """A `CoreRetriever` over one editable core index (`BM25Index`, `VectorIndex`):
    editing and saving go to the index, so every retriever edits exactly like it."""

    index: Any
    core_field: ClassVar[str] = "index"

    @classmethod
    def from_documents(cls, documents: Iterable[Document], *args: Any, **kwargs: Any) -> Any:
        """`from_texts` over LangChain documents, keeping ``Document.id`` (content ids
        when ``None``, see `hybrid_retrievers.ids.content_id`) and metadata."""
        texts, ids, metadatas = documents_to_columns(documents)
        return cls.from_texts(texts, *args, metadatas=metadatas, ids=ids,  # type: ignore[attr-defined]
                              **kwargs)

    def add_documents(self, documents: Iterable[Document]) -> list[str]:
        """Add documents; returns their ids (``Document.id`` or content ids).

        Raises:
            ValueError: if an id is already indexed (nothing is added then).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return self.index.add(texts, ids=ids, metadatas=metadatas)  # type: ignore[no-any-return]

    def add_texts(self, texts: Iterable[str], metadatas: Metadatas = None,
                  ids: Ids = None) -> list[str]:
        """Add raw texts; returns the ids added (metadata is copied, nested values too)."""
        return self.index.add(  # type: ignore[no-any-return]
            texts, ids=ids, metadatas=copy_metadatas(metadatas))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove documents by id.

        Raises:
            KeyError: naming unknown ids (nothing is deleted then).
        """
        self.index.delete(ids)

    def save_local(self, folder_path: str | os.PathLike[str]) -> None:
        """Save the index to a folder in the core's format (`BM25Index.save` /
        `VectorIndex.save`: JSON + ``.npy``, no pickle, no model). Query-time settings
        (``k``, ``filter``, ``score_key``) are not saved: pass them to ``load_local``."""
        self.index.save(folder_path)


def _unwrap(runnable: Any) -> Any:
    """The retriever under ``with_config`` / ``bind`` / ``configurable_fields`` wrappers."""
    for _ in range(16):
        inner = getattr(runnable, "bound", None)  # RunnableBinding (with_config, bind)
        if inner is None:
            inner = getattr(runnable, "default", None)  # configurable_fields / _alternatives
        if inner is None or inner is runnable:
            return runnable
        runnable = inner
    return runnable


def accepts_k(retriever: Any, *, asynchronous: bool) -> bool:
    """Whether ``retriever.invoke(q, k=n)`` (``ainvoke`` when async) returns up to ``n``:
    true for a ``VectorStoreRetriever`` and for a `BaseRetriever` whose
    ``_get_relevant_documents`` (when async and overridden, ``_aget_relevant_documents``)
    declares ``k`` or ``**kwargs``, also behind ``with_config`` / ``bind`` /
    ``configurable_fields`` wrappers (which forward keyword arguments)."""
    from langchain_core.vectorstores import VectorStoreRetriever

    retriever = _unwrap(retriever)
    if isinstance(retriever, VectorStoreRetriever):
        return True
    if not isinstance(retriever, BaseRetriever):
        return False
    method = type(retriever)._get_relevant_documents
    if asynchronous and type(retriever)._aget_relevant_documents is not \
            BaseRetriever._aget_relevant_documents:
        method = type(retriever)._aget_relevant_documents
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return False
    return any(p.name == "k" or p.kind is inspect.Parameter.VAR_KEYWORD
               for p in params.values())
