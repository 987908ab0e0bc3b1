"""LlamaIndex `FusionRetriever`: fuse any LlamaIndex retrievers with the core's fusion.

Planning (per-call weights, which children to ask), running and fusing are the core's
(`hybrid_retrievers.fusion.FusionPlan`, `CallRunner`); this module wraps each child as a
core searcher (`ChildSearcher`: its own `QueryBundle` copy, spans and callbacks nested),
turns fused hits back into the children's nodes by id, and persists a fusion of this
package's retrievers in the core's format (`hybrid_retrievers.fusion.saving`). With
``num_queries > 1`` an LLM writes query variants (`hybrid_retrievers.fusion.variants`),
each searched by every child, all lists fused (`FusionPlan.fuse_queries`), as LlamaIndex's
``QueryFusionRetriever`` does. Unlike there: no LLM is needed for one query, nodes are
identified by ``node_id``, the caller's nodes and scores are never modified, a hung LLM
is cut off by ``timeout`` (the original query is then searched alone), and every result
says where it came from. `HybridRetriever` (BM25 + dense over the same
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
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import NodeWithScore, QueryBundle

from hybrid_retrievers.fusion import (
    DEFAULT_K_RRF,
    DEFAULT_QUERY_GEN_PROMPT,
    Dedup,
    FusionMode,
    QueryVariants,
    agenerate_query_variants,
    check_query_prompt,
    fuse,
    generate_query_variants,
)
from hybrid_retrievers.integration import (
    DEFAULT_LLM_TIMEOUT,
    CallRunner,
    FusionPlan,
    Weights,
    check_k,
    check_names,
    check_timeout,
    check_weights_restorable,
    child_kind,
    fusion_settings,
    gather_calls,
    load_children,
    read_fusion,
    save_fusion,
)
from hybrid_retrievers.types import Hit, SparseEmbedder

from ._base import SimilarityTopK, checks_keywords, constructor_factory
from ._convert import (
    FUSION_KEY,
    QueryChecked,
    node_with_added_metadata,
    node_with_score_to_hit,
    type_error,
)
from ._editing import FusionEditing
from ._llm import as_text_generator
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

    Query variants (``num_queries > 1``, QueryFusionRetriever's core feature): the LLM
    (``llm``, else ``Settings.llm``) is asked once per query, with ``query_gen_prompt``,
    for ``num_queries - 1`` more queries (``complete`` in ``retrieve``, ``acomplete`` in
    ``aretrieve``), waiting at most ``timeout`` seconds; every child then answers the
    original and each generated query, and all those lists are fused (each with its
    child's weight). If the LLM fails, hangs or writes nothing usable, the original
    query is searched alone (a warning is logged). Either way each fused node's
    provenance holds ``"queries"`` (``original``, ``generated``, ``fallback``,
    ``error``) and each source its ``"query"``.

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
            to sum 1, as there. ``num_queries``: the queries searched, the original
            included (default: 4 when ``llm`` is given, as there, else 1: no LLM is
            needed to fuse retrievers); ``query_gen_prompt``: a ``str.format``
            template with ``{num_queries}`` (how many to write: ``num_queries - 1``)
            and ``{query}`` (default: `DEFAULT_QUERY_GEN_PROMPT`, the original's
            request in this package's words); ``use_async`` changes nothing (children
            always run at the same time). Its ``mode`` names are taken too:
            ``"reciprocal_rerank"`` is RRF over its 0-based ranks with each list
            weighted by its retriever's normalised weight, ``w / (60 + r0)`` (default
            ``w = 1 / len(retrievers)``), as llama-index-core's newest version: that is
            ``k_rrf=59`` here (unless ``k_rrf`` is given); ``"relative_score"`` and
            ``"dist_based_score"`` are the same formulas; ``"simple"`` (keep the
            highest score per text) is refused.
        timeout: Seconds to wait for the LLM's query variants (``None``: no limit).
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

    @checks_keywords()
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
        num_queries: int | None = None,
        use_async: bool = True,
        llm: Any = None,
        query_gen_prompt: str | None = None,
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
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
        mode, k_rrf, weights = _query_fusion_arguments(mode, k_rrf, weights,
                                                        retriever_weights, n)
        self._num_queries = (4 if llm is not None else 1) if num_queries is None \
            else check_k(num_queries, "num_queries")
        self.query_gen_prompt = check_query_prompt(
            DEFAULT_QUERY_GEN_PROMPT if query_gen_prompt is None else query_gen_prompt)
        self.use_async = use_async
        self._timeout = check_timeout(timeout)
        self._llm = _query_llm(llm, callback_manager) if self._num_queries > 1 else llm
        self._generate = as_text_generator(self._llm) if self._num_queries > 1 else None
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
    def num_queries(self) -> int:
        """The queries searched per call, the original included (1: no LLM is asked)."""
        return self._num_queries

    @property
    def plan(self) -> FusionPlan:
        """The fusion settings (``mode``, ``weights``, ``k_rrf``, ``dedup``), checked once
        at construction."""
        return self._plan

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save every child index and the fusion settings to one directory (no pickle).

        Children must be this package's BM25, dense, sparse, hybrid or fusion retrievers (else
        `TypeError`); models, a callable ``weights`` rule and the query-variant settings
        (``llm``, ``num_queries``, ``query_gen_prompt``, ``timeout``) are not saved:
        pass them to `from_persist_dir`.
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
    @constructor_factory
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
        variants = self._variants(query_bundle.query_str) if self._num_queries > 1 else None
        call, children = self._children(query_bundle, variants)
        results = self._runner.run([c.search for c in children.values()],
                                   self._note(children))
        return self._fused(call, children, results, variants)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        variants = None
        if self._num_queries > 1:
            variants = await self._avariants(query_bundle.query_str)
        call, children = self._children(query_bundle, variants)
        results = await gather_calls([c.asearch() for c in children.values()],
                                     self._note(children))
        return self._fused(call, children, results, variants)

    # --------------------------------------------------------- query variants

    def _get_prompts(self) -> dict[str, Any]:
        """QueryFusionRetriever's prompt key: ``query_gen_prompt``."""
        return {"query_gen_prompt": PromptTemplate(self.query_gen_prompt)}

    def _update_prompts(self, prompts: Mapping[str, Any]) -> None:
        if "query_gen_prompt" in prompts:
            prompt = prompts["query_gen_prompt"]
            self.query_gen_prompt = check_query_prompt(getattr(prompt, "template", prompt))

    def _variants(self, query: str) -> QueryVariants:
        """The call's `QueryVariants`, the LLM asked with ``complete``."""
        if not query.strip():
            return _no_variants(query)
        return self._printed(generate_query_variants(
            self._generate, query, self._num_queries - 1, prompt=self.query_gen_prompt,
            timeout=self._timeout))

    async def _avariants(self, query: str) -> QueryVariants:
        """Async `_variants`: the LLM asked with ``acomplete``."""
        if not query.strip():
            return _no_variants(query)
        return self._printed(await agenerate_query_variants(
            self._generate, query, self._num_queries - 1, prompt=self.query_gen_prompt,
            timeout=self._timeout))

    def _printed(self, variants: QueryVariants) -> QueryVariants:
        if self._verbose:  # as QueryFusionRetriever prints them
            print("Generated queries:\n" + "\n".join(variants.generated))
        return variants

    # ---------------------------------------------------------------- fusing

    def _children(self, query_bundle: QueryBundle, variants: QueryVariants | None,
                  ) -> tuple[Any, dict[tuple[int, int], ChildSearcher]]:
        """The call's plan, and each (query, active child) as a searcher, keyed by
        ``(query index, child index)``: query 0 is the caller's bundle, the others the
        generated queries' own bundles."""
        call = self._plan.resolve(query_bundle.query_str, self._similarity_top_k, check=False)
        bundles = [query_bundle]
        if variants is not None:
            bundles += [QueryBundle(q) for q in variants.generated]
        return call, {(j, i): ChildSearcher(self._retrievers[i], bundle, self._label(i))
                      for j, bundle in enumerate(bundles) for i in call.active}

    def _fused(self, call: Any, children: Mapping[tuple[int, int], ChildSearcher],
               results: Sequence[Any], variants: QueryVariants | None) -> list[NodeWithScore]:
        if variants is None:
            return _fused_nodes(self._plan.fuse(call, results), children)
        per_query = len(call.active)
        answers = [results[j:j + per_query] for j in range(0, len(results), per_query)]
        hits = self._plan.fuse_queries(call, answers, variants.queries)
        for hit in hits:
            hit.explanation[FUSION_KEY]["queries"] = variants.as_dict()
        return _fused_nodes(hits, children)

    def _reciprocal_rerank_fusion(
        self, results: Mapping[tuple[str, int], Sequence[NodeWithScore]],
    ) -> list[NodeWithScore]:
        """QueryFusionRetriever's RRF step over lists you already have, kept for code
        that calls it: ``results[(query, i)]`` is retriever ``i``'s answer to ``query``;
        each list is sorted by score (as there), weighted by retriever ``i``'s weight
        and fused by the core with this retriever's ``k_rrf``. Unlike there, nodes are
        identified by ``node_id`` and the given ones are not modified: the result is
        new `NodeWithScore` objects (the best-ranked copy's node, the fused score)."""
        keys = list(results)
        lists = [sorted(results[key], key=lambda n: n.score or 0.0, reverse=True)
                 for key in keys]
        weights = [self._plan.weights_for(query)[i] for query, i in keys]
        rankings = [[node_with_score_to_hit(n, pos) for pos, n in enumerate(nodes, 1)]
                    for nodes in lists]
        hits = fuse(rankings, FusionMode.RRF, weights=weights, k_rrf=self._plan.k_rrf,
                    dedup=self._plan.dedup)
        out = []
        for hit in hits:
            best = next(s for s in hit.explanation[FUSION_KEY]["sources"]
                        if s["rank"] == hit.explanation[FUSION_KEY]["best_rank"])
            node = lists[best["index"]][best["rank"] - 1].node
            out.append(NodeWithScore(node=node, score=float(hit.score)))
        return out

    def _label(self, i: int) -> str:
        name = f" ({self._names[i]!r})" if self._names is not None else ""
        return f"retrievers[{i}]{name}, {type(self._retrievers[i]).__name__}"

    def _note(self, children: Mapping[tuple[int, int], ChildSearcher]) -> Any:
        """Names a failing child in the exception (and its query, for a variant)."""
        keys = list(children)

        def note(j: int) -> str:
            query, i = keys[j]
            variant = f" (generated query {query})" if query else ""
            return f"FusionRetriever child {self._label(i)}{variant}"
        return note



