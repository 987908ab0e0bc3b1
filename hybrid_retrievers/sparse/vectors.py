"""Sparse vectors in: checking ``{token: weight}`` mappings and scipy CSR matrices, and
turning them into the engine's `TokenChunk` batches.

A sparse vector is a mapping from token (a non-empty str of the model's vocabulary) to
a weight from 0 to `MAX_IMPACT` (1e15, so that no score overflows float32: see there);
weights are stored as float32, and zeros (also weights that round to zero in float32)
are left out. Negative, NaN, infinite or larger weights, non-string tokens and
non-numeric weights are errors naming the vector and the token. A CSR
matrix (rows = documents) comes with its ``vocabulary`` (one token per column).

Many vectors travel as one `SparseVectors`: flat arrays over a table of distinct
tokens, the shape of a CSR matrix, so a corpus is checked and numbered with a constant
number of numpy passes (and, for mappings, C-level loops over the flattened keys and
values) instead of Python work per token: a CSR matrix's arrays are used as they are,
and each distinct token is looked up in the index's vocabulary once per build.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from numbers import Real
from operator import methodcaller
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..inverted.build import CHUNK_DOCS, TokenChunk
from ..inverted.scorer import MAX_IMPACT

__all__ = ["CheckedVector", "SparseVectors", "SparseVectorsBuilder", "check_vector",
           "check_vectors", "csr_vectors", "vector_chunks", "is_sparse_matrix"]


class CheckedVector(NamedTuple):
    """One checked sparse vector: its tokens and their float32 weights (> 0), in order."""

    tokens: list[str]
    weights: NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class SparseVectors:
    """Checked sparse vectors, flat: vector i holds the entries ``offsets[i]:offsets[i+1]``.

    Entry j is token ``tokens[token_ids[j]]`` with weight ``weights[j]`` (float32, > 0);
    a vector names a token at most once. ``tokens`` is a table of distinct tokens, some
    possibly unused (a CSR matrix's vocabulary).
    """

    offsets: NDArray[np.int64]
    token_ids: NDArray[np.int32]
    weights: NDArray[np.float32]
    tokens: list[str]

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> NDArray[np.int32]:
        """Entries per vector."""
        return np.diff(self.offsets).astype(np.int32)

    def select(self, rows: Sequence[int]) -> SparseVectors:
        """The vectors at ``rows``, in that order (same token table)."""
        rows_a = np.asarray(rows, dtype=np.int64).reshape(-1)
        starts, ends = self.offsets[rows_a], self.offsets[rows_a + 1]
        offsets = np.zeros(rows_a.size + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=offsets[1:])
        at = np.repeat(starts - offsets[:-1], ends - starts) + np.arange(offsets[-1])
        return SparseVectors(offsets, self.token_ids[at], self.weights[at], self.tokens)

    @classmethod
    def empty(cls) -> SparseVectors:
        """No vectors."""
        return cls(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32), [])


def check_vector(vector: Any, where: str) -> CheckedVector:
    """``vector`` (a ``{token: weight}`` mapping) checked; ``where`` names it in errors.

    Raises:
        TypeError: not a mapping, a token that is not a non-empty str, a weight that is
            not a number (a bool or a str included).
        ValueError: a weight that is negative, NaN, infinite or above `MAX_IMPACT`.
    """
    if not isinstance(vector, Mapping):
        raise TypeError(f"{where} must be a mapping {{token: weight}}, got "
                        f"{type(vector).__name__}")
    tokens = list(vector.keys())
    for token in tokens:
        if type(token) is not str or not token:
            raise TypeError(f"{where} has token {token!r}; tokens must be non-empty str")
    if not all(map(_is_number_type, set(map(type, vector.values())))):
        for token, value in vector.items():
            if not _is_number_type(type(value)):
                raise TypeError(f"{where}[{token!r}] must be a number, got "
                                f"{type(value).__name__}: {value!r}")
    values = np.fromiter(vector.values(), dtype=np.float64, count=len(tokens))
    _check_values(values, lambda i: f"{where}[{tokens[i]!r}]")
    weights = values.astype(np.float32)
    keep = weights > 0
    if not keep.all():
        tokens = [t for t, k in zip(tokens, keep.tolist()) if k]
        weights = weights[keep]
    return CheckedVector(tokens, weights)


def check_vectors(vectors: Any, name: str = "vectors") -> SparseVectors:
    """A sequence of mappings, checked as `check_vector` would check each, flat.

    Errors name ``{name}[i]``; ``name`` may hold ``{i}`` to place the index itself
    (``"the vector of texts[{i}]"``).
    """
    if isinstance(vectors, (str, bytes, Mapping)) or not isinstance(vectors, Sequence):
        raise TypeError(f"{name} must be a list of {{token: weight}} mappings or a scipy sparse "
                        f"matrix, got {type(vectors).__name__}")
    flat = SparseVectorsBuilder(name)
    for s in range(0, len(vectors), CHUNK_DOCS):
        flat.add(vectors[s:s + CHUNK_DOCS], s)
    return flat.result()


class SparseVectorsBuilder:
    """Mappings in, batch after batch (`add`), one `SparseVectors` out (`result`).

    All batches share one token table, so a token is looked up by a C-level ``map``
    over the flattened keys, and only tokens new to the table are checked and added.
    ``name`` names the input in errors (as `check_vectors`'s).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._table: dict[Any, int] = {}  # token -> id in the table, first-occurrence order
        self._parts: list[tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.float32]]] = []

    def _where(self, i: int) -> str:
        return self.name.format(i=i) if "{i}" in self.name else f"{self.name}[{i}]"

    def add(self, vectors: Sequence[Any], first: int) -> None:
        """Check and append ``vectors`` (the ones at ``first``, ``first + 1``... of the input)."""
        for i, v in enumerate(vectors):
            if type(v) is not dict and not isinstance(v, Mapping):
                raise TypeError(f"{self._where(first + i)} must be a mapping {{token: weight}}, "
                                f"got {type(v).__name__}")
        lengths = np.fromiter(map(len, vectors), dtype=np.int64, count=len(vectors))
        total = int(lengths.sum())
        keys = list(chain.from_iterable(vectors))
        values = list(chain.from_iterable(map(methodcaller("values"), vectors)))
        if len(keys) != total or len(values) != total:
            raise ValueError(f"a mapping among {self.name} changed size while it was read")
        table = self._table
        ids = np.fromiter(map(table.get, keys, repeat(-1)), dtype=np.int64, count=total)
        miss = np.flatnonzero(ids < 0)
        if miss.size:
            fresh = dict.fromkeys(map(keys.__getitem__, miss.tolist()))
            if not all(type(t) is str and t for t in fresh):
                self._raise(vectors, first)
            for token in fresh:
                table[token] = len(table)
            ids[miss] = np.fromiter(map(table.__getitem__, map(keys.__getitem__, miss.tolist())),
                                    dtype=np.int64, count=miss.size)
        if not all(map(_is_number_type, set(map(type, values)))):
            self._raise(vectors, first)
        weights = np.array(values, dtype=np.float64)
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])

        def named(j: int) -> str:
            row = int(np.searchsorted(offsets, j, side="right")) - 1
            return f"{self._where(first + row)}[{keys[j]!r}]"

        _check_values(weights, named)
        self._parts.append((lengths, ids.astype(np.int32), weights.astype(np.float32)))

    def _raise(self, vectors: Sequence[Any], first: int) -> None:
        """Raise `check_vector`'s error for the first bad vector of ``vectors``."""
        for i, v in enumerate(vectors):
            check_vector(v, self._where(first + i))
        raise AssertionError("a bad token or weight was found but no vector failed its check")

    def result(self) -> SparseVectors:
        """The vectors added so far, zero weights dropped."""
        if not self._parts:
            return SparseVectors.empty()
        lengths = np.concatenate([p[0] for p in self._parts])
        ids = np.concatenate([p[1] for p in self._parts])
        weights = np.concatenate([p[2] for p in self._parts])
        return _dropping_zeros(lengths, ids, weights, list(self._table))


