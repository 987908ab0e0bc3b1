"""Exact top-k through faiss's brute-force kernel (``faiss.knn``), same results as numpy.

faiss's flat inner-product search (the kernel behind ``IndexFlatIP``) multiplies blocks
of queries by blocks of vectors and keeps a per-query heap, without materialising the
score matrix. Where faiss's BLAS and OpenMP are fast it beats numpy blocks; it is an
option (`VectorIndex.enable_flat_faiss`), measured side by side in
``benchmarks/dense_search.py``, never a silent default.

Results are identical to `VectorIndex`'s numpy path, ties included: faiss is asked for
more than ``k`` neighbours, and a query is answered from them only when the last one
scores below the k-th minus the query's rounding margin (then every document the exact
re-scoring could rank in the top ``k`` is among them); the candidates are re-scored with
the same fixed-order float64 sum and sorted with the same tie-break (lower row first).
A query whose margin window is wider than what faiss returned is answered by the numpy
path. faiss reads the index's own matrix: nothing is copied or kept, so edits and
snapshots need no bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..optional import require
from ..selection import top_k

__all__ = ["faiss_flat_topk"]

TopK = list[tuple[NDArray[np.intp], NDArray[np.float32]]]


def faiss_flat_topk(
    vectors: NDArray[np.float32],
    queries: NDArray[np.float32],
    k: int,
    margins: NDArray[np.float64],
    rescore: Callable[[NDArray[np.float32], NDArray[np.intp], NDArray[np.float32]],
                      NDArray[np.float32]],
    fallback: Callable[[NDArray[np.intp]], TopK],
) -> TopK:
    """Exact top ``k`` rows of ``vectors`` (inner product) for each row of ``queries``.

    Args:
        vectors: the ``(n, d)`` C-contiguous float32 matrix searched.
        queries: ``(m, d)`` float32 queries.
        k: hits per query.
        margins: per query, the rounding margin of
            `hybrid_retrievers.vector.kernels.rounding_margins`.
        rescore: the index's fixed-order scorer ``(vectors, rows, query) -> scores``.
        fallback: answers the queries at the given positions the numpy way (used when
            ties or near-ties reach past what faiss returned).
    """
    faiss = require("faiss", extra="ann", feature="the faiss flat backend")
    n = vectors.shape[0]
    kk = min(k, n)
    wanted = min(n, kk + max(kk, 16))
    distances, labels = faiss.knn(queries, vectors, wanted, faiss.METRIC_INNER_PRODUCT)
    out: list[tuple[NDArray[np.intp], NDArray[np.float32]] | None] = []
    redo = []
    for qi in range(queries.shape[0]):
        kth = distances[qi, kk - 1]
        if wanted < n and distances[qi, wanted - 1] >= kth - margins[qi]:
            out.append(None)  # the margin window may hold rows faiss did not return
            redo.append(qi)
            continue
        cand = labels[qi].astype(np.intp)
        cand = cand[cand >= 0]
        scores = rescore(vectors, cand, queries[qi])
        best = top_k(scores, k, tiebreak=cand)
        out.append((cand[best], scores[best]))
    if redo:
        for qi, result in zip(redo, fallback(np.asarray(redo, dtype=np.intp))):
            out[qi] = result
    return out  # type: ignore[return-value]
