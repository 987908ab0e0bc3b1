"""Score fusion: normalise each list's scores, then combine them per document.

Normalisations (per input list, over the distinct documents it returned):

* ``minmax`` — ``(s - min) / (max - min)``, the "relative score" fusion of LlamaIndex
  (`QueryFusionRetriever` ``mode="relative_score"``): the list's best becomes 1, its
  worst 0.
* ``dist`` — distribution-based scaling (LlamaIndex ``mode="dist_based_score"``, after
  Mazzeschi 2023): min-max between ``mean - 3·std`` and ``mean + 3·std`` (population
  std), so one outlier does not squash the rest of the list.
* ``zscore`` — ``(s - mean) / std``; unlike the two above it is not bounded.
* ``none`` — raw scores (only meaningful when the lists share a scale).

A list whose scores are all equal maps to 1.0 when that score is positive and 0.0
otherwise under ``minmax`` and ``dist`` (what LlamaIndex does), and to 0.0 under
``zscore``. A document missing from a list contributes 0 from it in every mode (for
``zscore`` that is the list's mean).

Combinations (with weights ``w_i``, over the lists ``i`` that contain ``d``):

* ``sum`` — ``Σ w_i · n_i(d)``: the weighted sum; CombSUM (Fox & Shaw 1994) with
  min-max scores as in Lee (1997).
* ``mean`` — ``Σ w_i · n_i(d) / Σ w_i``: the average of the scores of the lists the
  document appears in (a weighted mean; all weights 1 gives the plain mean).
* ``mnz`` — ``|{i : d ∈ L_i}| · Σ w_i · n_i(d)``: CombMNZ, which rewards documents that
  several lists agree on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from typing import Any

from ..types import Hit
from ..validation import check_names, check_weights, parse_enum
from .candidates import Candidate, Dedup, Entry, check_limit, check_rankings, emit, gather

__all__ = [
    "Combination",
    "Normalization",
    "dist_based_normalize",
    "min_max_normalize",
    "normalize_scores",
    "score_fusion",
    "z_score_normalize",
]


class Normalization(str, Enum):
    """How one list's scores are put on a common scale before combining."""

    MINMAX = "minmax"
    DIST = "dist"
    ZSCORE = "zscore"
    NONE = "none"


class Combination(str, Enum):
    """How a document's normalised scores from several lists become one score."""

    SUM = "sum"
    MEAN = "mean"
    MNZ = "mnz"


def _mean_std(scores: Sequence[float]) -> tuple[float, float]:
    n = len(scores)
    mean = math.fsum(scores) / n
    var = math.fsum((s - mean) ** 2 for s in scores) / n
    return mean, math.sqrt(var)


def _scale(scores: Sequence[float], low: float, high: float) -> list[float]:
    if high == low:
        return [1.0 if high > 0 else 0.0] * len(scores)
    span = high - low
    return [(s - low) / span for s in scores]


def min_max_normalize(scores: Sequence[float]) -> list[float]:
    """``(s - min) / (max - min)``; all-equal scores give 1.0 if positive, else 0.0.

    Example:
        >>> min_max_normalize([3.0, 2.0, 1.0])
        [1.0, 0.5, 0.0]
    """
    scores = [float(s) for s in scores]
    if not scores:
        return []
    return _scale(scores, min(scores), max(scores))


def dist_based_normalize(scores: Sequence[float]) -> list[float]:
    """Min-max between ``mean - 3·std`` and ``mean + 3·std`` (LlamaIndex's dist_based_score).

    Example:
        >>> [round(x, 4) for x in dist_based_normalize([3.0, 2.0, 1.0])]
        [0.7041, 0.5, 0.2959]
    """
    scores = [float(s) for s in scores]
    if not scores:
        return []
    mean, std = _mean_std(scores)
    return _scale(scores, mean - 3 * std, mean + 3 * std)


def z_score_normalize(scores: Sequence[float]) -> list[float]:
    """``(s - mean) / std`` (population std); all-equal scores give 0.0.

    Example:
        >>> [round(x, 4) for x in z_score_normalize([3.0, 2.0, 1.0])]
        [1.2247, 0.0, -1.2247]
    """
    scores = [float(s) for s in scores]
    if not scores:
        return []
    mean, std = _mean_std(scores)
    if std == 0:
        return [0.0] * len(scores)
    return [(s - mean) / std for s in scores]


_NORMALIZERS = {
    Normalization.MINMAX: min_max_normalize,
    Normalization.DIST: dist_based_normalize,
    Normalization.ZSCORE: z_score_normalize,
    Normalization.NONE: lambda scores: [float(s) for s in scores],
}


