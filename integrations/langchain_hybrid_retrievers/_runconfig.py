"""The caller's `RunnableConfig`, remembered for every child call.

``BaseRetriever`` hands ``_get_relevant_documents`` only a run manager, but children need
the whole config: `StrictRetriever.invoke` / ``ainvoke`` remember it in a context
variable, and `child_config` / `core_calls_as_children` derive the children's config
(the caller's ``configurable``, tags and metadata, callbacks under the retriever's run).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, patch_config
from pydantic import ConfigDict

from ._arguments import refuse_unknown

__all__ = ["StrictRetriever", "child_config", "core_call_config", "core_calls_as_children",
           "current_config"]

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


class StrictRetriever(BaseRetriever):
    """`BaseRetriever` that refuses unknown arguments and remembers its run config."""

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid")

    _refuse_unknown = refuse_unknown()

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """`BaseRetriever.invoke`, remembering ``config`` for the child calls."""
        with _set(_CONFIG, ensure_config(config)):
            return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """`BaseRetriever.ainvoke`, remembering ``config`` for the child calls."""
        with _set(_CONFIG, ensure_config(config)):
            return await super().ainvoke(input, config, **kwargs)
