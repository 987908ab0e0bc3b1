"""Searching one `Snapshot` of a `VectorIndex`: query checks, the kernel choice, the ANN switch.

`VectorIndex`'s ``search*`` methods check their queries into one matrix (`query_matrix`)
and hand it to `search_block`, which answers a block of query vectors from one snapshot
and picks the kernel: the HNSW graph (plus an exact scan of the rows it
does not hold yet), a gathered submatrix for a selective filter, faiss's flat kernel
when enabled, or the numpy `exact_topk`. Every path re-scores with `rescore`, so a
document's score and tie order do not depend on the path taken.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..selection import top_k
from ..types import Hit, MetadataFilter
from .ann import FaissHNSW, HNSWConfig
from .kernels import exact_topk, normalize, rescore, rounding_margins
from .snapshot import GraphLineage, Snapshot, graph_of

__all__ = ["ann_enabled", "query_matrix", "search_block"]

# A filter keeping less than this fraction of the corpus scores a gathered submatrix;
# above it, the full matrix is scored and excluded rows are masked.
_GATHER_FRACTION = 0.25


def ann_enabled(st: Snapshot, config: HNSWConfig) -> Snapshot:
    """``st`` answering with an HNSW graph of ``config``: the graph lineage is kept when
    the graph's shape (``m``, ``ef_construction``) is unchanged, else a new one starts
    (its graph is built on demand, see `graph_of`)."""
    old = st.ann
    graphs = st.graphs
    if old is None or (old.m, old.ef_construction) != (config.m, config.ef_construction):
        graphs = GraphLineage()  # another graph shape: build a new one
    return st.derived(ann=config, graphs=graphs)


def query_matrix(
    value: Any,
    *,
    dim: int | None,
    cosine: bool,
    n: int | None = None,
    single: bool = False,
    name: str = "vector",
) -> NDArray[np.float32]:
    """Query vectors as a finite C-contiguous float32 ``(m, dim)`` matrix (normalised
    for cosine), or a clear error naming ``name``.

    The one check of a query vector on its way to a kernel. A float32 array (what an
    `hybrid_retrievers.models.EmbedderAdapter` or any core embedder returns, already
    converted and shape-checked there) is not converted or copied again: only what its
    producer cannot know is checked here (this index's dimension, finiteness).
    """
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        q = value
    else:
        try:
            q = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be an array of floats ({exc})") from None
    if single and q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or (single and q.shape[0] != 1) or (n is not None and q.shape[0] != n):
        want = "(dimension,)" if single else "(n_queries, dimension)"
        raise ValueError(f"{name} must have shape {want}, got {np.shape(value)}")
    if dim is not None and q.shape[1] != dim:
        raise ValueError(
            f"{name} has dimension {q.shape[1]} but this index holds {dim}-d vectors; "
            "query with the embedder the index was built with"
        )
    if not np.isfinite(q).all():
        raise ValueError(f"{name} holds NaN or infinite values; query vectors must be finite")
    if cosine:
        q = normalize(q)
    return np.ascontiguousarray(q)


def search_block(
    st: Snapshot,
    queries: NDArray[np.float32],
    k: int,
    filter: MetadataFilter | None,
    exact: bool,
    *,
    flat_faiss: bool = False,
) -> list[list[Hit]]:
    """The top ``k`` hits of ``st`` for each row of ``queries`` (already checked)."""
    n = st.n
    m = queries.shape[0]
    if n == 0:
        return [[] for _ in range(m)]
    vectors = st.vectors
    if queries.shape[1] != vectors.shape[1]:
        raise ValueError(
            f"query vectors have dimension {queries.shape[1]} but this index holds "
            f"{vectors.shape[1]}-d vectors"
        )
    docs = st.docs
    rows: NDArray[np.intp] | None = None
    mask: NDArray[np.bool_] | None = None
    if filter is not None:
        mask = st.filter_mask(filter)
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return [[] for _ in range(m)]
        if rows.size == n:
            rows = mask = None
    margins = rounding_margins(queries, st.max_norm())
    config = st.ann
    graph = None
    if (config is not None and not exact
            and (rows is None or rows.size > config.exact_below)):
        # While another search builds the graph, search exactly instead of waiting.
        graph = graph_of(st, wait=False)
    if graph is not None:
        results = _ann_topk(st, graph, queries, k, mask, margins)
    elif rows is not None and rows.size < _GATHER_FRACTION * n:
        results = [(rows[i], s)
                   for i, s in exact_topk(vectors[rows], queries, k, None, margins)]
    elif mask is None and flat_faiss:
        from .flat_faiss import faiss_flat_topk

        results = faiss_flat_topk(
            vectors, queries, k, margins, rescore,
            lambda rows: exact_topk(vectors, queries[rows], k, None, margins[rows]),
        )
    else:
        results = exact_topk(vectors, queries, k, mask, margins)
    return [
        [Hit(d, s, r) for r, (d, s) in enumerate(zip(docs.at(idx.tolist()), sc.tolist()), 1)]
        for idx, sc in results
    ]


def _ann_topk(
    st: Snapshot,
    graph: FaissHNSW,
    queries: NDArray[np.float32],
    k: int,
    mask: NDArray[np.bool_] | None,
    margins: NDArray[np.float64],
) -> list[tuple[NDArray[np.intp], NDArray[np.float32]]]:
    """Graph candidates, plus the rows the graph does not hold yet, scored exactly."""
    assert st.ann is not None
    vectors, n, g = st.vectors, st.n, len(graph)
    allowed = mask
    if g > n:  # the graph has grown past this (older) snapshot: hide the newer rows
        allowed = np.zeros(g, dtype=bool)
        allowed[:n] = True if mask is None else mask
    elif mask is not None and g < n:
        allowed = mask[:g]
    labels = graph.search(queries, min(k, g), allowed, ef_search=st.ann.ef_search)
    tail: list[tuple[NDArray[np.intp], NDArray[np.float32]]] | None = None
    if g < n:
        tail_mask = None if mask is None else mask[g:n]
        if tail_mask is None or tail_mask.any():
            tail = exact_topk(vectors[g:n], queries, k, tail_mask, margins)
    out = []
    for qi in range(queries.shape[0]):
        cand = labels[qi]
        cand = np.unique(cand[cand >= 0]).astype(np.intp)
        scores = rescore(vectors, cand, queries[qi])
        if tail is not None:
            cand = np.concatenate([cand, tail[qi][0] + g])
            scores = np.concatenate([scores, tail[qi][1]])
        best = top_k(scores, k, tiebreak=cand)
        out.append((cand[best], scores[best]))
    return out
