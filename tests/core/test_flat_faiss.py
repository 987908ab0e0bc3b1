"""The faiss flat backend and the running-threshold numpy scan return exact search, ties included.

Exact search is defined by the fixed-order float64 re-scoring and the lower-row tie
break; here it is recomputed by brute force (every row re-scored, a full lexsort) and
compared with the numpy path in many small blocks (so the running threshold is raised
many times) and with `VectorIndex.enable_flat_faiss` (where faiss's candidate list is
too short for the tie window and the numpy fallback must answer).
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_retrievers import VectorIndex
from hybrid_retrievers.vector import kernels as vector_module
from hybrid_retrievers.vector.search import query_matrix


def _tied_index(seed: int, metric: str = "cosine") -> VectorIndex:
    rng = np.random.default_rng(seed)
    d = 32
    base = rng.normal(size=(150, d)).astype(np.float32)
    axis = np.zeros((100, d), dtype=np.float32)
    axis[np.arange(100), rng.integers(0, d, 100)] = 1.0
    rows = np.concatenate([base, base, axis, axis, -base, np.repeat(base[:1], 60, axis=0)])
    rows = rows[rng.permutation(len(rows))]
    return VectorIndex.from_vectors(rows, ids=[f"r{i}" for i in range(len(rows))], metric=metric)


def _queries(index: VectorIndex, seed: int) -> np.ndarray:
    rng = np.random.default_rng(1000 + seed)
    v = index.vectors
    return np.concatenate([
        rng.normal(size=(15, v.shape[1])),
        np.eye(v.shape[1])[:8],                # many exact zeros and exact ties
        v[rng.integers(0, len(v), 8)],         # equal to duplicated rows
    ]).astype(np.float32)


def _brute(index: VectorIndex, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
    v = index.vectors
    ids = index.ids
    out = []
    cosine = index.metric == "cosine"
    for qn in query_matrix(queries, dim=index.dimension, cosine=cosine):  # as the index does
        scores = (v.astype(np.float64) * qn.astype(np.float64)).sum(axis=1).astype(np.float32)
        order = np.lexsort((np.arange(len(v)), -scores))[:k]
        out.append([(ids[i], float(scores[i])) for i in order])
    return out


def _hits(results):  # type: ignore[no-untyped-def]
    return [[(h.id, h.score) for h in hits] for hits in results]


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("seed", [0, 1])
def test_numpy_scan_in_small_blocks_is_exact(monkeypatch, metric: str, seed: int) -> None:
    index = _tied_index(seed, metric)
    queries = _queries(index, seed)
    monkeypatch.setattr(vector_module, "_BLOCK_ENTRIES", 1024)
    monkeypatch.setattr(vector_module, "_QUERY_BLOCK", 4)
    for k in (1, 5, 70, 2000):
        assert _hits(index.search_vectors(queries, k=k)) == _brute(index, queries, k)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("seed", [0, 1])
def test_flat_faiss_backend_equals_exact_search(metric: str, seed: int) -> None:
    pytest.importorskip("faiss", reason="faiss-cpu (the ann extra) is not installed")
    index = _tied_index(seed, metric)
    queries = _queries(index, seed)
    want = {k: _hits(index.search_vectors(queries, k=k)) for k in (1, 5, 70, 2000)}
    assert index.enable_flat_faiss() is index
    assert index.exact_backend == "faiss-flat"
    for k, expected in want.items():
        assert expected == _brute(index, queries, k)
        assert _hits(index.search_vectors(queries, k=k)) == expected
        assert [[(h.id, h.score) for h in index.search_vector(q, k=k)] for q in queries] == expected
    # Filters keep the numpy path and its answers.
    flt = lambda d: d.id.endswith("3")  # noqa: E731
    filtered = _hits(index.search_vectors(queries, k=5, filter=flt))
    index.disable_flat_faiss()
    assert index.exact_backend == "numpy"
    assert _hits(index.search_vectors(queries, k=5, filter=flt)) == filtered


def test_flat_faiss_sees_edits() -> None:
    pytest.importorskip("faiss", reason="faiss-cpu (the ann extra) is not installed")
    rng = np.random.default_rng(3)
    index = VectorIndex.from_vectors(rng.normal(size=(200, 16)).astype(np.float32),
                                     ids=[str(i) for i in range(200)]).enable_flat_faiss()
    q = rng.normal(size=16).astype(np.float32)
    index.add_vectors(q[None, :] * 3, ids=["new"])
    assert index.search_vector(q, k=1)[0].id == "new"
    index.delete(["new"])
    assert index.search_vector(q, k=1)[0].id != "new"
