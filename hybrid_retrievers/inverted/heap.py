"""Give the C heap's free pages back to the system after a large build.

A build allocates and frees many medium-sized temporaries (each chunk's token ids, sort
keys, runs and scatter indices, a MiB or so each). glibc's malloc serves those from its
heap once its adaptive mmap threshold has risen past their size, and keeps the freed
chunks in it: pages the index never uses again stay in the process's resident memory,
between the long-lived objects allocated meanwhile (the vocabulary, the document table).
Trimmed after the postings are filled, a 1M-document build of bm25_speed's corpus
grew the process by 370 MiB instead of 400 (``benchmarks/bm25_memory.py``; 394 instead
of 424 with the heap trimmed before the build too, so that no slack from before it is
counted); trimmed after the score cache's builds too (`score_cache`), by 339 MiB. ``malloc_trim(0)`` hands every whole free page back
(``madvise``), keeping the allocations themselves where they are, so nothing is copied
and no pointer changes.

Only glibc has ``malloc_trim``; elsewhere (macOS, Windows, musl) `release_free_heap`
does nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["release_free_heap"]

_UNSET: object = object()
_trim: Callable[[int], int] | None | object = _UNSET


def release_free_heap() -> bool:
    """Return the C heap's free pages to the system; False where malloc cannot (not glibc).

    It costs a walk of the heap's free chunks (milliseconds to tens of milliseconds for
    a fragmented heap), so callers use it after work that freed many MiB, not per edit.

    Example:
        >>> release_free_heap() in (True, False)
        True
    """
    global _trim
    if _trim is _UNSET:
        _trim = _malloc_trim()
    if _trim is None:
        return False
    _trim(0)  # type: ignore[operator]
    return True


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only here: a build on Linux

    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own C library
    except (OSError, AttributeError):  # musl and other C libraries without it
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]
