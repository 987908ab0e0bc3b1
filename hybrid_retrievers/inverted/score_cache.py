"""`ScoreCache`: what scoring needs beyond one snapshot's postings.

It holds what depends on N and avgdl: each document's length norm, each term's idf and
upper bound (its largest contribution, for MaxScore pruning) and, for BM25L/BM25+, the
weight of absent terms; and the compiled kernels' metadata built from them (`kept`).
It is built lazily once per snapshot (`Snapshot.derived`), so an edited index scores
exactly like one rebuilt from scratch. What it needs from a pass over every posting
(`PostingBounds`: each term's largest weight and the smallest one) is saved with the
index and given back on load (`cache_saving`), so a memory-mapped index answers its
first query without reading every posting; so are the kernels' metadata (`seed`).

With corpus-wide statistics (`CorpusStatistics`: a shard of a larger corpus, BM25's
`CollectionStats` given by `BM25Index.set_collection_stats`) the cache takes its idf
from them, asked with the scorer's own idf (`Variant`), and their avgdl, instead of the
snapshot's own, and answers the questions about terms only other shards hold (`df_of`,
`global_idf`, `absent_constant`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from .heap import release_free_heap
from .postings import TRIM_POSTINGS, Snapshot
from .scorer import Scorer, Variant, length_norm

__all__ = ["ScoreCache", "CorpusStatistics", "PostingBounds"]

T = TypeVar("T")


class CorpusStatistics(Protocol):
    """Statistics of a whole corpus that one index (a shard) scores with instead of its own.

    ``df`` maps each term of the corpus to its document frequency, ``avgdl`` is the
    corpus's average document length, and ``idf_for(vocab, variant)`` is the idf of
    ``vocab``'s terms (``term -> row``, by row) by ``variant``'s idf function over the
    corpus. `hybrid_retrievers.bm25.CollectionStats` is one.
    """

    @property
    def df(self) -> Mapping[str, int]: ...

    @property
    def avgdl(self) -> float: ...

    def idf_for(self, vocab: Mapping[str, int], variant: Variant) -> NDArray[np.float64]: ...


class PostingBounds(NamedTuple):
    """What a score cache needs from a pass over every posting, before any idf.

    ``top[t]`` is term t's largest shifted tf weight (``tfw - tfw(0)`` in float32, the
    weight `matching._weigh` scales by the idf; zeros when the snapshot has no
    postings) and ``least`` the smallest shifted weight of any posting (infinity
    without postings). They depend on the tf weight, k1, b, delta, the documents'
    lengths and avgdl, but not on the idf (N, df, collection statistics), which
    `ScoreCache.build` applies afterwards.
    """

    top: NDArray[np.float32]
    least: np.float32

    @classmethod
    def of(cls, state: Snapshot, params: Scorer, norm: NDArray[np.float32],
           absent_weight: float) -> PostingBounds:
        """The bounds of ``state``'s postings, read in slabs so the transient stays small."""
        v = params.variant
        k1, delta = params.k1, params.delta
        indptr = state.indptr
        top = np.zeros(indptr.size - 1, dtype=np.float32)
        least = np.float32(np.inf)
        if not state.post_docs.size:
            return cls(top, least)
        tf = state.post_tf
        for lo, hi in _slabs(indptr):
            a, b = int(indptr[lo]), int(indptr[hi])
            w = v.tfw(tf[a:b].astype(np.float32), norm[state.post_docs[a:b]], k1, delta)
            top[lo:hi] = np.maximum.reduceat(w, indptr[lo:hi] - a)
            # Shifted as the scoring paths shift it (`matching._weigh`, the kernels).
            if w.size:
                least = min(least, w.min() - np.float32(absent_weight))
        return cls(top - np.float32(absent_weight), np.float32(least))


