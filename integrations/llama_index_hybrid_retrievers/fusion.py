"""LlamaIndex `FusionRetriever`: fuse any LlamaIndex retrievers with the core's fusion.

Planning (per-call weights, which children to ask), running and fusing are the core's
(`hybrid_retrievers.fusion.FusionPlan`, `CallRunner`); this module wraps each child as a
core searcher (`ChildSearcher`: its own `QueryBundle` copy, spans and callbacks nested),
turns fused hits back into the children's nodes by id, and persists a fusion of this
package's retrievers in the core's format (`hybrid_retrievers.fusion.saved`). Unlike
LlamaIndex's ``QueryFusionRetriever``: no LLM is needed, weights count in RRF mode too,
nodes are identified by ``node_id``, the caller's nodes and scores are never modified,
and every result says where it came from. `HybridRetriever` (BM25 + dense over the same
nodes, one core searcher) is in ``hybrid.py``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import NodeWithScore, QueryBundle

from hybrid_retrievers.fusion import DEFAULT_K_RRF, Dedup, FusionMode
from hybrid_retrievers.integration import (
    CallRunner,
    FusionPlan,
    Weights,
    check_k,
    check_names,
    check_weights_restorable,
    child_kind,
    fusion_settings,
    gather_calls,
    load_children,
    read_fusion,
    save_fusion,
)
from hybrid_retrievers.types import Hit, SparseEmbedder

from ._base import SimilarityTopK
from ._convert import (
    FUSION_KEY,
    QueryChecked,
    node_with_added_metadata,
    node_with_score_to_hit,
    type_error,
)
from ._editing import FusionEditing
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .hybrid import HybridRetriever
from .sparse import SparseRetriever

__all__ = ["FUSION_KEY", "FusionRetriever"]

# The saved settings the constructor takes (the LangChain adapter also writes its own).
_CONSTRUCTOR_KEYS = ("weights", "mode", "k_rrf", "names", "dedup")


class FusionRetriever(SimilarityTopK, QueryChecked, FusionEditing, BaseRetriever):
    """Fuse the rankings of several LlamaIndex retrievers into one (RRF by default).

    Each query goes to every child whose weight is positive, at the same time (threads
    carrying the caller's context, or gathered coroutines), so spans and callback traces
    nest under the fusion's. Each child gets its own copy of the `QueryBundle` and returns
    its own ``similarity_top_k`` candidates (see `ChildSearcher`); the core fuses
    the lists and cuts them to ``similarity_top_k``.

    Returned nodes: new `NodeWithScore` objects with the fused score and a **copy** of
    the best-ranked child node with the provenance (`hybrid_retrievers.fusion`) under
    ``metadata["fusion"]``, excluded from its LLM and embedding text.

    Args:
        retrievers: The children: any LlamaIndex `BaseRetriever` objects, in order.
        similarity_top_k: Number of fused nodes to return (>= 1; default
            ``QueryFusionRetriever``'s, LlamaIndex's ``DEFAULT_SIMILARITY_TOP_K``: 2).
        weights, mode, k_rrf, names, dedup: As for `hybrid_retrievers.FusionSearcher`
            (a child whose weight is 0 for a query is not called).
        retriever_weights, num_queries, use_async, llm, query_gen_prompt:
            ``QueryFusionRetriever``'s. ``retriever_weights`` are ``weights`` normalised
            to sum 1, as there; ``num_queries`` must be 1 (no generated queries: for
            more, an LLM writes them: use `HyDERetriever` or fuse retrievers over your
            own rewrites), so ``llm`` and ``query_gen_prompt`` go unused, as there;
            ``use_async`` changes nothing (children always run at the same time).
            Its ``mode`` names are taken too: ``"reciprocal_rerank"`` is RRF over its
            0-based ranks, ``1 / (60 + r0)``, which is ``k_rrf=59`` here (unless
            ``k_rrf`` is given), ignoring ``retriever_weights`` as there (``weights``
            count); ``"relative_score"`` and ``"dist_based_score"`` are the
            same formulas; ``"simple"`` (keep the highest score per text) is refused.
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
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float | None = None,
        names: Sequence[str] | None = None,
        dedup: Dedup | str = Dedup.ID,
        max_workers: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        retriever_weights: Sequence[float] | None = None,
        num_queries: int = 1,
        use_async: bool = True,
        llm: Any = None,
        query_gen_prompt: str | None = None,
    ) -> None:
        mode, k_rrf, weights = _query_fusion_arguments(mode, k_rrf, weights,
                                                        retriever_weights, num_queries)
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

    @property
    def plan(self) -> FusionPlan:
        """The fusion settings (``mode``, ``weights``, ``k_rrf``, ``dedup``), checked once
        at construction."""
        return self._plan

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save every child index and the fusion settings to one directory (no pickle).

        Children must be this package's BM25, dense, sparse, hybrid or fusion retrievers (else
        `TypeError`); models and a callable ``weights`` rule are not saved.
        """
        children = []
        for i, child in enumerate(self._retrievers):
            kind = child_kind(i, child, {"bm25": BM25Retriever, "vector": DenseRetriever,
                                         "sparse": SparseRetriever,
                                         "fusion": (FusionRetriever, HybridRetriever)},
                              "persist")
            # A core-index retriever persists its index in "index/" beside its node
            # fields; "index_dir" lets the core and the LangChain adapter load the index.
            extra = {"k": child.similarity_top_k}
            if not isinstance(child, FusionRetriever):
                extra["index_dir"] = "index"
            children.append((kind, child.persist, extra))
        save_fusion(persist_dir, children,
                    fusion_settings(self._plan, k=self._similarity_top_k))

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, embed_model: BaseEmbedding | Any = None,
        sparse_embed_model: SparseEmbedder | None = None, **kwargs: Any,
    ) -> FusionRetriever:
        """Load a retriever saved with `persist` (or the LangChain adapter's ``save_local``).

        ``embed_model`` is the dense children's model, ``sparse_embed_model`` the learned
        sparse children's; ``kwargs`` replace saved constructor arguments. `IndexFormatError` for a missing, corrupt or foreign one.
        """
        settings, entries = read_fusion(persist_dir)
        if settings.get("id_key") is not None:
            raise ValueError(
                f"{persist_dir}: saved by LangChain's FusionRetriever with id_key="
                f"{settings['id_key']!r:.60} (identity by that metadata field), which this "
                "FusionRetriever does not take; load it with langchain_hybrid_retrievers."
                "FusionRetriever.load_local")
        # A fusion child that keeps its index in "index/" is a persisted HybridRetriever.
        entries = [("hybrid" if kind == "fusion" and "index_dir" in child else kind, path, child)
                   for kind, path, child in entries]
        children = load_children(persist_dir, entries, {
            "bm25": lambda path, top: BM25Retriever.from_persist_dir(path, similarity_top_k=top),
            "vector": lambda path, top: DenseRetriever.from_persist_dir(
                path, embed_model=embed_model, similarity_top_k=top),
            "sparse": lambda path, top: SparseRetriever.from_persist_dir(
                path, sparse_embed_model=sparse_embed_model, similarity_top_k=top),
            "fusion": lambda path, top: FusionRetriever.from_persist_dir(
                path, embed_model=embed_model, sparse_embed_model=sparse_embed_model,
                similarity_top_k=top),
            "hybrid": lambda path, top: HybridRetriever.from_persist_dir(
                path, embed_model=embed_model, sparse_embed_model=sparse_embed_model,
                similarity_top_k=top),
        }, model=embed_model, model_arg="embed_model", method="from_persist_dir",
            sparse_model=sparse_embed_model, sparse_model_arg="sparse_embed_model")
        check_weights_restorable(settings, kwargs, persist_dir, "from_persist_dir")
        saved = {key: value for key, value in settings.items() if key in _CONSTRUCTOR_KEYS}
        saved["similarity_top_k"] = settings.get("k", DEFAULT_SIMILARITY_TOP_K)
        return cls(children, **{**saved, **kwargs})

    # ---------------------------------------------------------------- search

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        call, children = self._children(query_bundle)
        results = self._runner.run([c.search for c in children.values()], self._note(call))
        return _fused_nodes(self._plan.fuse(call, results), children)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        call, children = self._children(query_bundle)
        results = await gather_calls([c.asearch() for c in children.values()],
                                     self._note(call))
        return _fused_nodes(self._plan.fuse(call, results), children)

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



def _query_fusion_arguments(mode: Any, k_rrf: float | None, weights: Any,
                            retriever_weights: Sequence[float] | None,
                            num_queries: int) -> tuple[Any, float, Any]:
    """``(mode, k_rrf, weights)`` with QueryFusionRetriever's spellings resolved (see
    `FusionRetriever`'s Args)."""
    if num_queries != 1:
        raise ValueError(
            f"num_queries must be 1 here, got {num_queries!r}: generating queries needs an "
            "LLM; use HyDERetriever, or fuse retrievers over your own query rewrites")
    if retriever_weights is not None:
        if weights is not None:
            raise ValueError("pass weights= or retriever_weights= (QueryFusionRetriever's "
                             "name), not both")
        total = sum(retriever_weights)
        if not total > 0:
            raise ValueError(f"retriever_weights must have a positive sum, got "
                             f"{list(retriever_weights)!r:.80}")
        weights = [w / total for w in retriever_weights]
    if mode == "simple":
        raise ValueError("mode='simple' (QueryFusionRetriever's highest score per text) has "
                         "no equivalent here; use mode='rrf' or 'relative_score'")
    if mode == "reciprocal_rerank":  # 1 / (60 + 0-based rank) == 1 / (59 + 1-based rank)
        if retriever_weights is not None:
            weights = None  # QueryFusionRetriever's RRF ignores retriever_weights
        return FusionMode.RRF, 59.0 if k_rrf is None else k_rrf, weights
    return mode, DEFAULT_K_RRF if k_rrf is None else k_rrf, weights


# ------------------------------------------------------------ one child, one call


def copy_bundle(query_bundle: QueryBundle) -> QueryBundle:
    """A shallow copy, so a child that sets ``bundle.embedding`` changes only its own."""
    copied = dataclasses.replace(query_bundle)
    if query_bundle.custom_embedding_strs is not None:
        copied.custom_embedding_strs = list(query_bundle.custom_embedding_strs)
    return copied


class ChildSearcher:
    """``search()`` / ``asearch()`` over one LlamaIndex child, for one fusion call.

    A child is asked with ``retrieve`` / ``aretrieve`` on its own copy of the
    `QueryBundle` (spans and callback events nest under the fusion's; a child writing
    ``bundle.embedding`` changes only its copy) and its nodes are read by
    `node_with_score_to_hit`. It keeps the nodes it returned by id, so a fused hit goes
    back to the child's node by the provenance's ``(index, id)``.

    LlamaIndex retrievers have no per-call top-k: a child returns its own
    ``similarity_top_k`` nodes, so ``k`` is accepted and not passed on.
    """

    __slots__ = ("child", "bundle", "label", "nodes")

    def __init__(self, child: Any, query_bundle: QueryBundle, label: str) -> None:
        self.child = child
        self.bundle = copy_bundle(query_bundle)
        self.label = label
        self.nodes: dict[str, NodeWithScore] = {}  # node_id -> the first one returned

    def search(self, query: str = "", k: int | None = None) -> list[Hit]:
        return self._hits(self.child.retrieve(self.bundle))

    async def asearch(self, query: str = "", k: int | None = None) -> list[Hit]:
        return self._hits(await self.child.aretrieve(self.bundle))

    def _hits(self, nodes: Any) -> list[Hit]:
        if isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Sequence):
            raise TypeError(f"child {self.label} must return a list of NodeWithScore, got "
                            f"{type(nodes).__name__}")
        hits = [node_with_score_to_hit(nws, pos) for pos, nws in enumerate(nodes, 1)]
        for hit, nws in zip(hits, nodes):
            self.nodes.setdefault(hit.id, nws)
        return hits


def _fused_nodes(hits: Sequence[Hit],
                 children: Mapping[int, ChildSearcher]) -> list[NodeWithScore]:
    """New `NodeWithScore` objects for fused hits: a copy of the best-ranked child node
    (the first source at the hit's best rank) with the provenance under ``"fusion"``."""
    out = []
    for hit in hits:
        fusion = hit.explanation[FUSION_KEY]
        best = next(s for s in fusion["sources"] if s["rank"] == fusion["best_rank"])
        source = children[best["index"]].nodes[best["id"]].node
        node = node_with_added_metadata(source, {FUSION_KEY: fusion})
        out.append(NodeWithScore(node=node, score=float(hit.score)))
    return out
