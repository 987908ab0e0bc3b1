"""What BM25 scoring needs beyond the postings, and the corpus-wide statistics hook.

`ScoreCache` holds what depends on N and avgdl: each document's length norm, each
term's idf and upper bound (its largest contribution, for MaxScore pruning) and, for
BM25L/BM25+, the weight of absent terms. It is built lazily once per snapshot, so an
edited index scores exactly like one rebuilt from scratch.

`BM25Statistics` is the statistics half of `BM25Index`: the per-snapshot cache
(``_scores``) and the collection-stats hook with which a shard scores with
corpus-wide N, avgdl and df (`set_collection_stats`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .collection_stats import CollectionStats
from .postings import IndexFields, Snapshot
from .scoring import length_norm

__all__ = ["ScoreCache", "BM25Statistics"]


class BM25Statistics(IndexFields):
    """The score cache and collection-statistics methods of `BM25Index`."""

    __slots__ = ()

    # --- collection-stats hook (sharding): begin -----------------------------------
    def set_collection_stats(self, stats: CollectionStats | None) -> None:
        """Score with corpus-wide N, avgdl and df instead of this index's own.

        A shard of a larger corpus given the whole corpus's `CollectionStats` scores
        every one of its documents exactly as one index over the whole corpus would
        (same idf, same length norm), so shards' top-k lists can be merged by score.
        The statistics must cover this index's documents and terms; after an edit
        here they are stale until new ones are set. ``None`` returns to local
        statistics. They are not saved with the index.
        """
        if stats is not None and not isinstance(stats, CollectionStats):
            raise TypeError(
                f"stats must be a CollectionStats or None, got {type(stats).__name__}"
            )
        with self._lock:
            st = self._state
            if stats is not None and stats.n_docs < len(st.docs):
                raise ValueError(
                    f"the collection statistics count {stats.n_docs} documents but this index "
                    f"alone holds {len(st.docs)}; they are stale or belong to another corpus"
                )
            self._collection_stats = stats
            # The same postings in a new snapshot: its score cache is built with the new
            # statistics, while searches already running keep the old one.
            self._state = Snapshot(st.docs, st.vocab, st.indptr, st.post_docs, st.post_tf,
                                    st.doc_len, positions=st.positions)

    @property
    def collection_stats(self) -> CollectionStats | None:
        """The corpus-wide statistics in use, or ``None`` (this index's own)."""
        return self._collection_stats

    def _term_df(self, term: str, local_df: int) -> int:
        stats = self._collection_stats
        return local_df if stats is None else stats.df.get(term, local_df)

    def _global_idf(self, term: str) -> float:
        """The idf of a term this index lacks but the collection has (else 0)."""
        stats = self._collection_stats
        if stats is None or term not in stats.df:
            return 0.0
        return float(np.float32(stats.idf_for({term: 0}, self._variant)[0]))

    def _avgdl_of(self, state: Snapshot) -> float:
        """The average document length scoring uses: the collection's, when set."""
        stats = self._collection_stats
        return state.avgdl if stats is None else stats.avgdl

    def _absent_constant(
        self, cache: ScoreCache, state: Snapshot, terms: list[str], counts: list[int]
    ) -> np.float32:
        """BM25L/BM25+'s weight of absent terms, counting terms only other shards hold."""
        total = 0.0
        for term, c in zip(terms, counts):
            t = state.vocab.get(term)
            if t is not None:
                total += float(cache.absent[t]) * c
            elif term in self._collection_stats.df:
                idf = np.float32(self._global_idf(term))
                total += float(np.float32(idf * np.float32(cache.absent_weight))) * c
        return np.float32(total)
    # --- collection-stats hook (sharding): end -------------------------------------

    def _scores(self, state: Snapshot | None = None) -> ScoreCache:
        """Per-document norms and per-term statistics of ``state``, built on first use."""
        if state is None:
            state = self._state
        cache = state.cache
        if cache is not None:
            return cache
        with state.build_lock:  # one build per snapshot, not one per concurrent reader
            if state.cache is None:
                state.cache = ScoreCache.build(self, state)
            return state.cache


class ScoreCache:
    """What queries need beyond the postings; depends on N and avgdl, so edits reset it.

    ``norm`` is each document's length norm, ``idf`` and ``upper`` (the largest
    contribution a term can make, for pruning) are per term, and for BM25L/BM25+
    ``absent`` is the weight a term adds to documents that lack it. Posting weights
    are stored shifted by ``absent_weight`` (the tf weight at tf = 0), so absent
    terms add one per-query constant instead of touching every document.
    """

    __slots__ = ("norm", "idf", "upper", "absent", "absent_weight", "nonnegative", "positive")

    def __init__(
        self,
        norm: NDArray[np.float32],
        idf: NDArray[np.float32],
        upper: NDArray[np.float32],
        absent: NDArray[np.float32] | None,
        absent_weight: float,
    ) -> None:
        self.norm = norm
        self.idf = idf
        self.upper = upper
        self.absent = absent
        self.absent_weight = absent_weight
        # Shifted posting weights are >= 0, so contributions are >= 0 when idf is.
        self.nonnegative = bool(idf.min() >= 0) if idf.size else True
        # ... and > 0 when idf is: a tf of 1 or more always adds weight.
        self.positive = bool(idf.min() > 0) if idf.size else True

    @classmethod
    def build(cls, index: BM25Statistics, state: Snapshot) -> ScoreCache:
        v = index._variant
        indptr = state.indptr
        df = np.diff(indptr).astype(np.float64)
        stats = index._collection_stats  # collection-stats hook
        if stats is None:
            idf = v.idf(df, len(state.docs)).astype(np.float32)
        else:
            idf = stats.idf_for(state.vocab, v).astype(np.float32)
        norm = length_norm(state.doc_len.astype(np.float64), index._avgdl_of(state), index._b).astype(
            np.float32
        )
        absent_weight = 0.0
        absent = None
        if v.scores_absent_terms:
            absent_weight = float(v.tfw(np.float64(0.0), np.float64(1.0), index._k1, index._delta))
            absent = (idf * np.float32(absent_weight)).astype(np.float32)
        upper = np.zeros(len(df), dtype=np.float32)
        if state.post_docs.size:
            # The largest shifted tf weight of each term, computed in slabs so the
            # transient stays small for big corpora.
            tf = state.post_tf
            for lo in range(0, len(df), _UPPER_SLAB_TERMS):
                hi = min(lo + _UPPER_SLAB_TERMS, len(df))
                a, b = int(indptr[lo]), int(indptr[hi])
                w = v.tfw(tf[a:b].astype(np.float32), norm[state.post_docs[a:b]],
                          index._k1, index._delta)
                upper[lo:hi] = np.maximum.reduceat(w, indptr[lo:hi] - a)
            upper = (upper - np.float32(absent_weight)) * idf
        return cls(norm, idf, upper, absent, absent_weight)


_UPPER_SLAB_TERMS = 65_536
"""Terms per slab when computing upper bounds, so the transient stays small."""
