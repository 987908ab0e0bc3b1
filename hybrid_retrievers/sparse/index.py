"""SparseIndex: a learned sparse (SPLADE-style) index on the inverted-index engine (the façade).

One engine, two scorers. The postings, snapshots and edits (`inverted.postings`), the
per-thread buffers (`inverted.scratch`), the scoring loop with MaxScore pruning and
metadata filters (`inverted.matching`) and the compiled TAAT / block-max MaxScore
kernels (`inverted.kernels`) are the ones `BM25Index` runs on; this index stores a
float32 impact per (term, document) where BM25 stores a term frequency, and scores with
the engine's impact scorer (`inverted.scorer.ImpactScorer`): a query token's weight in
place of idf·count, the stored impact in place of the tf weight, no length norm. A score
is the exact dot product ``Σ_t q_w(t) · d_w(t, d)`` over the query's tokens, summed in
float32 in query order, on every path.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from ..document_columns import DocColumns
from ..documents import EditableIndex, check_docs, make_docs
from ..inverted.backend import Backend, BackendName
from ..inverted.matching import match_many, query_ids, ranked_matches
from ..inverted.operators import AnalysedQuery, admitted
from ..inverted.postings import Snapshot, compacted, written
from ..inverted.score_cache import ScoreCache
from ..inverted.scorer import ImpactScorer
from ..inverted.scratch import Scratch
from ..persistence import AtomicSave, IndexReader, read_index
from ..progress import progress
from ..query import Query, Syntax, as_query
from ..types import Doc, Hit, MetadataFilter, SparseEmbedder
from ..validation import check_id_list, check_k, check_number, check_queries, check_query
from .explanation import SparseExplanation, explain
from .saving import FORMAT_VERSION, KIND
from .saving import read as read_files
from .saving import write as write_files
from .vectors import CheckedVector, SparseVectors, SparseVectorsBuilder, check_vector, \
    check_vectors, csr_vectors, is_sparse_matrix, vector_chunks

__all__ = ["SparseIndex"]

_SCORER = ImpactScorer()


class SparseIndex(AtomicSave, EditableIndex):
    """A learned sparse index: exact dot-product top-k over ``{token: weight}`` vectors.

    Documents are encoded by a `SparseEmbedder` (SPLADE through
    ``hybrid_retrievers.models``, or `HashingSparseEmbedder` in tests), or given as
    pre-encoded vectors (`from_vectors`, `add_vectors`: mappings or a scipy CSR matrix
    with its vocabulary). ``search`` encodes the query and returns the documents with the
    largest dot products, ties to the earlier document, exactly as exhaustive scoring
    would (the compiled kernels prune with per-block impact bounds, never changing the
    hits). Metadata filters apply before top-k. ``backend`` (``"auto"``, ``"numba"``,
    ``"numpy"`` or a `Backend`) changes the speed, never the hits.

    Concurrency: as `BM25Index`: searches read one immutable snapshot; edits (`add`,
    `upsert`, `delete`) build a new one off to the side and publish it with one
    reference swap; writers are serialised.

    Example:
        >>> from hybrid_retrievers.models import HashingSparseEmbedder
        >>> index = SparseIndex.from_texts(
        ...     ["wings generate lift", "cats sleep all day", "a wing of the house"],
        ...     ids=["w", "c", "h"], embedder=HashingSparseEmbedder())
        >>> [hit.id for hit in index.search("wings", k=2)]
        ['w', 'h']
        >>> index.search_vector({"cats": 1.0})[0].id
        'c'
    """

    def __init__(
        self,
        *,
        embedder: SparseEmbedder | None = None,
        backend: BackendName | Backend = "auto",
        batch_size: int = 32,
    ) -> None:
        """Create an empty index; most users call `from_texts` or `from_vectors` instead."""
        self._embedder = _check_embedder(embedder)
        self._backend = Backend.of(backend)
        self._batch_size = check_number(batch_size, "batch_size", low=1, integer=True)
        self._model_id: str | None = _model_id_of(self._embedder)
        self._lock = threading.RLock()  # serialises writers; readers never take it
        self._scratch = Scratch()  # per thread
        self._state = Snapshot.empty()

    # ------------------------------------------------------------------ building

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        embedder: SparseEmbedder,
        batch_size: int = 32,
        show_progress: bool = False,
        backend: BackendName | Backend = "auto",
    ) -> SparseIndex:
        """Encode ``texts`` with ``embedder`` (``batch_size`` at a time) and index them.

        Raises:
            ValueError: an empty corpus, duplicate ids, mismatched lengths.
            TypeError: no embedder, or one without ``embed_documents``/``embed_query``.
        """
        return cls.from_docs(make_docs(texts, ids, metadatas), embedder=embedder,
                             batch_size=batch_size, show_progress=show_progress, backend=backend)

    @classmethod
    def from_docs(
        cls,
        docs: Iterable[Doc],
        *,
        embedder: SparseEmbedder,
        batch_size: int = 32,
        show_progress: bool = False,
        backend: BackendName | Backend = "auto",
    ) -> SparseIndex:
        """Index `Doc` objects (ids and metadata kept), encoding their texts."""
        if embedder is None:
            raise TypeError("from_texts/from_docs need embedder= (a SparseEmbedder); for "
                            "pre-encoded vectors use SparseIndex.from_vectors")
        index = cls(embedder=embedder, backend=backend, batch_size=batch_size)
        docs = _nonempty(check_docs(docs))
        index._state = index._written(index._state, docs, index._encode(docs, show_progress), None)
        return index

    @classmethod
    def from_vectors(
        cls,
        vectors: Any,
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        texts: Iterable[str] | None = None,
        vocabulary: Sequence[str] | None = None,
        embedder: SparseEmbedder | None = None,
        backend: BackendName | Backend = "auto",
    ) -> SparseIndex:
        """Index pre-encoded sparse vectors: ``{token: weight}`` mappings, or a scipy sparse
        matrix (rows = documents) with ``vocabulary`` naming its columns.

        ``texts`` are the documents' texts (for ``hit.doc.text``; default ""); without
        texts and ids, documents get content ids of their text and metadata (numbered
        ``#2``, ``#3``... when equal), so pass ``ids``. ``embedder`` (optional) encodes
        text queries and later `add` calls; its ``model_id`` is recorded.

        Raises:
            ValueError: an empty corpus, lengths that differ, a negative/NaN/infinite
                weight, a matrix without ``vocabulary`` or with one of the wrong length.
            TypeError: a vector that is not a mapping, a non-str token, a non-number weight.
        """
        index = cls(embedder=embedder, backend=backend)
        checked = _checked_vectors(vectors, vocabulary)
        docs = _nonempty(_docs_for(checked, ids, metadatas, texts, taken=None))
        index._state = index._written(index._state, docs, checked, None)
        return index

    # ------------------------------------------------------------------ editing

    # `add`, `add_docs`, `upsert`, `upsert_docs` and `delete` are `EditableIndex`'s, over
    # the hooks below; the ``*_vectors`` methods give the payload themselves.

    def add_vectors(
        self,
        vectors: Any,
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        texts: Iterable[str] | None = None,
        vocabulary: Sequence[str] | None = None,
    ) -> list[str]:
        """Add pre-encoded vectors (as `from_vectors`); return their ids."""
        checked = _checked_vectors(vectors, vocabulary)
        docs = _docs_for(checked, ids, metadatas, texts, taken=self._state.positions)
        return self._write(docs, checked, upsert=False)

    def upsert_vectors(
        self,
        vectors: Any,
        ids: Iterable[str],
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        texts: Iterable[str] | None = None,
        vocabulary: Sequence[str] | None = None,
    ) -> list[str]:
        """`upsert` with pre-encoded vectors (as `from_vectors`; ids are required)."""
        if ids is None:
            raise TypeError("upsert_vectors needs ids= (which documents to insert or replace)")
        checked = _checked_vectors(vectors, vocabulary)
        return self._write(_docs_for(checked, ids, metadatas, texts, taken=None), checked,
                           upsert=True)

    def _payload(self, docs: DocColumns, show_progress: bool) -> SparseVectors:
        """The vectors of ``docs``' texts (outside the writer lock: the model is slow)."""
        return self._encode(docs, show_progress)

    def _written(self, state: Snapshot, docs: DocColumns, vectors: SparseVectors,
                 rows: NDArray[np.int64] | None) -> Snapshot:
        """A new snapshot: ``state`` with ``docs[j]`` (vector ``vectors[j]``) at ``rows[j]``."""
        if len(vectors) != len(docs):
            raise ValueError(f"got {len(vectors)} vectors for {len(docs)} documents")
        vocab = dict(state.vocab)
        return written(state, docs, vector_chunks(vectors, vocab), rows, vocab)

    def _deleted(self, state: Snapshot, alive: NDArray[np.bool_]) -> Snapshot:
        return compacted(state, alive)

    def _encode(self, docs: DocColumns, show_progress: bool) -> SparseVectors:
        """The checked vectors of ``docs``' texts, ``batch_size`` texts per model call."""
        embedder = self._require_embedder("add or index texts", "add_vectors / from_vectors")
        out = SparseVectorsBuilder("the vector of texts[{i}]")
        bar = progress(None, show=show_progress, desc="Encoding", unit="doc", total=len(docs))
        try:
            for s in range(0, len(docs), self._batch_size):
                batch = [docs.text(j) for j in range(s, min(s + self._batch_size, len(docs)))]
                vectors = embedder.embed_documents(batch)
                if isinstance(vectors, Mapping) or len(vectors) != len(batch):
                    raise ValueError(f"the embedder returned {len(vectors)} vectors for "
                                     f"{len(batch)} texts; embed_documents must return one "
                                     "{token: weight} dict per text")
                out.add(vectors, s)
                bar.update(len(batch))
        finally:
            bar.close()
        return out.result()

    # ------------------------------------------------------------------ searching

    def search(self, query: str | Query, k: int = 10, *,
               filter: MetadataFilter | None = None, explain: bool = False,
               syntax: Syntax = "plain") -> list[Hit]:
        """The ``k`` documents with the largest dot product with ``query``'s vector.

        Only documents sharing a token with the query return (no zero-score padding).

        Args:
            query: free text, encoded with the embedder's ``embed_query``, or a
                `hybrid_retrievers.Query` (see below).
            k: how many hits at most.
            filter: metadata equality mapping or predicate over `Doc`, applied before
                top-k so ``k`` filtered hits come back when they exist.
            explain: attach each hit's `SparseExplanation` (a dict under
                ``hit.explanation["sparse"]``).
            syntax: how a str ``query`` is read, as for `BM25Index.search`:
                ``"plain"``, ``"operators"`` (``+token -token words``) or ``"lenient"``.

        Structured queries, and what they mean here: the optional and required clauses
        are encoded together as one text (the model weighs and expands them), and the
        required and excluded clauses are tokens of the index's vocabulary taken
        literally (``+wing``: the document's vector has the token ``wing``; ``-rotor``:
        it has no ``rotor``), applied before top-k. A learned model expands words into
        other tokens, so a word's expansion is no test of its presence: the operators
        test the tokens themselves. Phrases (a sparse vector keeps no positions) and
        ``min_should_match`` (the optional text becomes one weighted vector, not a
        count of clauses) are refused with a ValueError.

        Raises:
            ValueError: the index has no embedder (built from vectors: use
                `search_vector`), ``k < 1``, an empty query, a phrase or
                ``min_should_match``, bad syntax.
        """
        structured = as_query(query, syntax)
        k = check_k(k)
        embedder = self._require_embedder("search text", "search_vector")
        text, aq = (query, None) if structured is None else _sparse_query(structured)
        assert isinstance(text, str)
        vector = check_vector(embedder.embed_query(text), "the query's vector")
        label = query if isinstance(query, str) else repr(query)
        return self._search(self._state, label, vector, k, filter, explain, aq)

    async def asearch(self, query: str | Query, k: int = 10, *,
                      filter: MetadataFilter | None = None, explain: bool = False,
                      syntax: Syntax = "plain") -> list[Hit]:
        """`search` for async callers: the model and the search run in a worker thread."""
        as_query(query, syntax)
        k = check_k(k)
        self._require_embedder("search text", "search_vector")
        return await asyncio.to_thread(self.search, query, k, filter=filter, explain=explain,
                                       syntax=syntax)

    def search_vector(self, weights: Mapping[str, float], k: int = 10, *,
                      filter: MetadataFilter | None = None, explain: bool = False) -> list[Hit]:
        """`search` with a pre-encoded query vector ``{token: weight}`` (no model call).

        Tokens the index does not hold are ignored; hits are ordered by the dot
        product, which sums the weights in the mapping's order.
        """
        k = check_k(k)
        vector = check_vector(weights, "weights")
        return self._search(self._state, None, vector, k, filter, explain)

    def search_many(self, queries: Sequence[str | Query], k: int = 10, *,
                    filter: MetadataFilter | None = None,
                    explain: bool = False, syntax: Syntax = "plain") -> list[list[Hit]]:
        """`search` for each query, in order, all on the same snapshot of the index.

        Queries are encoded in one call when the embedder has ``embed_queries``. Without
        a filter and with the compiled kernels in use, the batch is scored in one
        compiled call (`inverted.kernels.match_top_k_many`): the same hits as one by one.
        What the batch saves is the Python work around each kernel call (~0.1 ms a
        query), so it gains most where the kernel is cheap: 100k SPLADE-shaped
        documents with 30-token queries spend ~0.35 ms a query (mean) in the kernel, and
        the batch runs 1.0-1.35x as many queries/s as a loop (benchmarks/sparse_speed.py);
        at 3k documents, 4x. Structured queries (a `Query`, or ``syntax`` other than
        ``"plain"``) are searched one at a time, as `search`.
        """
        if syntax != "plain" or (isinstance(queries, Sequence) and any(
                isinstance(q, Query) for q in queries)):
            if isinstance(queries, str) or not isinstance(queries, Sequence):
                check_queries(queries)  # raises the usual TypeError
            for i, q in enumerate(queries):
                as_query(q, syntax, name=f"queries[{i}]")  # every query checked first
            return [self.search(q, k, filter=filter, explain=explain, syntax=syntax)
                    for q in queries]
        queries = check_queries(queries)
        k = check_k(k)
        embedder = self._require_embedder("search text", "search_vector")
        batch = getattr(embedder, "embed_queries", None)
        raw = batch(queries) if callable(batch) else [embedder.embed_query(q) for q in queries]
        if isinstance(raw, Mapping) or len(raw) != len(queries):
            raise ValueError(f"the embedder returned {len(raw)} vectors for {len(queries)} "
                             "queries")
        vectors = [check_vector(v, f"the vector of queries[{i}]") for i, v in enumerate(raw)]
        st = self._state
        if filter is None:
            cache = self._cache(st)
            ranked = match_many(
                st, cache, _SCORER,
                [query_ids(st, cache, _SCORER, v.tokens, v.weights.tolist()) for v in vectors],
                k, self._scratch, self._backend)
            if ranked is not None:
                return [self._hits(st, q, v, pos, scores, explain)
                        for q, v, (pos, scores) in zip(queries, vectors, ranked)]
        return [self._search(st, q, v, k, filter, explain) for q, v in zip(queries, vectors)]

    def _search(self, st: Snapshot, query: str | None, vector: CheckedVector, k: int,
                filter: MetadataFilter | None, explain: bool,
                aq: AnalysedQuery | None = None) -> list[Hit]:
        allowed = None if aq is None else admitted(st, aq)
        if allowed is not None and not allowed.any():
            return []
        cache = self._cache(st)
        ids, constant = query_ids(st, cache, _SCORER, vector.tokens, vector.weights.tolist())
        positions, scores = ranked_matches(st, cache, _SCORER, ids, constant, k, filter,
                                           self._scratch, self._backend, allowed)
        return self._hits(st, query, vector, positions, scores, explain)

    def _hits(self, st: Snapshot, query: str | None, vector: CheckedVector,
              positions: NDArray[np.int32], scores: NDArray[np.float32],
              explain: bool) -> list[Hit]:
        """Hits of ranked document ``positions`` (best first), explained on request."""
        weights = vector.weights.tolist()
        rows = positions.tolist()
        return [Hit(doc, value, rank,
                    {"sparse": _explain(st, query, vector.tokens, weights, pos).as_dict()}
                    if explain else {})
                for rank, (doc, pos, value) in enumerate(
                    zip(st.docs.at(rows), rows, scores.tolist()), 1)]

    def explain(self, query: str | Mapping[str, float], doc_id: str) -> SparseExplanation:
        """Per shared token: query weight, document weight and contribution (their sum is
        the score). ``query`` is a text (encoded) or a ``{token: weight}`` vector."""
        if isinstance(query, Mapping):
            text, vector = None, check_vector(query, "query")
        else:
            text = check_query(query)
            embedder = self._require_embedder("explain a text query", "a {token: weight} query")
            vector = check_vector(embedder.embed_query(text), "the query's vector")
        st = self._state
        pos = st.positions.get(doc_id) if isinstance(doc_id, str) else None
        if pos is None:
            raise KeyError(f"document {doc_id!r} is not in the index")
        return _explain(st, text, vector.tokens, vector.weights.tolist(), pos)

    def _cache(self, st: Snapshot) -> ScoreCache:
        """``st``'s score data under the impact scorer (bounds, kernel metadata), built once."""
        return ScoreCache.of(st, _SCORER, None)

    def _require_embedder(self, what: str, instead: str) -> SparseEmbedder:
        if self._embedder is None:
            raise ValueError(
                f"this SparseIndex has no embedder, so it cannot {what}; pass embedder= "
                f"(a SparseEmbedder) when building or loading it, or use {instead}"
            )
        return self._embedder

    # ------------------------------------------------------------------ saving

    def _save_into(self, directory: Path) -> None:
        """Write the index files into an existing empty directory (`AtomicSave.save`)."""
        with self._lock:
            write_files(directory, self._state, model_id=self.model_id, embedder=self._embedder,
                        backend=self._backend)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        embedder: SparseEmbedder | None = None,
        *,
        mmap: bool = False,
        verify: bool = False,
        backend: BackendName | Backend = "auto",
    ) -> Self:
        """Read an index saved by `save`; nothing in it is trusted before it is checked.

        Every file read into memory is checksummed, the manifest too; the postings are
        checked for structure (documents in range and increasing per token, weights
        finite and > 0).

        Args:
            embedder: for text queries and additions; its ``model_id`` must be the saved
                one (when both are known).
            mmap: memory-map the posting arrays; their checksums and per-posting checks
                are skipped unless ``verify``.
            verify: with ``mmap``, also run the full checks.
            backend: as for the class (a runtime choice, not saved).

        Raises:
            IndexFormatError: missing, corrupt, truncated, foreign, invalid or newer.
            ValueError: ``embedder``'s ``model_id`` differs from the saved one.
        """
        backend = Backend.of(backend)
        embedder = _check_embedder(embedder)

        def build(r: IndexReader) -> Self:
            state, model_id = read_files(r, mmap=mmap, verify=verify, backend=backend)
            given = _model_id_of(embedder)
            if model_id is not None and given is not None and given != model_id:
                raise ValueError(
                    f"the index at {str(path)!r} holds vectors of model {model_id!r} but the "
                    f"embedder is {given!r}; load it with that model's embedder (or none, to "
                    "search pre-encoded vectors)"
                )
            index = cls(embedder=embedder, backend=backend)
            index._model_id = model_id if model_id is not None else given
            if state.positions.duplicates():
                raise ValueError("duplicate document ids")
            index._state = state
            return index

        return read_index(path, kind=KIND, max_version=FORMAT_VERSION, read=build)

    # ------------------------------------------------------------------ access

    def get_vectors(self, ids: Iterable[str]) -> list[dict[str, float]]:
        """The stored ``{token: weight}`` vector of each id (float32 weights, as indexed).

        Read back from the postings in one pass over them, so moving documents between
        indexes (or re-adding an unchanged text under a new id) needs no model call.

        Raises:
            KeyError: naming the first id that is not in the index.
        """
        st = self._state
        ids = check_id_list(ids)
        rows = []
        for doc_id in ids:
            pos = st.positions.get(doc_id)
            if pos is None:
                raise KeyError(f"document {doc_id!r} is not in the index")
            rows.append(pos)
        out: list[dict[str, float]] = [{} for _ in rows]
        if not rows:
            return out
        slot = np.full(len(st.docs), -1, dtype=np.int64)
        slot[np.asarray(rows, dtype=np.int64)] = np.arange(len(rows))
        where = np.flatnonzero(slot[st.post_docs] >= 0)
        terms = np.searchsorted(st.indptr, where, side="right") - 1
        names = [""] * (len(st.indptr) - 1)
        for token, term in st.vocab.items():
            names[term] = token
        weights = np.asarray(st.post_tf[where], dtype=np.float32).tolist()
        for j, t, w in zip(slot[st.post_docs[where]].tolist(), terms.tolist(), weights):
            out[j][names[t]] = w
        return out


    def __repr__(self) -> str:
        st = self._state
        return (f"SparseIndex(docs={len(st.docs)}, terms={len(st.vocab)}, "
                f"model_id={self.model_id!r})")

    @property
    def embedder(self) -> SparseEmbedder | None:
        """The model that encodes texts (None: pre-encoded vectors only)."""
        return self._embedder

    @property
    def model_id(self) -> str | None:
        """The identity of the vectors' model (recorded at save), or None when unknown."""
        return self._model_id

    @property
    def backend(self) -> Backend:
        """How queries are scored (compiled kernels or numpy; not saved)."""
        return self._backend

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct tokens with postings."""
        return len(self._state.vocab)

    def nbytes(self) -> int:
        """Bytes held by the index arrays (postings, lengths, score data), not texts."""
        st = self._state
        return st.nbytes() + self._cache(st).nbytes()


def _sparse_query(query: Query) -> tuple[str, AnalysedQuery | None]:
    """The text to encode and the token constraints of a structured query (`search`)."""
    if query.phrases:
        raise ValueError(f"a SparseIndex cannot match phrases (a sparse vector keeps no "
                         f"positions), got phrases={query.phrases!r}; use BM25Index with "
                         "positions=True for phrases, or drop the quotes")
    if query.min_should_match is not None:
        raise ValueError("a SparseIndex cannot apply min_should_match: its optional clauses "
                         "are encoded into one weighted vector, not counted as terms; got "
                         f"min_should_match={query.min_should_match!r}")
    text = " ".join(query.should + query.must)
    if query.is_plain:
        return text, None
    must = list(dict.fromkeys(t for c in query.must for t in c.split()))
    must_not = list(dict.fromkeys(t for c in query.must_not for t in c.split()))
    return text, AnalysedQuery([], [], [], must, must_not, [], 0, False)


def _explain(st: Snapshot, query: str | None, tokens: list[str], weights: list[float],
             pos: int) -> SparseExplanation:
    return explain(st, query, tokens, weights, pos)


def _check_embedder(embedder: Any) -> SparseEmbedder | None:
    if embedder is None:
        return None
    for name in ("embed_documents", "embed_query"):
        if not callable(getattr(embedder, name, None)):
            raise TypeError(f"embedder must be a SparseEmbedder (embed_documents, embed_query "
                            f"returning {{token: weight}} dicts), got {type(embedder).__name__} "
                            f"without {name}")
    return embedder  # type: ignore[no-any-return]


def _model_id_of(embedder: Any) -> str | None:
    value = getattr(embedder, "model_id", None)
    return value if isinstance(value, str) and value.strip() else None


def _checked_vectors(vectors: Any, vocabulary: Sequence[str] | None) -> SparseVectors:
    if is_sparse_matrix(vectors):
        return csr_vectors(vectors, vocabulary)
    if vocabulary is not None:
        raise TypeError("vocabulary= names a sparse matrix's columns; the vectors here are "
                        "mappings, whose keys are already tokens: leave it out")
    return check_vectors(vectors)


def _docs_for(vectors: SparseVectors, ids: Iterable[str] | None,
              metadatas: Iterable[Mapping[str, Any] | None] | None,
              texts: Iterable[str] | None, taken: Mapping[str, Any] | None) -> DocColumns:
    """The documents of pre-encoded vectors: one per vector (lengths must agree)."""
    if texts is None:
        text_list = [""] * len(vectors)
    else:
        text_list = list(texts) if not isinstance(texts, str) else [texts]
        if len(text_list) != len(vectors):
            raise ValueError(f"got {len(vectors)} vectors but {len(text_list)} texts; pass one "
                             "text per vector")
    if ids is not None and not isinstance(ids, str):
        ids = list(ids)
        if len(ids) != len(vectors):
            raise ValueError(f"got {len(vectors)} vectors but {len(ids)} ids; pass one id per "
                             "vector")
    if metadatas is not None:
        metadatas = list(metadatas)
        if len(metadatas) != len(vectors):
            raise ValueError(f"got {len(vectors)} vectors but {len(metadatas)} metadatas; pass "
                             "one per vector")
    return make_docs(text_list, ids, metadatas, taken=taken)


def _nonempty(docs: DocColumns) -> DocColumns:
    if not docs:
        raise ValueError("cannot build a sparse index from an empty corpus; pass at least one "
                         "text or vector")
    return docs
