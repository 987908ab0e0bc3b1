"""Searching a `VectorIndex`: its search methods, its backends, and the kernel choice.

`VectorSearching` is the search half of `VectorIndex`'s public API (``search*`` and the
approximate / faiss-flat switches).
`search_block` answers a block of query vectors
from one snapshot and picks the kernel: the HNSW graph (plus an exact scan of the rows it
does not hold yet), a gathered submatrix for a selective filter, faiss's flat kernel
when enabled, or the numpy `exact_topk`. Every path re-scores with `rescore`, so a
document's score and tie order do not depend on the path taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from ..optional import require
from ..selection import top_k
from ..types import Hit, MetadataFilter
from ..validation import check_k, check_queries, check_query
from .ann import FaissHNSW, HNSWConfig
from .kernels import exact_topk, normalize, rescore, rounding_margins
from .snapshot import GraphLineage, IndexFields, Snapshot, graph_of

__all__ = ["VectorSearching", "search_block", "query_matrix"]

# A filter keeping less than this fraction of the corpus scores a gathered submatrix;
# above it, the full matrix is scored and excluded rows are masked.
_GATHER_FRACTION = 0.25


class VectorSearching(IndexFields):
    """The search methods and backend switches of `VectorIndex`."""

    __slots__ = ()

    def enable_ann(self, config: HNSWConfig | None = None, **params: Any) -> Self:
        """Answer searches with an HNSW graph (faiss, the ``ann`` extra); returns ``self``.

        The graph is built on the next search (or now, with `build_ann`); searches
        that run while another thread builds it scan exactly instead of waiting. After
        a `delete` or an `upsert` of existing ids it is rebuilt the same way. Approximate
        candidates are re-scored exactly, so scores match exact search; only recall may
        differ. ``search(..., exact=True)`` still scans every vector.

        Args:
            config: an `HNSWConfig`, or its fields as keyword arguments.
        """
        if config is not None and params:
            raise TypeError("pass either an HNSWConfig or its fields as keywords, not both")
        if config is None:
            config = HNSWConfig(**params)
        if not isinstance(config, HNSWConfig):
            raise TypeError(f"config must be an HNSWConfig, got {type(config).__name__}")
        require("faiss", extra="ann", feature="approximate vector search")
        with self._lock:
            st = self._state
            old = st.ann
            graphs = st.graphs
            if old is None or (old.m, old.ef_construction) != (config.m, config.ef_construction):
                graphs = GraphLineage()  # another graph shape: build a new one
            self._state = st.derived(ann=config, graphs=graphs)
        return self

    def disable_ann(self) -> None:
        """Drop the graph; searches are exact again."""
        with self._lock:
            self._state = self._state.derived(ann=None, graphs=GraphLineage())

    def build_ann(self) -> None:
        """Build the graph now (it is otherwise built by the first approximate search)."""
        graph_of(self._state)

    def enable_flat_faiss(self) -> Self:
        """Run unfiltered exact scans through faiss's flat kernel (the ``ann`` extra).

        Results are identical to the numpy path, ties and scores included (see
        `hybrid_retrievers.vector.flat_faiss`); only the speed differs, which depends on the
        BLAS faiss was built with: measure it with ``benchmarks/dense_search.py``.
        Filtered searches and approximate (HNSW) searches are unaffected. Returns
        ``self``; not saved with the index (it is a choice of kernel, not data).
        """
        require("faiss", extra="ann", feature="the faiss flat backend")
        self._flat_faiss = True
        return self

    def disable_flat_faiss(self) -> None:
        """Exact scans use numpy blocks again (the default)."""
        self._flat_faiss = False

    @property
    def exact_backend(self) -> str:
        """The kernel of unfiltered exact scans: ``"numpy"`` or ``"faiss-flat"``."""
        return "faiss-flat" if self._flat_faiss else "numpy"

    @property
    def ann_config(self) -> HNSWConfig | None:
        """The approximate backend's parameters, or ``None`` for exact search."""
        return self._state.ann


    def search(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """The ``k`` documents most similar to ``query`` (encoded with the embedder).

        Args:
            query: free text.
            k: how many hits at most (fewer when the index, or the filter, has fewer).
            filter: metadata equality mapping or predicate over `Doc`, applied before
                top-k so ``k`` filtered hits come back when they exist.
            exact: scan every vector even when approximate search is enabled.
        """
        check_query(query)
        k = check_k(k)
        vector = self._embed_query(query)
        return search_block(self._state, vector[None, :], k, filter, exact,
                            flat_faiss=self._flat_faiss)[0]

    def search_vector(
        self,
        vector: Any,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """`search` with a query vector of this index's dimension."""
        k = check_k(k)
        q = self._check_queries_matrix(vector, single=True)
        return search_block(self._state, q, k, filter, exact,
                            flat_faiss=self._flat_faiss)[0]

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[list[Hit]]:
        """`search` for each query, in order; all queries share one matrix product."""
        queries = check_queries(queries)
        k = check_k(k)
        if not queries:
            return []
        embedder = self._require_embedder()
        batch = getattr(embedder, "embed_queries", None)
        if callable(batch):
            raw = batch(queries)
        else:
            raw = [np.asarray(embedder.embed_query(q), dtype=np.float32).ravel() for q in queries]
        q = self._check_queries_matrix(raw, n=len(queries), name="query vectors")
        return search_block(self._state, q, k, filter, exact, flat_faiss=self._flat_faiss)

    def search_vectors(
        self,
        vectors: Any,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[list[Hit]]:
        """`search_vector` for each row of ``vectors`` (shape ``(m, d)``)."""
        k = check_k(k)
        q = self._check_queries_matrix(vectors)
        if q.shape[0] == 0:
            return []
        return search_block(self._state, q, k, filter, exact, flat_faiss=self._flat_faiss)

    def _require_embedder(self) -> Any:
        if self._embedder is None:
            raise TypeError(
                "this index has no embedder, so it cannot encode text queries; pass embedder= "
                "when creating or loading it, or use search_vector()"
            )
        return self._embedder

    def _embed_query(self, query: str) -> NDArray[np.float32]:
        raw = self._require_embedder().embed_query(query)
        return self._check_queries_matrix(raw, single=True, name="embed_query()")[0]

    def _check_queries_matrix(
        self, value: Any, *, n: int | None = None, single: bool = False, name: str = "vector"
    ) -> NDArray[np.float32]:
        return query_matrix(value, dim=self._dim, cosine=self._metric == "cosine", n=n,
                            single=single, name=name)


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
    for cosine), or a clear error naming ``name``."""
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
        [Hit(docs[p], s, r) for r, (p, s) in enumerate(zip(idx.tolist(), sc.tolist()), 1)]
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
