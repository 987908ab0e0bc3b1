"""One immutable version of a `VectorIndex`, and the HNSW graph its lineage shares.

A search reads exactly one `Snapshot` (matrix rows ``0..n-1``, documents, ANN settings,
filter masks); edits build new snapshots (`hybrid_retrievers.vector.editing`) and never
change what a published one reads, so searches never wait and never see a torn index.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..document_columns import DocColumns
from ..documents import DocTable
from ..types import Doc
from .ann import FaissHNSW, HNSWConfig
from .kernels import max_row_norm

__all__ = ["GraphLineage", "Snapshot", "graph_of"]


class GraphLineage:
    """The HNSW graph shared by snapshots whose rows ``0..len(graph)-1`` are identical.

    Appending rows keeps the lineage; replacing or deleting rows starts a new one. A
    published graph is never modified: a fold replaces ``graph`` with a bigger copy.
    """

    __slots__ = ("graph", "lock")

    def __init__(self) -> None:
        self.graph: FaissHNSW | None = None
        self.lock = threading.Lock()


class Snapshot(DocTable):
    """One version of the index: everything a search reads, never changed once published.

    The documents (``docs``, ``positions``, the ``masks`` memo) are its `DocTable`.
    ``buf`` may have spare rows past ``n`` (amortised appends write there, which no
    snapshot of this or an older version reads); the documents and rows ``0..n-1`` of
    ``buf`` are never modified.
    """

    __slots__ = ("buf", "n", "ann", "graphs", "_max_norm")

    def __init__(
        self,
        buf: NDArray[np.float32],
        n: int,
        docs: DocColumns | list[Doc],
        *,
        ann: HNSWConfig | None = None,
        graphs: GraphLineage | None = None,
        max_norm: float | None = None,
    ) -> None:
        super().__init__(docs)
        self.buf = buf
        self.n = n
        self.ann = ann
        self.graphs = GraphLineage() if graphs is None else graphs
        self._max_norm = max_norm

    @property
    def vectors(self) -> NDArray[np.float32]:
        return self.buf[: self.n]

    def max_norm(self) -> float:
        """An upper bound on the row norms (for `rounding_margins`); computed once if unknown."""
        if self._max_norm is None:
            self._max_norm = max_row_norm(self.vectors)
        return self._max_norm

    def known_max_norm(self) -> float | None:
        """The bound if already known (edits carry it forward without computing it)."""
        return self._max_norm

    def derived(self, **changes: Any) -> Snapshot:
        """The same rows and documents with other ANN settings (``ann``, ``graphs``)."""
        fields = {"ann": self.ann, "graphs": self.graphs, "max_norm": self._max_norm, **changes}
        return Snapshot(self.buf, self.n, self.docs, **fields)


def graph_of(st: Snapshot, *, wait: bool = True) -> FaissHNSW | None:
    """The HNSW graph of ``st``'s lineage, built over ``st``'s rows on first use.

    With ``wait=False`` a graph another thread is building right now is not
    waited for: ``None`` comes back and the caller searches exactly meanwhile.
    """
    if st.ann is None:
        raise RuntimeError("approximate search is not enabled; call enable_ann() first")
    lineage = st.graphs
    graph = lineage.graph
    if graph is None:
        # One build per lineage, not one per concurrent reader.
        if not lineage.lock.acquire(blocking=wait):
            return None
        try:
            if lineage.graph is None:
                lineage.graph = FaissHNSW.build(st.vectors, st.ann)
            graph = lineage.graph
        finally:
            lineage.lock.release()
    return graph
