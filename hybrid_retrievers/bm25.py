"""BM25Index: a sparse inverted index whose query cost follows the query's postings.

Raw term frequencies (one byte per posting for most corpora) and document lengths
are the only per-posting and per-document data kept. What depends on N and avgdl
(idf, each document's length norm, each term's maximum contribution) is a small
cache rebuilt lazily after ``add`` or ``delete``, so an edited index scores exactly
like one rebuilt from scratch. A query touches only the postings of its own terms:
it weighs them, accumulates into a per-thread scratch buffer, selects the top k
among the matched documents and resets what it touched, so no step is proportional
to the corpus size. Not precomputing per-posting scores keeps the index at 5 bytes
per posting (bm25s keeps 8); weighing a posting costs about as much as reading a
cached score would.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .documents import check_docs, check_new_ids, make_docs
from .filters import cached_equality_mask
from .validation import check_k, check_queries, check_query
from .validation import check_id_list
from .collection_stats import CollectionStats
from .explanation import Explanation, TermContribution
from ._integrity import check_offsets, check_postings, check_unique_ids
from .persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index
from .scoring import DEFAULT_DELTA, BM25Method, get_variant, length_norm
from .selection import top_k
from .tokenization import Analyzer
from .types import Doc, Hit, MetadataFilter

__all__ = ["BM25Index"]

FORMAT_VERSION = 1
_DENSE_SCAN = 8
"""A query with at least one posting per _DENSE_SCAN documents scans its accumulator."""
_BATCHED_POSTINGS = 65_536
"""Queries touching fewer postings than this are scored in one batched pass: per-term
numpy calls and pruning checks would cost more than they save."""


class BM25Index:
    """A BM25 index over documents, with incremental updates, explanations and persistence.

    Concurrency: any number of threads may search while one thread edits. Every
    search reads one immutable snapshot of the index (documents, vocabulary,
    postings, score cache and filter masks), taken once when it starts, so it sees
    the index as it was before an edit or after it, never a mix. Edits (`add`,
    `upsert`, `delete`) build new arrays off to the side and publish them with one
    reference swap; searches never wait for an edit, nor for each other. Writers
    are serialised by a lock: two threads editing at once get the two edits one
    after the other, each complete (in an unspecified order), and a search sees
    none, one or both of them.

    Example:
        >>> index = BM25Index.from_texts(
        ...     ["the cat sat on the mat", "dogs chase cats", "a bird sang"],
        ...     ids=["a", "b", "c"],
        ... )
        >>> [hit.id for hit in index.search("dogs", k=2)]
        ['b']
    """

    def __init__(
        self,
        *,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str | BM25Method = "lucene",
        delta: float | None = None,
    ) -> None:
        """Create an empty index; most users call `from_texts` or `from_docs` instead."""
        self._method = BM25Method.parse(method)
        self._variant = get_variant(self._method)
        self._k1 = _check_float("k1", k1, low=0.0)
        self._b = _check_float("b", b, low=0.0, high=1.0)
        if delta is None:
            delta = DEFAULT_DELTA.get(self._method, 0.0)
        self._delta = _check_float("delta", delta, low=0.0)
        if analyzer is None:
            analyzer = Analyzer()
        if not isinstance(analyzer, Analyzer):
            raise TypeError(
                f"analyzer must be a hybrid_retrievers.Analyzer, got {type(analyzer).__name__}"
            )
        self._analyzer = analyzer
        self._lock = threading.RLock()  # serialises writers; readers never take it
        self._scratch = threading.local()
        self._collection_stats: CollectionStats | None = None  # collection-stats hook
        self._state = _Snapshot.empty()

    def _install(
        self,
        *,
        docs: list[Doc],
        vocab: dict[str, int],
        indptr: NDArray[np.integer],
        post_docs: NDArray[np.integer],
        post_tf: NDArray[np.unsignedinteger],
        doc_len: NDArray[np.integer],
    ) -> None:
        """Publish a complete new version of the index (used by `load`).

        Raises:
            ValueError: ``docs`` holds duplicate ids.
        """
        state = _Snapshot(docs, vocab, indptr, post_docs, post_tf, doc_len)
        if len(state.positions) != len(docs):
            raise ValueError("duplicate document ids")
        with self._lock:
            self._state = state

    # Read-only views of the current snapshot, for code that reads one field (save).
    @property
    def _docs(self) -> list[Doc]:
        return self._state.docs

    @property
    def _positions(self) -> dict[str, int]:
        return self._state.positions

    @property
    def _vocab(self) -> dict[str, int]:
        return self._state.vocab

    @property
    def _indptr(self) -> NDArray[np.int64]:
        return self._state.indptr

    @property
    def _post_docs(self) -> NDArray[np.int32]:
        return self._state.post_docs

    @property
    def _post_tf(self) -> NDArray[np.unsignedinteger]:
        return self._state.post_tf

    @property
    def _doc_len(self) -> NDArray[np.int32]:
        return self._state.doc_len

    # ------------------------------------------------------------------ building

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str | BM25Method = "lucene",
        delta: float | None = None,
        show_progress: bool = False,
    ) -> BM25Index:
        """Index ``texts``; missing ids become deterministic content ids.

        Raises:
            ValueError: for an empty corpus, duplicate ids, or mismatched lengths.
        """
        docs = make_docs(texts, ids, metadatas)
        return cls.from_docs(
            docs, analyzer=analyzer, k1=k1, b=b, method=method, delta=delta,
            show_progress=show_progress,
        )

    @classmethod
    def from_docs(
        cls,
        docs: Iterable[Doc],
        *,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str | BM25Method = "lucene",
        delta: float | None = None,
        show_progress: bool = False,
    ) -> BM25Index:
        """Index `Doc` objects, keeping their ids and metadata."""
        docs = check_docs(docs)
        if not docs:
            raise ValueError("cannot build a BM25 index from an empty corpus; pass at least one text")
        index = cls(analyzer=analyzer, k1=k1, b=b, method=method, delta=delta)
        index._state = index._written(index._state, docs, None, show_progress=show_progress)
        return index

    def add(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        show_progress: bool = False,
    ) -> list[str]:
        """Add texts and return their ids; an id already in the index is an error."""
        docs = make_docs(texts, ids, metadatas, taken=self._state.positions)
        return self.add_docs(docs, show_progress=show_progress)

    def add_docs(self, docs: Iterable[Doc], *, show_progress: bool = False) -> list[str]:
        """Add documents and return their ids; N, avgdl and idf are updated for all."""
        docs = check_docs(docs)
        with self._lock:
            state = self._state
            check_new_ids(docs, state.positions, "use upsert() to replace them, or delete them first")
            if docs:
                self._state = self._written(state, docs, None, show_progress=show_progress)
        return [d.id for d in docs]

    def upsert(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        show_progress: bool = False,
    ) -> list[str]:
        """Insert or replace: existing ids get the new text and metadata in place.

        A replaced document keeps its position (so ties still go to the earlier
        document); new ids are appended. Scores afterwards are exactly those of an
        index rebuilt from the resulting documents. Without ids, content ids are
        used, so upserting an unchanged text (and metadata) replaces it with itself.
        """
        return self.upsert_docs(make_docs(texts, ids, metadatas), show_progress=show_progress)

    def upsert_docs(self, docs: Iterable[Doc], *, show_progress: bool = False) -> list[str]:
        """`upsert` for `Doc` objects."""
        docs = check_docs(docs)
        with self._lock:
            state = self._state
            if docs:
                rows = np.empty(len(docs), dtype=np.int64)
                n = len(state.docs)
                for j, d in enumerate(docs):
                    pos = state.positions.get(d.id)
                    if pos is None:
                        pos, n = n, n + 1
                    rows[j] = pos
                self._state = self._written(state, docs, rows, show_progress=show_progress)
        return [d.id for d in docs]

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; if any id is unknown nothing is removed."""
        ids = check_id_list(ids)
        with self._lock:
            state = self._state
            unknown = [i for i in ids if i not in state.positions]
            if unknown:
                raise KeyError(f"{len(unknown)} id(s) not in the index: {unknown[:5]}")
            if not ids:
                return
            alive = np.ones(len(state.docs), dtype=bool)
            alive[[state.positions[i] for i in ids]] = False
            self._state = _compacted(state, alive)

    def _written(
        self,
        state: _Snapshot,
        docs: list[Doc],
        rows: NDArray[np.int64] | None,
        *,
        show_progress: bool,
    ) -> _Snapshot:
        """A new snapshot: ``state`` with ``docs[j]`` at position ``rows[j]``.

        A row below ``len(state.docs)`` replaces that document; the others are the
        next positions, in order (``rows=None``: all of ``docs`` appended). ``state``
        is not modified: its arrays are only read, so searches on it go on safely.
        """
        from scipy import sparse

        token_lists = self._analyzer.tokenize_many(
            [d.text for d in docs], show_progress=show_progress
        )
        offset = len(state.docs)
        if rows is None:
            rows = np.arange(offset, offset + len(docs), dtype=np.int64)
        replaced = rows[rows < offset]
        n_docs = offset + len(docs) - replaced.size
        vocab = dict(state.vocab)
        lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int32, count=len(docs))
        new_terms = np.fromiter(
            (vocab[t] if t in vocab else vocab.setdefault(t, len(vocab))
             for tokens in token_lists for t in tokens),
            dtype=np.int32,
            count=int(lengths.sum()),
        )
        new_docs = np.repeat(rows.astype(np.int32), lengths)
        old_terms = np.repeat(
            np.arange(len(state.indptr) - 1, dtype=np.int32), np.diff(state.indptr)
        )
        old_docs, old_tf = state.post_docs, state.post_tf
        if replaced.size:
            keep = np.ones(offset, dtype=bool)
            keep[replaced] = False
            keep = keep[old_docs]
            old_terms, old_docs, old_tf = old_terms[keep], old_docs[keep], old_tf[keep]
        # Term-major CSR; converting from COO counts repeated (term, doc) pairs into
        # term frequencies and keeps each term's documents ascending.
        matrix = sparse.csr_array(
            (
                np.concatenate([old_tf.astype(np.int32), np.ones(new_terms.size, np.int32)]),
                (np.concatenate([old_terms, new_terms]), np.concatenate([old_docs, new_docs])),
            ),
            shape=(len(vocab), n_docs),
        )
        matrix.sum_duplicates()
        df = np.diff(matrix.indptr)
        if replaced.size and not df.all():
            # Terms only the replaced texts had: drop them, as a rebuild would.
            vocab, df = _live_terms(vocab, df)
        doc_len = np.zeros(n_docs, dtype=np.int32)
        doc_len[:offset] = state.doc_len
        doc_len[rows] = lengths
        new_list = list(state.docs)
        new_list.extend([None] * (n_docs - offset))  # type: ignore[list-item]
        for row, d in zip(rows.tolist(), docs):
            new_list[row] = d
        return _Snapshot(new_list, vocab, _offsets(df), matrix.indices, _compact_tf(matrix.data),
                         doc_len)

    # ------------------------------------------------------------------ scoring cache

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
            self._state = _Snapshot(st.docs, st.vocab, st.indptr, st.post_docs, st.post_tf,
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

    def _avgdl_of(self, state: _Snapshot) -> float:
        """The average document length scoring uses: the collection's, when set."""
        stats = self._collection_stats
        return state.avgdl if stats is None else stats.avgdl

    def _absent_constant(
        self, cache: _ScoreCache, state: _Snapshot, terms: list[str], counts: list[int]
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

    def _scores(self, state: _Snapshot | None = None) -> _ScoreCache:
        """Per-document norms and per-term statistics of ``state``, built on first use."""
        if state is None:
            state = self._state
        cache = state.cache
        if cache is not None:
            return cache
        with state.build_lock:  # one build per snapshot, not one per concurrent reader
            if state.cache is None:
                state.cache = _ScoreCache.build(self, state)
            return state.cache

    def _query_terms(self, query: str) -> tuple[list[str], list[int]]:
        counts = Counter(self._analyzer.tokenize(query))
        return list(counts), list(counts.values())

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
        state: _Snapshot | None = None,
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
        ids = [(st.vocab[t], c) for t, c in zip(terms, counts) if t in st.vocab]
        if not ids:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        constant = np.float32(
            0.0 if cache.absent is None else sum(float(cache.absent[t]) * c for t, c in ids)
        )
        if cache.absent is not None and self._collection_stats is not None:
            constant = self._absent_constant(cache, st, terms, counts)  # collection-stats hook
        # --- block-max kernel hook (hybrid_retrievers.bm25_blockmax): begin ----------
        if k is not None and allowed is None:
            from hybrid_retrievers import bm25_blockmax  # numba itself loads lazily

            top = bm25_blockmax.match_top_k(self, st, cache, ids, constant, k)
            if top is not None:
                return top
        # --- block-max kernel hook: end -----------------------------------------------
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

    def _weigh(
        self,
        cache: _ScoreCache,
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
        st: _Snapshot,
        cache: _ScoreCache,
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

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        explain: bool = False,
    ) -> list[Hit]:
        """The top ``k`` documents for ``query``; only documents matching a term return.

        Args:
            query: free text, analysed like the documents.
            k: how many hits at most (fewer when fewer documents match).
            filter: metadata equality mapping or predicate over `Doc`, applied
                before top-k so ``k`` filtered hits come back when they exist.
            explain: attach each hit's per-term `Explanation` (as a dict under
                ``hit.explanation["bm25"]``).
        """
        check_query(query)
        k = check_k(k)
        return self._search_terms(
            self._state, query, *self._query_terms(query), k, filter, explain
        )

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        explain: bool = False,
    ) -> list[list[Hit]]:
        """`search` for each query, in order, all on the same snapshot of the index."""
        queries = check_queries(queries)
        k = check_k(k)
        token_lists = self._analyzer.tokenize_many(queries)
        state = self._state
        out = []
        for query, tokens in zip(queries, token_lists):
            counts = Counter(tokens)
            out.append(self._search_terms(
                state, query, list(counts), list(counts.values()), k, filter, explain
            ))
        return out

    def _search_terms(
        self,
        st: _Snapshot,
        query: str,
        terms: list[str],
        counts: list[int],
        k: int,
        filter: MetadataFilter | None,
        explain: bool,
    ) -> list[Hit]:
        if filter is None:
            cand, scores = self._match(terms, counts, k, state=st)
        elif callable(filter) and not isinstance(filter, Mapping):
            # A predicate is only known per candidate, so every match must be seen.
            cand, scores = self._match(terms, counts, state=st)
            if cand.size:
                keep = _filter_callable(filter, st.docs, cand)
                cand, scores = cand[keep], scores[keep]
        else:
            allowed = cached_equality_mask(filter, st.docs, st.masks)
            cand, scores = self._match(terms, counts, k, allowed, state=st)
            keep = allowed[cand]
            cand, scores = cand[keep], scores[keep]
        if not cand.size:
            return []
        best = top_k(scores, k, tiebreak=cand)
        hits = []
        for rank, i in enumerate(best.tolist(), 1):
            pos = int(cand[i])
            expl: Mapping[str, Any] = {}
            if explain:
                expl = {"bm25": self._explain_position(st, query, terms, counts, pos).as_dict()}
            hits.append(Hit(st.docs[pos], float(scores[i]), rank, expl))
        return hits

    # ------------------------------------------------------------------ explaining

    def explain(self, query: str, doc_id: str) -> Explanation:
        """Per query term: idf, tf, document length and contribution; they sum to the score."""
        check_query(query)
        st = self._state
        pos = st.positions.get(doc_id) if isinstance(doc_id, str) else None
        if pos is None:
            raise KeyError(f"document {doc_id!r} is not in the index")
        return self._explain_position(st, query, *self._query_terms(query), pos)

    def _explain_position(
        self, st: _Snapshot, query: str, terms: list[str], counts: list[int], pos: int
    ) -> Explanation:
        cache = self._scores(st)
        v = self._variant
        dl = int(st.doc_len[pos])
        avgdl = self._avgdl_of(st)
        norm = float(length_norm(np.float64(dl), avgdl, self._b))
        rows = []
        for term, c in zip(terms, counts):
            t = st.vocab.get(term)
            if t is None:
                # collection-stats hook: a term only other shards hold still has an idf.
                idf = self._global_idf(term)
                weight = 0.0
                if idf and v.scores_absent_terms:
                    weight = float(v.tfw(np.float64(0.0), np.float64(norm), self._k1, self._delta))
                rows.append(TermContribution(term, c, self._term_df(term, 0), idf, 0, dl, avgdl,
                                             c * idf * weight))
                continue
            lo, hi = int(st.indptr[t]), int(st.indptr[t + 1])
            docs = st.post_docs[lo:hi]
            j = int(np.searchsorted(docs, pos))
            tf = int(st.post_tf[lo + j]) if j < docs.size and docs[j] == pos else 0
            if tf == 0 and not v.scores_absent_terms:
                weight = 0.0
            else:
                weight = float(v.tfw(np.float64(tf), np.float64(norm), self._k1, self._delta))
            idf = float(cache.idf[t])
            rows.append(TermContribution(term, c, self._term_df(term, hi - lo), idf, tf, dl, avgdl,
                                         c * idf * weight))
        return Explanation(
            query=query, doc_id=st.docs[pos].id, method=self._method.value,
            k1=self._k1, b=self._b, delta=self._delta,
            score=sum(r.contribution for r in rows), terms=tuple(rows),
        )

    # ------------------------------------------------------------------ access

    def __len__(self) -> int:
        return len(self._state.docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._state.positions

    def __repr__(self) -> str:
        st = self._state
        return (
            f"BM25Index(docs={len(st.docs)}, terms={len(st.vocab)}, "
            f"method={self._method.value!r}, k1={self._k1}, b={self._b}, "
            f"analyzer={self._analyzer!r})"
        )

    def get(self, doc_id: str) -> Doc:
        """The stored document with ``doc_id``."""
        st = self._state
        try:
            return st.docs[st.positions[doc_id]]
        except KeyError:
            raise KeyError(f"document {doc_id!r} is not in the index") from None

    @property
    def ids(self) -> list[str]:
        """Document ids in index order."""
        return [d.id for d in self._state.docs]

    @property
    def docs(self) -> list[Doc]:
        """Documents in index order (a copy of the list; the documents are immutable)."""
        return list(self._state.docs)

    @property
    def analyzer(self) -> Analyzer:
        """The analyzer used for documents and queries alike."""
        return self._analyzer

    @property
    def k1(self) -> float:
        return self._k1

    @property
    def b(self) -> float:
        return self._b

    @property
    def method(self) -> str:
        return self._method.value

    @property
    def delta(self) -> float:
        return self._delta

    @property
    def vocabulary_size(self) -> int:
        return len(self._state.vocab)

    def nbytes(self) -> int:
        """Bytes held by the index arrays (postings, lengths, cache), not texts or vocabulary."""
        st = self._state
        cache = self._scores(st)
        arrays = [st.indptr, st.post_docs, st.post_tf, st.doc_len,
                  cache.norm, cache.idf, cache.upper, cache.absent]
        return int(sum(a.nbytes for a in arrays if a is not None))

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically and durably (no pickle).

        A crash at any moment leaves ``path`` loading as the previous save or this one;
        a concurrent `load` gets one complete version; concurrent saves to one path run
        one after the other. A symbolic link at ``path`` is followed (the index is saved
        into its target). See `hybrid_retrievers.persistence` for the layout.

        Raises:
            TypeError: ``path`` is not a str or path, or metadata is not JSON data
                that would load back unchanged (the previous save is kept).
            FileExistsError: ``path`` exists and is not an index.
        """
        with self._lock, atomic_index_dir(path) as tmp:
            self._save_into(tmp)

    def _save_into(self, directory: Path) -> None:
        """Write the index files and their manifest into an existing empty directory."""
        with self._lock:
            analyzer_config = self._analyzer.to_config()
            w = IndexWriter(directory)
            terms = [""] * len(self._vocab)
            for t, i in self._vocab.items():
                terms[i] = t
            w.docs("docs", self._docs)  # first: it is what refuses bad metadata
            w.json("vocabulary", terms)
            w.array("postings_indptr", self._indptr)
            w.array("postings_docs", self._post_docs)
            w.array("postings_tf", self._post_tf)
            w.array("doc_lengths", self._doc_len)
            w.manifest(
                "bm25",
                FORMAT_VERSION,
                {
                    "params": {"method": self._method.value, "k1": self._k1, "b": self._b,
                               "delta": self._delta},
                    "analyzer": analyzer_config,
                    "n_docs": len(self._docs),
                    "vocabulary_size": len(terms),
                    "n_postings": int(self._post_docs.size),
                },
            )

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, mmap: bool = False, verify: bool = False
    ) -> BM25Index:
        """Read an index saved by `save`; nothing in it is trusted before it is checked.

        Every file read into memory is checksummed, and the manifest (parameters
        included) is covered by a checksum too. The postings are checked for
        structure: document ids in range, each term's documents strictly increasing,
        term frequencies >= 1, document lengths equal to their postings' token counts.

        Args:
            mmap: memory-map the two posting arrays instead of reading them: loading
                is faster and they are paged in on demand. Their size, shape and dtype
                are still checked, but their checksums and the per-posting checks are
                skipped unless ``verify``.
            verify: with ``mmap``, also run the full checks (reads the mapped files once).

        Raises:
            TypeError: ``path`` is not a str or path.
            IndexFormatError: the directory is missing, corrupt, truncated, foreign,
                structurally invalid or from a newer format version.
        """
        return read_index(
            path, kind="bm25", max_version=FORMAT_VERSION,
            read=lambda r: cls._from_reader(r, mmap=mmap, verify=verify),
        )

    @classmethod
    def _from_reader(cls, r: IndexReader, *, mmap: bool = False, verify: bool = False) -> BM25Index:
        where = r.where()
        params = r.field("params", dict)
        n_docs = r.count("n_docs")
        vocabulary_size = r.count("vocabulary_size")
        try:
            analyzer = Analyzer.from_config(r.field("analyzer", dict))
            index = cls(analyzer=analyzer, **{k: params[k] for k in ("method", "k1", "b", "delta")})
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"{where}: invalid parameters in manifest ({exc})") from None
        indptr = r.array("postings_indptr", dtype_kind="i", ndim=1, length=vocabulary_size + 1)
        check_offsets(indptr, where=where)
        n_postings = int(indptr[-1])
        post_docs = r.array("postings_docs", dtype_kind="i", ndim=1, length=n_postings,
                            mmap=mmap, verify=verify)
        post_tf = r.array("postings_tf", dtype_kind="u", ndim=1, length=n_postings,
                          mmap=mmap, verify=verify)
        doc_len = r.array("doc_lengths", dtype_kind="i", ndim=1, length=n_docs)
        check_postings(indptr, post_docs, post_tf, doc_len, where=where,
                       full=not mmap or verify)
        if "n_postings" in r.manifest and r.manifest["n_postings"] != n_postings:
            raise IndexFormatError(
                f"{where}: manifest says {r.manifest['n_postings']!r} postings, "
                f"postings_indptr ends at {n_postings}"
            )
        terms = r.json("vocabulary")
        if (
            not isinstance(terms, list)
            or len(terms) != vocabulary_size
            or not all(isinstance(t, str) for t in terms)
            or len(set(terms)) != len(terms)
        ):
            raise IndexFormatError(f"{where}/vocabulary.json must list {vocabulary_size} distinct terms")
        docs = list(r.docs("docs"))
        if len(docs) != n_docs:
            raise IndexFormatError(f"{where}: docs.jsonl has {len(docs)} documents, manifest says {n_docs}")
        check_unique_ids([d.id for d in docs], where=f"{where}/docs.jsonl")
        index._install(
            docs=docs, vocab={t: i for i, t in enumerate(terms)}, indptr=indptr.astype(np.int64),
            post_docs=post_docs if post_docs.dtype == np.int32 else post_docs.astype(np.int32),
            post_tf=post_tf, doc_len=doc_len.astype(np.int32),
        )
        return index


class _Snapshot:
    """One version of the index: everything a search reads, never modified once published.

    Searches take ``index._state`` once and read only it; edits build a new snapshot
    and replace the reference. Only the lazily built ``cache`` (under ``build_lock``)
    and the memo of filter masks are filled in later, and both are pure functions of
    the fields, so every reader sees the same values.

    Fields: ``docs`` (index order), ``positions`` (id -> position), ``vocab`` (term ->
    term id), term-major postings (term t's documents are
    ``post_docs[indptr[t]:indptr[t+1]]``, ascending, with raw term frequencies in
    ``post_tf``) and ``doc_len``.
    """

    __slots__ = ("docs", "positions", "vocab", "indptr", "post_docs", "post_tf", "doc_len",
                 "avgdl", "cache", "masks", "build_lock")

    def __init__(
        self,
        docs: list[Doc],
        vocab: dict[str, int],
        indptr: NDArray[np.integer],
        post_docs: NDArray[np.integer],
        post_tf: NDArray[np.integer],
        doc_len: NDArray[np.integer],
        positions: dict[str, int] | None = None,
    ) -> None:
        self.docs = docs
        self.positions = {d.id: i for i, d in enumerate(docs)} if positions is None else positions
        self.vocab = vocab
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.post_docs = post_docs if post_docs.dtype == np.int32 else post_docs.astype(np.int32)
        self.post_tf = post_tf
        self.doc_len = doc_len if doc_len.dtype == np.int32 else doc_len.astype(np.int32)
        self.avgdl = float(self.doc_len.mean()) if self.doc_len.size else 0.0
        self.cache: _ScoreCache | None = None
        self.masks: dict[Hashable, NDArray[np.bool_]] = {}
        self.build_lock = threading.Lock()

    @classmethod
    def empty(cls) -> _Snapshot:
        return cls([], {}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8),
                   np.zeros(0, np.int32))


def _compacted(state: _Snapshot, alive: NDArray[np.bool_]) -> _Snapshot:
    """A new snapshot holding only the documents where ``alive`` is True."""
    new_pos = np.cumsum(alive) - 1
    terms = np.repeat(np.arange(len(state.indptr) - 1), np.diff(state.indptr))
    keep = alive[state.post_docs]
    df = np.bincount(terms[keep], minlength=len(state.vocab))
    # Drop terms no remaining document has, so the vocabulary (and Robertson's
    # mean idf) is what a rebuild on the remaining documents would have.
    vocab, df = _live_terms(state.vocab, df)
    docs = [d for d, a in zip(state.docs, alive.tolist()) if a]
    return _Snapshot(docs, vocab, _offsets(df), new_pos[state.post_docs[keep]],
                     _compact_tf(state.post_tf[keep]), state.doc_len[alive])


def _live_terms(
    vocab: dict[str, int], df: NDArray[np.integer]
) -> tuple[dict[str, int], NDArray[np.integer]]:
    """The vocabulary without terms of document frequency 0, renumbered in order."""
    live = df > 0
    if live.all():
        return vocab, df
    term_map = np.cumsum(live) - 1
    return {t: int(term_map[i]) for t, i in vocab.items() if live[i]}, df[live]


def _offsets(df: NDArray[np.integer]) -> NDArray[np.int64]:
    indptr = np.zeros(len(df) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return indptr


def _filter_callable(
    filter: Callable[[Doc], bool], docs: list[Doc], cand: NDArray[np.int32]
) -> NDArray[np.bool_]:
    return np.fromiter((bool(filter(docs[p])) for p in cand.tolist()), bool, cand.size)


class _ScoreCache:
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
    def build(cls, index: BM25Index, state: _Snapshot) -> _ScoreCache:
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


def _compact_tf(tf: NDArray[np.integer]) -> NDArray[np.unsignedinteger]:
    """Term frequencies in the smallest unsigned type that holds them (most fit a byte)."""
    return tf.astype(_smallest_uint(int(tf.max()) if tf.size else 0))


def _smallest_uint(max_value: int) -> type[np.unsignedinteger]:
    for dtype in (np.uint8, np.uint16, np.uint32):
        if max_value <= np.iinfo(dtype).max:
            return dtype
    return np.uint64


def _check_float(name: str, value: Any, *, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}: {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value
