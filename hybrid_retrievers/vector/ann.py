"""Approximate nearest-neighbour search for large vector indexes (optional, faiss HNSW).

Exact search reads every vector for every query, so its cost grows with the corpus
(~150 ms per query at 1M x 384 on two cores). A hierarchical navigable small-world
graph (HNSW; Malkov & Yashunin 2018) visits a few thousand vectors instead, at the price
of sometimes missing a true neighbour. The graph comes from faiss (``faiss-cpu``, the
``ann`` extra), imported only when a graph is built.

`VectorIndex` owns the vectors: the graph stores its own copy for navigation, and its
candidates are re-scored exactly from the index's matrix, so an approximate hit carries
the same score as the exact search would give it. A graph that searches may be using
is never modified (faiss cannot add rows while it searches): rows added later are
scanned exactly next to the graph until `VectorIndex` folds them into a copy of it
(`FaissHNSW.extended`); deleting or replacing vectors drops the graph, and it is rebuilt
on the next approximate search (HNSW graphs do not support removal).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..optional import require
from ..validation import check_number

__all__ = ["HNSWConfig", "FaissHNSW"]


@dataclass(frozen=True)
class HNSWConfig:
    """Parameters of the approximate backend.

    Attributes:
        m: graph degree (links per node); more is better recall, more memory.
        ef_construction: candidate list size while building; more is a better graph.
        ef_search: candidate list size per query; more is better recall, slower.
            Raised to ``k`` when a query asks for more hits.
        exact_below: a filtered search that keeps at most this many documents scans
            them exactly instead (fast, and HNSW recall drops under tight filters).
    """

    m: int = 16
    ef_construction: int = 100
    ef_search: int = 128
    exact_below: int = 20_000

    def __post_init__(self) -> None:
        for name, limit in _LIMITS.items():
            value = getattr(self, name)
            check_number(value, f"HNSWConfig.{name}", low=1, integer=True)
            if value > limit:
                raise ValueError(
                    f"HNSWConfig.{name} must be at most {limit}, got {value!r} (larger values "
                    "only cost memory: faiss allocates per node and per query from them)"
                )

    def to_config(self) -> dict[str, Any]:
        """JSON-ready parameters (saved in an index manifest)."""
        return asdict(self)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> HNSWConfig:
        """The config saved by `to_config`; unknown keys or bad values raise."""
        if not isinstance(config, dict):
            raise TypeError(f"an HNSW config must be a dict, got {type(config).__name__}")
        unknown = sorted(set(map(str, config)) - set(_LIMITS))
        if unknown:
            raise TypeError(f"unknown HNSW config keys {unknown[:5]}; expected {list(_LIMITS)}")
        return cls(**config)


_LIMITS = {"m": 512, "ef_construction": 100_000, "ef_search": 100_000, "exact_below": 2**62}
"""Upper bounds: faiss's HNSW memory grows with ``m`` per node and ``ef`` per query, and
useful values are far below these (``m`` 8-64, ``ef`` in the hundreds)."""


class FaissHNSW:
    """An inner-product HNSW graph over rows ``0..n-1`` of a float32 matrix.

    Concurrent `search` calls are safe; `add` is not safe while another thread
    searches the same graph, so `VectorIndex` only adds to graphs nobody can see yet.
    """

    def __init__(self, dimension: int, config: HNSWConfig) -> None:
        faiss = require("faiss", extra="ann", feature="approximate vector search")
        self._faiss = faiss
        self.config = config
        self._index = faiss.IndexHNSWFlat(int(dimension), int(config.m), faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = int(config.ef_construction)

    @classmethod
    def build(cls, vectors: NDArray[np.float32], config: HNSWConfig) -> FaissHNSW:
        graph = cls(vectors.shape[1], config)
        graph.add(vectors)
        return graph

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def extended(self, vectors: NDArray[np.float32]) -> FaissHNSW:
        """A copy of this graph with ``vectors`` appended; this graph is left as it is."""
        graph = FaissHNSW.__new__(FaissHNSW)
        graph._faiss = self._faiss
        graph.config = self.config
        graph._index = self._faiss.clone_index(self._index)
        graph.add(vectors)
        return graph

    def add(self, vectors: NDArray[np.float32]) -> None:
        """Append rows; their labels continue from ``len(self)``."""
        if len(vectors):
            self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def search(
        self,
        queries: NDArray[np.float32],
        k: int,
        allowed: NDArray[np.bool_] | None = None,
        *,
        ef_search: int | None = None,
    ) -> NDArray[np.int64]:
        """Candidate rows per query, shape ``(m, k)``; ``-1`` pads missing ones.

        Args:
            allowed: one flag per row of the graph; rows flagged False are skipped.
            ef_search: overrides ``config.ef_search`` for this call.
        """
        faiss = self._faiss
        params = faiss.SearchParametersHNSW()
        ef = self.config.ef_search if ef_search is None else ef_search
        params.efSearch = max(int(ef), int(k))
        bitmap = None
        if allowed is not None:
            # faiss reads bit i at byte i >> 3, position i & 7: little-endian bit order.
            bitmap = np.packbits(allowed, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(allowed.size, faiss.swig_ptr(bitmap))
        _, labels = self._index.search(
            np.ascontiguousarray(queries, dtype=np.float32), int(k), params=params
        )
        del bitmap  # kept alive until the search is done
        return labels

    def nbytes(self) -> int:
        """Approximate memory of the graph and its vector copy."""
        n, d, m = len(self), self._index.d, self.config.m
        return int(n * d * 4 + n * m * 2 * 4 * 1.1)
