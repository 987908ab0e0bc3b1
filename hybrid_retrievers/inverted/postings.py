"""The data of one index version (`BM25Index`, `SparseIndex`): documents and term-major postings.

A `Snapshot` is everything a search reads, never modified once published. Its postings
are term-major CSR arrays: term ``t``'s documents are ``post_docs[indptr[t]:indptr[t+1]]``
(ascending) with their raw term frequencies in ``post_tf`` (the smallest unsigned type
that holds them, a byte for most corpora), and ``doc_len`` holds each document's token
count. The same structure holds a learned sparse index's impacts: ``post_tf`` is then
float32 weights (`TokenChunk.weights`) and ``doc_len`` each document's number of terms;
edits and compaction treat both alike. Edits never change a snapshot: `written` (append or replace documents) and
`compacted` (delete) build new arrays off to the side and return a new one, so searches
on the old one go on safely. Nothing here depends on the analyzer or on BM25's
parameters; what does (idf, norms, bounds) is the snapshot's lazily built score cache
(`Snapshot.derived`, `score_cache`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..document_columns import DocColumns
from ..documents import DocTable
from ..types import Doc
from .heap import release_free_heap

if TYPE_CHECKING:
    from .build import TokenChunk

T = TypeVar("T")

__all__ = ["Snapshot", "written", "compacted", "live_terms", "offsets",
           "compact_tf", "smallest_uint"]


class Snapshot(DocTable):
    """One version of the index: everything a search reads, never modified once published.

    Searches take ``index._state`` once and read only it; edits build a new snapshot
    and replace the reference. Only the lazily built score cache (`derived`) and the
    memo of filter masks are filled in later, and both are pure functions of the
    fields, so every reader sees the same values.

    Fields: the documents (``docs`` in index order, ``positions`` id -> position, the
    ``masks`` memo: its `DocTable`, whose `DocColumns` other snapshots may share), ``vocab`` (term -> term id), term-major postings
    (term t's documents are ``post_docs[indptr[t]:indptr[t+1]]``, ascending, with raw
    term frequencies in ``post_tf``), ``doc_len`` and, when the index keeps positions,
    ``tokens``: every document's term ids in order, documents one after another
    (document d's are ``tokens[starts[d]:starts[d] + doc_len[d]]`` with ``starts`` the
    offsets of ``doc_len``), which phrase queries read (`operators`);
    None when positions are off. ``fields``: a fielded index's other fields (name ->
    snapshot of that field's texts over the same documents, `hybrid_retrievers.bm25.fields`),
    this snapshot being field "text"; None without fields.
    """

    __slots__ = ("vocab", "indptr", "post_docs", "post_tf", "doc_len", "avgdl", "tokens",
                 "fields", "_derived", "_build_lock")

    def __init__(
        self,
        docs: DocColumns | list[Doc],
        vocab: dict[str, int],
        indptr: NDArray[np.integer],
        post_docs: NDArray[np.integer],
        post_tf: NDArray[np.integer],
        doc_len: NDArray[np.integer],
        tokens: NDArray[np.int32] | None = None,
    ) -> None:
        super().__init__(docs)
        self.tokens = tokens
        self.fields: dict[str, Snapshot] | None = None
        self.vocab = vocab
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.post_docs = post_docs if post_docs.dtype == np.int32 else post_docs.astype(np.int32)
        self.post_tf = post_tf
        self.doc_len = doc_len if doc_len.dtype == np.int32 else doc_len.astype(np.int32)
        self.avgdl = float(self.doc_len.mean()) if self.doc_len.size else 0.0
        self._derived: object | None = None
        self._build_lock = threading.Lock()

    def nbytes(self) -> int:
        """Bytes held by this version's arrays: postings, lengths, positions (when kept) and
        the other fields' (BM25F), not texts, vocabulary or the score cache."""
        arrays = [self.indptr, self.post_docs, self.post_tf, self.doc_len]
        if self.tokens is not None:
            arrays.append(self.tokens)
        return (int(sum(a.nbytes for a in arrays))
                + sum(field.nbytes() for field in (self.fields or {}).values()))

    def derived(self, build: Callable[[], T]) -> T:
        """What ``build()`` derives from this snapshot (the score cache), built once, then kept.

        One build per snapshot, not one per concurrent reader; every caller of one
        snapshot passes the same kind of ``build``.
        """
        value = self._derived
        if value is None:
            with self._build_lock:
                if self._derived is None:
                    self._derived = build()
                value = self._derived
        return value  # type: ignore[return-value]

    @classmethod
    def empty(cls, positions: bool = False) -> Snapshot:
        """No documents; ``positions``: edits keep each document's term ids (`tokens`)."""
        return cls(DocColumns.empty(), {}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8),
                   np.zeros(0, np.int32), tokens=np.zeros(0, np.int32) if positions else None)


