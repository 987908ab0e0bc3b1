"""Exact top-k kernels: blocked matrix products, re-scored one fixed way.

`exact_topk` multiplies a block of queries by the matrix in chunks that bound the score
buffer (``_BLOCK_ENTRIES`` floats), keeps the rows above each query's running k-th-best
threshold minus a `rounding_margins` bound, and re-scores only the survivors with
`rescore`, whose summation order depends on nothing but the two vectors. So single,
batched, filtered and approximate search give a document the same score, bit for bit,
and ties the same order (`hybrid_retrievers.selection.top_k`, earlier row first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..selection import top_k

__all__ = ["exact_topk", "rescore", "rounding_margins", "normalize", "max_row_norm"]

# Upper bound on one block of scores (queries x documents), in float32 entries (32 MiB).
_BLOCK_ENTRIES = 1 << 23
_QUERY_BLOCK = 256


def max_row_norm(vectors: NDArray[np.float32]) -> float:
    if not vectors.shape[0]:
        return 0.0
    return float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max(), dtype=np.float64))


def rounding_margins(queries: NDArray[np.float32], max_norm: float) -> NDArray[np.float64]:
    """Per query, twice a bound on how far a BLAS float32 score can be from `rescore`'s.

    A float32 dot product of length d is within about ``d·u·|v|·|q|`` of the exact
    value whatever the summation order (u = 2^-24), and `rescore` is within ``u·|v|·|q|``
    of it. Keeping every candidate within twice that bound of the k-th best means
    no document that `rescore` ranks in the top k is lost by the first, BLAS pass.
    """
    d = queries.shape[1]
    return (d + 2) * 2.0**-22 * max_norm * np.linalg.norm(queries.astype(np.float64), axis=1)


def rescore(
    vectors: NDArray[np.float32], rows: NDArray[np.intp], query: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Scores of ``rows`` for ``query`` computed one fixed way, rounded to float32.

    BLAS kernels sum in an order that depends on the matrix shape (one query or a
    block, how many rows), so the same document could score ``0.0`` alone and
    ``-1.4e-09`` in a batch and swap with a tied one. Here each score is float64
    products summed pairwise along its own row: it depends on nothing but the two
    vectors, so single, batched, filtered and approximate search agree exactly.
    """
    sub = vectors[rows].astype(np.float64)
    sub *= query.astype(np.float64)
    return sub.sum(axis=1).astype(np.float32)


def exact_topk(
    vectors: NDArray[np.float32],
    queries: NDArray[np.float32],
    k: int,
    mask: NDArray[np.bool_] | None = None,
    margins: NDArray[np.float64] | None = None,
) -> list[tuple[NDArray[np.intp], NDArray[np.float32]]]:
    """Exact top ``k`` rows of ``vectors`` for each query, best first.

    Scores are computed in blocks of at most ``_BLOCK_ENTRIES`` (queries x rows), one
    BLAS product per block. Each query keeps a running threshold: its k-th best score
    so far minus its margin (see `rounding_margins`). The first block sets it with one
    ``np.partition``; later blocks only compare against it (no partition per block:
    the comparison is the only pass over the scores besides the product itself) and
    the threshold is raised from the kept candidates when they pile up. Every row
    scoring at least the final k-th best minus the margin survives (ties included),
    and only the survivors are re-scored (`rescore`) and sorted, so the result does
    not depend on how the queries were batched. Rows where ``mask`` is False are never
    returned.
    """
    n = vectors.shape[0]
    m = queries.shape[0]
    kk = min(k, n)
    if margins is None:
        margins = rounding_margins(queries, max_row_norm(vectors))
    cap = max(4 * kk, 256)  # candidates per query before its threshold is raised
    out = []
    for q0 in range(0, m, _QUERY_BLOCK):
        qb = queries[q0 : q0 + _QUERY_BLOCK]
        b = qb.shape[0]
        slack = margins[q0 : q0 + b]
        width = max(1024, _BLOCK_ENTRIES // b)
        thr = np.full(b, -np.inf, dtype=np.float32)
        cand_idx: list[list[NDArray[np.intp]]] = [[] for _ in range(b)]
        cand_sc: list[list[NDArray[np.float32]]] = [[] for _ in range(b)]
        counts = np.zeros(b, dtype=np.intp)
        for d0 in range(0, n, width):
            block = vectors[d0 : d0 + width]
            scores = (block @ qb[0])[None, :] if b == 1 else qb @ block.T
            if mask is not None:
                scores[:, ~mask[d0 : d0 + width]] = -np.inf
            c = scores.shape[1]
            if d0 == 0 and c > kk:
                thr = _down32(np.partition(scores, c - kk, axis=1)[:, c - kk] - slack)
            r, col = np.nonzero(scores >= thr[:, None])
            bounds = np.searchsorted(r, np.arange(b + 1))
            for j in np.flatnonzero(np.diff(bounds)):
                cols = col[bounds[j] : bounds[j + 1]]
                cand_idx[j].append(cols + d0)
                cand_sc[j].append(scores[j, cols])
            counts += np.diff(bounds)
            for j in np.flatnonzero(counts > cap):
                idx = np.concatenate(cand_idx[j])
                sc = np.concatenate(cand_sc[j])
                kth = np.partition(sc, sc.size - kk)[sc.size - kk]
                thr[j] = max(thr[j], _down32(kth - slack[j]))
                keep = sc >= thr[j]
                cand_idx[j], cand_sc[j] = [idx[keep]], [sc[keep]]
                counts[j] = int(keep.sum())
        for j in range(b):
            idx = np.concatenate(cand_idx[j]) if cand_idx[j] else np.zeros(0, np.intp)
            if mask is not None:
                idx = idx[np.concatenate(cand_sc[j]) > -np.inf] if cand_sc[j] else idx
            sc = rescore(vectors, idx, queries[q0 + j])
            best = top_k(sc, k, tiebreak=idx)
            out.append((idx[best], sc[best]))
    return out


def _down32(value: Any) -> Any:
    """``value`` as float32, rounded towards -inf (a threshold that never rises by rounding).

    Comparing float32 scores with a float32 threshold avoids a float64 copy of every
    score block; rounding down keeps every row the float64 threshold keeps.
    """
    low = np.asarray(value, dtype=np.float32)
    return np.where(low > value, np.nextafter(low, np.float32(-np.inf)), low)


def normalize(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows divided by their L2 norm; zero rows stay zero.

    Rows already of unit length (within float32 rounding, as normalising models return
    them) are kept bit for bit, so the index stores exactly what the model produced.
    """
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scale = (norms > 0) & (np.abs(norms - 1.0) > 4e-7)
    out = np.array(matrix, dtype=np.float32, copy=True)
    np.divide(matrix, norms, out=out, where=scale)
    out[(norms == 0).ravel()] = 0.0
    return out
