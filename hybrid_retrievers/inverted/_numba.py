"""Numba kernels for BM25 top-k: block-max metadata and block-max MaxScore search.

Imported only through `hybrid_retrievers.inverted.kernels`, and only when numba is
installed: importing this module (and the weighing primitives and metadata builders,
`_numba_weights`) imports numba; nothing else does.

Exactness: every posting is weighed with the same float32 operations, in the same
order, as `hybrid_retrievers.scoring` (``tfw_*``) and `matching._weigh` do with
numpy, and a document's total is the float32 sum of its terms' contributions in query
order plus the absent-term constant, exactly as the exhaustive numpy path adds them.
Pruning decisions only ever use float64 upper bounds widened by a rounding margin, so
they never drop a document that could reach the top k.

Search is document-at-a-time block-max MaxScore (Turtle & Flood 1995; Ding & Suel
2011; Mallia, Siedlaczek & Suel 2019): terms are sorted by their maximum contribution,
and the ones whose bounds together cannot beat the current k-th score are
"non-essential": candidates come only from the essential lists, the others are
probed by skipping through their blocks. Each block of ``BLOCK`` postings stores its
last document and its largest weight, which bounds a candidate more tightly than the
per-term maximum and lets whole runs of documents be skipped unscored.

TAAT's hot loops index with unsigned integers (`_span`, `_u`): numba gives a signed
index Python's negative-index wraparound, a compare and select on every access that
also keeps LLVM from vectorising. Unsigned, the accumulation at 1M documents takes
0.64x the time and the top-k scan about a third.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._numba_weights import (
    BLOCK,
    CODE_TF,
    NO_CODE,
    _shifted,
    _slot,
    _span,
    _u,
    build_blocks,
    build_table,
    build_weights,
)

SCAN = 64
"""Documents per run in TAAT's dense top-k scan."""


# --- a bounded min-heap of (score, document) for the top-k kernels -----------------
# It keeps the best k entries worst-first; ties rank the later document worse, so among
# equal scores the earlier document stays, as exhaustive scoring's tie-break does.


@njit(cache=True, inline="always")
def worse(s1, d1, s2, d2):  # pragma: no cover
    """Entry 1 ranks below entry 2: lower score, or equal score and later document."""
    return s1 < s2 or (s1 == s2 and d1 > d2)


@njit(cache=True)
def heap_push(hs, hd, size, s, d):  # pragma: no cover
    """Add (s, d) to the min-heap of the ``size`` worst-first entries."""
    hs[size] = s
    hd[size] = d
    i = size
    while i > 0 and worse(hs[i], hd[i], hs[(i - 1) >> 1], hd[(i - 1) >> 1]):
        parent = (i - 1) >> 1
        hs[i], hs[parent] = hs[parent], hs[i]
        hd[i], hd[parent] = hd[parent], hd[i]
        i = parent