def written(
    state: Snapshot,
    docs: DocColumns,
    chunks: Iterable[TokenChunk],
    rows: NDArray[np.int64] | None,
    vocab: dict[str, int],
) -> Snapshot:
    """A new snapshot: ``state`` with ``docs[j]`` at position ``rows[j]``.

    ``chunks`` are the documents' tokens, chunk after chunk in document order, numbered
    into ``vocab`` (see `build.token_chunks`), a copy of ``state.vocab`` before the
    first chunk that is the new snapshot's vocabulary after the last. A row below
    ``len(state.docs)`` replaces that document; the others are the next positions, in
    order (``rows=None``: all of ``docs`` appended). ``state`` is not modified: its
    arrays are only read, so searches on it go on safely.

    Streamed: each chunk becomes term-sorted ``(term, doc, tf)`` runs, held compactly
    (uint16 chunk-local documents, the smallest tf type, one narrow entry per distinct
    term; `_Runs`) in large slabs (`_Slabs`) until every document frequency is known;
    then the term-major CSR is filled by a counting sort (old postings first, then each
    chunk in turn, each slab freed once its runs are placed), so no token list of the
    whole corpus and no COO copy of it is ever held. A write of `TRIM_POSTINGS` or more
    new postings then gives the C heap's freed pages back (`heap.release_free_heap`).
    At 1M documents of bm25_speed's corpus a build (score cache and kernel metadata
    included) grew the process by 339 MiB with the score cache's builds trimmed too
    (372 with this trim alone, 400 without; 819 with runs held one by one) and peaked
    525 MiB above its start (1,253 before the slabs), ``benchmarks/bm25_memory.py``.
    """
    offset = len(state.docs)
    rows_given = rows
    if rows is None:
        rows = np.arange(offset, offset + len(docs), dtype=np.int64)
    rows32 = rows.astype(np.int32)
    replaced = rows[rows < offset]
    n_docs = offset + len(docs) - replaced.size
    lengths = np.zeros(len(docs), dtype=np.int32)
    runs: list[_Runs] = []
    new_tokens: list[NDArray[np.int32]] | None = [] if state.tokens is not None else None
    start = 0
    slabs = _Slabs()
    for chunk in chunks:
        if new_tokens is not None:
            new_tokens.append(chunk.vocab_ids)
        runs.append(slabs.packed(_chunk_runs(chunk, start)))
        lengths[start:start + chunk.lengths.size] = chunk.lengths
        start += chunk.lengths.size
    del slabs  # each slab is now held by its runs' views only: freed once they are placed
    if start != len(docs):
        raise ValueError(f"tokenised {start} documents, expected {len(docs)}")
    old_indptr, old_docs, old_tf = state.indptr, state.post_docs, state.post_tf
    if replaced.size:
        keep = np.ones(offset, dtype=bool)
        keep[replaced] = False
        keep = keep[old_docs]
        kept = np.zeros(old_docs.size + 1, dtype=np.int64)
        np.cumsum(keep, out=kept[1:])
        old_indptr = kept[old_indptr]
        old_docs, old_tf = old_docs[keep], old_tf[keep]
        del keep, kept
    df = np.zeros(len(vocab), dtype=np.int64)
    df[:old_indptr.size - 1] = np.diff(old_indptr)
    max_tf = int(old_tf.max()) if old_tf.size else 0
    weighted = bool(runs) and runs[0].tf.dtype.kind == "f"
    new_postings = 0
    for r in runs:
        df[r.terms] += r.counts
        max_tf = max(max_tf, r.max_tf)
        new_postings += r.docs.size
    indptr = offsets(df)
    post_docs = np.empty(int(indptr[-1]), dtype=np.int32)
    post_tf = np.empty(post_docs.size,
                       dtype=np.float32 if weighted else smallest_uint(max_tf))
    _copy_old(old_indptr, old_docs, old_tf, indptr, post_docs, post_tf)
    del old_docs, old_tf
    cursor = indptr[:-1].copy()  # where each term's next new posting goes
    cursor[:old_indptr.size - 1] += np.diff(old_indptr)
    touched = []
    runs.reverse()
    while runs:  # popped one by one, so each chunk's runs are freed once placed
        r = runs.pop()
        within = np.arange(r.docs.size, dtype=np.int64) - np.repeat(offsets(r.counts)[:-1],
                                                                    r.counts)
        dest = np.repeat(cursor[r.terms], r.counts) + within
        post_docs[dest] = rows32[r.first + r.docs.astype(np.int64)]
        post_tf[dest] = r.tf
        cursor[r.terms] += r.counts
        if replaced.size:
            touched.append(r.terms.copy())  # a copy: a view would keep its slab alive
        del r, within, dest
    live = None
    if replaced.size:
        # Replaced documents keep their positions, so their postings go between old
        # ones: sort the documents of every term they touched.
        _sort_terms(np.unique(np.concatenate(touched)), indptr, post_docs, post_tf)
        if not df.all():
            # Terms only the replaced texts had: drop them, as a rebuild would.
            live = df > 0
            vocab, df = live_terms(vocab, df)
            indptr = offsets(df)
    doc_len = np.zeros(n_docs, dtype=np.int32)
    doc_len[:offset] = state.doc_len
    doc_len[rows] = lengths
    new_docs = state.docs.placed(docs, None if rows_given is None else rows)
    tokens = None
    if new_tokens is not None:
        assert state.tokens is not None
        tokens = _placed_tokens(state, new_tokens, lengths, rows, doc_len, live)
    if new_postings >= TRIM_POSTINGS:
        release_free_heap()  # the chunks' freed temporaries: see `heap`
    return Snapshot(new_docs, vocab, indptr, post_docs, post_tf, doc_len, tokens=tokens)


