"""FusionPlan: the one place a fusion call's settings are resolved and its lists fused.

A fusion call has the same steps wherever it runs (`FusionSearcher`, the LangChain and
LlamaIndex ``FusionRetriever``): take the per-call ``k`` / ``weights`` / ``mode`` /
``fetch_k`` (``None`` means "the plan's own"), evaluate a callable weight rule on the
query, ask only the children whose weight is positive for ``fetch_k`` candidates, check
what they returned and fuse the lists. `FusionPlan` holds the validated settings and
does every step but running the children, which is the caller's (`FusionSearcher` calls
core searchers; an adapter calls framework retrievers with their callbacks), usually
through `hybrid_retrievers.fusion.concurrency`:

    >>> from hybrid_retrievers.types import Doc, Hit
    >>> plan = FusionPlan(2, names=["bm25", "dense"], weights=[1.0, 0.0])
    >>> call = plan.resolve("wing lift", k=3)
    >>> call.active, call.fetch_k
    ((0,), 20)
    >>> hits = plan.fuse(call, [[Hit(Doc("a", ""), 2.0, 1)]])
    >>> [(h.id, h.explanation["fusion"]["sources"][0]["source"]) for h in hits]
    [('a', 'bm25')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..types import Hit
from ..validation import check_k, check_k_rrf, check_names, check_query, check_weights, parse_enum
from .candidates import Dedup
from .modes import FusionMode, _fuse
from .rank import DEFAULT_K_RRF

__all__ = ["DEFAULT_MIN_FETCH_K", "FusionCall", "FusionPlan", "Weights", "default_fetch_k"]

Weights = Sequence[float] | Callable[[str], Sequence[float]]
"""One weight per child, or a rule ``weights(query) -> sequence`` (see `lexical_boost_rule`)."""

DEFAULT_MIN_FETCH_K = 20
"""With ``fetch_k=None`` each child is asked for ``max(k, DEFAULT_MIN_FETCH_K)`` hits."""


def default_fetch_k(k: int) -> int:
    """Candidates asked of each child for a final top ``k``: ``max(k, 20)``.

    Fusion can only promote a document some child returned, so a child's list should
    reach below the final cut (a document 15th in both lists outscores, under RRF, any
    document that only one list has). LangChain's EnsembleRetriever asks each child for
    its own ``k``. Measured on Cranfield and CISI with BM25 + MiniLM and RRF
    (``benchmarks/fusion_quality.py``, final top 10): Cranfield nDCG@10 rises from
    0.413 (10 candidates) to 0.415 (20) and 0.420 (30+); CISI falls from 0.454 (10)
    to 0.453 (20) and 0.441 (100): deeper lists let documents that are mediocre in
    both lists crowd out ones that a single list ranks high. 20 is the best average of
    the two, and asking a BM25 or exact dense search for 20 instead of 10 costs almost
    nothing (both scan the same postings or vectors; only the final sort grows).
    """
    return max(k, DEFAULT_MIN_FETCH_K)


class FusionCall:
    """One call's resolved settings: what to ask of whom, and how to fuse the answers."""

    __slots__ = ("query", "k", "mode", "weights", "active", "fetch_k")

    def __init__(self, query: str, k: int, mode: FusionMode, weights: tuple[float, ...],
                 active: tuple[int, ...], fetch_k: int) -> None:
        self.query = query
        self.k = k  # the final top-k
        self.mode = mode
        self.weights = weights  # one per child; 0 = not asked
        self.active = active  # the children to ask, in order
        self.fetch_k = fetch_k  # candidates asked of each

    def __repr__(self) -> str:
        return (f"FusionCall(k={self.k}, mode={self.mode.value!r}, weights={self.weights}, "
                f"active={self.active}, fetch_k={self.fetch_k})")