@njit(cache=True)
def heap_replace(hs, hd, size, s, d):  # pragma: no cover
    """Replace the worst entry by (s, d) and restore the heap."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and worse(hs[c + 1], hd[c + 1], hs[c], hd[c]):
            c += 1
        if worse(hs[c], hd[c], s, d):
            hs[i] = hs[c]
            hd[i] = hd[c]
            i = c
        else:
            break
    hs[i] = s
    hd[i] = d


@njit(cache=True, inline="always")
def _seek(j, target, cur, end, blk, blk_end, blk_first, first, post_docs, block_last):  # pragma: no cover
    """Move term j's cursor to its first posting with document >= target."""
    b = blk[j]
    while b < blk_end[j] and block_last[b] < target:
        b += 1
    blk[j] = b
    if b >= blk_end[j]:
        cur[j] = end[j]
        return
    start = first[j] + (b - blk_first[j]) * BLOCK
    lo = max(cur[j], start)
    hi = min(start + BLOCK, end[j])
    while lo < hi:
        mid = (lo + hi) >> 1
        if post_docs[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    cur[j] = lo


@njit(cache=True)
def search_top_k(indptr, post_docs, post_tf, norm, block_ptr, block_max, block_last, term_max,
                 terms, scales, variant, k1, k1p1, delta, aw, has_aw, constant, k):  # pragma: no cover
    """The top ``k`` documents of one query: ``(docs, scores)``, unordered.

    ``terms`` are term ids in query order (distinct, all in the vocabulary) and
    ``scales`` their float32 ``idf · count``; ``constant`` is the absent-term weight
    added to every total. Ties go to the lower document: documents are visited in
    ascending order and one enters a full heap only by beating its minimum strictly.
    """
    n = terms.size
    ub = np.empty(n, np.float64)
    for i in range(n):
        ub[i] = np.float64(term_max[terms[i]]) * np.float64(scales[i])
    order = np.argsort(ub, kind="mergesort")  # ascending bound; non-essential first
    prefix = np.zeros(n + 1, np.float64)
    cur = np.empty(n, np.int64)
    end = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    blk = np.empty(n, np.int64)
    blk_end = np.empty(n, np.int64)
    blk_first = np.empty(n, np.int64)
    s32 = np.empty(n, np.float32)
    s64 = np.empty(n, np.float64)
    qpos = np.empty(n, np.int64)
    for j in range(n):
        i = order[j]
        t = terms[i]
        prefix[j + 1] = prefix[j] + ub[i]
        cur[j] = indptr[t]
        first[j] = indptr[t]
        end[j] = indptr[t + 1]
        blk[j] = block_ptr[t]
        blk_end[j] = block_ptr[t + 1]
        blk_first[j] = block_ptr[t]
        s32[j] = scales[i]
        s64[j] = np.float64(scales[i])
        qpos[j] = i
    contrib = np.zeros(n, np.float32)  # by query position, summed in query order
    nb = np.zeros(n, np.float64)
    heap_s = np.empty(k, np.float32)
    heap_d = np.empty(k, np.int32)
    size = 0
    const64 = np.float64(constant)
    rel = 1e-5 + 2e-7 * n  # float32 rounding of n additions and products, generously
    thr = -np.inf  # a document can enter only if its widened bound exceeds thr
    p = 0  # terms order[:p] are non-essential
    none = np.iinfo(np.int32).max
    while True:
        while p < n and prefix[p + 1] + const64 <= thr:
            p += 1
        if p >= n:
            break
        d = none
        for j in range(p, n):
            if cur[j] < end[j] and post_docs[cur[j]] < d:
                d = post_docs[cur[j]]
        if d == none:
            break
        # Block bounds at d, and the last document up to which they all hold.
        bound = const64
        lim = none
        for j in range(p, n):
            if cur[j] < end[j]:
                x = post_docs[cur[j]]
                if x == d:
                    while block_last[blk[j]] < d:
                        blk[j] += 1
                    bound += np.float64(block_max[blk[j]]) * s64[j]
                    if block_last[blk[j]] < lim:
                        lim = block_last[blk[j]]
                elif x - 1 < lim:
                    lim = x - 1
        rest = 0.0
        for j in range(p):
            b = blk[j]
            while b < blk_end[j] and block_last[b] < d:
                b += 1
            blk[j] = b
            nb[j] = 0.0
            if b < blk_end[j]:
                nb[j] = np.float64(block_max[b]) * s64[j]
                rest += nb[j]
                if block_last[b] < lim:
                    lim = block_last[b]
        if bound + rest <= thr:
            # No document in [d, lim] can enter: skip them all unscored.
            for j in range(p, n):
                if cur[j] < end[j] and post_docs[cur[j]] == d:
                    _seek(j, lim + 1, cur, end, blk, blk_end, blk_first, first, post_docs, block_last)
            continue
        part = const64
        for j in range(p, n):
            if cur[j] < end[j] and post_docs[cur[j]] == d:
                c = cur[j]
                w = _shifted(post_tf[c], norm[_u(post_docs[c])], variant, k1, k1p1, delta, aw,
                             has_aw, s32[j])
                contrib[qpos[j]] = w
                part += np.float64(w)
                cur[j] += 1
        alive = True
        for j in range(p - 1, -1, -1):
            if part + rest <= thr:
                alive = False
                break
            rest -= nb[j]
            if blk[j] >= blk_end[j]:
                continue
            _seek(j, d, cur, end, blk, blk_end, blk_first, first, post_docs, block_last)
            if cur[j] < end[j] and post_docs[cur[j]] == d:
                c = cur[j]
                w = _shifted(post_tf[c], norm[_u(post_docs[c])], variant, k1, k1p1, delta, aw,
                             has_aw, s32[j])
                contrib[qpos[j]] = w
                part += np.float64(w)
        if alive and part + rest > thr:
            total = np.float32(0.0)
            for i in range(n):
                total += contrib[i]
            total = total + constant
            if size < k:
                heap_push(heap_s, heap_d, size, total, d)
                size += 1
            elif total > heap_s[0]:
                heap_replace(heap_s, heap_d, size, total, d)
            if size == k:
                thr = (np.float64(heap_s[0]) - 1e-6) / (1.0 + rel)
        for i in range(n):
            contrib[i] = 0.0
    return heap_d[:size].copy(), heap_s[:size].copy()


@njit(cache=True, inline="always")
def _scatter_below(stop, base, q, t, s, indptr, post_docs, post_tf, norm, doc_codes, table,
                   weight_ptr, weights, variant, k1, k1p1, delta, aw,
                   has_aw, acc):  # pragma: no cover - compiled
    """Add term t's postings from ``q`` on, up to the first of a document >= ``stop``,
    times ``s``, to ``acc`` (document d's slot: ``d - base``); returns where it stopped."""
    end = indptr[t + 1]
    w0 = weight_ptr[t]
    if w0 >= 0:
        # A long list with stored weights: two sequential reads per posting.
        off = w0 - indptr[t]
        while q < end:
            d = post_docs[_u(q)]
            if d >= stop:
                break
            acc[_u(d - base)] += weights[_u(off + q)] * s
            q += 1
        return q
    while q < end:
        d = post_docs[_u(q)]
        if d >= stop:
            break
        tf = post_tf[_u(q)]
        slot = _slot(doc_codes[_u(d)], tf)
        if slot >= 0:
            acc[_u(d - base)] += table[_u(slot)] * s
        else:
            acc[_u(d - base)] += _shifted(tf, norm[_u(d)], variant, k1, k1p1, delta, aw, has_aw, s)
        q += 1
    return q


@njit(cache=True)
def search_taat(indptr, post_docs, post_tf, norm, doc_codes, table, weight_ptr, weights, terms,
                scales, variant, k1, k1p1, delta, aw, has_aw, constant, k, chunk_docs, dense_ratio,
                positive, acc, seen, touched):  # pragma: no cover
    """The top ``k`` documents of one query by exhaustive term-at-a-time scoring.

    Each term's postings, in query order, add their float32 weight to ``acc`` (a
    zeroed float32 buffer of one slot per document), so a document's total is the
    same float32 sum, in the same order, as ``np.add.at`` forms in the numpy path;
    the absent-term ``constant`` is added last, as there. A bounded heap keeps the
    best ``k``, ties to the lower document. Returns ``(docs, scores)``, unordered;
    ``acc`` (and ``seen``) are left zeroed again.

    A term with stored weights (``weight_ptr[t] >= 0``, from `build_weights`) reads
    them instead of its documents' norm codes and the table: the same float32 values.

    With ``positive`` (every idf > 0) a document matched iff its total is non-zero,
    so matches need no bookkeeping; otherwise ``seen`` (zeroed, one bool per
    document) marks them and ``touched`` (int32, one per document) lists them.

    ``chunk_docs`` (> 0) is how many documents a chunk of dense accumulation covers; a
    query takes that dense path when it has at least one posting per ``dense_ratio``
    documents (`Backend.taat_dense_ratio`), else it reads its postings back.
    """
    if not positive:
        return _taat_tracked(indptr, post_docs, post_tf, norm, doc_codes, table, terms, scales,
                             variant, k1, k1p1, delta, aw, has_aw, constant, k, acc, seen,
                             touched)
    n_post = 0
    for i in range(terms.size):
        t = terms[i]
        n_post += indptr[t + 1] - indptr[t]
    k = min(k, n_post)
    heap_s = np.empty(k, np.float32)
    heap_d = np.empty(k, np.int32)
    size = 0
    if dense_ratio * n_post >= acc.size:
        # Many postings: the documents are taken in chunks of ``chunk_docs``, and each
        # chunk gets every term's postings, in query order, then one sequential pass
        # that keeps the top k and zeroes it while it is still in cache. Every chunk
        # accumulates in the same first ``chunk_docs`` slots of ``acc`` (document d in
        # slot d - c0), which stay in cache from chunk to chunk and query to query
        # instead of streaming the whole buffer (4 MiB at 1M documents) through it:
        # -11% on the kernel's median at 1M. The sums are those of one pass over all
        # documents; documents are visited in ascending order, so a later one enters
        # a full heap only by beating its minimum strictly.
        cur = np.empty(terms.size, np.int64)
        for i in range(terms.size):
            cur[i] = indptr[terms[i]]
        n = acc.size
        c0 = 0
        while c0 < n:
            c1 = min(c0 + chunk_docs, n)
            for i in range(terms.size):
                cur[i] = _scatter_below(c1, c0, cur[i], terms[i], scales[i], indptr, post_docs,
                                        post_tf, norm, doc_codes, table, weight_ptr, weights,
                                        variant, k1, k1p1, delta, aw, has_aw, acc)
            m = c1 - c0  # slots in use
            x = 0
            while size < k and x < m:
                if acc[x] != 0.0:
                    heap_push(heap_s, heap_d, size, acc[x] + constant, x + c0)
                    size += 1
                    acc[x] = 0.0
                x += 1
            while x < m:
                # Unmatched documents total ``constant``, never strictly above a matched
                # minimum. A run of SCAN documents is read element by element only when
                # one of its totals beats the heap's minimum: a count of those, which over
                # unsigned indices compiles to vector compares (a running max does not).
                hi = min(x + SCAN, m)
                floor = heap_s[0]
                above = 0
                for y in _span(x, hi):
                    above += (acc[y] + constant) > floor
                if above:
                    for y in range(x, hi):
                        total = acc[y] + constant
                        if total > heap_s[0]:
                            heap_replace(heap_s, heap_d, size, total, y + c0)
                for y in _span(x, hi):
                    acc[y] = 0.0
                x = hi
            c0 = c1
        return heap_d[:size], heap_s[:size]
    # Few postings: add them all, then read back through them; zeroing on first read
    # skips repeats.
    for i in range(terms.size):
        t = terms[i]
        _scatter_below(acc.size, 0, indptr[t], t, scales[i], indptr, post_docs, post_tf, norm,
                       doc_codes, table, weight_ptr, weights, variant, k1, k1p1, delta, aw,
                       has_aw, acc)
    for i in range(terms.size):
        t = terms[i]
        for q in _span(indptr[t], indptr[t + 1]):
            d = post_docs[q]
            v = acc[_u(d)]
            if v == 0.0:
                continue
            acc[_u(d)] = 0.0
            total = v + constant
            if size < k:
                heap_push(heap_s, heap_d, size, total, d)
                size += 1
            elif worse(heap_s[0], heap_d[0], total, d):
                heap_replace(heap_s, heap_d, size, total, d)
    return heap_d[:size], heap_s[:size]


@njit(cache=True)
def _taat_tracked(indptr, post_docs, post_tf, norm, doc_codes, table, terms, scales, variant, k1,
                  k1p1, delta, aw, has_aw, constant, k, acc, seen, touched):  # pragma: no cover
    """`search_taat` when a matched document may total zero (some idf is 0)."""
    m = 0
    for i in range(terms.size):
        t = terms[i]
        s = scales[i]
        for q in _span(indptr[t], indptr[t + 1]):
            d = post_docs[q]
            if not seen[d]:
                seen[d] = True
                touched[m] = d
                m += 1
            tf = post_tf[q]
            slot = _slot(doc_codes[d], tf)
            if slot >= 0:
                acc[d] += table[_u(slot)] * s
            else:
                acc[d] += _shifted(tf, norm[d], variant, k1, k1p1, delta, aw, has_aw, s)
    k = min(k, m)
    heap_s = np.empty(k, np.float32)
    heap_d = np.empty(k, np.int32)
    size = 0
    for j in range(m):
        d = touched[j]
        total = acc[d] + constant
        acc[d] = 0.0
        seen[d] = False
        if size < k:
            heap_push(heap_s, heap_d, size, total, d)
            size += 1
        elif worse(heap_s[0], heap_d[0], total, d):
            heap_replace(heap_s, heap_d, size, total, d)
    return heap_d, heap_s
