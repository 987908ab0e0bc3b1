"""Matching a query's terms against the postings: the engine's tuned scoring loop.

`match` turns a query's term ids into candidate documents with their full scores (BM25
or impact), as a function of one snapshot, its score cache, the scorer, a per-thread `Scratch`
and the backend settings; `match_many` is its batch form. A query touches only the
postings of its own terms: it weighs them, accumulates into the scratch buffer and
resets what it touched, so no step is proportional to the corpus size. Top-k queries
without a filter go to the compiled kernels when the backend allows (`kernels`); the
numpy path scores short queries in one batched pass (`_match_batched`) and long ones
term by term, rarest first, with MaxScore pruning once no unseen document can reach
the top k (`can_skip_new`). The table of paths is in `backend`.
Not precomputing per-posting scores keeps the index at 5 bytes per posting (bm25s
keeps 8); weighing a posting costs about as much as reading a cached score would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import NDArray

from ..selection import top_k
from ..types import Doc, MetadataFilter
from .backend import Backend
from .kernels import match_top_k, match_top_k_many
from .postings import Snapshot
from .score_cache import ScoreCache
from .scorer import Scorer
from .scratch import Scratch

__all__ = ["TermIds", "query_ids", "match", "match_many", "ranked_matches", "can_skip_new"]

TermIds = list[tuple[int, float]]
"""A query's (term id, count) pairs in query order, every term in the vocabulary.

The count scales the term's contribution: BM25's query term count, or a learned sparse
query's term weight (the impact scorer)."""

Matches = tuple[NDArray[np.int32], NDArray[np.float32]]
"""Document positions and their float32 scores."""


def query_ids(
    st: Snapshot, cache: ScoreCache, params: Scorer, terms: list[str], counts: list[int]
) -> tuple[TermIds, np.float32]:
    """The query's (term id, count) pairs in the vocabulary, and its absent-term weight."""
    vocab = st.vocab
    ids = [(vocab[t], c) for t, c in zip(terms, counts) if t in vocab]
    if cache.absent is None or not ids:
        return ids, np.float32(0.0)
    if cache.stats is not None:  # terms only other shards hold count too
        return ids, cache.absent_constant(st, params, terms, counts)
    return ids, np.float32(sum(float(cache.absent[t]) * c for t, c in ids))


def match(
    st: Snapshot,
    cache: ScoreCache,
    params: Scorer,
    ids: TermIds,
    constant: np.float32,
    k: int | None,
    allowed: NDArray[np.bool_] | None,
    scratch: Scratch,
    backend: Backend,
    compiled: bool = True,
) -> Matches:
    """Documents matching at least one term, with their full BM25 scores.

    With ``k`` given, documents that provably cannot reach the top ``k`` (among
    ``allowed`` ones) may be left out: once the k-th best partial score exceeds
    the sum of the remaining terms' maximum contributions, no unseen document
    can catch up, so the remaining (long, low-idf) posting lists only update
    the candidates already found (MaxScore; Turtle & Flood 1995).
    The compiled kernels take the query when they can (``compiled``: whether to ask
    them; their hits come ranked), the numpy path otherwise.
    """
    if compiled:
        top = _compiled(st, cache, params, ids, constant, k, allowed, scratch, backend)
        if top is not None:
            return top
    if not ids:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
    nonnegative, positive = cache.signs(ids)
    indptr, post_docs, post_tf = st.indptr, st.post_docs, st.post_tf
    if len(ids) == 1:
        t, c = ids[0]
        lo, hi = int(indptr[t]), int(indptr[t + 1])
        docs = post_docs[lo:hi]
        weights = _weigh(params, cache, post_tf[lo:hi], docs, float(cache.idf[t]) * c)
        return docs, weights + constant
    lengths = [int(indptr[t + 1] - indptr[t]) for t, _ in ids]
    total = sum(lengths)
    if k is None or not nonnegative or total <= backend.batched_postings:
        # No MaxScore pruning possible or worth it.
        return _match_batched(st, cache, params, ids, constant, k, allowed, scratch,
                              backend.dense_scan, positive)
    # Highest-impact (rarest) terms first, so the k-th score rises early.
    order = sorted(range(len(ids)), key=lambda i: -cache.upper[ids[i][0]] * ids[i][1])
    ids = [ids[i] for i in order]
    lengths = [lengths[i] for i in order]
    bounds = [float(cache.upper[t]) * c for t, c in ids]
    acc, seen = scratch.accumulators(len(st.docs))
    found: list[NDArray[np.int32]] = []
    n_found = 0
    try:
        for i, (t, c) in enumerate(ids):
            lo, hi = int(indptr[t]), int(indptr[t + 1])
            docs = post_docs[lo:hi]
            fresh = docs[~seen[docs]]
            seen[fresh] = True
            found.append(fresh)
            n_found += fresh.size
            # Within one term a document appears once, so fancy-index += is exact.
            acc[docs] += _weigh(params, cache, post_tf[lo:hi], docs, float(cache.idf[t]) * c)
            rest = i + 1
            if (
                rest < len(ids)
                and n_found >= k
                and sum(lengths[rest:]) > max(2 * n_found, backend.batched_postings)
                and can_skip_new(found, acc, allowed, k, sum(bounds[rest:]))
            ):
                cand = np.concatenate(found)
                found = [cand]
                for t2, c2 in ids[rest:]:
                    lo2, hi2 = int(indptr[t2]), int(indptr[t2 + 1])
                    docs2 = post_docs[lo2:hi2]
                    j = np.minimum(np.searchsorted(docs2, cand), docs2.size - 1)
                    present = docs2[j] == cand
                    hit_docs = cand[present]
                    acc[hit_docs] += _weigh(
                        params, cache, post_tf[lo2 + j[present]], hit_docs,
                        float(cache.idf[t2]) * c2,
                    )
                break
        cand = np.concatenate(found)
        scores = acc[cand] + constant
    finally:
        for f in found:
            acc[f] = 0.0
            seen[f] = False
    return cand, scores


