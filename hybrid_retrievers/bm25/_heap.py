"""A bounded min-heap of (score, document) for the numba top-k kernels (`_numba`).

The heap keeps the best ``k`` entries worst-first; ties rank the later document
worse, so among equal scores the earlier document stays, as exhaustive scoring's
tie-break does.
"""

from __future__ import annotations

from numba import njit

__all__ = ["heap_push", "heap_replace", "worse"]


@njit(cache=True, inline="always")
def worse(s1, d1, s2, d2):  # pragma: no cover
    """Entry 1 ranks below entry 2: lower score, or equal score and later document."""
    return s1 < s2 or (s1 == s2 and d1 > d2)


@njit(cache=True)
def heap_push(hs, hd, size, s, d):  # pragma: no cover
    """Add (s, d) to the min-heap of the ``size`` worst-first entries."""
    hs[size] = s
    hd[size] = d
    i = size
    while i > 0 and worse(hs[i], hd[i], hs[(i - 1) >> 1], hd[(i - 1) >> 1]):
        parent = (i - 1) >> 1
        hs[i], hs[parent] = hs[parent], hs[i]
        hd[i], hd[parent] = hd[parent], hd[i]
        i = parent


@njit(cache=True)
def heap_replace(hs, hd, size, s, d):  # pragma: no cover
    """Replace the worst entry by (s, d) and restore the heap."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and worse(hs[c + 1], hd[c + 1], hs[c], hd[c]):
            c += 1
        if worse(hs[c], hd[c], s, d):
            hs[i] = hs[c]
            hd[i] = hd[c]
            i = c
        else:
            break
    hs[i] = s
    hd[i] = d
