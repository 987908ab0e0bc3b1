"""What every LangChain retriever of this package shares: the core-adapter contract.

Adapters convert types, map parameter names, wire run config and async, and delegate
to the core. Written once here: `CoreRetriever`, `IndexRetriever` and `accepts_k`; the
run-config helpers live in ``_runconfig`` and the argument checks in ``_arguments``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import field_validator

from hybrid_retrievers.integration import check_k
from hybrid_retrievers.types import Hit, MetadataFilter

from ._arguments import count_validator
from ._convert import (
    Ids,
    Metadatas,
    check_score_key,
    copy_metadatas,
    documents_to_columns,
    hit_to_document,
)
from ._runconfig import StrictRetriever, core_calls_as_children

__all__ = ["CoreRetriever", "Filter", "IndexRetriever", "accepts_k"]


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