# New postings from which a write gives the C heap's free pages back (`heap`): about
# 90,000 documents of 45 postings, whose freed temporaries are MiBs; an `add` of a few
# documents skips the heap walk.
TRIM_POSTINGS = 1 << 22


def _placed_tokens(
    state: Snapshot,
    new_tokens: list[NDArray[np.int32]],
    lengths: NDArray[np.int32],
    rows: NDArray[np.int64],
    doc_len: NDArray[np.int32],
    live: NDArray[np.bool_] | None,
) -> NDArray[np.int32]:
    """The new snapshot's `Snapshot.tokens`: old documents' and new ones' at their rows.

    ``live`` (terms that kept documents, when some term lost all) renumbers term ids
    as `live_terms` renumbered the vocabulary.
    """
    old = state.tokens
    assert old is not None
    source = np.concatenate([old, *new_tokens]).astype(np.int32, copy=False)
    start = np.zeros(doc_len.size, dtype=np.int64)
    start[:state.doc_len.size] = offsets(state.doc_len)[:-1]
    start[rows] = old.size + offsets(lengths)[:-1]
    idx = np.repeat(start - offsets(doc_len)[:-1], doc_len) + np.arange(
        int(doc_len.sum()), dtype=np.int64)
    tokens = source[idx]
    if live is not None:
        tokens = (np.cumsum(live) - 1)[tokens].astype(np.int32)
    return tokens


class _Runs(NamedTuple):
    """One chunk's postings, term-sorted: ``counts[i]`` entries of term ``terms[i]``.

    The entries (``docs``: chunk-local positions, ascending within a term; ``tf``)
    for ``terms[i]`` follow those of ``terms[i - 1]``; ``first`` is the chunk's first
    document. Held until every chunk is counted, so kept narrow: ``counts`` and
    ``docs`` in the smallest unsigned type for the chunk's size (uint16 for
    `build.CHUNK_DOCS`), ``tf`` in the smallest for its largest count: 3 bytes a
    posting and 6 a (chunk, term) pair for most corpora.
    """

    terms: NDArray[np.int32]
    counts: NDArray[np.unsignedinteger]
    docs: NDArray[np.unsignedinteger]
    tf: NDArray[Any]  # counts (smallest unsigned type), or float32 weights
    max_tf: int
    first: int