def normalize_scores(scores: Sequence[float], normalization: Normalization | str) -> list[float]:
    """Apply one `Normalization` (by member or name) to a list of scores."""
    return _NORMALIZERS[parse_enum(Normalization, normalization, "normalization")](scores)


def score_fusion(
    rankings: Sequence[Sequence[Hit]],
    *,
    normalization: Normalization | str = Normalization.MINMAX,
    combination: Combination | str = Combination.SUM,
    weights: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
    dedup: Dedup | str = Dedup.ID,
    limit: int | None = None,
) -> list[Hit]:
    """Fuse ranked lists by their (normalised) scores; see the module doc for the formulas.

    Ranks reported in the provenance are 1-based positions in each input list, duplicates
    inside one list count once (their best position, with that hit's score), and ties
    are broken like `reciprocal_rank_fusion`: better best rank, then first appearance.

    Example (min-max then weighted sum, LlamaIndex's "relative score"):
        >>> from hybrid_retrievers.types import Doc, Hit
        >>> def ranking(**scores):
        ...     return [Hit(Doc(i, ""), s, r) for r, (i, s) in enumerate(scores.items(), 1)]
        >>> fused = score_fusion([ranking(a=9.0, b=5.0, c=1.0), ranking(b=0.8, c=0.6)])
        >>> [(h.id, h.score) for h in fused]
        [('b', 1.5), ('a', 1.0), ('c', 0.0)]

    Args:
        rankings: one ranked list of `Hit` per source, best first.
        normalization: a `Normalization` or its name.
        combination: a `Combination` or its name.
        weights: one non-negative weight per list (default: all 1); 0 switches a list off.
        names: one unique name per list for the provenance (default: the list's index).
        dedup: ``"id"`` or ``"content"`` (see `Dedup`).
        limit: keep only the best ``limit`` fused hits (default: all).

    Raises:
        TypeError: rankings not a list of lists of `Hit`; wrong kinds of weights or names.
        ValueError: an unknown normalization/combination, a NaN or infinite input score,
            no rankings, a weights/names length mismatch, negative/NaN/all-zero weights.
    """
    rankings = check_rankings(rankings)
    n = len(rankings)
    norm = parse_enum(Normalization, normalization, "normalization")
    comb = parse_enum(Combination, combination, "combination")
    w = check_weights(weights, n)
    labels = check_names(names, n)
    mode = parse_enum(Dedup, dedup, "dedup")
    top = check_limit(limit)
    return _score_fusion(rankings, norm, comb, w, labels, mode, top, None)


def _score_fusion(
    rankings: Sequence[Sequence[Hit]],
    normalization: Normalization,
    combination: Combination,
    weights: Sequence[float],
    names: Sequence[Any],
    dedup: Dedup,
    limit: int | None,
    mode_name: str | None,
) -> list[Hit]:
    candidates, per_source = gather(rankings, weights, dedup)
    normalized: dict[int, float] = {}  # id(entry) -> normalised score
    normalize = _NORMALIZERS[normalization]
    for entries in per_source:
        raw = [_finite_score(e) for e in entries]
        for e, value in zip(entries, normalize(raw)):
            normalized[id(e)] = value
    detail = {
        "mode": mode_name or f"{normalization.value}+{combination.value}",
        "normalization": normalization.value,
        "combination": combination.value,
    }
    scores, details, contributions = [], [], []
    for cand in candidates:
        parts = []
        for e in cand.entries:
            value = normalized[id(e)]
            parts.append({"normalized": value, "contribution": weights[e.source] * value})
        scores.append(_combine(cand, parts, weights, combination))
        details.append(detail)
        contributions.append(parts)
    return emit(candidates, scores, details, contributions, names, weights, limit)


def _combine(
    cand: Candidate, parts: list[dict[str, float]], weights: Sequence[float], how: Combination
) -> float:
    total = math.fsum(p["contribution"] for p in parts)
    if how is Combination.SUM:
        return total
    if how is Combination.MNZ:
        return total * len(parts)
    weight = math.fsum(weights[e.source] for e in cand.entries)
    return total / weight


def _finite_score(entry: Entry) -> float:
    score = entry.hit.score
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise TypeError(
            f"rankings[{entry.source}][{entry.rank - 1}].score must be a number, got "
            f"{type(score).__name__}: {score!r:.80}"
        ) from None
    if not math.isfinite(value):
        raise ValueError(
            f"rankings[{entry.source}][{entry.rank - 1}].score must be finite for score "
            f"fusion, got {value!r} (doc {entry.hit.doc.id!r}); use mode='rrf', which reads "
            "only ranks"
        )
    return value