def _query_fusion_arguments(mode: Any, k_rrf: float | None, weights: Any,
                            retriever_weights: Sequence[float] | None,
                            size: int) -> tuple[Any, float, Any]:
    """``(mode, k_rrf, weights)`` with QueryFusionRetriever's spellings resolved (see
    `FusionRetriever`'s Args) for ``size`` children."""
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
    if mode == "reciprocal_rerank":  # w / (60 + 0-based rank) == w / (59 + 1-based rank)
        if weights is None:  # its default retriever_weights: 1 / n each
            weights = [1.0 / size] * size
        return FusionMode.RRF, 59.0 if k_rrf is None else k_rrf, weights
    return mode, DEFAULT_K_RRF if k_rrf is None else k_rrf, weights


def _no_variants(query: str) -> QueryVariants:
    """A blank query (a bundle with a precomputed embedding) has nothing to rewrite."""
    return QueryVariants(query, fallback=True, error="a blank query has no variants")


def _query_llm(llm: Any, callback_manager: CallbackManager | None) -> Any:
    """The LLM that writes query variants: ``llm`` (resolved as QueryFusionRetriever
    resolves it), else ``Settings.llm``; a plain callable ``prompt -> str`` as it is."""
    from llama_index.core.llms.utils import resolve_llm
    from llama_index.core.settings import Settings

    if llm is None:
        try:
            return Settings.llm
        except Exception as exc:
            raise ValueError(
                "num_queries > 1 needs an LLM to write the query variants: pass llm= or set "
                f"Settings.llm (Settings.llm failed: {type(exc).__name__}: {exc!s:.200})"
            ) from exc
    if isinstance(llm, str) or callable(getattr(llm, "complete", None)):
        return resolve_llm(llm, callback_manager=callback_manager)
    return llm


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
                 children: Mapping[tuple[int, int], ChildSearcher]) -> list[NodeWithScore]:
    """New `NodeWithScore` objects for fused hits: a copy of the best-ranked child node
    (the first source at the hit's best rank, by its query and child) with the
    provenance under ``"fusion"``."""
    out = []
    for hit in hits:
        fusion = hit.explanation[FUSION_KEY]
        best = next(s for s in fusion["sources"] if s["rank"] == fusion["best_rank"])
        child = children[best.get("query_index", 0), best["index"]]
        source = child.nodes[best["id"]].node
        node = node_with_added_metadata(source, {FUSION_KEY: fusion})
        out.append(NodeWithScore(node=node, score=float(hit.score)))
    return out
