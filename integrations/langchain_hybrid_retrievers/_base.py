"""What every LangChain retriever of this package shares: strict arguments and run config.

* `StrictRetriever` refuses unknown constructor arguments (LangChain's ``BaseRetriever``
  silently drops them), naming the equivalent here when the argument comes from a
  LangChain community class (`ARGUMENT_HINTS`).
* `StrictRetriever.invoke` / ``ainvoke`` remember the caller's `RunnableConfig`, so
  every child call (child retrievers, LLMs, compressors) can be made with
  `child_config`: the caller's ``configurable``, ``max_concurrency``, tags and metadata,
  and callbacks that make it a child run of this retriever.
* `accepts_k` is the one rule for "does ``invoke(q, k=n)`` set how many documents this
  retriever returns".
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, patch_config
from pydantic import ConfigDict, model_validator

__all__ = [
    "ARGUMENT_HINTS",
    "StrictRetriever",
    "accepts_k",
    "check_arguments",
    "child_config",
    "core_call_config",
    "core_calls_as_children",
    "current_config",
]

ARGUMENT_HINTS: Mapping[str, str] = {
    "preprocess_func": (
        "LangChain community's preprocess_func (a custom tokenizer) is not an argument "
        "here: pass analyzer=hybrid_retrievers.Analyzer(...) with the tokenizer hook "
        "instead, so the same tokenizer is saved and used for documents and queries"
    ),
    "bm25_params": (
        "LangChain community's bm25_params dict is spelled as separate arguments here: "
        "k1=..., b=... (and method=..., delta=...)"
    ),
    "c": "EnsembleRetriever's RRF constant c is called k_rrf here (default 60)",
    "id_key": (
        "id_key is not needed here: documents are identified by Document.id (set it on "
        "your documents; dedup='content' also merges equal texts under different ids), "
        "and ParentDocumentRetriever links each child to its parent under the metadata "
        "key 'parent_id' itself"
    ),
    "top_k": "the number of documents to return is k (top_n on rerankers)",
    "search_kwargs": (
        "search_kwargs belongs to a vector store's as_retriever(); here pass k=, filter= "
        "(and fetch_k= where the class has it) directly"
    ),
    "docs": "pass documents with from_documents(documents, ...) (or texts with from_texts)",
    "vectorizer": "BM25 needs no vectorizer; BM25 parameters are k1=, b=, method=, delta=",
    "weights_key": "weights are given as weights=[...] (or a callable of the query)",
}
"""Arguments of LangChain community classes with a different spelling here, and the hint."""


def check_arguments(cls: type, values: Any, hints: Mapping[str, str] = ARGUMENT_HINTS) -> Any:
    """Refuse constructor keywords that are not fields of ``cls`` (pydantic "before" step).

    Raises:
        TypeError: naming every unknown argument, the community equivalent when there is
            one, and the accepted names.
    """
    if not isinstance(values, Mapping):
        return values
    fields = getattr(cls, "model_fields", {})
    known = set(fields) | {f.alias for f in fields.values() if f.alias}
    unknown = [key for key in values if key not in known]
    if not unknown:
        return values
    parts = []
    for key in unknown:
        hint = hints.get(key)
        parts.append(f"{key!r} ({hint})" if hint else repr(key))
    raise TypeError(
        f"{cls.__name__} got unexpected argument(s) {', '.join(parts)}; accepted: "
        f"{', '.join(sorted(k for k in fields if not k.startswith('_')))}"
    )


# The RunnableConfig of the current invoke/ainvoke (BaseRetriever hands
# _get_relevant_documents only a run manager; children need the whole config).
_CONFIG: ContextVar[RunnableConfig | None] = ContextVar("hybrid_retrievers_config", default=None)
# The config for model calls made inside the core (HyDE's generator, a child index).
_CHILD: ContextVar[RunnableConfig | None] = ContextVar("hybrid_retrievers_child", default=None)


def current_config() -> RunnableConfig:
    """The config of the innermost `StrictRetriever` call in progress (or a default one)."""
    return _CONFIG.get() or ensure_config()


def child_config(run_manager: Any, tag: str | None = None) -> RunnableConfig:
    """The caller's config with callbacks that make a call a child run of ``run_manager``."""
    return patch_config(current_config(), callbacks=run_manager.get_child(tag=tag))


@contextmanager
def core_calls_as_children(run_manager: Any) -> Iterator[None]:
    """Within the block, LangChain models called from the core run as children.

    The core calls models (HyDE's generator, a LangChain child index) without any
    config; the wrappers read `core_call_config`, which this block sets.
    """
    token = _CHILD.set(child_config(run_manager))
    try:
        yield
    finally:
        _CHILD.reset(token)


def core_call_config() -> RunnableConfig | None:
    """The config for a LangChain call made from inside the core (see above)."""
    return _CHILD.get()


class StrictRetriever(BaseRetriever):
    """`BaseRetriever` that refuses unknown arguments and remembers its run config."""

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, values: Any) -> Any:
        return check_arguments(cls, values)

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """`BaseRetriever.invoke`, remembering ``config`` for the child calls."""
        token = _CONFIG.set(ensure_config(config))
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            _CONFIG.reset(token)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """`BaseRetriever.ainvoke`, remembering ``config`` for the child calls."""
        token = _CONFIG.set(ensure_config(config))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _CONFIG.reset(token)


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
    """Whether ``retriever.invoke(q, k=n)`` (``ainvoke`` when async) returns up to ``n``.

    True for a ``VectorStoreRetriever`` (its keyword arguments become search
    arguments) and for a `BaseRetriever` whose ``_get_relevant_documents`` (or, when
    async and overridden, ``_aget_relevant_documents``) declares ``k`` or ``**kwargs``;
    the same through ``with_config`` / ``bind`` / ``configurable_fields`` wrappers, which
    forward keyword arguments.
    """
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
