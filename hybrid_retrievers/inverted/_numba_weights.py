"""Numba primitives that weigh BM25 postings, and the metadata the kernels build from them.

Imported only through `hybrid_retrievers.inverted._numba` (and so only when numba is
installed). Every weight here is computed with the same float32 operations, in the
same order, as `hybrid_retrievers.scoring` (``tfw_*``) and `matching._weigh`:
`_shifted` directly, `build_table`'s rows and `build_weights`'s stored values through
it, so any of them times the query scale is bit for bit the same number.

`_u` and `_span` index with unsigned integers: numba gives a signed index Python's
negative-index wraparound, a compare and select on every access that also keeps LLVM
from vectorising.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BLOCK = 64
"""Postings per block."""

CODE_TF = 16
"""Term frequencies below this are weighed from a table (`build_table`)."""

NO_CODE = 255
"""A document's norm code when its length norm has no table row."""

LUCENE, ROBERTSON, BM25L, BM25PLUS, IMPACT = 0, 1, 2, 3, 4
"""Tf-weight codes (`kernels._VARIANT_CODES`). ROBERTSON is ``tf·(k1 + 1) / (tf + k1·norm)``,
shared by the methods robertson, textbook and atire (they differ only in the idf, which
the kernels get as the query scale). IMPACT: the posting value (float32) is the weight,
with no norm and no absent-term shift (`scoring.tfw_impact`)."""


@njit(cache=True, inline="always")
def _tfw(variant, tf, norm, k1, k1p1, delta):  # pragma: no cover - compiled
    """The float32 tf weight of `scoring.tfw_*`, operation for operation."""
    if variant == LUCENE:
        return tf / (tf + k1 * norm)
    if variant == ROBERTSON:
        return tf * k1p1 / (tf + k1 * norm)
    if variant == BM25L:
        c = tf / norm
        return k1p1 * (c + delta) / (k1 + c + delta)
    if variant == IMPACT:
        return tf
    return delta + tf * k1p1 / (tf + k1 * norm)


@njit(cache=True, inline="always")
def _u(i):  # pragma: no cover - compiled
    """``i`` (>= 0) as an unsigned index: no negative-index wraparound when it indexes."""
    return np.uint64(i)


@njit(cache=True, inline="always")
def _span(lo, hi):  # pragma: no cover - compiled
    """``range(lo, hi)`` (0 <= lo) over unsigned indices."""
    return range(np.uint64(lo), np.uint64(hi))


@njit(cache=True, inline="always")
def _shifted(tf, norm_d, variant, k1, k1p1, delta, aw, has_aw, scale):  # pragma: no cover
    """``scale · (tfw(tf, norm_d) - tfw(0))`` of a posting of frequency ``tf`` in a document
    of length norm ``norm_d`` (ignored by impacts), as `matching._weigh`.

    Scalars only, like every helper a hot loop calls: a helper taking arrays left
    numba's reference counting in the loop (incref/decref calls on each array, every
    posting), which made a norm-coded posting cost ~60 ns instead of ~1 ns at 1M
    documents. So callers read the arrays themselves: ``_shifted(post_tf[q],
    norm[post_docs[q]], ...)``.
    """
    if variant == IMPACT:  # the stored value is the weight: no norm
        return np.float32(tf) * scale
    w = _tfw(variant, np.float32(tf), norm_d, k1, k1p1, delta)
    if has_aw:
        w = w - aw
    return w * scale


