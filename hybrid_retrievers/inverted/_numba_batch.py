"""Numba entry points for BM25 top-k: one query ranked (`search_one`), or a batch (`search_many`).

Imported only through `hybrid_retrievers.inverted.kernels`, and only when numba is
installed. Both choose a kernel (`_numba.search_taat` or `_numba.search_top_k`), run it
and rank its hits, all in one compiled call, so what a query pays in Python is one
dispatch. A batch runs each query through the same kernel, with the same arguments, as
it would alone, so it returns bit for bit what a loop of single searches returns; what
the batch saves is the per-query Python work around the kernel (argument conversion,
dispatch, buffer lookup), about 100 µs a query, which at 100k documents is as much as
the kernel itself.

numba's on-disk cache (``cache=True``) checks only the file that defines a function:
these entry points compile `_numba`'s kernels into themselves, so after an edit there a
checkout's ``__pycache__/*.nbi, *.nbc`` of this module keep running the old kernels
(still exact, as every version is) until this file changes too or they are deleted.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._numba import search_taat, search_top_k


@njit(cache=True)
def _ranked(docs, scores):  # pragma: no cover - compiled
    """The order of hits best first: higher score, then lower document (as `selection.top_k`)."""
    by_doc = np.argsort(docs, kind="mergesort")
    by_score = np.argsort(-scores[by_doc], kind="mergesort")  # stable: ties keep document order
    return by_doc[by_score]


AUTO, TAAT, MAXSCORE = 0, 1, 2
"""`search_one`'s strategy codes (`Backend.strategy`)."""

READY, NEED_CODES, NEED_BLOCKS = 0, 1, 2
"""`search_one`'s answers: ranked hits, or the metadata its kernel needs first."""


@njit(cache=True)
def search_one(indptr, post_docs, post_tf, norm, doc_codes, table, weight_ptr, weights, block_ptr,
               block_max, block_last, term_max, terms, scales, strategy, min_longest, variant, k1,
               k1p1, delta, aw, has_aw, constant, k, chunk_docs, dense_ratio, positive, acc,
               seen, touched):  # pragma: no cover - compiled
    """One query's ranked top ``k``: ``(docs, scores, READY)``, best first, ties to the lower
    document; or empty arrays and `NEED_CODES` / `NEED_BLOCKS` when the kernel it chooses
    needs metadata it was given empty (`kernels.NormCodes`, `kernels.BlockMax`).

    With ``strategy`` `AUTO`, block-max MaxScore takes the query when its longest list
    holds at least ``min_longest`` postings and 8/9 of them, TAAT otherwise
    (`kernels._long_list_rule`, which `search_many`'s choice follows); `TAAT` and
    `MAXSCORE` force one. Other arguments as `search_many`'s for one query.
    """
    if strategy == AUTO:
        longest = 0
        total = 0
        for i in range(terms.size):
            length = indptr[terms[i] + 1] - indptr[terms[i]]
            total += length
            longest = max(longest, length)
        pruned = longest >= min_longest and 8 * (total - longest) <= longest
    else:
        pruned = strategy == MAXSCORE
    if pruned and term_max.size == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.float32), NEED_BLOCKS
    if not pruned and doc_codes.size == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.float32), NEED_CODES
    if pruned:
        d, s = search_top_k(indptr, post_docs, post_tf, norm, block_ptr, block_max, block_last,
                            term_max, terms, scales, variant, k1, k1p1, delta, aw, has_aw,
                            constant, k)
    else:
        d, s = search_taat(indptr, post_docs, post_tf, norm, doc_codes, table, weight_ptr,
                           weights, terms, scales, variant, k1, k1p1, delta, aw, has_aw,
                           constant, k, chunk_docs, dense_ratio, positive, acc, seen, touched)
    order = _ranked(d, s)
    return d[order], s[order], READY


@njit(cache=True)
def search_many(indptr, post_docs, post_tf, norm, doc_codes, table, weight_ptr, weights, block_ptr,
                block_max, block_last, term_max, qptr, terms, scales, pruned, variant, k1, k1p1,
                delta, aw, has_aw, constants, k, chunk_docs, dense_ratio, positive, acc,
                seen, touched):  # pragma: no cover
    """The ranked top ``k`` of each query: ``(docs, scores, sizes)``, one row per query.

    Query i's terms and scales are ``terms[qptr[i]:qptr[i+1]]`` (at least one);
    ``pruned[i]`` sends it to block-max MaxScore (``block_*``, ``term_max``), else to
    TAAT (``doc_codes``, ``table``, the stored ``weights``, ``chunk_docs``, ``dense_ratio``
    and the scratch ``acc``, ``seen``, ``touched``).
    Row i holds ``sizes[i]`` hits, best first, ties to the lower document.
    """
    nq = qptr.size - 1
    docs_out = np.zeros((nq, k), np.int32)
    scores_out = np.zeros((nq, k), np.float32)
    sizes = np.zeros(nq, np.int64)
    for i in range(nq):
        lo = qptr[i]
        hi = qptr[i + 1]
        if pruned[i]:
            d, s = search_top_k(indptr, post_docs, post_tf, norm, block_ptr, block_max,
                                block_last, term_max, terms[lo:hi], scales[lo:hi], variant, k1,
                                k1p1, delta, aw, has_aw, constants[i], k)
        else:
            d, s = search_taat(indptr, post_docs, post_tf, norm, doc_codes, table, weight_ptr,
                               weights, terms[lo:hi], scales[lo:hi], variant, k1, k1p1, delta,
                               aw, has_aw, constants[i], k, chunk_docs, dense_ratio, positive,
                               acc, seen, touched)
        order = _ranked(d, s)
        for j in range(order.size):
            docs_out[i, j] = d[order[j]]
            scores_out[i, j] = s[order[j]]
        sizes[i] = order.size
    return docs_out, scores_out, sizes