class _Slabs:
    """Packs the runs of a build's chunks into large slabs, each freed whole once placed.

    A chunk's runs are small arrays (about a MiB), kept until every chunk is counted,
    while each chunk also makes and frees temporaries of that size. Allocated one by
    one they would sit in the C heap between those temporaries and later long-lived
    objects, and once freed stay in the process's resident memory (at 1M documents,
    more than the postings themselves). Packed into slabs of `SLAB_BYTES` (above
    glibc's largest mmap threshold, so each slab is its own mapping), they go back to
    the system as soon as the last run of a slab is placed. Slabs start at 1 MiB and
    double up to that size, so a small build (an `add` of a few documents) does not
    reserve 64 MiB.
    """

    SLAB_BYTES = 64 << 20
    FIRST_SLAB_BYTES = 1 << 20

    def __init__(self) -> None:
        self._slab = np.empty(0, dtype=np.uint8)
        self._used = 0
        self._next = self.FIRST_SLAB_BYTES

    def packed(self, runs: _Runs) -> _Runs:
        """``runs`` with its arrays copied into the current slab (views of it)."""
        arrays = (runs.terms, runs.counts, runs.docs, runs.tf)
        need = sum(-(-a.nbytes // 8) * 8 for a in arrays)
        if self._used + need > self._slab.size:
            self._slab = np.empty(max(self._next, need), dtype=np.uint8)
            self._next = min(2 * self._next, self.SLAB_BYTES)
            self._used = 0
        views = []
        for a in arrays:
            view = self._slab[self._used:self._used + a.nbytes].view(a.dtype)
            view[...] = a
            views.append(view)
            self._used += -(-a.nbytes // 8) * 8  # 8-byte aligned
        return _Runs(*views, runs.max_tf, runs.first)


def _chunk_runs(chunk: TokenChunk, first: int) -> _Runs:
    """Count the chunk's (term, doc) pairs, term-sorted (with weights: sum their weights)."""
    if chunk.weights is not None:
        runs = _transposed_runs(chunk, first)
        if runs is not None:
            return runs
    key = chunk.vocab_ids.astype(np.int64)
    n = max(int(chunk.lengths.size), 1)
    key *= n
    key += np.repeat(np.arange(chunk.lengths.size, dtype=np.int64), chunk.lengths)
    weights = chunk.weights
    if weights is None:
        key.sort()
    else:
        order = np.argsort(key, kind="stable")
        key, weights = key[order], weights[order]
        del order
    new = np.empty(key.size, dtype=bool)
    new[:1] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    pair_start = np.flatnonzero(new)
    del new
    if weights is None:
        tf = np.diff(np.append(pair_start, key.size))
    else:
        tf = (np.add.reduceat(weights, pair_start, dtype=np.float32) if pair_start.size
              else np.zeros(0, dtype=np.float32))
    pairs = key[pair_start]
    del key, pair_start
    terms = pairs // n
    docs = (pairs - terms * n).astype(smallest_uint(n))
    del pairs
    tnew = np.empty(terms.size, dtype=bool)
    tnew[:1] = True
    np.not_equal(terms[1:], terms[:-1], out=tnew[1:])
    starts = np.flatnonzero(tnew)
    counts = np.diff(np.append(starts, terms.size)).astype(smallest_uint(n))
    max_tf = int(tf.max()) if tf.size else 0
    return _Runs(terms[starts].astype(np.int32), counts, docs, compact_tf(tf), max_tf, first)


def _transposed_runs(chunk: TokenChunk, first: int) -> _Runs | None:
    """A weighted chunk's runs by a counting sort, or None if a document repeats a term.

    A chunk of sparse vectors is a document-major CSR matrix; its term-major runs are
    that matrix transposed, which scipy's CSR -> CSC conversion does in one pass over
    the entries (no comparison sort: 4096 documents of 220 entries take ~25 ms instead
    of ~230 ms for the stable argsort), keeping each term's documents ascending. A
    document that names a term twice (the weights then add up) leaves it to the sorting
    path, which sums repeated entries in their order.
    """
    import scipy.sparse as sp  # a core dependency; loaded on the first weighted build

    n = int(chunk.lengths.size)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(chunk.lengths, out=indptr[1:])
    n_terms = int(chunk.vocab_ids.max()) + 1 if chunk.vocab_ids.size else 0
    csc = sp.csr_matrix((chunk.weights, chunk.vocab_ids, indptr), shape=(n, n_terms)).tocsc()
    if not csc.has_canonical_format:  # some (term, doc) pair twice
        return None
    counts = np.diff(csc.indptr)
    terms = np.flatnonzero(counts)
    tf = np.asarray(csc.data, dtype=np.float32)
    narrow = smallest_uint(max(n, 1))
    return _Runs(terms.astype(np.int32), counts[terms].astype(narrow),
                 csc.indices.astype(narrow), tf, int(tf.max()) if tf.size else 0, first)


def _copy_old(
    old_indptr: NDArray[np.int64],
    old_docs: NDArray[np.int32],
    old_tf: NDArray[np.unsignedinteger],
    indptr: NDArray[np.int64],
    post_docs: NDArray[np.int32],
    post_tf: NDArray[np.unsignedinteger],
) -> None:
    """Copy each old term's postings to the start of its new range, a block of terms at a time."""
    n_old = old_indptr.size - 1
    if not old_docs.size:
        return
    shift = indptr[:n_old] - old_indptr[:-1]
    df = np.diff(old_indptr)
    step = max(1, n_old * _COPY_BLOCK // max(int(old_docs.size), 1))
    for t0 in range(0, n_old, step):
        t1 = min(t0 + step, n_old)
        a, b = int(old_indptr[t0]), int(old_indptr[t1])
        if a == b:
            continue
        dest = np.arange(a, b, dtype=np.int64) + np.repeat(shift[t0:t1], df[t0:t1])
        post_docs[dest] = old_docs[a:b]
        post_tf[dest] = old_tf[a:b]


# Postings per block when old postings are copied (bounds the index temporaries).
_COPY_BLOCK = 1 << 20


def _sort_terms(
    terms: NDArray[np.int32],
    indptr: NDArray[np.int64],
    post_docs: NDArray[np.int32],
    post_tf: NDArray[np.unsignedinteger],
) -> None:
    """Sort the postings of ``terms`` (ascending term ids) by document, in place."""
    lens = indptr[terms + 1] - indptr[terms]
    base = np.repeat(indptr[terms] - (np.cumsum(lens) - lens), lens)
    idx = base + np.arange(base.size, dtype=np.int64)
    del base
    order = np.lexsort((post_docs[idx], np.repeat(terms, lens)))
    sel = idx[order]
    post_docs[idx] = post_docs[sel]
    post_tf[idx] = post_tf[sel]


def compacted(state: Snapshot, alive: NDArray[np.bool_]) -> Snapshot:
    """A new snapshot holding only the documents where ``alive`` is True."""
    new_pos = np.cumsum(alive, dtype=np.int32) - 1  # int32 like post_docs: no cast copy
    keep = alive[state.post_docs]
    starts = state.indptr[:-1]
    if starts.size and keep.size and bool((np.diff(state.indptr) > 0).all()):
        # Kept postings per term without a per-posting term array (a snapshot's
        # terms all have postings, so no range is empty).
        df = np.add.reduceat(keep, starts, dtype=np.int64)
    else:
        terms = np.repeat(np.arange(len(state.indptr) - 1), np.diff(state.indptr))
        df = np.bincount(terms[keep], minlength=len(state.vocab))
    # Drop terms no remaining document has, so the vocabulary (and Robertson's
    # mean idf) is what a rebuild on the remaining documents would have.
    tokens = None
    if state.tokens is not None:
        tokens = state.tokens[np.repeat(alive, state.doc_len)]
        if not (df > 0).all():
            tokens = (np.cumsum(df > 0) - 1)[tokens].astype(np.int32)
    vocab, df = live_terms(state.vocab, df)
    return Snapshot(state.docs.kept(alive), vocab, offsets(df), new_pos[state.post_docs[keep]],
                    compact_tf(state.post_tf[keep]), state.doc_len[alive], tokens=tokens)


def live_terms(
    vocab: dict[str, int], df: NDArray[np.integer]
) -> tuple[dict[str, int], NDArray[np.integer]]:
    """The vocabulary without terms of document frequency 0, renumbered in order."""
    live = df > 0
    if live.all():
        return vocab, df
    term_map = np.cumsum(live) - 1
    return {t: int(term_map[i]) for t, i in vocab.items() if live[i]}, df[live]


def offsets(df: NDArray[np.integer]) -> NDArray[np.int64]:
    indptr = np.zeros(len(df) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return indptr


def compact_tf(tf: NDArray[Any]) -> NDArray[Any]:
    """Term frequencies in the smallest unsigned type that holds them (most fit a byte).

    Float impacts (a sparse index's postings) stay float32.
    """
    if tf.dtype.kind == "f":
        return tf.astype(np.float32, copy=False)
    return tf.astype(smallest_uint(int(tf.max()) if tf.size else 0))


def smallest_uint(max_value: int) -> type[np.unsignedinteger]:
    for dtype in (np.uint8, np.uint16, np.uint32):
        if max_value <= np.iinfo(dtype).max:
            return dtype
    return np.uint64