class ScoreCache:
    """What queries need beyond the postings; depends on N and avgdl, so edits reset it.

    ``norm`` is each document's length norm, ``idf`` and ``upper`` (the largest
    contribution a term can make, for pruning) are per term, and for BM25L/BM25+
    ``absent`` is the weight a term adds to documents that lack it. Posting weights
    are stored shifted by ``absent_weight`` (the tf weight at tf = 0), so absent
    terms add one per-query constant instead of touching every document.
    ``bounds`` are the postings' `PostingBounds` (``upper`` is ``bounds.top · idf``;
    ``bounds.least`` the smallest shifted float32 posting weight). ``stats`` are the
    collection statistics it was built with (None: the snapshot's own), and ``avgdl``
    the average document length it used.
    """

    __slots__ = ("norm", "idf", "upper", "absent", "absent_weight", "nonnegative", "positive",
                 "least", "bounds", "stats", "avgdl", "_kept", "_seeds", "_lock", "_trims")

    def __init__(
        self,
        norm: NDArray[np.float32],
        idf: NDArray[np.float32],
        upper: NDArray[np.float32],
        absent: NDArray[np.float32] | None,
        absent_weight: float,
        bounds: PostingBounds,
        stats: CorpusStatistics | None = None,
        avgdl: float = 0.0,
        trims: bool = False,
    ) -> None:
        self.norm = norm
        self.idf = idf
        self.upper = upper
        self.absent = absent
        self.absent_weight = absent_weight
        self.stats = stats
        self.avgdl = avgdl
        # Whether every posting's contribution (its float32 shifted weight times a scale of
        # at least its term's idf) is >= 0, so upper bounds prune (MaxScore, the kernels),
        # and > 0, so a document matched iff its total is non-zero (dense scans). Rounding
        # can make a shifted weight 0 (BM25L at k1 = 0, a large delta) or below.
        # A query's own counts (BM25F's qtf·idf, learned query weights) can still be 0 or
        # below: `signs` answers for one query.
        self.bounds = bounds
        least = np.float32(bounds.least)
        low_idf = np.float32(idf.min()) if idf.size else np.float32(np.inf)
        self.least = least
        self.nonnegative = bool(low_idf >= 0 and least >= 0)
        self.positive = bool(low_idf > 0 and least > 0 and least * low_idf > 0)
        self._kept: dict[type, object] = {}
        self._seeds: dict[type, Callable[[], object]] = {}
        self._lock = threading.Lock()
        # Whether building from the postings frees enough temporaries to give the C heap's
        # free pages back after it (`heap`): `build` says so for `TRIM_POSTINGS` or more.
        self._trims = trims

    @classmethod
    def of(cls, state: Snapshot, params: Scorer, stats: CorpusStatistics | None) -> ScoreCache:
        """``state``'s cache, built on first use (once, however many readers ask at once)."""
        return state.derived(lambda: cls.build(state, params, stats))

    @classmethod
    def build(
        cls, state: Snapshot, params: Scorer, stats: CorpusStatistics | None,
        bounds: PostingBounds | None = None,
    ) -> ScoreCache:
        """The cache of ``state`` computed now (`of` builds it once per snapshot).

        ``bounds``: the postings' `PostingBounds` under these parameters, computed
        before (a saved index's); None reads every posting to compute them.
        """
        v = params.variant
        k1, delta = params.k1, params.delta
        df = np.diff(state.indptr).astype(np.float64)
        if stats is None:
            idf = v.idf(df, len(state.docs)).astype(np.float32)
            avgdl = state.avgdl
        else:
            idf = stats.idf_for(state.vocab, v).astype(np.float32)
            avgdl = stats.avgdl
        norm = length_norm(state.doc_len.astype(np.float64), avgdl, params.b).astype(np.float32)
        absent_weight = 0.0
        absent = None
        if v.absent is not None:
            absent_weight = float(v.absent(k1, delta))
            absent = (idf * np.float32(absent_weight)).astype(np.float32)
        trims = state.post_docs.size >= TRIM_POSTINGS
        if bounds is None:
            bounds = PostingBounds.of(state, params, norm, absent_weight)
            if trims:
                release_free_heap()  # the slabs' freed weights: see `heap`
        if state.post_docs.size:
            upper = bounds.top * idf
        else:
            upper = np.zeros(len(df), dtype=np.float32)
        return cls(norm, idf, upper, absent, absent_weight, bounds, stats, avgdl, trims)

    def signs(self, ids: list[tuple[int, float]]) -> tuple[bool, bool]:
        """Whether every contribution of a query is >= 0, and whether every one is > 0.

        ``ids`` are the query's (term id, count) pairs; a contribution is a posting's
        shifted weight times its term's float32 scale ``idf · count``. The first lets
        upper bounds prune (MaxScore, the kernels); the second lets a document count as
        matched iff its total is non-zero (dense scans). `nonnegative` and `positive`
        answer for counts >= 1 (BM25's); a BM25F or learned query's weight may be 0 (an
        idf of 0) or below (a negative Robertson idf), and a document it matches then
        scores 0 but is matched all the same.
        """
        if not ids or min(c for _, c in ids) >= 1:
            return self.nonnegative, self.positive  # each scale is at least its idf
        scales = np.array([float(self.idf[t]) * c for t, c in ids], dtype=np.float32)
        low = scales.min()
        return (self.nonnegative and bool(low >= 0),
                self.positive and bool(low > 0 and self.least * low > 0))

    # --- compiled kernels' metadata -------------------------------------------------

    def kept(self, kind: type[T], build: Callable[[], T]) -> T:
        """The ``kind`` of kernel metadata for this cache: ``build()`` on first use, then kept.

        Built once under a lock (two first queries do not both build it); an edit gives
        the index a new snapshot and with it a new cache, so nothing here goes stale.
        """
        held = self._kept.get(kind)
        if held is None:
            with self._lock:
                held = self._kept.get(kind)
                if held is None:
                    seeded = self._seeds.pop(kind, None)
                    held = self._kept[kind] = (seeded or build)()
                    if seeded is None and self._trims:  # a seed reads no postings
                        release_free_heap()  # the build's freed temporaries: see `heap`
        return held  # type: ignore[return-value]

    def seed(self, kind: type[T], build: Callable[[], T]) -> None:
        """Have `kept` build the ``kind`` of kernel metadata with ``build`` (on first use).

        A loaded index seeds its saved metadata (`cache_saving`): it replaces the
        caller's build, which reads every posting, and is built as lazily.
        """
        with self._lock:
            if kind not in self._kept:
                self._seeds[kind] = build

    def saveable(self, kind: type[T], build: Callable[[], T]) -> T:
        """The ``kind`` of kernel metadata to save: kept or seeded (then kept), else ``build()``.

        What no query built and no load seeded is built for the save and not kept, so
        saving does not grow an index that never needs it.
        """
        held = self.peek(kind)
        if held is not None:
            return held
        if kind in self._seeds:
            return self.kept(kind, build)
        return build()

    def peek(self, kind: type[T]) -> T | None:
        """The ``kind`` of kernel metadata if a query has built it, else None."""
        return self._kept.get(kind)  # type: ignore[return-value]

    def nbytes(self) -> int:
        """Bytes held by the per-document and per-term arrays (not the kernel metadata)."""
        arrays = [self.norm, self.idf, self.upper, self.absent, self.bounds.top]
        return int(sum(a.nbytes for a in arrays if a is not None))

    # --- collection statistics: terms only other shards hold ------------------------

    def df_of(self, term: str, local_df: int) -> int:
        """The document frequency scoring uses for ``term`` (the collection's, when set)."""
        return local_df if self.stats is None else self.stats.df.get(term, local_df)

    def global_idf(self, term: str, params: Scorer) -> float:
        """The idf of a term this index lacks but the collection has (else 0)."""
        if self.stats is None or term not in self.stats.df:
            return 0.0
        return float(np.float32(self.stats.idf_for({term: 0}, params.variant)[0]))

    def absent_constant(self, state: Snapshot, params: Scorer, terms: list[str],
                        counts: list[int]) -> np.float32:
        """BM25L/BM25+'s weight of absent terms, counting terms only other shards hold."""
        assert self.absent is not None and self.stats is not None
        total = 0.0
        for term, c in zip(terms, counts):
            t = state.vocab.get(term)
            if t is not None:
                total += float(self.absent[t]) * c
            elif term in self.stats.df:
                idf = np.float32(self.global_idf(term, params))
                total += float(np.float32(idf * np.float32(self.absent_weight))) * c
        return np.float32(total)


_UPPER_SLAB_POSTINGS = 1 << 20
"""Postings per slab when computing upper bounds (more only when one list is longer), so
the transient (a few float32 arrays of a slab's size) stays small: slabs of 65,536
terms held nearly every posting of a Zipfian corpus (a 1M-document build peaked here)."""


def _slabs(indptr: NDArray[np.int64]) -> list[tuple[int, int]]:
    """Consecutive term ranges ``[lo, hi)`` of about `_UPPER_SLAB_POSTINGS` postings each."""
    n_terms = indptr.size - 1
    cuts = np.searchsorted(indptr, np.arange(0, int(indptr[-1]), _UPPER_SLAB_POSTINGS),
                           side="right") - 1
    # Each cut is a term with postings, so every slab has some (leading empty terms
    # join the first).
    bounds = sorted({0, n_terms, *(c for c in cuts.tolist() if c > 0 and indptr[c] > 0)})
    return list(zip(bounds, bounds[1:]))
