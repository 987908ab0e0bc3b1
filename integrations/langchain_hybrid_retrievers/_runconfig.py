"""The caller's `RunnableConfig`, remembered for every child call.

BaseRetriever hands ``_get_relevant_documents`` only a run manager; children (child
retrievers, LLMs, compressors, models called from the core) need the whole config.
`StrictRetriever.invoke` / ``ainvoke`` remember it in a context variable, and
`child_config` / `core_calls_as_children` derive the children's config from it: the
caller's ``configurable``, ``max_concurrency``, tags and metadata, and callbacks that
make the call a child run of the retriever. `StrictRetriever` also refuses unknown
constructor arguments (`check_arguments`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, patch_config
from pydantic import ConfigDict, model_validator

from ._arguments import check_arguments

__all__ = ["StrictRetriever", "child_config", "core_call_config", "core_calls_as_children",
           "current_config"]

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
