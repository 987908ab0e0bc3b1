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
    DEFAULT_K_RRF, CallRunner, Dedup, FusionMode, FusionPlan, gather_calls,
)
from hybrid_retrievers.fusion.plan import Weights
from hybrid_retrievers.validation import check_k, check_names

from ._base import SimilarityTopK
from ._convert import FUSION_KEY
from ._fusion_child import ChildSearcher, fused_nodes
from ._fusion_editing import FusionEditing
from ._query import QueryChecked

__all__ = ["FUSION_KEY", "FusionRetriever", "HybridRetriever"]


class FusionRetriever(SimilarityTopK, QueryChecked, FusionEditing, BaseRetriever):
    """Fuse the rankings of several LlamaIndex retrievers into one (RRF by default).

    Each query goes to every child whose weight is positive, at the same time: in
    ``retrieve`` the first child runs in the calling thread and the others in worker
    threads that carry the caller's context (so LlamaIndex instrumentation spans and
    callback traces nest under the fusion's); in ``aretrieve`` the children's
    ``aretrieve`` coroutines are gathered. Each child receives its own copy of the
    `QueryBundle` (LlamaIndex's vector retriever writes the query embedding into the
    bundle it gets, which must not leak into a sibling using another model, nor into
    the caller's bundle). The core fuses the lists and cuts them to ``similarity_top_k``.

    How many candidates each child returns is the child's own ``similarity_top_k``
    (LlamaIndex retrievers have no per-call top-k); give each child the depth fusion
    should see (`HybridRetriever` uses ``max(similarity_top_k, 20)``).

    Reading the children's answers (`node_with_score_to_hit`): identity is
    ``node.node_id``, the score is ``NodeWithScore.score`` and the rank its position.
    Scores are not needed for ``mode="rrf"``; the score modes raise a clear error for a
    child that returns a node without a score.

    Returned nodes: new `NodeWithScore` objects with the fused score and a **copy** of
    the best-ranked child node (same ``node_id``, text and relationships) carrying the
    provenance (documented in `hybrid_retrievers.fusion`) under ``metadata["fusion"]``,
    a key excluded from the copy's LLM and embedding text. The children's nodes are not
    modified; a nested `FusionRetriever`'s provenance is kept as that source's
    ``explanation``.

    Args:
        retrievers: The children: any LlamaIndex `BaseRetriever` objects, in order.
        similarity_top_k: Number of fused nodes to return (>= 1).
        weights: One weight (>= 0, at least one > 0) per child, or a callable
            ``weights(query_str) -> sequence`` such as
            `hybrid_retrievers.lexical_boost_rule`; a child whose weight is 0 for a
            query is not called. ``None``: all 1.
        mode: A `hybrid_retrievers.FusionMode` or its value (``"rrf"``,
            ``"relative_score"``, ``"dist_based_score"``, ``"zscore"``, ``"raw"``,
            ``"mean"``, ``"combsum"``, ``"combmnz"``).
        k_rrf: The RRF constant (> 0), ``mode="rrf"`` only.
        names: One unique name per child, reported as ``"source"`` in the provenance
            (default: the child's 0-based index).
        dedup: ``"id"`` or ``"content"`` (also merge equal normalised texts).
        max_workers: Children run at the same time in ``retrieve``, at most (default:
            all; 1 runs them one after another in the calling thread).
        callback_manager: LlamaIndex callback manager.
        verbose: Passed to LlamaIndex's `BaseRetriever`.

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
                raise TypeError(
                    f"retrievers[{i}] must be a llama_index BaseRetriever, got "
                    f"{type(child).__name__}: {child!r:.80}"
                )
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
    def weights(self) -> Weights | None:
        """The weights as given (a tuple, a callable, or ``None`` for all 1)."""
        return self._plan.weights

    @property
    def mode(self) -> FusionMode:
        return self._plan.mode

    @property
    def k_rrf(self) -> float:
        return self._plan.k_rrf

    @property
    def names(self) -> tuple[str, ...] | None:
        return self._names

    @property
    def dedup(self) -> Dedup:
        return self._plan.dedup

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save every child index and the fusion settings to one directory (no pickle).

        Works when every child is this package's `BM25Retriever`, `DenseRetriever` or
        `FusionRetriever` (so every `HybridRetriever`); any other child raises
        `TypeError`. Models are not saved: pass ``embed_model`` to `from_persist_dir`.
        A callable ``weights`` rule is not saved either (pass it back on load).
        """
        from ._saving import persist_fusion_retriever

        persist_fusion_retriever(self, persist_dir)

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, embed_model: BaseEmbedding | Any = None,
        **kwargs: Any,
    ) -> FusionRetriever:
        """Load a retriever saved with `persist` (or the LangChain adapter's ``save_local``).

        Args:
            persist_dir: The directory written by `persist`.
            embed_model: The model the dense children were built with (required when
                there is one).
            **kwargs: Constructor arguments that replace the saved ones
                (``similarity_top_k``, ``weights``, ``callback_manager``...).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: a missing, corrupt or
                foreign directory.
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
