"""LangChain `FusionRetriever`: fuse any LangChain retrievers with the core's fusion.

Planning, running and fusing are the core's (`hybrid_retrievers.fusion.FusionPlan`,
`CallRunner`); this module wraps each child as a core searcher (``_fusion_child.py``)
and converts the fused hits. Unlike ``EnsembleRetriever``, documents are identified by
``Document.id``, sync children run concurrently too, the result is cut to ``k``, and
every result keeps its fused score and provenance.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import RetrieverLike
from pydantic import PrivateAttr, field_validator, model_validator

from hybrid_retrievers.fusion import (
    DEFAULT_K_RRF,
    CallRunner,
    Dedup,
    FusionCall,
    FusionMode,
    FusionPlan,
    gather_calls,
)
from hybrid_retrievers.fusion.plan import Weights
from hybrid_retrievers.types import Hit
from hybrid_retrievers.validation import check_k_rrf, parse_enum

from ._arguments import count_validator
from ._runconfig import StrictRetriever, current_config
from ._convert import FUSION_KEY, check_score_key
from ._fusion_child import child_label, children_for, fused_documents

__all__ = ["FusionRetriever", "HybridRetriever"]


class FusionRetriever(StrictRetriever):
    """Fuse the rankings of several LangChain retrievers into one (RRF by default).

    Each call asks every child whose weight is positive for ``fetch_k`` candidates, at the
    same time (threads carrying the LangChain context, at most ``max_concurrency``; async:
    ``asyncio.gather``), each as a child run tagged ``retriever_<n>`` as in
    ``EnsembleRetriever`` (see ``_fusion_child.py``), fuses the lists and returns the top
    ``k``: new documents (the best-ranked copy) with the fused score under ``score_key``,
    ``"rank"`` and the provenance under ``"fusion"`` (`hybrid_retrievers.fusion`).
    ``k``, ``weights``, ``mode`` and ``fetch_k`` can be overridden per call.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_hybrid_retrievers import BM25Retriever, FusionRetriever
        >>> docs = [Document(id="a", page_content="wing lift at low speed"),
        ...         Document(id="b", page_content="lift of a flat plate"),
        ...         Document(id="c", page_content="bread dough")]
        >>> fused = FusionRetriever(
        ...     retrievers=[BM25Retriever.from_documents(docs),
        ...                 BM25Retriever.from_documents(docs[1:])],
        ...     names=["all", "some"], k=2,
        ... )
        >>> [(d.id, d.metadata["rank"]) for d in fused.invoke("wing lift")]
        [('b', 1), ('a', 2)]
        >>> [s["source"] for s in fused.invoke("wing lift")[0].metadata["fusion"]["sources"]]
        ['all', 'some']
    """

    retrievers: list[RetrieverLike]
    """The children: LangChain retrievers (or runnables from a query to documents)."""
    k: int = 4
    """Default number of fused documents to return (>= 1); override per call with ``k=``."""

    weights: Weights | None = None
    """One weight per child, or a callable ``weights(query)`` (see `FusionSearcher`)."""

    mode: FusionMode | str = FusionMode.RRF
    """The `hybrid_retrievers.FusionMode` (``"rrf"``, ``"relative_score"``, ...)."""

    k_rrf: float = DEFAULT_K_RRF
    """The RRF constant (> 0), used by ``mode="rrf"``."""

    fetch_k: int | None = None
    """Candidates asked of each child; ``None``: ``max(k, 20)`` (`default_fetch_k`)."""

    pass_fetch_k: bool | None = None
    """Pass ``k=fetch_k`` to the children: ``None`` when they take it, else always/never."""

    names: list[str] | None = None
    """One unique name per child, the provenance's ``"source"`` (default: its index)."""

    dedup: Dedup | str = Dedup.ID
    """``"id"`` (same ``Document.id``) or ``"content"`` (also the same text), `Dedup`."""

    score_key: str = "score"
    """Metadata key of the fused score (also the first key read as a child's score)."""

    _runner: CallRunner | None = PrivateAttr(default=None)
    _plan_cache: tuple[Any, FusionPlan] | None = PrivateAttr(default=None)
    _accepts: dict[Any, Any] = PrivateAttr(default_factory=dict)  # accepts_k per child

    @field_validator("retrievers", mode="before")
    @classmethod
    def _check_retrievers(cls, value: Any) -> Any:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise TypeError("retrievers must be a list of LangChain retrievers, got "
                            f"{type(value).__name__}; wrap a single retriever in a list")
        if not value:
            raise ValueError("retrievers must hold at least one retriever, got an empty list")
        return list(value)

    _check_k = count_validator("k")
    _check_fetch_k = count_validator("fetch_k", optional=True)

    @field_validator("mode", "dedup", mode="before")
    @classmethod
    def _check_enum(cls, value: Any, info: Any) -> Any:
        return parse_enum(FusionMode if info.field_name == "mode" else Dedup, value,
                          info.field_name)

    @field_validator("k_rrf", mode="before")
    @classmethod
    def _check_k_rrf(cls, value: Any) -> float:
        return check_k_rrf(value, "k_rrf")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        check_score_key(value)
        if value == FUSION_KEY:
            raise ValueError(f"score_key must differ from {FUSION_KEY!r} (the provenance's "
                             f"metadata key), got {value!r}; use e.g. 'fused_score'")
        return value

    @model_validator(mode="after")
    def _check_plan(self) -> FusionRetriever:
        plan = self._plan()  # the core checks weights and names against the children
        if self.weights is not None and not callable(self.weights):
            self.weights = plan.weights
        return self

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None,
        weights: Weights | None = None, mode: FusionMode | str | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Invoke the children concurrently and return the fused top ``k``."""
        plan, call = self._resolve(query, k, weights, mode, fetch_k)
        config = current_config()
        children = children_for(self, call, run_manager, config, asynchronous=False)
        calls = [lambda c=c: c.search(query, call.fetch_k) for c in children]
        results = self._run(calls, call, config.get("max_concurrency"))
        return self._documents(plan.fuse(call, results))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, weights: Weights | None = None,
        mode: FusionMode | str | None = None, fetch_k: int | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: ``asyncio.gather`` of the children's ``ainvoke``."""
        plan, call = self._resolve(query, k, weights, mode, fetch_k)
        children = children_for(self, call, run_manager, current_config(), asynchronous=True)
        results = await gather_calls([c.asearch(query, call.fetch_k) for c in children],
                                     self._note(call))
        return self._documents(plan.fuse(call, results))

    def save_local(self, folder_path: str | os.PathLike[str]) -> None:
        """Save every child index (this package's BM25, dense or fusion retrievers, else
        `TypeError`) and the settings to one folder; models and a callable ``weights``
        rule are not saved (pass them to `load_local`)."""
        from ._saving import save_fusion_retriever

        save_fusion_retriever(self, folder_path)

    @classmethod
    def load_local(cls, folder_path: str | os.PathLike[str], embedding: Embeddings | Any = None,
                   **kwargs: Any) -> FusionRetriever:
        """Load a retriever saved with `save_local`; ``embedding`` is the dense children's
        model, ``**kwargs`` replace saved fields. `IndexFormatError` for a bad folder."""
        from ._saving import load_fusion_retriever

        return load_fusion_retriever(cls, folder_path, embedding, kwargs)

    def _plan(self) -> FusionPlan:
        """The core plan of the current fields (rebuilt only when a field changed)."""
        key = (len(self.retrievers), self.mode, self.weights, self.k_rrf, self.fetch_k,
               None if self.names is None else tuple(self.names), self.dedup)
        cached = self._plan_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        plan = FusionPlan(key[0], mode=self.mode, weights=self.weights, k_rrf=self.k_rrf,
                          fetch_k=self.fetch_k, names=self.names, dedup=self.dedup,
                          describe=functools.partial(child_label, self))
        self._plan_cache = (key, plan)
        return plan

    def _resolve(self, query: str, k: Any, weights: Any, mode: Any,
                 fetch_k: Any) -> tuple[FusionPlan, FusionCall]:
        plan = self._plan()
        return plan, plan.resolve(query, self.k if k is None else k, weights=weights,
                                  fetch_k=fetch_k, mode=mode)

    def _run(self, calls: list[Any], call: FusionCall, max_concurrency: int | None) -> list[Any]:
        runner = self._runner
        if runner is None or runner.max_workers != len(self.retrievers):
            runner = self._runner = CallRunner(size=len(self.retrievers),
                                               name="FusionRetriever")
        return runner.run(calls, self._note(call), max_workers=max_concurrency)

    def _note(self, call: FusionCall) -> Any:  # names a failing child in the exception
        return lambda j: f"FusionRetriever child {child_label(self, call.active[j])}"

    def _documents(self, hits: list[Hit]) -> list[Document]:
        return fused_documents(hits, self.score_key)


def __getattr__(name: str) -> Any:
    """``langchain_hybrid_retrievers.fusion.HybridRetriever`` (kept for compatibility)."""
    if name == "HybridRetriever":
        from .hybrid import HybridRetriever

        return HybridRetriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
