"""BM25Index: a sparse inverted index whose query cost follows the query's postings (the facade).

Raw term frequencies (one byte per posting for most corpora) and document lengths
are the only per-posting and per-document data kept. What depends on N and avgdl
(idf, each document's length norm, each term's maximum contribution) is a small
cache rebuilt lazily after ``add`` or ``delete``, so an edited index scores exactly
like one rebuilt from scratch.

This class builds, edits, searches and describes an index, and holds its current
snapshot and its writer lock. The rest lives next door, one job per module:
`postings` (the snapshot: documents and term-major postings, and how edits make new
ones), `statistics` (the score cache and the collection-statistics hook), `matching`
(the tuned scoring loop with MaxScore pruning), `explanation` (per-term
explanations), `saving` (the file format), `scoring` (the BM25 variants) and
`collection_stats` (corpus-wide statistics for shards).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..documents import DocumentAccess, check_docs, make_docs
from ..readonly import ReadOnly
from ..selection import top_k
from ..text import Analyzer
from ..types import Doc, Hit, MetadataFilter
from ..validation import check_id_list, check_k, check_queries, check_query
from .chunking import resolve_n_jobs, token_chunks
from .collection_stats import CollectionStats
from .explanation import BM25Explanation, explain_position
from .matching import BM25Matching
from .postings import Snapshot, compacted, written
from .saving import FORMAT_VERSION, BM25Saving
from .scoring import DEFAULT_DELTA, BM25Method, get_variant

__all__ = ["BM25Index", "FORMAT_VERSION"]


class BM25Index(BM25Matching, BM25Saving, DocumentAccess):
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
        self._state = Snapshot.empty()

    def _install(self, state: Snapshot) -> None:
        """Publish a complete new version of the index (used by `load`).

        Raises:
            ValueError: ``state``'s documents hold duplicate ids.
        """
        if len(state.positions) != len(state.docs):
            raise ValueError("duplicate document ids")
        with self._lock:
            self._state = state

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
        n_jobs: int = 1,
    ) -> BM25Index:
        """Index ``texts``; missing ids become deterministic content ids.

        Raises:
            ValueError: for an empty corpus, duplicate ids, or mismatched lengths.
        """
        docs = make_docs(texts, ids, metadatas)
        return cls.from_docs(
            docs, analyzer=analyzer, k1=k1, b=b, method=method, delta=delta,
            show_progress=show_progress, n_jobs=n_jobs,
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
        n_jobs: int = 1,
    ) -> BM25Index:
        """Index `Doc` objects, keeping their ids and metadata.

        ``n_jobs`` (here and in `add`/`upsert`): processes that tokenise the texts, chunk
        by chunk (-1: all cores). The index is the same for any value; an analyzer with a
        custom callable stemmer or unregistered tokenizer falls back to 1 with a warning.
        """
        jobs = resolve_n_jobs(n_jobs)
        docs = check_docs(docs)
        if not docs:
            raise ValueError("cannot build a BM25 index from an empty corpus; pass at least one text")
        index = cls(analyzer=analyzer, k1=k1, b=b, method=method, delta=delta)
        index._state = index._written(index._state, docs, None, show_progress=show_progress,
                                      n_jobs=jobs)
        return index

    def add(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        show_progress: bool = False,
        n_jobs: int = 1,
    ) -> list[str]:
        """Add texts and return their ids; an id already in the index is an error."""
        docs = make_docs(texts, ids, metadatas, taken=self._state.positions)
        return self.add_docs(docs, show_progress=show_progress, n_jobs=n_jobs)

    def add_docs(
        self, docs: Iterable[Doc], *, show_progress: bool = False, n_jobs: int = 1
    ) -> list[str]:
        """Add documents and return their ids; N, avgdl and idf are updated for all."""
        jobs = resolve_n_jobs(n_jobs)
        docs = check_docs(docs)
        with self._lock:
            state = self._state
            state.check_new(docs)
            if docs:
                self._state = self._written(state, docs, None, show_progress=show_progress,
                                            n_jobs=jobs)
        return [d.id for d in docs]

    def upsert(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        show_progress: bool = False,
        n_jobs: int = 1,
    ) -> list[str]:
        """Insert or replace: existing ids get the new text and metadata in place.

        A replaced document keeps its position (so ties still go to the earlier
        document); new ids are appended. Scores afterwards are exactly those of an
        index rebuilt from the resulting documents. Without ids, content ids are
        used, so upserting an unchanged text (and metadata) replaces it with itself.
        """
        return self.upsert_docs(make_docs(texts, ids, metadatas), show_progress=show_progress,
                                n_jobs=n_jobs)

    def upsert_docs(
        self, docs: Iterable[Doc], *, show_progress: bool = False, n_jobs: int = 1
    ) -> list[str]:
        """`upsert` for `Doc` objects."""
        jobs = resolve_n_jobs(n_jobs)
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
                self._state = self._written(state, docs, rows, show_progress=show_progress,
                                            n_jobs=jobs)
        return [d.id for d in docs]

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; if any id is unknown nothing is removed."""
        ids = check_id_list(ids)
        with self._lock:
            state = self._state
            alive = state.kept_after_delete(ids)
            if alive is None:
                return
            self._state = compacted(state, alive)

    def _written(
        self,
        state: Snapshot,
        docs: list[Doc],
        rows: NDArray[np.int64] | None,
        *,
        show_progress: bool,
        n_jobs: int,
    ) -> Snapshot:
        """A new snapshot: ``state`` with ``docs[j]`` at position ``rows[j]`` (see `written`).

        The texts are tokenised chunk by chunk (in ``n_jobs`` processes), never all at once.
        """
        vocab = dict(state.vocab)
        chunks = token_chunks(self._analyzer, [d.text for d in docs],
                              n_jobs=n_jobs, show_progress=show_progress, vocab=vocab)
        return written(state, docs, chunks, rows, vocab)

    def _query_terms(self, query: str) -> tuple[list[str], list[int]]:
        counts = Counter(self._analyzer.tokenize(query))
        return list(counts), list(counts.values())

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
            explain: attach each hit's per-term `BM25Explanation` (as a dict under
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
        """`search` for each query, in order, all on the same snapshot of the index.

        Without a filter and with numba installed, the whole batch is scored in one
        compiled call (`kernels.match_top_k_many`): the same hits, without the
        per-query Python overhead (at 100k documents bm25_speed's batch went from 3,635
        to 7,314 queries/s).
        """
        queries = check_queries(queries)
        k = check_k(k)
        state = self._state
        analysed = []
        for tokens in self._analyzer.tokenize_many(queries):
            counts = Counter(tokens)
            analysed.append((list(counts), list(counts.values())))
        ranked = self._match_many(state, analysed, k) if filter is None else None
        if ranked is None:  # a filter, or no compiled kernels: one query at a time
            return [self._search_terms(state, query, terms, counts, k, filter, explain)
                    for query, (terms, counts) in zip(queries, analysed)]
        return [self._hits(state, query, terms, counts, pos, scores, explain)
                for query, (terms, counts), (pos, scores) in zip(queries, analysed, ranked)]

    def _search_terms(
        self,
        st: Snapshot,
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
            allowed = st.equality_mask(filter)
            cand, scores = self._match(terms, counts, k, allowed, state=st)
            keep = allowed[cand]
            cand, scores = cand[keep], scores[keep]
        if not cand.size:
            return []
        best = top_k(scores, k, tiebreak=cand)
        return self._hits(st, query, terms, counts, cand[best], scores[best], explain)

    def _hits(
        self,
        st: Snapshot,
        query: str,
        terms: list[str],
        counts: list[int],
        positions: NDArray[np.int32],
        scores: NDArray[np.float32],
        explain: bool,
    ) -> list[Hit]:
        """Hits of ranked document ``positions`` (best first), explained on request."""
        docs = st.docs
        return [Hit(docs[pos], value, rank,
                    {"bm25": explain_position(self, st, query, terms, counts, pos).as_dict()}
                    if explain else {})
                for rank, (pos, value) in enumerate(zip(positions.tolist(), scores.tolist()), 1)]

    # ------------------------------------------------------------------ explaining

    def explain(self, query: str, doc_id: str) -> BM25Explanation:
        """Per query term: idf, tf, document length and contribution; they sum to the score."""
        check_query(query)
        st = self._state
        pos = st.positions.get(doc_id) if isinstance(doc_id, str) else None
        if pos is None:
            raise KeyError(f"document {doc_id!r} is not in the index")
        return explain_position(self, st, query, *self._query_terms(query), pos)

    # ------------------------------------------------------------------ access

    def __repr__(self) -> str:
        st = self._state
        return (
            f"BM25Index(docs={len(st.docs)}, terms={len(st.vocab)}, "
            f"method={self._method.value!r}, k1={self._k1}, b={self._b}, "
            f"analyzer={self._analyzer!r})"
        )

    analyzer = ReadOnly[Analyzer]("_analyzer", "The analyzer used for documents and queries alike.")
    k1 = ReadOnly[float]("_k1", "Term-frequency saturation k1.")
    b = ReadOnly[float]("_b", "Length normalisation b (0: none, 1: full).")

    @property
    def method(self) -> str:
        """The BM25 variant: ``"lucene"``, ``"robertson"``, ``"bm25l"`` or ``"bm25+"``."""
        return self._method.value

    delta = ReadOnly[float](
        "_delta", "The BM25L / BM25+ shift delta (unused by the other variants).")

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct terms in the index."""
        return len(self._state.vocab)

    def nbytes(self) -> int:
        """Bytes held by the index arrays (postings, lengths, cache), not texts or vocabulary."""
        st = self._state
        cache = self._scores(st)
        arrays = [st.indptr, st.post_docs, st.post_tf, st.doc_len,
                  cache.norm, cache.idf, cache.upper, cache.absent]
        return int(sum(a.nbytes for a in arrays if a is not None))


def _filter_callable(
    filter: Callable[[Doc], bool], docs: list[Doc], cand: NDArray[np.int32]
) -> NDArray[np.bool_]:
    return np.fromiter((bool(filter(docs[p])) for p in cand.tolist()), bool, cand.size)


def _check_float(name: str, value: Any, *, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}: {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value
