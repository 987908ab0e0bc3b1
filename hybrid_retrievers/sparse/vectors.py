"""Sparse vectors in: checking ``{token: weight}`` mappings and scipy CSR matrices, and
turning them into the engine's `TokenChunk` batches.

A sparse vector is a mapping from token (a non-empty str of the model's vocabulary) to
a finite weight >= 0; weights are stored as float32, and zeros (also weights that
round to zero in float32) are left out. Negative, NaN or infinite weights, non-string
tokens and non-numeric weights are errors naming the vector and the token. A CSR
matrix (rows = documents) comes with its ``vocabulary`` (one token per column).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..bm25.chunking import CHUNK_DOCS, TokenChunk

__all__ = ["CheckedVector", "check_vector", "check_vectors", "csr_vectors", "vector_chunks",
           "is_sparse_matrix"]


class CheckedVector(NamedTuple):
    """One checked sparse vector: its tokens and their float32 weights (> 0), in order."""

    tokens: list[str]
    weights: NDArray[np.float32]


def check_vector(vector: Any, where: str) -> CheckedVector:
    """``vector`` (a ``{token: weight}`` mapping) checked; ``where`` names it in errors.

    Raises:
        TypeError: not a mapping, a token that is not a non-empty str, a weight that is
            not a number.
        ValueError: a weight that is negative, NaN or infinite.
    """
    if not isinstance(vector, Mapping):
        raise TypeError(f"{where} must be a mapping {{token: weight}}, got "
                        f"{type(vector).__name__}")
    tokens = list(vector.keys())
    for token in tokens:
        if type(token) is not str or not token:
            raise TypeError(f"{where} has token {token!r}; tokens must be non-empty str")
    try:
        values = np.fromiter(vector.values(), dtype=np.float64, count=len(tokens))
    except (TypeError, ValueError):
        for token, value in vector.items():
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise TypeError(f"{where}[{token!r}] must be a number, got "
                                f"{type(value).__name__}: {value!r}") from None
        raise
    for value in vector.values():
        if isinstance(value, bool):
            raise TypeError(f"{where} holds a bool weight; weights must be numbers")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}[{tokens[i]!r}] must be a finite weight >= 0, got "
                         f"{values[i]!r}; sparse vectors hold non-negative finite weights")
    weights = values.astype(np.float32)
    keep = weights > 0
    if not keep.all():
        tokens = [t for t, k in zip(tokens, keep.tolist()) if k]
        weights = weights[keep]
    return CheckedVector(tokens, weights)


def check_vectors(vectors: Any, name: str = "vectors") -> list[CheckedVector]:
    """A sequence of mappings, each checked (`check_vector`)."""
    if isinstance(vectors, (str, bytes, Mapping)) or not isinstance(vectors, Sequence):
        raise TypeError(f"{name} must be a list of {{token: weight}} mappings or a scipy sparse "
                        f"matrix, got {type(vectors).__name__}")
    return [check_vector(v, f"{name}[{i}]") for i, v in enumerate(vectors)]


def is_sparse_matrix(value: Any) -> bool:
    """Whether ``value`` is a scipy sparse matrix or array (scipy imported only if loaded)."""
    import sys

    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(value))


def csr_vectors(matrix: Any, vocabulary: Any, name: str = "vectors") -> list[CheckedVector]:
    """The rows of a scipy sparse matrix as checked vectors; column j is ``vocabulary[j]``.

    Duplicate entries of one cell are summed and zeros dropped (on a copy: the caller's
    matrix is not changed).

    Raises:
        ValueError: no vocabulary, a vocabulary of another length than the columns, a
            duplicate token, or a negative, NaN or infinite value.
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
    data = np.asarray(csr.data, dtype=np.float64)
    bad = ~np.isfinite(data) | (data < 0)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(csr.indptr, at, side="right")) - 1
        raise ValueError(f"{name} row {row}, token {tokens[int(csr.indices[at])]!r}: weight "
                         f"{data[at]!r}; sparse vectors hold non-negative finite weights")
    out = []
    weights = data.astype(np.float32)
    vocab = np.asarray(tokens, dtype=object)
    for row in range(csr.shape[0]):
        lo, hi = int(csr.indptr[row]), int(csr.indptr[row + 1])
        w = weights[lo:hi]
        cols = csr.indices[lo:hi]
        keep = w > 0
        out.append(CheckedVector(vocab[cols[keep]].tolist(), w[keep]))
    return out


def vector_chunks(vectors: Sequence[CheckedVector], vocab: dict[str, int]) -> Iterator[TokenChunk]:
    """`TokenChunk` after `TokenChunk` of `CHUNK_DOCS` vectors, numbered into ``vocab``.

    ``vocab`` is the vocabulary being built (a copy of the index's, which
    `postings.written` completes): a new token gets the next id. A chunk's document
    "lengths" are its vectors' numbers of tokens, and its weights their weights.
    """
    for s in range(0, len(vectors), CHUNK_DOCS):
        part = vectors[s:s + CHUNK_DOCS]
        lengths = np.fromiter((len(v.tokens) for v in part), dtype=np.int32, count=len(part))
        ids = np.fromiter(
            (vocab.setdefault(t, len(vocab)) for v in part for t in v.tokens),
            dtype=np.int32, count=int(lengths.sum()),
        )
        weights = (np.concatenate([v.weights for v in part]) if part
                   else np.zeros(0, dtype=np.float32))
        yield TokenChunk(lengths, ids, weights.astype(np.float32, copy=False))
