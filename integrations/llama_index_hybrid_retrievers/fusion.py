"""LlamaIndex `FusionRetriever`: fuse any LlamaIndex retrievers with the core's fusion.

Planning (per-call weights, which children to ask), running and fusing are the core's
(`hybrid_retrievers.fusion.FusionPlan`, `CallRunner`); this module wraps each child as a
core searcher (``_fusion_child.py``: its own `QueryBundle` copy, spans and callbacks
nested) and turns fused hits back into the children's nodes by id. Unlike LlamaIndex's
``QueryFusionRetriever``: no LLM is needed, weights count in RRF mode too, nodes are
identified by ``node_id``, the caller's nodes and scores are never modified, and every
result says where it came from. `HybridRetriever` (BM25 + dense) is in ``hybrid.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from hybrid_retrievers.fusion import (
    DEFAULT_K_RRF,
    CallRunner,
    Dedup,
    FusionMode,
    FusionPlan,
    gather_calls,
)
from hybrid_retrievers.fusion.plan import Weights
from hybrid_retrievers.fusion.settings import PlanSettings
from hybrid_retrievers.validation import check_k, check_names

from ._base import SimilarityTopK
from ._convert import FUSION_KEY, QueryChecked, type_error
from ._editing import FusionEditing
from ._fusion_child import ChildSearcher, fused_nodes

__all__ = ["FUSION_KEY", "FusionRetriever", "HybridRetriever"]


class FusionRetriever(PlanSettings, SimilarityTopK, QueryChecked, FusionEditing, BaseRetriever):
    """Fuse the rankings of several LlamaIndex retrievers into one (RRF by default).

    Each query goes to every child whose weight is positive, at the same time (threads
    carrying the caller's context, or gathered coroutines), so spans and callback traces
    nest under the fusion's. Each child gets its own copy of the `QueryBundle` and returns
    its own ``similarity_top_k`` candidates (see ``_fusion_child.py``); the core fuses
    the lists and cuts them to ``similarity_top_k``.

    Returned nodes: new `NodeWithScore` objects with the fused score and a **copy** of
    the best-ranked child node with the provenance (`hybrid_retrievers.fusion`) under
    ``metadata["fusion"]``, excluded from its LLM and embedding text.

    Args:
        retrievers: The children: any LlamaIndex `BaseRetriever` objects, in order.
        similarity_top_k: Number of fused nodes to return (>= 1).
        weights, mode, k_rrf, names, dedup: As for `hybrid_retrievers.FusionSearcher`
            (a child whose weight is 0 for a query is not called).
        max_workers: Children run at the same time in ``retrieve``, at most (default:
            all; 1 runs them one after another in the calling thread).
        callback_manager, verbose: As for LlamaIndex's `BaseRetriever`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index_hybrid_retrievers import BM25Retriever, FusionRetriever
        >>> nodes = [TextNode(id_="a", text="wing lift at low speed"),
        ...          TextNode(id_="b", text="lift of a flat plate"),
        ...          TextNode(id_="c", text="bread dough")]
        >>> fused = FusionRetriever(
        ...     [BM25Retriever.from_defaults(nodes=nodes),
        ...      BM25Retriever.from_defaults(nodes=nodes[1:])],
        ...     names=["all", "some"], similarity_top_k=2,
        ... )
        >>> results = fused.retrieve("wing lift")
        >>> [n.node.node_id for n in results]
        ['b', 'a']
        >>> [s["source"] for s in results[0].node.metadata["fusion"]["sources"]]
        ['all', 'some']
    """

    def __init__(
        self,
        retrievers: Sequence[BaseRetriever],
        *,
        similarity_top_k: int = 4,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        names: Sequence[str] | None = None,
        dedup: Dedup | str = Dedup.ID,
        max_workers: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if isinstance(retrievers, (str, bytes, Mapping, BaseRetriever)) or not isinstance(
            retrievers, Sequence
        ):
            raise TypeError(
                "retrievers must be a list of llama_index retrievers, got "
                f"{type(retrievers).__name__}; wrap a single retriever in a list"
            )
        children = tuple(retrievers)
        if not children:
            raise ValueError("retrievers must hold at least one retriever, got an empty list")
        for i, child in enumerate(children):
            if not isinstance(child, BaseRetriever):
                raise type_error(f"retrievers[{i}] must be a llama_index BaseRetriever", child)
        n = len(children)
        self._retrievers = children
        self.similarity_top_k = similarity_top_k
        self._names = None if names is None else check_names(names, n)
        self._plan = FusionPlan(n, mode=mode, weights=weights, k_rrf=k_rrf, names=self._names,
                                dedup=dedup, describe=self._label)
        self._max_workers = n if max_workers is None else check_k(max_workers, "max_workers")
        self._runner = CallRunner(self._max_workers, size=n, name="FusionRetriever")
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    # ------------------------------------------------------------ properties

    @property
    def retrievers(self) -> tuple[BaseRetriever, ...]:
        """The children, in order."""
        return self._retrievers

    @property
    def names(self) -> tuple[str, ...] | None:
        """The children's names as given (``None``: their indexes)."""
        return self._names

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save every child index and the fusion settings to one directory (no pickle).

        Children must be this package's BM25, dense or fusion retrievers (else
        `TypeError`); models and a callable ``weights`` rule are not saved.
        """
        from ._saving import persist_fusion_retriever

        persist_fusion_retriever(self, persist_dir)

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, embed_model: BaseEmbedding | Any = None,
        **kwargs: Any,
    ) -> FusionRetriever:
        """Load a retriever saved with `persist` (or the LangChain adapter's ``save_local``).

        ``embed_model`` is the dense children's model; ``kwargs`` replace saved
        constructor arguments. `IndexFormatError` for a missing, corrupt or foreign one.
        """
        from ._saving import load_fusion_retriever

        return load_fusion_retriever(cls, persist_dir, embed_model, kwargs)

    # ---------------------------------------------------------------- search

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        call, children = self._children(query_bundle)
        results = self._runner.run([c.search for c in children.values()], self._note(call))
        return fused_nodes(self._plan.fuse(call, results), children)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        call, children = self._children(query_bundle)
        results = await gather_calls([c.asearch() for c in children.values()],
                                     self._note(call))
        return fused_nodes(self._plan.fuse(call, results), children)

    def _children(self, query_bundle: QueryBundle) -> tuple[Any, dict[int, ChildSearcher]]:
        """The call's plan, and each active child as a searcher (by child index)."""
        call = self._plan.resolve(query_bundle.query_str, self._similarity_top_k, check=False)
        return call, {i: ChildSearcher(self._retrievers[i], query_bundle, self._label(i))
                      for i in call.active}

    def _label(self, i: int) -> str:
        name = f" ({self._names[i]!r})" if self._names is not None else ""
        return f"retrievers[{i}]{name}, {type(self._retrievers[i]).__name__}"

    def _note(self, call: Any) -> Any:  # names a failing child in the exception
        return lambda j: f"FusionRetriever child {self._label(call.active[j])}"


def __getattr__(name: str) -> Any:
    """``llama_index_hybrid_retrievers.fusion.HybridRetriever`` (kept for compatibility)."""
    if name == "HybridRetriever":
        from .hybrid import HybridRetriever

        return HybridRetriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