class FusionPlan:
    """The validated fusion settings of ``size`` children, and each call's resolution.

    Args:
        size: the number of children (>= 1).
        mode: a `FusionMode` or its value.
        weights: one non-negative weight per child, or a callable of the query.
        k_rrf: the RRF constant (``mode="rrf"`` only).
        fetch_k: candidates asked of each child; ``None``: `default_fetch_k`.
        names: what each child is called in the provenance: unique non-empty strs, or a
            mix of strs and the child's own index (``None``: the indices).
        dedup: ``"id"`` or ``"content"``.
        describe: ``describe(i)`` names child ``i`` in error messages (default: its
            name, quoted).
    """

    __slots__ = ("size", "mode", "weights", "k_rrf", "fetch_k", "names", "dedup", "describe")

    def __init__(
        self,
        size: int,
        *,
        mode: FusionMode | str = FusionMode.RRF,
        weights: Weights | None = None,
        k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None,
        names: Sequence[Any] | None = None,
        dedup: Dedup | str = Dedup.ID,
        describe: Callable[[int], str] | None = None,
    ) -> None:
        self.size = check_k(size, "size")
        self.mode = parse_enum(FusionMode, mode, "mode")
        self.weights = weights if weights is None or callable(weights) \
            else check_weights(weights, size)
        self.k_rrf = check_k_rrf(k_rrf, "k_rrf")
        self.fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        self.names = _check_labels(names, size)
        self.dedup = parse_enum(Dedup, dedup, "dedup")
        self.describe = describe or (lambda i: repr(self.names[i]))

    def __repr__(self) -> str:
        return f"FusionPlan({self.size}, mode={self.mode.value!r}, names={self.names})"

    # ------------------------------------------------------------------ per call

    def weights_for(self, query: str, override: Weights | None = None) -> tuple[float, ...]:
        """The weights of one query: ``override`` (else the plan's), a rule evaluated."""
        weights = self.weights if override is None else override
        if weights is None:
            return (1.0,) * self.size
        if callable(weights):
            return check_weights(weights(query), self.size, "weights(query)")
        return check_weights(weights, self.size)

    def fetch_for(self, k: int, override: int | None = None) -> int:
        """Candidates asked of each child for a final top ``k``."""
        if override is not None:
            return check_k(override, "fetch_k")
        return self.fetch_k if self.fetch_k is not None else default_fetch_k(k)

    def resolve(
        self,
        query: str,
        k: int,
        *,
        weights: Weights | None = None,
        fetch_k: int | None = None,
        mode: FusionMode | str | None = None,
        check: bool = True,
    ) -> FusionCall:
        """Validate one call and decide which children are asked for how many hits.

        ``None`` for ``weights``, ``fetch_k`` or ``mode`` means the plan's own value;
        ``check=False`` leaves the query to the children (a framework may accept a
        blank query string with a precomputed embedding).
        """
        if check:
            check_query(query)
        top = check_k(k, "k")
        chosen = self.mode if mode is None else parse_enum(FusionMode, mode, "mode")
        w = self.weights_for(query, weights)
        active = tuple(i for i, x in enumerate(w) if x > 0)
        return FusionCall(query, top, chosen, w, active, self.fetch_for(top, fetch_k))

    def fuse(self, call: FusionCall, results: Sequence[Any]) -> list[Hit]:
        """Fuse the active children's answers (``results[j]`` is ``call.active[j]``'s).

        Raises:
            TypeError: an answer that is not a list of `Hit`.
            ValueError: a score mode and a hit without a score.
        """
        rankings: list[Sequence[Hit]] = [[] for _ in range(self.size)]
        for i, hits in zip(call.active, results):
            rankings[i] = self.check_result(hits, i, call.mode)
        return _fuse(rankings, call.mode, call.weights, self.k_rrf, self.names, self.dedup,
                     call.k)

    def fuse_queries(self, call: FusionCall, results: Sequence[Sequence[Any]],
                     queries: Sequence[str]) -> list[Hit]:
        """Fuse the answers to several queries (multi-query fusion, RAG-Fusion):
        ``results[j][a]`` is child ``call.active[a]``'s answer to ``queries[j]``.

        Every (query, child) list is one more ranking, with that child's weight, as
        LlamaIndex's ``QueryFusionRetriever`` fuses its generated queries (RRF sums over
        all of them; the score modes normalise each list on its own). In the provenance
        each source keeps its child's ``"source"`` and ``"index"`` and adds the
        ``"query"`` it answered and that query's ``"query_index"`` (0: the original).

        Example:
            >>> from hybrid_retrievers.types import Doc, Hit
            >>> plan = FusionPlan(1, names=["bm25"])
            >>> call = plan.resolve("wing lift", k=2)
            >>> a, b = Hit(Doc("a", ""), 2.0, 1), Hit(Doc("b", ""), 1.0, 1)
            >>> hits = plan.fuse_queries(call, [[[a, b]], [[b]]], ["wing lift", "lift"])
            >>> [(h.id, [s["query"] for s in h.explanation["fusion"]["sources"]]) for h in hits]
            [('b', ['wing lift', 'lift']), ('a', ['wing lift'])]
        """
        if len(results) != len(queries):
            raise ValueError(f"fuse_queries needs one answer set per query: {len(queries)} "
                             f"queries, {len(results)} answer sets")
        n = self.size
        rankings: list[Sequence[Hit]] = []
        for answers in results:
            lists: list[Sequence[Hit]] = [[] for _ in range(n)]
            for i, hits in zip(call.active, answers):
                lists[i] = self.check_result(hits, i, call.mode)
            rankings.extend(lists)
        fused = _fuse(rankings, call.mode, call.weights * len(queries), self.k_rrf,
                      range(len(rankings)), self.dedup, call.k)
        for hit in fused:  # each source: back from its list to its child and query
            for source in hit.explanation["fusion"]["sources"]:
                j, i = divmod(source["index"], n)
                source.update(source=self.names[i], index=i, query=queries[j], query_index=j)
        return fused

    def check_result(self, hits: Any, i: int, mode: FusionMode | None = None) -> Sequence[Hit]:
        """Child ``i``'s answer as a list of `Hit` (scored when ``mode`` fuses scores)."""
        if isinstance(hits, (str, bytes, Mapping)) or not isinstance(hits, Sequence):
            raise TypeError(
                f"searcher {self.describe(i)} must return a list of Hit, got "
                f"{type(hits).__name__}"
            )
        for j, hit in enumerate(hits):
            if not isinstance(hit, Hit):
                raise TypeError(
                    f"searcher {self.describe(i)} returned {type(hit).__name__} at position "
                    f"{j}; a searcher must return Hit objects"
                )
        if mode is not None and mode is not FusionMode.RRF:
            missing = next((h for h in hits if h.score is None), None)
            if missing is not None:
                raise ValueError(
                    f"mode={mode.value!r} fuses scores, but child {self.describe(i)} "
                    f"returned {missing.id!r} without a score; use mode='rrf' (ranks "
                    "only) or a retriever that reports its scores"
                )
        return hits


def _check_labels(names: Sequence[Any] | None, n: int) -> tuple[Any, ...]:
    """`check_names`, also allowing a child's own index in place of a name."""
    if names is None or all(isinstance(v, str) for v in names):
        return check_names(names, n)
    labels = tuple(names)
    if len(labels) != n:
        raise ValueError(f"names must have one name per source: expected {n}, got {len(labels)}")
    for i, v in enumerate(labels):
        if v != i and not (isinstance(v, str) and v):
            raise TypeError(f"names[{i}] must be a non-empty str or {i}, got {v!r}")
    strs = [v for v in labels if isinstance(v, str)]
    if len(set(strs)) != len(strs):
        raise ValueError(f"names must be unique, got {strs}")
    return labels
