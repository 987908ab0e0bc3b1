"""Paired significance tests over queries: is a difference in a mean metric more than noise?

Two retrievers run on the same queries give paired per-query scores ``a_i`` and ``b_i``.
Both tests here ask whether the mean of ``d_i = a_i - b_i`` is distinguishable from 0:

- ``"permutation"``: the paired randomization test (Fisher's sign-flip test), which
  Smucker, Allan & Carterette (2007), "A Comparison of Statistical Significance Tests
  for Information Retrieval Evaluation" (CIKM '07), recommend for IR: under the null
  hypothesis the labels ``a``/``b`` of each query are exchangeable, so every sign
  pattern of the ``d_i`` is equally likely. The two-sided p-value is the share of sign
  patterns whose ``|mean|`` is at least the observed one. With ``n`` queries there are
  ``2**n`` patterns: when that is at most ``permutations`` they are all enumerated (the
  exact p-value, ``count / 2**n``); otherwise ``permutations`` random patterns are drawn
  with the seed and ``p = (count + 1) / (permutations + 1)`` (Phipson & Smyth 2010: a
  Monte Carlo p-value is never 0). This is the p-value ``scipy.stats.permutation_test``
  gives with ``permutation_type="samples"``.
- ``"t"``: the paired t-test, ``scipy.stats.ttest_rel`` (Student 1908). Smucker et al.
  found it agrees closely with the randomization test on TREC runs; it assumes the
  differences are roughly normal.

Example:
    >>> result = paired_test([0.5, 0.7, 0.9, 0.6], [0.4, 0.6, 0.7, 0.6])
    >>> round(result.mean_difference, 3), result.p_value, result.queries
    (0.1, 0.25, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..validation import check_number

__all__ = ["DEFAULT_PERMUTATIONS", "SIGNIFICANCE_TESTS", "Significance", "paired_test",
           "significance_note"]

SIGNIFICANCE_TESTS = ("permutation", "t")
"""Valid ``test`` values: the paired randomization test and the paired t-test."""

DEFAULT_PERMUTATIONS = 10_000
"""Random sign patterns drawn when ``2**n`` is larger: a p-value resolution of 1e-4, and a
Monte Carlo standard error under 0.005 at p = 0.05 (Smucker et al. used 100,000; pass
``permutations=100_000`` for that, at ten times the cost)."""

_CHUNK = 2_000  # sign patterns per matrix product: bounds memory at ~2000 x n floats


@dataclass(frozen=True)
class Significance:
    """A paired test of ``a`` against ``b`` on one metric over the same queries.

    Attributes:
        a, b: the retrievers compared (names in the report; empty for bare scores).
        metric: the metric compared.
        test: ``"permutation"`` or ``"t"``.
        mean_difference: mean of ``a - b`` over the queries (positive: ``a`` is better).
        p_value: two-sided p-value of "no difference".
        queries: the number of paired queries.
        permutations: sign patterns used (``2**n`` when exact); ``None`` for the t-test.
        exact: whether every sign pattern was enumerated.
        seed: the seed of the random patterns (``None`` when none were drawn).
    """

    a: str
    b: str
    metric: str
    test: str
    mean_difference: float
    p_value: float
    queries: int
    permutations: int | None = None
    exact: bool = False
    seed: int | None = None

    def significant(self, alpha: float = 0.05) -> bool:
        """Whether ``p_value < alpha``."""
        return self.p_value < alpha

    def __str__(self) -> str:
        how = ("paired t-test" if self.test == "t" else
               f"paired randomization test, {'all ' if self.exact else ''}"
               f"{self.permutations} sign patterns")
        return (f"{self.a or 'a'} - {self.b or 'b'} on {self.metric}: "
                f"{self.mean_difference:+.4f}, p = {self.p_value:.4g} ({how}, "
                f"{self.queries} queries)")


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    test: str = "permutation",
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    metric: str = "",
    names: tuple[str, str] = ("", ""),
) -> Significance:
    """Test whether paired scores ``a`` and ``b`` differ in mean (two-sided).

    Args:
        a, b: per-query scores, in the same query order.
        test: ``"permutation"`` (randomization) or ``"t"`` (paired t-test).
        permutations: most sign patterns to use; all ``2**n`` when that is not more.
        seed: seed of the random sign patterns (same seed, same p-value).
        metric, names: recorded on the result.

    Raises:
        ValueError: an unknown test, scores of different lengths, no scores, a
            non-finite score or ``permutations < 1``.
    """
    if test not in SIGNIFICANCE_TESTS:
        raise ValueError(f"test must be one of {SIGNIFICANCE_TESTS!r}, got {test!r}")
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"a and b must be paired lists of the same length, got {x.shape} "
                         f"and {y.shape}")
    if not len(x):
        raise ValueError("a and b are empty: a paired test needs at least one query")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("a and b must be finite numbers (a NaN or inf score was given)")
    check_number(permutations, "permutations", low=1, integer=True)
    d = x - y
    n = len(d)
    mean = float(d.mean())
    common = {"a": names[0], "b": names[1], "metric": metric, "test": test,
              "mean_difference": mean, "queries": n}
    if test == "t":
        from scipy import stats

        if not np.any(d != d[0]):  # constant differences: t is undefined (0/0 or x/0)
            p = 1.0 if d[0] == 0 else 0.0
        else:
            p = float(stats.ttest_rel(x, y).pvalue)
        return Significance(**common, p_value=p)
    exact = n < 63 and 2 ** n <= permutations
    if exact:
        total, count = 2 ** n, _exact_count(d)
        p = count / total
        return Significance(**common, p_value=min(p, 1.0), permutations=total, exact=True)
    count = _random_count(d, permutations, seed)
    p = (count + 1) / (permutations + 1)
    return Significance(**common, p_value=min(p, 1.0), permutations=permutations, seed=seed)


def _at_least(sums: np.ndarray, observed: float) -> int:
    # A relative tolerance so sign patterns equal to the observed one up to rounding
    # count as "at least as extreme" (scipy.stats.permutation_test does the same).
    tolerance = 1e-9 * max(1.0, abs(observed))
    return int(np.count_nonzero(np.abs(sums) >= abs(observed) - tolerance))


def _exact_count(d: np.ndarray) -> int:
    """Sign patterns (of all ``2**n``) whose ``|sum|`` reaches the observed ``|sum|``."""
    n, observed = len(d), float(d.sum())
    count = 0
    bits = np.arange(n, dtype=np.int64)
    for start in range(0, 2 ** n, _CHUNK):
        codes = np.arange(start, min(start + _CHUNK, 2 ** n), dtype=np.int64)
        signs = 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)
        count += _at_least(signs @ d, observed)
    return count


def _random_count(d: np.ndarray, permutations: int, seed: int) -> int:
    """Of ``permutations`` seeded random sign patterns, those reaching the observed ``|sum|``."""
    rng = np.random.default_rng(seed)
    observed, count, left = float(d.sum()), 0, permutations
    while left:
        size = min(_CHUNK, left)
        signs = rng.choice((-1.0, 1.0), size=(size, len(d)))
        count += _at_least(signs @ d, observed)
        left -= size
    return count


def significance_note(result: Significance, alpha: float) -> str:
    """The footnote a table prints under its significance markers."""
    if result.test == "t":
        how = "paired t-test"
    elif result.exact:
        how = f"exact paired randomization test over all {result.permutations} sign patterns"
    else:
        how = (f"paired randomization test, {result.permutations} random sign patterns, "
               f"seed {result.seed}")
    return (f"* p < {alpha:g} against {result.b!r} ({how}; n = {result.queries} queries; "
            "Smucker et al. 2007)")
