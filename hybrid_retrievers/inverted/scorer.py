"""What the engine scores with: the `Scorer` shape, and the impact scorer (`ImpactScorer`).

The engine's functions (postings, score cache, matching, kernels) score a posting as
``scale(t) · (tfw(value, norm(d)) - tfw(0))``, where ``scale`` is a term's idf times
its query count (or a learned query weight) and ``norm(d) = 1 - b + b·|d|/avgdl`` is a
document's length norm. A scorer says which functions and constants those are: its
`Variant` (an idf, a tf weight, the weight of absent terms) and ``k1``, ``b`` and
``delta``. BM25's parameters (`hybrid_retrievers.bm25.params.BM25Params`, variants in
`hybrid_retrievers.bm25.scoring`) are one scorer; `ImpactScorer` is the other, for
learned sparse indexes (`hybrid_retrievers.sparse`) and BM25F's saturated field views.

The compiled kernels know each tf weight by its method name (`kernels`), so a new
scorer is either one of those weights or runs on the numpy path only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["Scorer", "Variant", "ImpactScorer", "IMPACT", "MAX_IMPACT", "length_norm",
           "idf_impact", "tfw_impact"]

FloatArray = NDArray[np.float64]
IdfFn = Callable[[FloatArray, int], FloatArray]
TfwFn = Callable[[FloatArray, FloatArray, float, float], FloatArray]
AbsentFn = Callable[[float, float], float]


@dataclass(frozen=True)
class Variant:
    """An idf function, a tf weight, and the weight of absent terms (None: they add 0).

    ``absent(k1, delta)`` is ``tfw(0, ·)``, written out: it does not depend on the
    length norm, and it is defined where ``tfw``'s formula is 0/0 at tf = 0 (BM25+ at
    k1 = 0, or any norm of 0). ``epsilon`` is the Robertson idf floor bound into ``idf``
    (``None`` for the other variants). ``method`` names the tf weight (a
    `hybrid_retrievers.bm25.BM25Method`, or ``"impact"``).
    """

    method: str
    idf: IdfFn
    tfw: TfwFn
    absent: AbsentFn | None
    epsilon: float | None = None

    @property
    def scores_absent_terms(self) -> bool:
        """BM25L and BM25+ give a term a document lacks a non-zero weight."""
        return self.absent is not None


class Scorer(Protocol):
    """What the engine's functions score with: a `Variant` and its three constants.

    `hybrid_retrievers.bm25.BM25Params` and `ImpactScorer` both have this shape.
    """

    @property
    def variant(self) -> Variant: ...

    @property
    def k1(self) -> float: ...

    @property
    def b(self) -> float: ...

    @property
    def delta(self) -> float | None: ...


def length_norm(doc_len: FloatArray, avgdl: float, b: float) -> FloatArray:
    """Document length normalisation ``1 - b + b·|d|/avgdl`` (1 everywhere at ``b = 0``).

    ``avgdl`` is 0 only when every document is empty; no term matches anything then.
    """
    return 1.0 - b + b * (doc_len / avgdl if avgdl > 0 else doc_len * 0.0)


def idf_impact(df: FloatArray, n_docs: int) -> FloatArray:
    """The impact scorer's idf: 1 for every term (a learned weight already holds it)."""
    return np.ones_like(df)


def tfw_impact(tf: FloatArray, norm: FloatArray, k1: float, delta: float) -> FloatArray:
    """The impact scorer's weight: the stored posting value itself, no length norm.

    With it the engine scores ``Σ_t q_w(t) · d_w(t, d)``, the dot product of learned
    sparse vectors (SPLADE: Formal, Piwowarski & Clinchant 2021; impact indexes:
    Anh & Moffat 2005, Mackenzie et al. 2021).
    """
    return tf


IMPACT = Variant("impact", idf_impact, tfw_impact, None)
"""The impact scorer's variant: posting values are weights, idf is 1."""


@dataclass(frozen=True, slots=True)
class ImpactScorer:
    """The engine's impact scorer, for learned sparse indexes (`SparseIndex`): no parameters.

    A `Scorer` whose `variant` is `IMPACT`: a posting weighs its stored float32 value,
    every idf is 1, and ``b = 0`` makes every length norm 1, so the engine scores
    ``Σ_t q_w(t) · d_w(t, d)`` summed in float32 in query order, with no absent-term
    constant. BM25F's field views (saturated pseudo term frequencies) are scored with it too.

    Example:
        >>> ImpactScorer().variant.method
        'impact'
    """

    k1: float = 0.0
    b: float = 0.0
    delta: float = 0.0

    @property
    def variant(self) -> Variant:
        """`IMPACT`."""
        return IMPACT


MAX_IMPACT = 1e15
"""The largest impact (a learned sparse weight, document or query) the impact scorer takes.

A score is a float32 sum of products of two impacts, and float32 ends at 3.4e38: a
document weight of 3e38 times a query weight of 10 would be ``inf``, and ties would
hide the ranking. At most 1e15 each, a product is at most 1e30, so a sum stays finite
for any query of fewer than 340 million tokens. Learned weights are far below it
(SPLADE's are single digits; quantised impacts fit a byte); larger ones are refused
with an error naming the vector and the token (`sparse.vectors`), and in a saved index
(`_integrity.check_postings`)."""