@njit(cache=True)
def build_blocks(indptr, post_docs, post_tf, norm, variant, k1, k1p1, delta, aw, has_aw):  # pragma: no cover
    """Per term its block offsets; per block its last document and largest shifted weight.

    Returns ``(block_ptr, block_max, block_last, term_max)``: term t's blocks are
    ``block_ptr[t]:block_ptr[t+1]``, block j of a term covers its postings
    ``[j·BLOCK, (j+1)·BLOCK)``; weights are without idf (``tfw - tfw(0)``).
    """
    n_terms = indptr.size - 1
    block_ptr = np.empty(n_terms + 1, np.int64)
    block_ptr[0] = 0
    for t in range(n_terms):
        df = indptr[t + 1] - indptr[t]
        block_ptr[t + 1] = block_ptr[t] + (df + BLOCK - 1) // BLOCK
    n_blocks = block_ptr[n_terms]
    block_max = np.empty(n_blocks, np.float32)
    block_last = np.empty(n_blocks, np.int32)
    term_max = np.zeros(n_terms, np.float32)
    one = np.float32(1.0)
    for t in range(n_terms):
        b = block_ptr[t]
        p = indptr[t]
        hi = indptr[t + 1]
        tm = np.float32(0.0)
        while p < hi:
            e = min(p + BLOCK, hi)
            m = np.float32(-np.inf)
            for q in range(p, e):
                w = _shifted(post_tf[q], norm[_u(post_docs[q])], variant, k1, k1p1, delta, aw,
                             has_aw, one)
                if w > m:
                    m = w
            block_max[b] = m
            block_last[b] = post_docs[e - 1]
            if m > tm:
                tm = m
            b += 1
            p = e
        term_max[t] = tm
    return block_ptr, block_max, block_last, term_max


@njit(cache=True)
def build_table(norms, variant, k1, k1p1, delta, aw, has_aw):  # pragma: no cover
    """The shifted tf-weight table of the coded length norms ``norms`` (row = code).

    ``table[row·CODE_TF + tf]`` is ``tfw(tf, norms[row]) - tfw(0)`` computed with
    exactly `_shifted`'s float32 operations, so a table read times the query scale is
    bit for bit the computed weight: TAAT reads a byte code per document (one L2
    read beside its accumulator slot) and an L1 table entry instead of a float32 norm
    and a division.
    """
    table = np.zeros(norms.size * CODE_TF, np.float32)
    for r in range(norms.size):
        # tf = 0 stays 0: no posting reads it (postings have tf >= 1), and there the
        # formulas are 0/0 at k1 = 0.
        for tf in range(1, CODE_TF):
            w = _tfw(variant, np.float32(tf), norms[r], k1, k1p1, delta)
            if has_aw:
                w = w - aw
            table[r * CODE_TF + tf] = w
    return table


@njit(cache=True, inline="always")
def _slot(code, tf):  # pragma: no cover - compiled
    """The weight table's index for a posting of norm code ``code`` and frequency ``tf``,
    or -1 when its weight is computed (`_shifted`): no row, or tf >= `CODE_TF`.

    Impact postings (float32) never have a code (`kernels.NormCodes`): no table read.
    A caller reads the table itself (``table[_u(slot)] * scale``), for the reason
    `_shifted` gives.
    """
    if code != NO_CODE and tf < CODE_TF:
        return np.int64(code) * CODE_TF + np.int64(tf)
    return np.int64(-1)


@njit(cache=True)
def build_weights(indptr, post_docs, post_tf, norm, doc_codes, table, min_df, variant, k1, k1p1,
                  delta, aw, has_aw):  # pragma: no cover - compiled
    """The unscaled weight of every posting of each term with ``min_df`` postings or more.

    Returns ``(weight_ptr, weights)``: term t's weights are ``weights[weight_ptr[t]:]``
    for its ``df`` postings, or ``weight_ptr[t] == -1`` when it has fewer. Each is
    TAAT's weight at scale 1 (`_slot`, `_shifted`), so ``weight · scale`` is bit for bit
    what TAAT computes.
    """
    n_terms = indptr.size - 1
    weight_ptr = np.full(n_terms, -1, np.int64)
    total = 0
    for t in range(n_terms):
        df = indptr[t + 1] - indptr[t]
        if df >= min_df:
            weight_ptr[t] = total
            total += df
    weights = np.empty(total, np.float32)
    one = np.float32(1.0)
    for t in range(n_terms):
        w0 = weight_ptr[t]
        if w0 < 0:
            continue
        lo = indptr[t]
        for q in _span(lo, indptr[t + 1]):
            d = post_docs[q]
            tf = post_tf[q]
            slot = _slot(doc_codes[_u(d)], tf)
            if slot >= 0:
                w = table[_u(slot)] * one
            else:
                w = _shifted(tf, norm[_u(d)], variant, k1, k1p1, delta, aw, has_aw, one)
            weights[_u(w0) + q - _u(lo)] = w
    return weight_ptr, weights
