"""BM25Index: a sparse inverted index whose query cost follows the query's postings (the facade).

Raw term frequencies (one byte per posting for most corpora) and document lengths
are the only per-posting and per-document data kept. What depends on N and avgdl
(idf, each document's length norm, each term's maximum contribution) is a small
cache rebuilt lazily after ``add`` or ``delete``, so an edited index scores exactly
like one rebuilt from scratch.

This class is a façade: it holds the current snapshot, the analyzer, the parameters
(`BM25Params`), the backend (`Backend`), the collection statistics, the writer lock
and the per-thread scratch buffers, and hands them to functions, one job per module: the
engine's (`hybrid_retrievers.inverted`: `postings`, the snapshot and how edits make new
ones; `score_cache`, idf, norms and bounds per snapshot; `matching`, the tuned scoring
loop with MaxScore pruning; `kernels`, the compiled top-k kernels) and BM25's next door
(`explanation`, per-term explanations; `saving`, the file format; `scoring`, the BM25
variants; `params`, the parameters; `fields`, BM25F; `collection_stats`, corpus-wide
statistics for shards).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Self

import numpy as np
from numpy.typing import NDArray

from ..document_columns import DocColumns
from ..documents import EditableIndex, check_docs, make_docs
from ..persistence import AtomicSave, IndexReader, read_index
from ..query import Query, Syntax, as_query
from ..text import Analyzer
from ..types import Doc, Hit, MetadataFilter
from ..validation import check_k, check_queries
from ..inverted.backend import Backend, BackendName
from ..inverted.build import resolve_n_jobs, token_chunks
from ..inverted.matching import match, match_many, query_ids, ranked_matches
from ..inverted.operators import AnalysedQuery, admitted, analysed
from ..inverted.postings import Snapshot, compacted, written
from ..inverted.score_cache import ScoreCache
from ..inverted.scorer import ImpactScorer
from ..inverted.scratch import Scratch
from .collection_stats import CollectionStats
from .explanation import BM25Explanation, explain
from .fields import TEXT, FieldedExplanation, check_fields, check_method, combined, \
    explain_fields, field_text, query_field_weights
from .params import BM25Params, params_from
from .saving import FORMAT_VERSION
from .saving import read as read_files
from .saving import read_fields
from .saving import write as write_files
from .scoring import BM25Method

__all__ = ["BM25Index", "FORMAT_VERSION"]

_IMPACT = ImpactScorer()  # BM25F views store saturated pseudo-tfs: scored as impacts


class BM25Index(AtomicSave, EditableIndex):
    """A BM25 index over documents, with incremental updates, explanations and persistence.

    Parameters: pass either ``params=BM25Params(...)`` or the separate keywords
    ``method=``, ``k1=``, ``b=``, ``delta=``, ``epsilon=`` (the common spelling), never
    both; keywords left out take `BM25Params`'s defaults (``"lucene"``, 1.5, 0.75, the
    variant's delta, Robertson's 0.25 idf floor).
    ``backend`` (``"auto"``, ``"numba"``, ``"numpy"`` or a `Backend`) chooses how
    queries are scored; it changes the speed, never the hits, and is not saved.

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
        >>> BM25Index.from_texts(["a b"], params=BM25Params("bm25+", k1=1.2)).params.delta
        1.0
    """

    def __init__(
        self,
        *,
        analyzer: Analyzer | None = None,
        params: BM25Params | None = None,
        method: str | BM25Method | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        backend: BackendName | Backend = "auto",
        positions: bool = False,
        fields: Mapping[str, float] | None = None,
    ) -> None:
        """Create an empty index; most users call `from_texts` or `from_docs` instead."""
        self._params = params_from(params, method=method, k1=k1, b=b, delta=delta,
                                   epsilon=epsilon)
        self._backend = Backend.of(backend)
        if analyzer is None:
            analyzer = Analyzer()
        if not isinstance(analyzer, Analyzer):
            raise TypeError(
                f"analyzer must be a hybrid_retrievers.Analyzer, got {type(analyzer).__name__}"
            )
        self._analyzer = analyzer
        self._lock = threading.RLock()  # serialises writers; readers never take it
        self._scratch = Scratch()  # per thread
        self._collection_stats: CollectionStats | None = None
        if not isinstance(positions, bool):
            raise TypeError(f"positions must be a bool, got {type(positions).__name__}: "
                            f"{positions!r}")
        self._fields = None if fields is None else check_fields(fields)
        if self._fields is not None:
            check_method(self._params)
        # BM25F views by weights: a mapping published whole and never changed in place, so
        # readers use it without a lock; searches that add a view swap in a new one under
        # _views_lock (`_view`).
        self._views: Mapping[tuple[tuple[str, float], ...], Any] = {}
        self._views_lock = threading.Lock()
        self._state = self._empty(positions)

    def _empty(self, positions: bool) -> Snapshot:
        st = Snapshot.empty(positions)
        if self._fields is not None:
            st.fields = {f: Snapshot.empty(positions) for f in self._fields if f != TEXT}
        return st

    def _install(self, state: Snapshot) -> None:
        """Publish a complete new version of the index (used by `load`).

        Raises:
            ValueError: ``state``'s documents hold duplicate ids.
        """
        if state.positions.duplicates():
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
        params: BM25Params | None = None,
        method: str | BM25Method | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        backend: BackendName | Backend = "auto",
        show_progress: bool = False,
        n_jobs: int = 1,
        positions: bool = False,
        fields: Mapping[str, float] | None = None,
    ) -> BM25Index:
        """Index ``texts``; missing ids become deterministic content ids.

        ``texts`` (and ``ids``, ``metadatas``) may be generators: the documents are then
        read and stored batch by batch as UTF-8 buffers (`make_docs`), so a streamed corpus
        costs the build its bytes, not a Python string per text; a list is kept as is.

        Raises:
            ValueError: for an empty corpus, duplicate ids, or mismatched lengths.
        """
        docs = make_docs(texts, ids, metadatas)
        return cls.from_docs(
            docs, analyzer=analyzer, params=params, method=method, k1=k1, b=b, delta=delta,
            epsilon=epsilon, backend=backend, show_progress=show_progress, n_jobs=n_jobs,
            positions=positions, fields=fields,
        )

    @classmethod
    def from_docs(
        cls,
        docs: Iterable[Doc],
        *,
        analyzer: Analyzer | None = None,
        params: BM25Params | None = None,
        method: str | BM25Method | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        backend: BackendName | Backend = "auto",
        show_progress: bool = False,
        n_jobs: int = 1,
        positions: bool = False,
        fields: Mapping[str, float] | None = None,
    ) -> BM25Index:
        """Index `Doc` objects, keeping their ids and metadata.

        ``analyzer``, ``params`` (or ``method``, ``k1``, ``b``, ``delta``, ``epsilon``) and
        ``backend``: as for the class.

        ``n_jobs`` (here and in `add`/`upsert`): processes that tokenise the texts, chunk
        by chunk (-1: all cores). The index is the same for any value; an analyzer with a
        custom callable stemmer or unregistered tokenizer falls back to 1 with a warning.

        ``positions``: also keep each document's terms in order (4 bytes per indexed
        token, counted by `nbytes`; saved, and kept up to date by edits), which phrase
        queries need (`search` with ``syntax="operators"`` or a `Query` with phrases).

        ``fields``: score with BM25F (`hybrid_retrievers.bm25.fields`) over named fields
        with these build-time weights, e.g. ``{"title": 2.0, "text": 1.0}``: field
        ``"text"`` is `Doc.text`, any other ``doc.metadata[name]`` (a str; absent: empty).
        Each field is length-normalised on its own (``b`` for every field); ``search``'s
        ``field_weights`` overrides weights per query. Methods "lucene" and "robertson".
        """
        jobs = resolve_n_jobs(n_jobs)
        docs = check_docs(docs)
        if not docs:
            raise ValueError("cannot build a BM25 index from an empty corpus; pass at least one text")
        index = cls(analyzer=analyzer, params=params, method=method, k1=k1, b=b, delta=delta,
                    epsilon=epsilon, backend=backend, positions=positions, fields=fields)
        index._state = index._written(index._state, docs, _Tokenising(show_progress, jobs), None)
        return index

    # ------------------------------------------------------------------ editing

    # `add`, `add_docs`, `upsert`, `upsert_docs` and `delete` are `EditableIndex`'s, over
    # the hooks below. ``n_jobs`` (here and in `from_docs`): processes that tokenise.
    _edit_options = frozenset({"n_jobs"})

    def _payload(self, docs: DocColumns, show_progress: bool, *, n_jobs: int = 1) -> _Tokenising:
        """How to tokenise ``docs``: token ids depend on the vocabulary of the snapshot
        being written, so the texts are tokenised under the writer lock (`_written`)."""
        return _Tokenising(show_progress, resolve_n_jobs(n_jobs))

    def _written(
        self,
        state: Snapshot,
        docs: DocColumns,
        payload: _Tokenising,
        rows: NDArray[np.int64] | None,
    ) -> Snapshot:
        """A new snapshot: ``state`` with ``docs[j]`` at position ``rows[j]`` (see `written`).

        The texts are tokenised chunk by chunk (in ``n_jobs`` processes), never all at once.
        """
        show_progress, n_jobs = payload
        vocab = dict(state.vocab)
        # The text column itself (a buffer column is decoded chunk by chunk, never whole).
        chunks = token_chunks(self._analyzer, docs.columns[1],
                              n_jobs=n_jobs, show_progress=show_progress, vocab=vocab)
        new = written(state, docs, chunks, rows, vocab)
        if state.fields is not None:
            new.fields = {}
            for f, fs in state.fields.items():
                texts = [field_text(d, f) for d in docs]
                field_vocab = dict(fs.vocab)
                new.fields[f] = written(fs, docs, token_chunks(
                    self._analyzer, texts, n_jobs=n_jobs, vocab=field_vocab), rows, field_vocab)
                new.fields[f].docs = new.docs  # one table for every field
        return new

    def _deleted(self, state: Snapshot, alive: NDArray[np.bool_]) -> Snapshot:
        new = compacted(state, alive)
        if state.fields is not None:
            new.fields = {f: compacted(fs, alive) for f, fs in state.fields.items()}
            for fs in new.fields.values():
                fs.docs = new.docs  # one table for every field
        return new

    def _query_terms(self, query: str) -> tuple[list[str], list[int]]:
        counts = Counter(self._analyzer.tokenize(query))
        return list(counts), list(counts.values())

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str | Query,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        explain: bool = False,
        syntax: Syntax = "plain",
        field_weights: Mapping[str, float] | None = None,
    ) -> list[Hit]:
        """The top ``k`` documents for ``query``; only documents matching a term return.

        Args:
            query: free text, analysed like the documents, or a `hybrid_retrievers.Query`
                (required, excluded and optional terms, phrases, minimum-should-match).
            k: how many hits at most (fewer when fewer documents match).
            filter: metadata equality mapping or predicate over `Doc`, applied
                before top-k so ``k`` filtered hits come back when they exist.
            explain: attach each hit's per-term `BM25Explanation` (as a dict under
                ``hit.explanation["bm25"]``).
            syntax: how a str ``query`` is read: ``"plain"`` (default: a bag of words,
                whatever its characters), ``"operators"`` (``+required -excluded
                "a phrase"``, see `hybrid_retrievers.query`; malformed text is a
                ValueError naming the position) or ``"lenient"`` (the operators, with
                malformed text read as a bag of words).
            field_weights: on an index built with ``fields``, this query's weights (fields
                left out keep their build-time weight); ``explanation["bm25f"]`` then
                shows per-field contributions.

        A structured query's constraints apply before top-k: documents failing them
        never take a place, so the top ``k`` is exact. It scores with BM25 over its
        optional, required and phrase terms (`hybrid_retrievers.query`); it runs on
        the numpy path with a mask (the compiled kernels take plain queries, and a
        `Query` of optional terms only, which is one).

        Raises:
            ValueError: a phrase on an index built without ``positions=True``; bad syntax.
        """
        structured = as_query(query, syntax)
        k = check_k(k)
        st = self._state
        if st.fields is not None or field_weights is not None:
            return self._search_fielded(st, query, structured, k, filter, explain,
                                        self._weights(field_weights))
        if structured is None:
            assert isinstance(query, str)
            return self._search_terms(st, query, *self._query_terms(query), k, filter,
                                      explain)
        return self._search_query(st, query, analysed(structured, self._analyzer), k, filter,
                                  explain)

    # ------------------------------------------------------------------ fields (BM25F)

    def _weights(self, field_weights: Mapping[str, float] | None) -> dict[str, float]:
        return query_field_weights(self._fields, field_weights)

    def _view(self, st: Snapshot, weights: dict[str, float]) -> Any:
        """The BM25F view of ``st`` for ``weights`` (`fields.combined`), kept per version.

        The build-time weights' view and the three last other ones are kept. A view
        already held costs one lookup and no lock; a new one is built outside the lock
        (two searches may both build it: the same view), then published in a new
        mapping, so a reader never sees the mapping change under it.
        """
        key = tuple(sorted(weights.items()))
        held = self._views.get(key)
        if held is not None and held[0] is st:
            return held
        held = (st, *combined(st, weights, self._params, self._collection_stats))
        default = tuple(sorted((self._fields or {}).items()))
        with self._views_lock:
            others = [w for w in self._views if w != default and w != key]
            dropped = set(others[:max(0, len(others) - 2)])
            views = {w: v for w, v in self._views.items() if w not in dropped and w != key}
            views[key] = held
            self._views = views
        return held

    def _search_fielded(self, st: Snapshot, query: str | Query, structured: Query | None,
                        k: int, filter: MetadataFilter | None, explain: bool,
                        weights: dict[str, float]) -> list[Hit]:
        """BM25F: the impact scorer on the weights' view, query weights ``qtf · idf``."""
        _, view, union, idf, _ = self._view(st, weights)
        label = query if isinstance(query, str) else repr(query)
        if structured is None:
            assert isinstance(query, str)
            terms, counts = self._query_terms(query)
            allowed = None
        else:
            aq = analysed(structured, self._analyzer)
            terms, counts = aq.terms, aq.counts
            # Constraints see every field, weighted 0 or not (`operators.admitted`).
            allowed = admitted(st, aq)
            if allowed is not None and not allowed.any():
                return []
        pairs = [(t, c) for t, c in zip(terms, counts) if t in view.vocab]
        # A query weight of 0 or below (a Robertson idf) is the engine's to handle: it
        # then neither prunes nor takes a zero total for no match (`ScoreCache.signs`).
        weights_q = [float(idf[union[t]]) * c for t, c in pairs]
        cache = ScoreCache.of(view, _IMPACT, None)
        ids, constant = query_ids(view, cache, _IMPACT, [t for t, _ in pairs], weights_q)
        positions, scores = ranked_matches(view, cache, _IMPACT, ids, constant, k, filter,
                                           self._scratch, self._backend, allowed)
        return [Hit(st.docs[pos], value, rank,
                    {"bm25f": self._explain_fielded(st, weights, label, terms, counts,
                                                    pos).as_dict()} if explain else {})
                for rank, (pos, value) in enumerate(zip(positions.tolist(), scores.tolist()), 1)]

    def _explain_fielded(self, st: Snapshot, weights: dict[str, float], label: str,
                         terms: list[str], counts: list[int], pos: int) -> FieldedExplanation:
        _, _, union, idf, df = self._view(st, weights)
        return explain_fields(st, weights, self._params, idf, union, label, terms, counts,
                              pos, df, self._collection_stats)

    @property
    def fields(self) -> dict[str, float] | None:
        """The build-time field weights (BM25F), or None for one field."""
        return None if self._fields is None else dict(self._fields)

    def search_many(
        self,
        queries: Sequence[str | Query],
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        explain: bool = False,
        syntax: Syntax = "plain",
        field_weights: Mapping[str, float] | None = None,
    ) -> list[list[Hit]]:
        """`search` for each query, in order, all on the same snapshot of the index.

        Without a filter and with the compiled kernels in use (`Backend`), the whole
        batch is scored in one compiled call (`kernels.match_top_k_many`): the same hits,
        without the per-query Python overhead (at 100k documents bm25_speed's batch went
        from 3,635 to 7,314 queries/s). Structured queries (a `Query`, or ``syntax``
        other than ``"plain"``) other than bags of words are searched one at a time.
        """
        if self._fields is not None or field_weights is not None:  # BM25F: one at a time
            if isinstance(queries, str) or not isinstance(queries, Sequence):
                check_queries(queries)  # raises the usual TypeError
            for i, q in enumerate(queries):
                as_query(q, syntax, name=f"queries[{i}]")
            return [self.search(q, k, filter=filter, explain=explain, syntax=syntax,
                                field_weights=field_weights) for q in queries]
        if syntax == "plain" and not (isinstance(queries, Sequence) and any(
                isinstance(q, Query) for q in queries)):
            return self._search_plain_many(check_queries(queries), k, filter, explain)
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            check_queries(queries)  # raises the usual TypeError
        structured = [as_query(q, syntax, name=f"queries[{i}]") for i, q in enumerate(queries)]
        k = check_k(k)
        st = self._state
        out = []
        for query, sq in zip(queries, structured):
            if sq is None:
                out.append(self._search_terms(st, query, *self._query_terms(query), k, filter,
                                              explain))
            else:
                out.append(self._search_query(st, query, analysed(sq, self._analyzer), k,
                                              filter, explain))
        return out

    def _search_plain_many(self, queries: list[str], k: int, filter: MetadataFilter | None,
                           explain: bool) -> list[list[Hit]]:
        k = check_k(k)
        st = self._state
        analysed_terms = []
        for tokens in self._analyzer.tokenize_many(queries):
            counts = Counter(tokens)
            analysed_terms.append((list(counts), list(counts.values())))
        ranked = None
        if filter is None:
            cache = self._cache(st)
            ranked = match_many(
                st, cache, self._params,
                [query_ids(st, cache, self._params, terms, counts)
                 for terms, counts in analysed_terms],
                k, self._scratch, self._backend,
            )
        if ranked is None:  # a filter, or no compiled kernels: one query at a time
            return [self._search_terms(st, query, terms, counts, k, filter, explain)
                    for query, (terms, counts) in zip(queries, analysed_terms)]
        return [self._hits(st, query, terms, counts, pos, scores, explain)
                for query, (terms, counts), (pos, scores) in zip(queries, analysed_terms,
                                                                 ranked)]

    def _search_query(self, st: Snapshot, query: str | Query, aq: AnalysedQuery, k: int,
                      filter: MetadataFilter | None, explain: bool) -> list[Hit]:
        """A structured query: its mask (`operators.admitted`) applied before top-k."""
        label = query if isinstance(query, str) else repr(query)
        allowed = admitted(st, aq)
        if allowed is None:  # a bag of words: the plain path, kernels included
            return self._search_terms(st, label, aq.terms, aq.counts, k, filter, explain)
        if not allowed.any():
            return []
        cache = self._cache(st)
        ids, constant = query_ids(st, cache, self._params, aq.terms, aq.counts)
        positions, scores = ranked_matches(st, cache, self._params, ids, constant, k, filter,
                                           self._scratch, self._backend, allowed)
        return self._hits(st, label, aq.terms, aq.counts, positions, scores, explain)

    def _match(
        self,
        st: Snapshot,
        terms: list[str],
        counts: list[int],
        k: int | None = None,
        allowed: NDArray[np.bool_] | None = None,
    ) -> tuple[NDArray[np.int32], NDArray[np.float32]]:
        """`matching.match` of the query terms on ``st``, with this index's settings.

        Without ``k``, every matching document with its full score (nothing pruned).
        """
        cache = self._cache(st)
        ids, constant = query_ids(st, cache, self._params, terms, counts)
        return match(st, cache, self._params, ids, constant, k, allowed, self._scratch,
                     self._backend)

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
        cache = self._cache(st)
        ids, constant = query_ids(st, cache, self._params, terms, counts)
        positions, scores = ranked_matches(st, cache, self._params, ids, constant, k, filter,
                                           self._scratch, self._backend)
        if not positions.size:
            return []
        return self._hits(st, query, terms, counts, positions, scores, explain)

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
        rows = positions.tolist()
        cache = self._cache(st) if explain else None
        return [Hit(doc, value, rank,
                    {"bm25": self._explain(st, cache, query, terms, counts, pos).as_dict()}
                    if cache is not None else {})
                for rank, (doc, pos, value) in enumerate(
                    zip(st.docs.at(rows), rows, scores.tolist()), 1)]

    # ------------------------------------------------------------------ explaining

    def explain(self, query: str | Query, doc_id: str, *, syntax: Syntax = "plain",
                field_weights: Mapping[str, float] | None = None,
                ) -> BM25Explanation | FieldedExplanation:
        """Per query term: idf, tf, document length and contribution; they sum to the score.

        ``query`` and ``syntax`` as for `search`; a structured query lists its scoring
        terms (optional, required, phrase), whether or not the document passes its
        constraints. On a fielded index, a `FieldedExplanation`: per term and field.
        """
        structured = as_query(query, syntax)
        st = self._state
        pos = st.positions.get(doc_id) if isinstance(doc_id, str) else None
        if pos is None:
            raise KeyError(f"document {doc_id!r} is not in the index")
        if st.fields is not None or field_weights is not None:
            weights = self._weights(field_weights)
            if structured is None:
                terms, counts = self._query_terms(query)  # type: ignore[arg-type]
            else:
                aq = analysed(structured, self._analyzer)
                terms, counts = aq.terms, aq.counts
            label = query if isinstance(query, str) else repr(query)
            return self._explain_fielded(st, weights, label, terms, counts, pos)
        if structured is None:
            assert isinstance(query, str)
            return self._explain(st, self._cache(st), query, *self._query_terms(query), pos)
        aq = analysed(structured, self._analyzer)
        label = query if isinstance(query, str) else repr(query)
        return self._explain(st, self._cache(st), label, aq.terms, aq.counts, pos)

    def _explain(self, st: Snapshot, cache: ScoreCache, query: str, terms: list[str],
                 counts: list[int], pos: int) -> BM25Explanation:
        return explain(st, cache, self._params, query, terms, counts, pos)

    # ------------------------------------------------------------------ statistics

    def _cache(self, st: Snapshot) -> ScoreCache:
        """``st``'s score cache (idf, norms, bounds), built on first use."""
        return ScoreCache.of(st, self._params, self._collection_stats)

    def set_collection_stats(self, stats: CollectionStats | None) -> None:
        """Score with corpus-wide N, avgdl and df instead of this index's own.

        A shard of a larger corpus given the whole corpus's `CollectionStats` scores
        every one of its documents exactly as one index over the whole corpus would
        (same idf, same length norm), so shards' top-k lists can be merged by score.
        The statistics must cover this index's documents and terms; after an edit
        here they are stale until new ones are set. ``None`` returns to local
        statistics. They are not saved with the index. A fielded (BM25F) index takes
        fielded statistics (``stats.field_lengths`` over its fields; df over all fields).
        """
        if stats is not None and not isinstance(stats, CollectionStats):
            raise TypeError(
                f"stats must be a CollectionStats or None, got {type(stats).__name__}"
            )
        if stats is not None:
            have = None if self._fields is None else sorted(self._fields)
            got = None if stats.field_lengths is None else sorted(stats.field_lengths)
            if have != got:
                raise ValueError(f"the collection statistics are over fields {got} but this "
                                 f"index's fields are {have} (None: one field); compute them "
                                 "from indexes built with the same fields")
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
            new = Snapshot(st.docs, st.vocab, st.indptr, st.post_docs, st.post_tf,
                           st.doc_len, tokens=st.tokens)
            new.fields = st.fields
            self._state = new

    @property
    def collection_stats(self) -> CollectionStats | None:
        """The corpus-wide statistics in use, or ``None`` (this index's own)."""
        return self._collection_stats

    # ------------------------------------------------------------------ saving

    def _save_into(self, directory: Path) -> None:
        """Write the index files into an existing empty directory (`AtomicSave.save`, and
        composite indexes that hold this one)."""
        with self._lock:
            write_files(directory, self._state, self._params, self._analyzer, self._fields,
                        stats=self._collection_stats, backend=self._backend)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        mmap: bool = False,
        verify: bool = False,
        backend: BackendName | Backend = "auto",
    ) -> Self:
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
            backend: as for the class (a runtime choice, so not saved).

        Raises:
            TypeError: ``path`` is not a str or path.
            IndexFormatError: the directory is missing, corrupt, truncated, foreign,
                structurally invalid or from a newer format version.
        """
        backend = Backend.of(backend)
        return read_index(
            path, kind="bm25", max_version=FORMAT_VERSION,
            read=lambda r: cls._from_reader(r, mmap=mmap, verify=verify, backend=backend),
        )

    @classmethod
    def _from_reader(cls, r: IndexReader, *, mmap: bool = False, verify: bool = False,
                     backend: BackendName | Backend = "auto") -> Self:
        """The index in an opened saved directory (composite indexes read theirs too)."""
        state, params, analyzer = read_files(r, mmap=mmap, verify=verify,
                                             backend=Backend.of(backend))
        weights = read_fields(r, state, mmap=mmap, verify=verify)
        index = cls(analyzer=analyzer, params=params, backend=backend, fields=weights)
        index._install(state)
        return index

    # ------------------------------------------------------------------ access

    def __repr__(self) -> str:
        st = self._state
        return (
            f"BM25Index(docs={len(st.docs)}, terms={len(st.vocab)}, "
            f"method={self.method!r}, k1={self.k1}, b={self.b}, "
            f"analyzer={self._analyzer!r})"
        )

    @property
    def analyzer(self) -> Analyzer:
        """The analyzer used for documents and queries alike."""
        return self._analyzer

    @property
    def params(self) -> BM25Params:
        """The BM25 variant and parameters (saved with the index)."""
        return self._params

    @property
    def backend(self) -> Backend:
        """How queries are scored (compiled kernels or numpy; not saved)."""
        return self._backend

    @property
    def method(self) -> str:
        """The BM25 variant: ``"lucene"``, ``"robertson"``, ``"bm25l"`` or ``"bm25+"``."""
        return BM25Method.parse(self._params.method).value

    @property
    def k1(self) -> float:
        """Term-frequency saturation k1."""
        return self._params.k1

    @property
    def b(self) -> float:
        """Length normalisation b (0: none, 1: full)."""
        return self._params.b

    @property
    def delta(self) -> float:
        """The BM25L / BM25+ shift delta (unused by the other variants)."""
        return float(self._params.delta or 0.0)

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct terms in the index."""
        return len(self._state.vocab)

    @property
    def has_positions(self) -> bool:
        """Whether the index keeps term positions (``positions=True``), for phrase queries."""
        return self._state.tokens is not None

    def nbytes(self) -> int:
        """Bytes held by the index arrays (postings, lengths, positions, cache), not texts or
        vocabulary."""
        st = self._state
        return st.nbytes() + self._cache(st).nbytes()


class _Tokenising(NamedTuple):
    """The payload of a BM25 edit (`EditableIndex`): how `BM25Index._written` tokenises."""

    show_progress: bool
    n_jobs: int
