"""Weighted Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..types import Hit
from ..validation import check_k_rrf, check_names, check_weights, parse_enum
from .candidates import Dedup, check_limit, check_rankings, emit, gather

__all__ = ["reciprocal_rank_fusion", "DEFAULT_K_RRF"]

DEFAULT_K_RRF = 60
"""The RRF constant of Cormack et al. (2009), also the default of Elasticsearch, LangChain
and LlamaIndex."""


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hit]],
    *,
    k_rrf: float = DEFAULT_K_RRF,
    weights: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
    dedup: Dedup | str = Dedup.ID,
    limit: int | None = None,
) -> list[Hit]:
    """Fuse ranked lists by weighted reciprocal rank: ``score(d) = Σ_i w_i / (k_rrf + rank_i(d))``.

    ``rank_i(d)`` is the 1-based **position** of ``d`` in ``rankings[i]`` (the list order
    is the ranking; ``hit.rank`` and ``hit.score`` are not used). A list that does not
    contain ``d`` adds nothing. A document repeated inside one list counts once, at its
    best position. Only the ratios of the weights change the order; the scores scale
    with them. A weight of 0 switches a list off entirely. Each document's terms are
    added with `math.fsum`, so the score does not depend on the order of the lists.

    Ties are broken by the better best rank (the smallest position in any list), then
    by first appearance (reading list 0 top to bottom, then list 1, ...).

    Worked example: ``a`` is 1st in list A and 3rd in list B, ``b`` is 3rd in A and 1st
    in B, ``c`` is 2nd in both. ``c`` scores ``2/62 = 0.032258``; ``a`` and ``b`` both
    score ``1/61 + 1/63 = 0.032266`` and tie; both have best rank 1, and ``a`` appears
    first (list A, position 1), so the order is ``a, b, c``.

    >>> from hybrid_retrievers.types import Doc, Hit
    >>> def ranking(*ids):
    ...     return [Hit(Doc(i, ""), 0.0, r) for r, i in enumerate(ids, 1)]
    >>> fused = reciprocal_rank_fusion([ranking("a", "c", "b"), ranking("b", "c", "a")])
    >>> [(h.id, round(h.score, 6)) for h in fused]
    [('a', 0.032266), ('b', 0.032266), ('c', 0.032258)]
    >>> fused[0].explanation["fusion"]["sources"][1]["rank"]
    3

    Args:
        rankings: one ranked list of `Hit` per source, best first.
        k_rrf: the RRF constant (>= 0; 0 is ``w / rank``); larger values flatten the
            difference between ranks.
        weights: one non-negative weight per list (default: all 1).
        names: one unique name per list, reported as ``"source"`` in the provenance
            (default: the list's index).
        dedup: ``"id"`` or ``"content"`` (see `Dedup`).
        limit: keep only the best ``limit`` fused hits (default: all).

    Returns:
        New hits, ranks 1..n, scores non-increasing, unique ids, each with the
        provenance mapping described in `hybrid_retrievers.fusion`.

    Raises:
        TypeError: rankings not a list of lists of `Hit`; wrong kinds of weights or names.
        ValueError: no rankings, a weights/names length mismatch, a negative, NaN or
            all-zero weight, ``k_rrf <= 0``.
    """
    return _rrf(*_checked_arguments(rankings, k_rrf, weights, names, dedup, limit))


def _checked_arguments(
    rankings: Any, k_rrf: Any, weights: Any, names: Any, dedup: Any, limit: Any
) -> tuple[list[Sequence[Hit]], float, list[float], list[Any], Dedup, int | None]:
    """The arguments of `reciprocal_rank_fusion` (and `fusion.modes.fuse`) checked, in
    `_rrf`'s order, or the error of the first bad one."""
    rankings = check_rankings(rankings)
    n = len(rankings)
    k_value = check_k_rrf(k_rrf, "k_rrf")
    w = check_weights(weights, n)
    labels = check_names(names, n)
    mode = parse_enum(Dedup, dedup, "dedup")
    return rankings, k_value, w, labels, mode, check_limit(limit)


def _rrf(
    rankings: Sequence[Sequence[Hit]],
    k_rrf: float,
    weights: Sequence[float],
    names: Sequence[Any],
    dedup: Dedup,
    limit: int | None,
) -> list[Hit]:
    candidates, _ = gather(rankings, weights, dedup)
    scores, details, contributions = [], [], []
    detail = {"mode": "rrf", "k_rrf": k_rrf}
    for cand in candidates:
        parts = [{"contribution": weights[e.source] / (k_rrf + e.rank)} for e in cand.entries]
        scores.append(math.fsum(p["contribution"] for p in parts))
        details.append(detail)
        contributions.append(parts)
    return emit(candidates, scores, details, contributions, names, weights, limit)