def _is_number_type(kind: type) -> bool:
    """Whether values of type ``kind`` are numbers (bools and strings are not)."""
    return issubclass(kind, Real) and not issubclass(kind, (bool, np.bool_))


def _check_values(values: NDArray[np.floating], named: Any) -> None:
    """Raise ValueError at the first value that is not a weight from 0 to `MAX_IMPACT`:
    negative, NaN, infinite, or finite in float64 but too large (beyond float32's range
    or such that a score could overflow it).

    ``named(j)`` is the label of value ``j`` for the message (``vectors[3]['a']``).
    """
    bad = ~((values >= 0) & (values <= MAX_IMPACT))  # NaN fails both comparisons
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{named(j)} must be a finite weight >= 0 and at most "
                         f"{MAX_IMPACT:g}, got {float(values[j])!r}; sparse vectors hold "
                         "non-negative weights, bounded so that a score (a float32 sum of "
                         "products) cannot overflow")


def _dropping_zeros(lengths: NDArray[np.integer], ids: NDArray[np.int32],
                    weights: NDArray[np.float32], tokens: list[str]) -> SparseVectors:
    """The flat vectors without their zero weights (as float32)."""
    keep = weights > 0
    if not keep.all():
        row = np.repeat(np.arange(lengths.size), lengths)
        lengths = np.bincount(row[keep], minlength=lengths.size)
        ids, weights = ids[keep], weights[keep]
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return SparseVectors(offsets, ids, weights, tokens)


