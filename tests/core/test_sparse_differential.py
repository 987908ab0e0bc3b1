"""Every SparseIndex scoring path returns the exact top k of a scipy dot product.

The paths: the compiled TAAT and block-max MaxScore kernels (forced with
``Backend(strategy=...)``), the compiled batch kernel (`search_many`), the numpy
batched pass and the numpy MaxScore loop (``batched_postings=0``). The reference is
``D @ q`` over a scipy CSR matrix in float64, top k by (score desc, document order).

Two kinds of data:

* weights that are multiples of 1/8 up to 4: every product and sum is exact in float32
  (multiples of 1/64 far below 2**24), so ids, scores and tie order must be identical;
* continuous random weights: float32 sums in query order differ from float64 by
  rounding, so scores agree within ``RTOL = 1e-5`` (a query of 40 terms accumulates at
  most ~40 float32 ulps, 2.4e-6 relative) and the ids agree wherever the reference's
  scores are further apart than that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from hybrid_retrievers import SparseIndex
from hybrid_retrievers.inverted import Backend
from hybrid_retrievers.inverted.kernels import BlockMax

RTOL = 1e-5

BACKENDS: dict[str, Callable[[], Backend]] = {
    "taat": lambda: Backend("numba", strategy="taat"),
    "maxscore": lambda: Backend("numba", strategy="maxscore"),
    "numpy-batched": lambda: Backend("numpy"),
    "numpy-maxscore": lambda: Backend("numpy", batched_postings=0),
}


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param in ("taat", "maxscore"):
        pytest.importorskip("numba")
    return BACKENDS[request.param]()


def random_vectors(rng: np.random.Generator, n: int, vocab: int, nnz: int,
                   quantised: bool) -> list[dict[str, float]]:
    """Sparse vectors with a Zipf-like token distribution (a few tokens in most docs)."""
    p = 1.0 / np.arange(1, vocab + 1) ** 0.9
    p /= p.sum()
    out = []
    for _ in range(n):
        size = int(rng.integers(1, nnz + 1))
        tokens = np.unique(rng.choice(vocab, size=size, p=p))
        rng.shuffle(tokens)
        if quantised:
            weights = rng.integers(1, 33, size=tokens.size) / 8.0
        else:
            weights = rng.gamma(1.5, 0.5, size=tokens.size) + 1e-3
        out.append({f"t{t}": float(w) for t, w in zip(tokens, weights)})
    return out


def matrix_of(vectors: list[dict[str, float]], vocab: int) -> sp.csr_matrix:
    rows, cols, vals = [], [], []
    for i, v in enumerate(vectors):
        for t, w in v.items():
            rows.append(i)
            cols.append(int(t[1:]))
            vals.append(np.float64(np.float32(w)))
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(vectors), vocab))


def reference(matrix: sp.csr_matrix, query: dict[str, float], k: int,
              allowed: np.ndarray | None = None) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Exhaustive top k of ``matrix @ q`` in float64: (rows, their scores, every score),
    ties to the lower row."""
    q = np.zeros(matrix.shape[1])
    for t, w in query.items():
        q[int(t[1:])] = np.float32(w)
    scores = matrix @ q
    matched = (matrix[:, q > 0].getnnz(axis=1) > 0)
    if allowed is not None:
        matched &= allowed
    rows = np.flatnonzero(matched)
    order = np.lexsort((rows, -scores[rows]))[:k]
    return rows[order].tolist(), scores[rows[order]], scores


def check(hits: list[Any], ids: list[str], want: tuple[list[int], np.ndarray, np.ndarray],
          quantised: bool) -> None:
    rows, scores, every = want
    got_scores = np.array([h.score for h in hits])
    assert len(hits) == len(rows)
    if quantised:
        assert [h.id for h in hits] == [ids[r] for r in rows]
        assert got_scores.tolist() == scores.tolist()
        return
    np.testing.assert_allclose(got_scores, scores, rtol=RTOL)
    # The document at each rank truly scores what the reference's document at that rank
    # does (within rounding): the ids differ only where two scores are that close.
    position = {d: i for i, d in enumerate(ids)}
    np.testing.assert_allclose([every[position[h.id]] for h in hits], scores, rtol=RTOL)
    assert len({h.id for h in hits}) == len(hits)


