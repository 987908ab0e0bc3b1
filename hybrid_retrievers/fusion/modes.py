"""Named fusion modes (`FusionMode`) and `fuse`, which dispatches on them.

=====================  =====================================================================
mode                   score of document ``d`` (``w_i`` weights, ``r_i`` 1-based positions)
=====================  =====================================================================
``rrf``                ``Σ w_i / (k_rrf + r_i(d))`` (Cormack et al. 2009)
``relative_score``     ``Σ w_i · minmax_i(d)`` (LlamaIndex ``relative_score``)
``dist_based_score``   ``Σ w_i · dist_i(d)``, min-max over mean ± 3 std (LlamaIndex)
``zscore``             ``Σ w_i · z_i(d)``
``raw``                ``Σ w_i · s_i(d)``: the weighted sum of the raw scores
``mean``               ``Σ w_i · minmax_i(d) / Σ w_i`` over the lists containing ``d``
``combsum``            CombSUM, ``Σ w_i · minmax_i(d)``: the same numbers as ``relative_score``,
                       under its IR-literature name (Fox & Shaw 1994; Lee 1997)
``combmnz``            CombMNZ, ``|{i : d ∈ L_i}| · Σ w_i · minmax_i(d)``
=====================  =====================================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from ..types import Hit
from ..validation import parse_enum
from .candidates import Dedup
from .rank import DEFAULT_K_RRF, _checked_arguments, _rrf
from .score import Combination, Normalization, _score_fusion

__all__ = ["FusionMode", "fuse"]


class FusionMode(str, Enum):
    """The fusion modes `fuse` and `FusionSearcher` accept (by member or by value)."""

    RRF = "rrf"
    RELATIVE_SCORE = "relative_score"
    DIST_BASED_SCORE = "dist_based_score"
    ZSCORE = "zscore"
    RAW = "raw"
    MEAN = "mean"
    COMBSUM = "combsum"
    COMBMNZ = "combmnz"


_SCORE_MODES: dict[FusionMode, tuple[Normalization, Combination]] = {
    FusionMode.RELATIVE_SCORE: (Normalization.MINMAX, Combination.SUM),
    FusionMode.DIST_BASED_SCORE: (Normalization.DIST, Combination.SUM),
    FusionMode.ZSCORE: (Normalization.ZSCORE, Combination.SUM),
    FusionMode.RAW: (Normalization.NONE, Combination.SUM),
    FusionMode.MEAN: (Normalization.MINMAX, Combination.MEAN),
    FusionMode.COMBSUM: (Normalization.MINMAX, Combination.SUM),
    FusionMode.COMBMNZ: (Normalization.MINMAX, Combination.MNZ),
}


def fuse(
    rankings: Sequence[Sequence[Hit]],
    mode: FusionMode | str = FusionMode.RRF,
    *,
    weights: Sequence[float] | None = None,
    k_rrf: float = DEFAULT_K_RRF,
    names: Sequence[str] | None = None,
    dedup: Dedup | str = Dedup.ID,
    limit: int | None = None,
) -> list[Hit]:
    """Fuse ranked lists with a named `FusionMode` (the table in this module's doc).

    Example:
        >>> from hybrid_retrievers.types import Doc, Hit
        >>> a = [Hit(Doc("x", ""), 2.0, 1), Hit(Doc("y", ""), 1.0, 2)]
        >>> b = [Hit(Doc("y", ""), 0.9, 1)]
        >>> [h.id for h in fuse([a, b], "combmnz")]
        ['y', 'x']

    Args:
        rankings: one ranked list of `Hit` per source, best first.
        mode: a `FusionMode` or its value.
        weights: one non-negative weight per list (default: all 1).
        k_rrf: the RRF constant (used by ``mode="rrf"`` only).
        names: one unique name per list for the provenance (default: the index).
        dedup: ``"id"`` or ``"content"``.
        limit: keep only the best ``limit`` fused hits.

    Raises:
        ValueError: an unknown mode, and everything `reciprocal_rank_fusion` and
            `score_fusion` reject.
    """
    chosen = parse_enum(FusionMode, mode, "mode")
    checked, k_value, w, labels, dd, top = _checked_arguments(rankings, k_rrf, weights, names,
                                                              dedup, limit)
    return _fuse(checked, chosen, w, k_value, labels, dd, top)


def _fuse(
    rankings: Sequence[Sequence[Hit]],
    mode: FusionMode,
    weights: Sequence[float],
    k_rrf: float,
    names: Sequence[object],
    dedup: Dedup,
    limit: int | None,
) -> list[Hit]:
    """`fuse` on already-validated arguments (the searcher's per-call path)."""
    if mode is FusionMode.RRF:
        return _rrf(rankings, k_rrf, weights, names, dedup, limit)
    norm, comb = _SCORE_MODES[mode]
    return _score_fusion(rankings, norm, comb, weights, names, dedup, limit, mode.value)
