"""The data of one `BM25Index` version: its documents and term-major postings.

A `Snapshot` is everything a search reads, never modified once published. Its postings
are term-major CSR arrays: term ``t``'s documents are ``post_docs[indptr[t]:indptr[t+1]]``
(ascending) with their raw term frequencies in ``post_tf`` (the smallest unsigned type
that holds them, a byte for most corpora), and ``doc_len`` holds each document's token
count. Edits never change a snapshot: `written` (append or replace documents) and
`compacted` (delete) build new arrays off to the side and return a new one, so searches
on the old one go on safely. Nothing here depends on the analyzer or on BM25's
parameters; what does (idf, norms, bounds) is the snapshot's lazily built ``cache``
(`hybrid_retrievers.bm25.statistics`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..documents import DocTable
from ..types import Doc

if TYPE_CHECKING:
    from ..text import Analyzer
    from .collection_stats import CollectionStats
    from .scoring import BM25Method, Variant
    from .statistics import ScoreCache

__all__ = ["Snapshot", "IndexFields", "written", "compacted", "live_terms", "offsets",
           "compact_tf", "smallest_uint"]


class Snapshot(DocTable):
    """One version of the index: everything a search reads, never modified once published.

    Searches take ``index._state`` once and read only it; edits build a new snapshot
    and replace the reference. Only the lazily built ``cache`` (under ``build_lock``)
    and the memo of filter masks are filled in later, and both are pure functions of
    the fields, so every reader sees the same values.

    Fields: the documents (``docs`` in index order, ``positions`` id -> position, the
    ``masks`` memo: its `DocTable`), ``vocab`` (term -> term id), term-major postings
    (term t's documents are ``post_docs[indptr[t]:indptr[t+1]]``, ascending, with raw
    term frequencies in ``post_tf``) and ``doc_len``.
    """

    __slots__ = ("vocab", "indptr", "post_docs", "post_tf", "doc_len", "avgdl", "cache",
                 "build_lock")

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
        super().__init__(docs, positions)
        self.vocab = vocab
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.post_docs = post_docs if post_docs.dtype == np.int32 else post_docs.astype(np.int32)
        self.post_tf = post_tf
        self.doc_len = doc_len if doc_len.dtype == np.int32 else doc_len.astype(np.int32)
        self.avgdl = float(self.doc_len.mean()) if self.doc_len.size else 0.0
        self.cache: ScoreCache | None = None
        self.build_lock = threading.Lock()

    @classmethod
    def empty(cls) -> Snapshot:
        return cls([], {}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8),
                   np.zeros(0, np.int32))


class IndexFields:
    """The instance fields of a `BM25Index`, declared once for the classes it is made of.

    ``_state`` is the current `Snapshot` (replaced, never modified, under ``_lock``).
    """

    __slots__ = ()
    _state: Snapshot
    _lock: threading.RLock
    _scratch: threading.local
    _analyzer: Analyzer
    _method: BM25Method
    _variant: Variant
    _k1: float
    _b: float
    _delta: float
    _collection_stats: CollectionStats | None


def written(
    state: Snapshot,
    docs: list[Doc],
    token_lists: list[list[str]],
    rows: NDArray[np.int64] | None,
) -> Snapshot:
    """A new snapshot: ``state`` with ``docs[j]`` (tokens ``token_lists[j]``) at ``rows[j]``.

    A row below ``len(state.docs)`` replaces that document; the others are the
    next positions, in order (``rows=None``: all of ``docs`` appended). ``state``
    is not modified: its arrays are only read, so searches on it go on safely.
    """
    from scipy import sparse

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
        vocab, df = live_terms(vocab, df)
    doc_len = np.zeros(n_docs, dtype=np.int32)
    doc_len[:offset] = state.doc_len
    doc_len[rows] = lengths
    new_list = list(state.docs)
    new_list.extend([None] * (n_docs - offset))  # type: ignore[list-item]
    for row, d in zip(rows.tolist(), docs):
        new_list[row] = d
    return Snapshot(new_list, vocab, offsets(df), matrix.indices, compact_tf(matrix.data),
                    doc_len)

def compacted(state: Snapshot, alive: NDArray[np.bool_]) -> Snapshot:
    """A new snapshot holding only the documents where ``alive`` is True."""
    new_pos = np.cumsum(alive) - 1
    terms = np.repeat(np.arange(len(state.indptr) - 1), np.diff(state.indptr))
    keep = alive[state.post_docs]
    df = np.bincount(terms[keep], minlength=len(state.vocab))
    # Drop terms no remaining document has, so the vocabulary (and Robertson's
    # mean idf) is what a rebuild on the remaining documents would have.
    vocab, df = live_terms(state.vocab, df)
    docs = [d for d, a in zip(state.docs, alive.tolist()) if a]
    return Snapshot(docs, vocab, offsets(df), new_pos[state.post_docs[keep]],
                    compact_tf(state.post_tf[keep]), state.doc_len[alive])


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


def compact_tf(tf: NDArray[np.integer]) -> NDArray[np.unsignedinteger]:
    """Term frequencies in the smallest unsigned type that holds them (most fit a byte)."""
    return tf.astype(smallest_uint(int(tf.max()) if tf.size else 0))


def smallest_uint(max_value: int) -> type[np.unsignedinteger]:
    for dtype in (np.uint8, np.uint16, np.uint32):
        if max_value <= np.iinfo(dtype).max:
            return dtype
    return np.uint64