def queries_of(rng: np.random.Generator, vocab: int, quantised: bool) -> list[dict[str, float]]:
    qs = random_vectors(rng, 8, vocab, 40, quantised)
    qs.append({"t0": 1.0})  # the longest list alone: MaxScore's best case
    qs.append({"t0": 0.5, "t1": 0.25, f"t{vocab - 1}": 3.0})
    return qs


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("quantised", [True, False])
def test_every_path_returns_the_exact_top_k(backend: Backend, seed: int,
                                            quantised: bool) -> None:
    rng = np.random.default_rng(seed)
    vocab = 400
    vectors = random_vectors(rng, 1000, vocab, 60, quantised)
    ids = [f"d{i}" for i in range(len(vectors))]
    metas = [{"g": i % 3} for i in range(len(vectors))]
    index = SparseIndex.from_vectors(vectors, ids, metas, backend=backend)
    matrix = matrix_of(vectors, vocab)
    queries = queries_of(rng, vocab, quantised)
    group = np.arange(len(vectors)) % 3 == 1
    for k in (1, 10, 5000):
        for q in queries:
            check(index.search_vector(q, k=k), ids, reference(matrix, q, k), quantised)
        for q in queries[:4]:
            check(index.search_vector(q, k=k, filter={"g": 1}), ids,
                  reference(matrix, q, k, group), quantised)
            check(index.search_vector(q, k=k, filter=lambda d: d.metadata["g"] == 1), ids,
                  reference(matrix, q, k, group), quantised)
    if backend.strategy == "maxscore":  # the block-max kernel really ran
        assert index._cache(index._state).peek(BlockMax) is not None


class VectorQueries:
    """A stand-in embedder whose "texts" are keys of pre-built query vectors."""

    model_id = "vector-queries"

    def __init__(self, vectors: dict[str, dict[str, float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[dict[str, float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> dict[str, float]:
        return self.vectors[text]


@pytest.mark.parametrize("quantised", [True, False])
def test_search_many_and_edits_stay_exact(backend: Backend, quantised: bool) -> None:
    rng = np.random.default_rng(7)
    vocab = 300
    vectors = random_vectors(rng, 1200, vocab, 50, quantised)
    queries = queries_of(rng, vocab, quantised)
    names = {f"q{i}": q for i, q in enumerate(queries)}
    ids = [f"d{i}" for i in range(len(vectors))]
    index = SparseIndex.from_vectors(vectors, ids, embedder=VectorQueries(names), backend=backend)
    # Edits: delete a tenth, replace a tenth in place, append new ones.
    gone = {f"d{i}" for i in range(0, 1200, 10)}
    index.delete(sorted(gone))
    replaced = random_vectors(rng, 120, vocab, 50, quantised)
    index.upsert_vectors(replaced, ids=[f"d{i}" for i in range(5, 1200, 10)])
    added = random_vectors(rng, 100, vocab, 50, quantised)
    index.add_vectors(added, ids=[f"n{i}" for i in range(100)])
    current = {i: v for i, v in zip(ids, vectors) if i not in gone}
    current.update(zip([f"d{i}" for i in range(5, 1200, 10)], replaced))
    current.update(zip([f"n{i}" for i in range(100)], added))
    final_ids = index.ids
    assert set(final_ids) == set(current)
    matrix = matrix_of([current[i] for i in final_ids], vocab)
    for k in (3, 10):
        many = index.search_many(list(names), k=k)
        for q, hits in zip(queries, many):
            check(hits, final_ids, reference(matrix, q, k), quantised)
            assert [(h.id, h.score) for h in hits] == [
                (h.id, h.score) for h in index.search_vector(q, k=k)]


def test_ties_go_to_the_earlier_document(backend: Backend) -> None:
    same = {"a": 0.5, "b": 1.0}
    vectors = [same if i % 7 == 0 else {"c": 1.0} for i in range(700)]
    index = SparseIndex.from_vectors(vectors, [f"d{i:03d}" for i in range(700)], backend=backend)
    hits = index.search_vector({"b": 1.0, "a": 2.0}, k=5)
    assert [h.id for h in hits] == ["d000", "d007", "d014", "d021", "d028"]
    assert {h.score for h in hits} == {2.0}
    assert len(index.search_vector({"b": 1.0}, k=1000)) == 100
