"""BM25 variants as small pure functions: one idf and one term-frequency weight each.

Each is a `Variant` of the inverted-index engine (`hybrid_retrievers.inverted.scorer`),
which also holds the length norm and the learned sparse indexes' impact scorer.

A BM25 score is ``Σ_t qtf(t) · idf(t) · tfw(tf(t, d), norm(d))`` with the length
norm ``norm(d) = 1 - b + b·|d|/avgdl``. Variants differ in the idf and in the
term-frequency weight ``tfw``; BM25L and BM25+ also give a non-zero weight to terms a
document does not contain (``tfw(0, ·) > 0``, the same for every document). The
functions work elementwise on numpy arrays of any float dtype.

References:
    Robertson, S. & Zaragoza, H. (2009). The Probabilistic Relevance Framework:
    BM25 and Beyond. Foundations and Trends in IR 3(4).
    Kamphuis, C., de Vries, A. P., Boytsov, L. & Lin, J. (2020). Which BM25 Do You
    Mean? A Large-Scale Reproducibility Study of Scoring Variants. ECIR 2020.
    Lv, Y. & Zhai, C. (2011). When Documents Are Very Long, BM25 Fails! (BM25L) SIGIR.
    Lv, Y. & Zhai, C. (2011). Lower-Bounding Term Frequency Normalization (BM25+) CIKM.
    Trotman, A., Puurula, A. & Burgess, B. (2014). Improvements to BM25 and Language
    Models Examined. ADCS 2014 (ATIRE's BM25).

The variants at a glance (``norm = 1 - b + b·|d|/avgdl``):

==============  =================================  ================================
method          idf                                tf weight
==============  =================================  ================================
``lucene``      ``ln(1 + (N - df + .5)/(df + .5))``  ``tf / (tf + k1·norm)``
``textbook``    ``ln(1 + (N - df + .5)/(df + .5))``  ``tf·(k1 + 1) / (tf + k1·norm)``
``robertson``   ``ln((N - df + .5)/(df + .5))``,     ``tf·(k1 + 1) / (tf + k1·norm)``
                floored at ``ε·mean``
``atire``       ``ln(N / df)``                       ``tf·(k1 + 1) / (tf + k1·norm)``
``bm25l``       ``ln((N + 1)/(df + .5))``            see `tfw_bm25l`
``bm25+``       ``ln((N + 1)/df)``                   ``δ + tf·(k1 + 1) / (tf + k1·norm)``
==============  =================================  ================================

``lucene`` is Lucene 8+'s and bm25s's form: the ``k1 + 1`` factor is dropped because it
scales every score by one constant and so never changes a ranking (Kamphuis et al.
2020). ``textbook`` keeps it: Lucene's ``BM25Similarity`` before version 8, and the
formula as most lessons teach it (Robertson & Zaragoza 2009 eq. 3.15 with Lucene's
idf); its scores are ``k1 + 1`` times ``lucene``'s, its ranking the same. ``atire``
is ATIRE's BM25 (Trotman et al. 2014), bm25s's ``"atire"``. In release 0.1.0
``"atire"`` was an alias of ``"lucene"``; its saved indexes recorded ``"lucene"``, so
none changes meaning, and indexes saved with the new ``atire`` or ``textbook`` are
format version 2, which 0.1.0 refuses instead of reading ``atire`` as ``lucene``
(`hybrid_retrievers.bm25.saving`).
"""

from __future__ import annotations

import functools
import math

from dataclasses import replace
from enum import Enum

import numpy as np
from numpy.typing import NDArray

from ..inverted.scorer import Variant

__all__ = [
    "BM25Method",
    "get_variant",
    "idf_lucene",
    "idf_robertson",
    "idf_atire",
    "idf_bm25l",
    "idf_bm25plus",
    "tfw_lucene",
    "tfw_robertson",
    "tfw_bm25l",
    "tfw_bm25plus",
    "absent_bm25l",
    "absent_bm25plus",
    "DEFAULT_DELTA",
    "OKAPI_EPSILON",
]

FloatArray = NDArray[np.float64]

OKAPI_EPSILON = 0.25
"""Floor for negative Robertson idfs, as a fraction of the mean idf (rank_bm25's default)."""


class BM25Method(str, Enum):
    """The scoring variants; the values are the names accepted by ``method=``."""

    LUCENE = "lucene"
    TEXTBOOK = "textbook"
    ROBERTSON = "robertson"
    ATIRE = "atire"
    BM25L = "bm25l"
    BM25PLUS = "bm25+"

    @classmethod
    def parse(cls, name: object) -> BM25Method:
        """Resolve a method name (``"okapi"`` is an alias of ``"robertson"``)."""
        if isinstance(name, cls):
            return name
        if not isinstance(name, str):
            raise TypeError(f"method must be a str, got {type(name).__name__}: {name!r}")
        key = name.strip().lower()
        key = _ALIASES.get(key, key)
        try:
            return cls(key)
        except ValueError:
            valid = sorted([m.value for m in cls] + list(_ALIASES))
            raise ValueError(f"unknown BM25 method {name!r}; valid methods: {valid}") from None


_ALIASES = {"okapi": "robertson", "bm25plus": "bm25+", "bm25_plus": "bm25+"}

