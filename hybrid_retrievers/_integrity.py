"""Structural checks of loaded index arrays: what a checksum cannot promise.

A checksum proves the bytes are those that were saved; these checks prove they make a
valid index (a consistently re-hashed edit, or a bug in another writer, passes the
first but not the second). Each function takes arrays, raises `IndexFormatError`
naming the file and the rule, and returns nothing. ``full=False`` runs only the checks
that do not read every posting or vector (for memory-mapped loads, where reading all
of it is what mapping avoids); ``full=True`` runs them all.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .persistence.safe_read import IndexFormatError

_BLOCK = 1 << 16
UNIT_NORM_TOLERANCE = 1e-3
"""Cosine indexes store rows of length 1 (or 0); float32 rounding stays far below this."""


def check_offsets(indptr: NDArray[np.integer], *, where: str,
                  file: str = "postings_indptr.npy", end: int | None = None) -> None:
    """``indptr`` (row ``i`` holds items ``indptr[i]:indptr[i + 1]``: per-term postings,
    or the bytes of document ``i`` in a buffer) starts at 0, never decreases and, given
    ``end``, ends there (the size of what it cuts)."""
    if (indptr.size == 0 or int(indptr[0]) != 0 or bool(np.any(np.diff(indptr) < 0))
            or (end is not None and int(indptr[-1]) != end)):
        rule = ("start at 0 and never decrease" if end is None
                else f"start at 0, never decrease and end at {end}")
        raise IndexFormatError(f"{where}/{file} is not a valid offset array (it must {rule})")


def check_postings(
    indptr: NDArray[np.integer],
    post_docs: NDArray[np.integer],
    post_tf: NDArray[np.integer],
    doc_len: NDArray[np.integer],
    *,
    where: str,
    full: bool,
    impacts: bool = False,
    max_impact: float = np.inf,
) -> None:
    """Validate term-major postings of a BM25 index (or, ``impacts``, a sparse index).

    Always: ``indptr`` starts at 0, never decreases and ends at the number of postings;
    document lengths are >= 0. With ``full``: every posting's document is in range,
    each term's documents are strictly increasing (sorted, no duplicates), every term
    frequency is >= 1, and each document's length equals the sum of its term
    frequencies (the analyzer's token count). With ``impacts`` the values are float32
    weights, which must be > 0 and at most ``max_impact`` (finite), and a document's
    length is its number of postings.
    """
    n_docs = int(doc_len.shape[0])
    check_offsets(indptr, where=where)
    if int(indptr[-1]) != post_docs.shape[0] or post_docs.shape != post_tf.shape:
        raise IndexFormatError(
            f"{where}: postings_indptr ends at {int(indptr[-1])} but postings_docs holds "
            f"{post_docs.shape[0]} and postings_tf {post_tf.shape[0]} postings"
        )
    if doc_len.size and int(doc_len.min()) < 0:
        raise IndexFormatError(f"{where}/doc_lengths.npy: negative document lengths")
    if not full or post_docs.size == 0:
        return
    lo, hi = int(post_docs.min()), int(post_docs.max())
    if lo < 0 or hi >= n_docs:
        raise IndexFormatError(
            f"{where}/postings_docs.npy: postings refer to documents outside 0..{n_docs - 1} "
            f"(found {lo if lo < 0 else hi})"
        )
    if impacts:
        if post_tf.dtype != np.float32 or not bool(np.all(
                np.isfinite(post_tf) & (post_tf > 0) & (post_tf <= max_impact))):
            raise IndexFormatError(f"{where}/postings_weights.npy: weights must be finite "
                                   f"float32 values > 0 and at most {max_impact:g}")
    elif int(post_tf.min()) < 1:
        raise IndexFormatError(f"{where}/postings_tf.npy: a term frequency is 0")
    # Ids are in 0..n_docs-1 (checked above), so their differences fit the stored dtype.
    bad = np.diff(post_docs) <= 0
    # The step into the first posting of a term may go down; every other step must go up.
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < post_docs.size)]
    bad[starts - 1] = False
    if bad.any():
        pos = int(np.argmax(bad)) + 1
        term = int(np.searchsorted(indptr, pos, side="right")) - 1
        raise IndexFormatError(
            f"{where}/postings_docs.npy: the postings of term {term} are not strictly "
            f"increasing (document {int(post_docs[pos])} after {int(post_docs[pos - 1])}: "
            "out of order or duplicated)"
        )
    lengths = np.bincount(post_docs, weights=None if impacts else post_tf, minlength=n_docs)
    mismatch = np.flatnonzero(lengths != doc_len)
    if mismatch.size:
        d = int(mismatch[0])
        raise IndexFormatError(
            f"{where}/doc_lengths.npy: document {d} has length {int(doc_len[d])} but its "
            f"postings hold {int(lengths[d])} tokens ({mismatch.size} documents disagree)"
        )


def check_vectors(vectors: NDArray[Any], *, metric: str, where: str, full: bool) -> None:
    """Validate a vector matrix: finite values and, for cosine, rows of length 1 or 0.

    Only with ``full`` (both read every value); blocks keep the transient memory small.
    """
    if not full:
        return
    for lo in range(0, vectors.shape[0], _BLOCK):
        block = np.asarray(vectors[lo : lo + _BLOCK])
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            row = lo + int(np.flatnonzero(~finite)[0])
            raise IndexFormatError(f"{where}: vectors.npy row {row} holds NaN or infinite values")
        if metric == "cosine":
            norms = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64))
            bad = (np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE) & (norms != 0.0)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise IndexFormatError(
                    f"{where}: vectors.npy row {lo + row} has length {norms[row]:.6g}; a "
                    "cosine index stores unit-length rows"
                )


def check_unique_ids(ids: list[str], *, where: str) -> None:
    """Document ids are unique (the first duplicate is named)."""
    if len(set(ids)) == len(ids):
        return
    seen: set[str] = set()
    for doc_id in ids:
        if doc_id in seen:
            raise IndexFormatError(f"{where}: duplicate document id {doc_id!r}")
        seen.add(doc_id)
