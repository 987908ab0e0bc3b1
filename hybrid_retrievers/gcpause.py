"""Pause Python's cyclic garbage collector while a build allocates many small objects.

Building ~10^5 documents, token lists or strings triggers many collector passes that
find nothing (they form no cycles), and each pass walks everything allocated so far;
pausing it roughly halves such loops. Anything cyclic made meanwhile is still collected
once the collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector inside the block (re-enabled only if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
