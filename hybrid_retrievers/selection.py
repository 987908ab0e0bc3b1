"""Top-k selection: partition first, then sort only the k survivors.

Ties are broken by position (earlier wins), so results are deterministic and do not
depend on how ``argpartition`` happens to order equal values.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["top_k"]


def top_k(
    scores: NDArray[np.floating], k: int, tiebreak: NDArray[np.integer] | None = None
) -> NDArray[np.intp]:
    """Indices of the ``k`` largest ``scores``, best first.

    Ties go to the lower index, or to the lower ``tiebreak`` value when given (for
    candidates gathered out of document order). Costs O(n) plus O(k log k) instead
    of sorting all n scores.

    Example:
        >>> top_k(np.array([0.1, 0.9, 0.5, 0.9]), 3).tolist()
        [1, 3, 2]
    """
    n = scores.shape[0]
    if k >= n:
        candidates = np.arange(n)
    else:
        # The k-th largest value is a threshold; keeping every score >= it (ties
        # included) and sorting those makes the cut independent of partition order.
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    secondary = candidates if tiebreak is None else tiebreak[candidates]
    order = np.lexsort((secondary, -scores[candidates]))
    return candidates[order[:k]]