def is_sparse_matrix(value: Any) -> bool:
    """Whether ``value`` is a scipy sparse matrix or array (scipy imported only if loaded)."""
    import sys

    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(value))


def csr_vectors(matrix: Any, vocabulary: Any, name: str = "vectors") -> SparseVectors:
    """The rows of a scipy sparse matrix as checked vectors; column j is ``vocabulary[j]``.

    Duplicate entries of one cell are summed and zeros dropped (on a copy: the caller's
    matrix is not changed).

    Raises:
        ValueError: no vocabulary, a vocabulary of another length than the columns, a
            duplicate token, or a negative, NaN, infinite or too large value (`MAX_IMPACT`).
        TypeError: a token that is not a non-empty str, a non-numeric matrix.
    """
    if vocabulary is None:
        raise ValueError(
            f"{name} is a sparse matrix, so vocabulary= must name its columns (one token per "
            f"column, {matrix.shape[1]} here): the index stores tokens, not column numbers"
        )
    if isinstance(vocabulary, (str, bytes)) or not isinstance(vocabulary, Sequence):
        raise TypeError(f"vocabulary must be a sequence of str, got {type(vocabulary).__name__}")
    tokens = list(vocabulary)
    if matrix.ndim != 2 or matrix.shape[1] != len(tokens):
        raise ValueError(f"{name} has shape {matrix.shape} but vocabulary holds {len(tokens)} "
                         f"tokens; pass one token per column")
    for j, token in enumerate(tokens):
        if type(token) is not str or not token:
            raise TypeError(f"vocabulary[{j}] is {token!r}; tokens must be non-empty str")
    if len(set(tokens)) != len(tokens):
        raise ValueError("vocabulary holds a token twice; each column must be a distinct token")
    if matrix.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {matrix.dtype}")
    csr = matrix.tocsr(copy=True)
    csr.sum_duplicates()
    data = np.asarray(csr.data)

    def named(at: int) -> str:
        row = int(np.searchsorted(csr.indptr, at, side="right")) - 1
        return f"{name} row {row}, token {tokens[int(csr.indices[at])]!r}"

    _check_values(data, named)
    return _dropping_zeros(np.diff(csr.indptr), np.asarray(csr.indices, dtype=np.int32),
                           np.asarray(data, dtype=np.float32), tokens)


def vector_chunks(vectors: SparseVectors, vocab: dict[str, int]) -> Iterator[TokenChunk]:
    """`TokenChunk` after `TokenChunk` of `CHUNK_DOCS` vectors, numbered into ``vocab``.

    ``vocab`` is the vocabulary being built (a copy of the index's, which
    `postings.written` completes): new tokens get the next ids in order of first
    occurrence over the vectors (as numbering token by token would give them), and each
    distinct token is looked up once. A chunk's document "lengths" are its vectors'
    numbers of tokens, and its weights their weights.
    """
    n_entries = vectors.token_ids.size
    first = np.full(len(vectors.tokens), n_entries, dtype=np.int64)
    np.minimum.at(first, vectors.token_ids, np.arange(n_entries, dtype=np.int64))
    used = np.flatnonzero(first < n_entries)
    used = used[np.argsort(first[used], kind="stable")]
    term_of = np.full(len(vectors.tokens), -1, dtype=np.int32)
    tokens = vectors.tokens
    term_of[used] = np.fromiter((vocab.setdefault(tokens[t], len(vocab)) for t in used.tolist()),
                                dtype=np.int32, count=used.size)
    lengths, offsets = vectors.lengths, vectors.offsets
    for s in range(0, len(vectors), CHUNK_DOCS):
        e = min(s + CHUNK_DOCS, len(vectors))
        lo, hi = int(offsets[s]), int(offsets[e])
        yield TokenChunk(lengths[s:e], term_of[vectors.token_ids[lo:hi]],
                         vectors.weights[lo:hi])
