"""`Scratch`: one thread's query buffers, sized for the snapshot being searched.

A query accumulates into corpus-sized buffers and resets what it touched, so no step is
proportional to the corpus size. Each thread has its own (`threading.local`), so
concurrent searches never share a buffer; each buffer is resized when a search reads a
snapshot with another number of documents, so a search never indexes past its corpus.
"""

from __future__ import annotations

import threading

import numpy as np
from numpy.typing import NDArray

__all__ = ["Scratch"]


class Scratch(threading.local):
    """Per-thread buffers of the numpy path and the kernels (one `Scratch` per index).

    ``acc`` (float32) and ``seen`` (bool) are all zeros between queries: whoever writes
    into them resets what it wrote. ``mark`` (int32) holds anything.

    Example:
        >>> acc, seen = Scratch().accumulators(4)
        >>> acc.tolist(), bool(seen.any())
        ([0.0, 0.0, 0.0, 0.0], False)
    """

    def __init__(self) -> None:
        self.acc: NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self.seen: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self.mark: NDArray[np.int32] = np.empty(0, dtype=np.int32)

    def accumulators(self, n: int) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
        """This thread's zeroed ``(acc, seen)`` for ``n`` documents."""
        if self.acc.shape[0] != n:
            self.acc = np.zeros(n, dtype=np.float32)
            self.seen = np.zeros(n, dtype=bool)
        return self.acc, self.seen

    def marks(self, n: int) -> NDArray[np.int32]:
        """This thread's int32 buffer for ``n`` documents (any content)."""
        if self.mark.shape[0] != n:
            self.mark = np.empty(n, dtype=np.int32)
        return self.mark