def _compiled(
    st: Snapshot,
    cache: ScoreCache,
    params: Scorer,
    ids: TermIds,
    constant: np.float32,
    k: int | None,
    allowed: NDArray[np.bool_] | None,
    scratch: Scratch,
    backend: Backend,
) -> Matches | None:
    """The compiled kernels' top ``k``, ranked best first, or None when they cannot take
    the query (no ``k``, a mask, a negative contribution, or the backend says no)."""
    if k is None or allowed is not None or not ids:
        return None
    nonnegative, positive = cache.signs(ids)
    if not nonnegative:
        return None
    return match_top_k(st, cache, params, ids, positive, constant, k, scratch, backend)

def ranked_matches(
    st: Snapshot,
    cache: ScoreCache,
    params: Scorer,
    ids: TermIds,
    constant: np.float32,
    k: int,
    filter: MetadataFilter | None,
    scratch: Scratch,
    backend: Backend,
    admitted: NDArray[np.bool_] | None = None,
) -> Matches:
    """The top ``k`` matches as ``(positions, scores)``, best first, ties to the earlier document.

    ``filter`` (a metadata equality mapping, or a predicate over `Doc`) applies before
    top-k, so ``k`` filtered hits come back when they exist: a mapping becomes a mask the
    scoring loop prunes with, a predicate is called on every matching document.
    ``admitted`` (a structured query's mask, `operators.admitted`) is such a mask too.
    """
    if filter is None and admitted is None:
        top = _compiled(st, cache, params, ids, constant, k, None, scratch, backend)
        if top is not None:
            return top  # ranked in the same compiled call
        cand, scores = match(st, cache, params, ids, constant, k, None, scratch, backend,
                             compiled=False)
    elif callable(filter) and not isinstance(filter, Mapping):
        # A predicate is only known per candidate, so every match must be seen.
        cand, scores = match(st, cache, params, ids, constant, None, None, scratch, backend)
        if cand.size and admitted is not None:
            cand, scores = cand[admitted[cand]], scores[admitted[cand]]
        if cand.size:
            keep = _filter_callable(filter, st.docs, cand)
            cand, scores = cand[keep], scores[keep]
    else:
        if filter is None:
            allowed = admitted
        else:
            allowed = st.equality_mask(filter)
            if admitted is not None:
                allowed = allowed & admitted  # a new array: the memoised mask stays as it is
        assert allowed is not None
        cand, scores = match(st, cache, params, ids, constant, k, allowed, scratch, backend)
        keep = allowed[cand]
        cand, scores = cand[keep], scores[keep]
    if not cand.size:
        return cand, scores
    best = top_k(scores, k, tiebreak=cand)
    return cand[best], scores[best]


def _filter_callable(
    filter: Callable[[Doc], bool], docs: list[Doc], cand: NDArray[np.int32]
) -> NDArray[np.bool_]:
    return np.fromiter((bool(filter(docs[p])) for p in cand.tolist()), bool, cand.size)


