"""Matching a query's terms against the postings: the tuned BM25 scoring loop.

`BM25Matching` is the part of `BM25Index` that turns query terms into candidate
documents with their full BM25 scores. A query touches only the postings of its own
terms: it weighs them, accumulates into a per-thread scratch buffer and resets what
it touched, so no step is proportional to the corpus size. Short queries are scored
in one batched pass (`_match_batched`); long ones term by term, rarest first, with
MaxScore pruning once no unseen document can reach the top k (`_can_skip_new`).
Not precomputing per-posting scores keeps the index at 5 bytes per posting (bm25s
keeps 8); weighing a posting costs about as much as reading a cached score would.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .postings import Snapshot
from .statistics import BM25Statistics, ScoreCache

__all__ = ["BM25Matching"]

_DENSE_SCAN = 8
"""A query with at least one posting per _DENSE_SCAN documents scans its accumulator."""
_BATCHED_POSTINGS = 65_536
"""Queries touching fewer postings than this are scored in one batched pass: per-term
numpy calls and pruning checks would cost more than they save."""


class BM25Matching(BM25Statistics):
    """The query-scoring methods of `BM25Index` (they read one snapshot, never edit)."""

    __slots__ = ()

    def _buffers(self, n: int) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
        # Per thread, and sized for the snapshot being searched: concurrent searches
        # never share a buffer, and a search never indexes past its own corpus.
        acc = getattr(self._scratch, "acc", None)
        if acc is None or acc.shape[0] != n:
            self._scratch.acc = acc = np.zeros(n, dtype=np.float32)
            self._scratch.seen = np.zeros(n, dtype=bool)
        return acc, self._scratch.seen

    def _match(
        self,
        terms: list[str],
        counts: list[int],
        k: int | None = None,
        allowed: NDArray[np.bool_] | None = None,
        *,
        state: Snapshot | None = None,
    ) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        """Documents matching at least one term, with their full BM25 scores.

        With ``k`` given, documents that provably cannot reach the top ``k`` (among
        ``allowed`` ones) may be left out: once the k-th best partial score exceeds
        the sum of the remaining terms' maximum contributions, no unseen document
        can catch up, so the remaining (long, low-idf) posting lists only update
        the candidates already found (MaxScore; Turtle & Flood 1995).
        """
        st = self._state if state is None else state
        cache = self._scores(st)
        ids, constant = self._query_ids(st, cache, terms, counts)
        if not ids:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        # --- compiled kernels (bm25.kernels: numba TAAT / block-max MaxScore) -----
        if k is not None and allowed is None:
            from . import kernels  # numba itself loads lazily

            top = kernels.match_top_k(self, st, cache, ids, constant, k)
            if top is not None:
                return top
        # --- end of compiled kernels -------------------------------------------------
        indptr, post_docs, post_tf = st.indptr, st.post_docs, st.post_tf
        if len(ids) == 1:
            t, c = ids[0]
            lo, hi = int(indptr[t]), int(indptr[t + 1])
            docs = post_docs[lo:hi]
            weights = self._weigh(cache, post_tf[lo:hi], docs, float(cache.idf[t]) * c)
            return docs, weights + constant
        lengths = [int(indptr[t + 1] - indptr[t]) for t, _ in ids]
        total = sum(lengths)
        if k is None or not cache.nonnegative or total <= _BATCHED_POSTINGS:
            # No MaxScore pruning possible or worth it.
            return self._match_batched(st, cache, ids, constant, k, allowed)
        # Highest-impact (rarest) terms first, so the k-th score rises early.
        order = sorted(range(len(ids)), key=lambda i: -cache.upper[ids[i][0]] * ids[i][1])
        ids = [ids[i] for i in order]
        lengths = [lengths[i] for i in order]
        bounds = [float(cache.upper[t]) * c for t, c in ids]
        acc, seen = self._buffers(len(st.docs))
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
                acc[docs] += self._weigh(cache, post_tf[lo:hi], docs, float(cache.idf[t]) * c)
                rest = i + 1
                if (
                    rest < len(ids)
                    and n_found >= k
                    and sum(lengths[rest:]) > max(2 * n_found, _BATCHED_POSTINGS)
                    and self._can_skip_new(found, acc, allowed, k, sum(bounds[rest:]))
                ):
                    cand = np.concatenate(found)
                    found = [cand]
                    for t2, c2 in ids[rest:]:
                        lo2, hi2 = int(indptr[t2]), int(indptr[t2 + 1])
                        docs2 = post_docs[lo2:hi2]
                        j = np.minimum(np.searchsorted(docs2, cand), docs2.size - 1)
                        present = docs2[j] == cand
                        hit_docs = cand[present]
                        acc[hit_docs] += self._weigh(
                            cache, post_tf[lo2 + j[present]], hit_docs,
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

    def _query_ids(
        self, st: Snapshot, cache: ScoreCache, terms: list[str], counts: list[int]
    ) -> tuple[list[tuple[int, int]], np.float32]:
        """The query's (term id, count) pairs in the vocabulary, and its absent-term weight."""
        vocab = st.vocab
        ids = [(vocab[t], c) for t, c in zip(terms, counts) if t in vocab]
        if cache.absent is None or not ids:
            return ids, np.float32(0.0)
        if self._collection_stats is not None:
            return ids, self._absent_constant(cache, st, terms, counts)  # collection-stats hook
        return ids, np.float32(sum(float(cache.absent[t]) * c for t, c in ids))

    def _match_many(
        self, st: Snapshot, queries: list[tuple[list[str], list[int]]], k: int
    ) -> list[tuple[NDArray[np.int32], NDArray[np.float32]]] | None:
        """Each query's top ``k`` as ``(positions, scores)``, best first, in one kernel call.

        The batch form of `_match` with ``k`` and no filter, for `search_many`: None
        when the compiled kernels cannot take it (then each query goes through `_match`).
        """
        from . import kernels  # numba itself loads lazily

        cache = self._scores(st)
        return kernels.match_top_k_many(
            self, st, cache, [self._query_ids(st, cache, t, c) for t, c in queries], k
        )

    def _weigh(
        self,
        cache: ScoreCache,
        tf: NDArray[np.unsignedinteger],
        docs: NDArray[np.int32],
        scale: float | NDArray[np.float32],
    ) -> NDArray[np.float32]:
        """``scale · (tfw(tf, norm) - tfw(0))`` for postings of ``docs`` (float32)."""
        w = self._variant.tfw(tf.astype(np.float32), cache.norm[docs], self._k1, self._delta)
        if cache.absent_weight:
            w -= np.float32(cache.absent_weight)
        w *= np.float32(scale) if isinstance(scale, float) else scale
        return w

    def _match_batched(
        self,
        st: Snapshot,
        cache: ScoreCache,
        ids: list[tuple[int, int]],
        constant: np.float32,
        k: int | None = None,
        allowed: NDArray[np.bool_] | None = None,
    ) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        """All terms' postings at once: a constant number of numpy calls per query.

        Random access into corpus-sized arrays dominates the cost, so there are as
        few passes as possible: weigh, accumulate, read back and reset. With ``k``
        the duplicated per-posting totals are cut to the best ``k·terms`` entries
        before removing duplicates: a document appears once per matching term, so
        that cut always keeps every entry of the top ``k`` documents.
        """
        indptr, post_docs, post_tf = st.indptr, st.post_docs, st.post_tf
        spans = [(int(indptr[t]), int(indptr[t + 1])) for t, _ in ids]
        docs = np.concatenate([post_docs[lo:hi] for lo, hi in spans])
        tf = np.concatenate([post_tf[lo:hi] for lo, hi in spans])
        scale = np.repeat(
            np.array([float(cache.idf[t]) * c for t, c in ids], dtype=np.float32),
            [hi - lo for lo, hi in spans],
        )
        w = self._weigh(cache, tf, docs, scale)
        acc, _ = self._buffers(len(st.docs))
        np.add.at(acc, docs, w)
        if cache.positive and acc.size <= _DENSE_SCAN * docs.size:
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
        totals = acc[docs]
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
            return cand, totals[first] + constant
        mark = self._marks(len(st.docs))
        # Keep one occurrence per document: the last write to mark[d] wins.
        slots = np.arange(docs.size, dtype=np.int32)
        mark[docs] = slots
        first = mark[docs] == slots
        return docs[first], totals[first] + constant

    def _marks(self, n: int) -> NDArray[np.int32]:
        mark = getattr(self._scratch, "mark", None)
        if mark is None or mark.shape[0] != n:
            self._scratch.mark = mark = np.empty(n, dtype=np.int32)
        return mark

    @staticmethod
    def _can_skip_new(
        found: list[NDArray[np.int32]],
        acc: NDArray[np.float32],
        allowed: NDArray[np.bool_] | None,
        k: int,
        remaining_bound: float,
    ) -> bool:
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