DEFAULT_DELTA = {BM25Method.BM25L: 0.5, BM25Method.BM25PLUS: 1.0}
"""Default ``delta`` per variant (Lv & Zhai 2011; rank_bm25 and bm25s use the same)."""


def idf_lucene(df: FloatArray, n_docs: int) -> FloatArray:
    """Lucene's idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``, always positive."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def idf_robertson(df: FloatArray, n_docs: int, epsilon: float = OKAPI_EPSILON) -> FloatArray:
    """Robertson–Spärck Jones idf ``ln((N - df + 0.5) / (df + 0.5))`` with rank_bm25's floor.

    Terms in more than half of the documents get a negative idf; like
    ``rank_bm25.BM25Okapi`` they are replaced by ``epsilon`` times the mean idf over
    the vocabulary (the mean is taken before flooring). The sum is exactly rounded
    (`math.fsum`), so it does not depend on the order of the vocabulary: an index edited
    into a state scores bit for bit like one built directly in that state, even when
    the idfs nearly cancel.
    """
    idf = np.log((n_docs - df + 0.5) / (df + 0.5))
    if idf.size:
        floor = epsilon * math.fsum(idf.tolist()) / idf.size
        idf = np.where(idf < 0, floor, idf)
    return idf


def idf_atire(df: FloatArray, n_docs: int) -> FloatArray:
    """ATIRE's idf ``ln(N / df)`` (Trotman et al. 2014): 0 for a term in every document,
    never negative."""
    return np.log(n_docs / df)


def idf_bm25l(df: FloatArray, n_docs: int) -> FloatArray:
    """BM25L idf: ``ln((N + 1) / (df + 0.5))`` (Lv & Zhai 2011)."""
    return np.log((n_docs + 1.0) / (df + 0.5))


def idf_bm25plus(df: FloatArray, n_docs: int) -> FloatArray:
    """BM25+ idf: ``ln((N + 1) / df)`` (Lv & Zhai 2011)."""
    return np.log((n_docs + 1.0) / df)


def tfw_lucene(tf: FloatArray, norm: FloatArray, k1: float, delta: float) -> FloatArray:
    """Lucene's tf weight ``tf / (tf + k1·norm)`` (no ``k1 + 1`` factor)."""
    return tf / (tf + k1 * norm)


def tfw_robertson(tf: FloatArray, norm: FloatArray, k1: float, delta: float) -> FloatArray:
    """Robertson's tf weight ``tf·(k1 + 1) / (tf + k1·norm)``."""
    return tf * (k1 + 1.0) / (tf + k1 * norm)


def tfw_bm25l(tf: FloatArray, norm: FloatArray, k1: float, delta: float) -> FloatArray:
    """BM25L: ``(k1 + 1)(c + δ) / (k1 + c + δ)`` with ``c = tf / norm``."""
    c = tf / norm
    return (k1 + 1.0) * (c + delta) / (k1 + c + delta)


def tfw_bm25plus(tf: FloatArray, norm: FloatArray, k1: float, delta: float) -> FloatArray:
    """BM25+: ``δ + tf·(k1 + 1) / (tf + k1·norm)``."""
    return delta + tfw_robertson(tf, norm, k1, delta)


def absent_bm25l(k1: float, delta: float) -> float:
    """BM25L's weight at tf = 0: ``(k1 + 1)·δ / (k1 + δ)`` (``c = 0`` in `tfw_bm25l`)."""
    return (k1 + 1.0) * delta / (k1 + delta)


def absent_bm25plus(k1: float, delta: float) -> float:
    """BM25+'s weight at tf = 0: ``δ`` (the limit of `tfw_bm25plus`, also at k1 = 0)."""
    return delta


_VARIANTS = {
    BM25Method.LUCENE: Variant(BM25Method.LUCENE, idf_lucene, tfw_lucene, None),
    BM25Method.TEXTBOOK: Variant(BM25Method.TEXTBOOK, idf_lucene, tfw_robertson, None),
    BM25Method.ROBERTSON: Variant(BM25Method.ROBERTSON, idf_robertson, tfw_robertson, None,
                                  OKAPI_EPSILON),
    BM25Method.ATIRE: Variant(BM25Method.ATIRE, idf_atire, tfw_robertson, None),
    BM25Method.BM25L: Variant(BM25Method.BM25L, idf_bm25l, tfw_bm25l, absent_bm25l),
    BM25Method.BM25PLUS: Variant(BM25Method.BM25PLUS, idf_bm25plus, tfw_bm25plus,
                                 absent_bm25plus),
}


def get_variant(method: BM25Method | str, epsilon: float | None = None) -> Variant:
    """Return the functions implementing ``method``; ``epsilon`` (Robertson only, default
    `OKAPI_EPSILON`) is the floor of negative idfs, as ``rank_bm25.BM25Okapi(epsilon=)``."""
    variant = _VARIANTS[BM25Method.parse(method)]
    if epsilon is None or epsilon == variant.epsilon:
        return variant
    if variant.method is not BM25Method.ROBERTSON:
        raise ValueError(f"epsilon is the Robertson idf floor; method {variant.method.value!r} "
                         "has none")
    return replace(variant, idf=functools.partial(idf_robertson, epsilon=epsilon),
                   epsilon=epsilon)