def match_many(
    st: Snapshot,
    cache: ScoreCache,
    params: Scorer,
    queries: list[tuple[TermIds, np.float32]],
    k: int,
    scratch: Scratch,
    backend: Backend,
) -> list[Matches] | None:
    """Each ``(ids, constant)`` query's top ``k``, best first, in one kernel call.

    The batch form of `match` with ``k`` and no filter, for `search_many`: None when
    the compiled kernels cannot take it (then each query goes through `match`).
    """
    return match_top_k_many(st, cache, params, queries, k, scratch, backend)


def _weigh(
    params: Scorer,
    cache: ScoreCache,
    tf: NDArray[np.unsignedinteger],
    docs: NDArray[np.int32],
    scale: float | NDArray[np.float32],
) -> NDArray[np.float32]:
    """``scale · (tfw(tf, norm) - tfw(0))`` for postings of ``docs`` (float32)."""
    w = params.variant.tfw(tf.astype(np.float32), cache.norm[docs], params.k1, params.delta)
    if cache.absent_weight:
        w -= np.float32(cache.absent_weight)
    w *= np.float32(scale) if isinstance(scale, float) else scale
    return w


def _match_batched(
    st: Snapshot,
    cache: ScoreCache,
    params: Scorer,
    ids: TermIds,
    constant: np.float32,
    k: int | None,
    allowed: NDArray[np.bool_] | None,
    scratch: Scratch,
    dense_scan: int,
    positive: bool,
) -> Matches:
    """All terms' postings at once: a constant number of numpy calls per query.

    Random access into corpus-sized arrays dominates the cost, so there are as
    few passes as possible: weigh, accumulate, read back and reset. With ``k``
    the duplicated per-posting totals are cut to the best ``k·terms`` entries
    before removing duplicates: a document appears once per matching term, so
    that cut always keeps every entry of the top ``k`` documents. ``positive``
    (`ScoreCache.signs`): every contribution is > 0, so a total of 0 means unmatched.
    """
    indptr, post_docs, post_tf = st.indptr, st.post_docs, st.post_tf
    spans = [(int(indptr[t]), int(indptr[t + 1])) for t, _ in ids]
    docs = np.concatenate([post_docs[lo:hi] for lo, hi in spans])
    tf = np.concatenate([post_tf[lo:hi] for lo, hi in spans])
    scale = np.repeat(
        np.array([float(cache.idf[t]) * c for t, c in ids], dtype=np.float32),
        [hi - lo for lo, hi in spans],
    )
    w = _weigh(params, cache, tf, docs, scale)
    acc, _ = scratch.accumulators(len(st.docs))
    np.add.at(acc, docs, w)
    if positive and acc.size <= dense_scan * docs.size:
        # Postings cover a good share of the corpus: scanning the accumulator
        # for non-zero totals (each matched document once, in order) and wiping
        # it whole beats random reads and writes per posting.
        cand = np.nonzero(acc != 0)[0].astype(np.int32)  # a bool mask scans ~7x faster
        totals = acc[cand]
        acc.fill(0.0)
        if allowed is not None:
            keep = allowed[cand]
            cand, totals = cand[keep], totals[keep]
        return cand, totals + constant
    # Full scores before the cut: adding the constant can round two totals into a tie,
    # which the tie-break (the earlier document) then decides, so cut what is ranked.
    totals = acc[docs] + constant
    acc[docs] = 0.0
    if allowed is not None:
        keep = allowed[docs]
        docs, totals = docs[keep], totals[keep]
    keep_n = None if k is None else k * len(ids)
    if keep_n is not None and docs.size > 4 * keep_n:
        kth = np.partition(totals, docs.size - keep_n)[docs.size - keep_n]
        best = totals >= kth
        docs, totals = docs[best], totals[best]
        cand, first = np.unique(docs, return_index=True)
        return cand, totals[first]
    mark = scratch.marks(len(st.docs))
    # Keep one occurrence per document: the last write to mark[d] wins.
    slots = np.arange(docs.size, dtype=np.int32)
    mark[docs] = slots
    first = mark[docs] == slots
    return docs[first], totals[first]

def can_skip_new(
    found: list[NDArray[np.int32]],
    acc: NDArray[np.float32],
    allowed: NDArray[np.bool_] | None,
    k: int,
    remaining_bound: float,
) -> bool:
    """Whether no unseen document can reach the top ``k`` any more (MaxScore's test)."""
    cand = np.concatenate(found)
    if allowed is not None:
        cand = cand[allowed[cand]]
    if cand.size < k:
        return False
    partial = acc[cand]
    kth = float(np.partition(partial, partial.size - k)[partial.size - k])
    # Strict, with a float32 rounding margin: an unseen document scores at most
    # remaining_bound, which must fall below the current k-th best.
    return kth > remaining_bound * (1 + 1e-5) + 1e-6
