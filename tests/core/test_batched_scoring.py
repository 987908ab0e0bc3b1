"""Batched and single-query search give the same ids, order and scores, ties included.

BLAS sums a dot product in an order that depends on the shapes involved, so a score
computed for one query alone can differ in the last bits from the same score computed
in a block of queries (0.0 alone, -1.4e-09 in a batch, for a document orthogonal to the
query), and tied documents would swap. `VectorIndex` re-scores its candidates one fixed
way; these tests pin that down on corpora full of exact ties.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, VectorIndex
from hybrid_retrievers.vector import kernels as vector_module
from hybrid_retrievers.models import HashingEmbedder


def _tied_vectors(seed: int, n: int = 600, d: int = 48) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n // 6, d)).astype(np.float32)
    sparse = np.zeros((n // 6, d), dtype=np.float32)  # orthogonal to many queries: score ~0
    sparse[np.arange(n // 6), rng.integers(0, d, n // 6)] = 1.0
    rows = np.concatenate([base, base, base[::-1], sparse, sparse, -base])  # exact duplicates
    return rows[rng.permutation(len(rows))]


def _hits(hits):  # type: ignore[no-untyped-def]
    return [(h.id, h.score) for h in hits]


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vector_single_and_batched_agree_exactly(monkeypatch, metric: str, seed: int) -> None:
    vectors = _tied_vectors(seed)
    rng = np.random.default_rng(100 + seed)
    index = VectorIndex.from_vectors(vectors, ids=[f"r{i}" for i in range(len(vectors))],
                                     metadatas=[{"odd": i % 2} for i in range(len(vectors))],
                                     metric=metric)
    queries = np.concatenate([
        rng.normal(size=(20, vectors.shape[1])),
        np.eye(vectors.shape[1])[:10],               # axis queries: many exact zeros
        vectors[rng.integers(0, len(vectors), 10)],  # queries equal to tied rows
    ]).astype(np.float32)
    for k in (1, 7, 40):
        single = [_hits(index.search_vector(q, k=k)) for q in queries]
        assert [_hits(h) for h in index.search_vectors(queries, k=k)] == single
        assert [_hits(h) for h in index.search_vectors(queries[::-1], k=k)] == single[::-1]
        for flt in ({"odd": 1}, lambda d: d.metadata["odd"] == 0):
            one = [_hits(index.search_vector(q, k=k, filter=flt)) for q in queries]
            assert [_hits(h) for h in index.search_vectors(queries, k=k, filter=flt)] == one
    # Small blocks: many partial top-k merges give the same answer as one pass.
    want = [_hits(h) for h in index.search_vectors(queries, k=9)]
    monkeypatch.setattr(vector_module, "_BLOCK_ENTRIES", 2048)
    monkeypatch.setattr(vector_module, "_QUERY_BLOCK", 3)
    assert [_hits(h) for h in index.search_vectors(queries, k=9)] == want
    assert [_hits(index.search_vector(q, k=9)) for q in queries] == want


def test_vector_search_many_equals_search_on_text_ties() -> None:
    texts = ["bm25 ranking", "bm25 ranking", "cross encoder", "parent chunks", "unrelated words",
             "other unrelated words", "ranking", "ranking"] * 5
    index = VectorIndex.from_texts(texts, ids=[f"t{i}" for i in range(len(texts))],
                                   embedder=HashingEmbedder(dimension=32))
    queries = ["bm25 ranking", "cross-encoder reranker", "parent document chunks", "zzz"]
    for k in (1, 4, 13, 100):
        many = index.search_many(queries, k=k)
        assert [_hits(h) for h in many] == [_hits(index.search(q, k=k)) for q in queries]


def test_ann_candidates_carry_the_exact_search_score() -> None:
    pytest.importorskip("faiss")
    vectors = _tied_vectors(3, n=1200)
    index = VectorIndex.from_vectors(vectors, ids=[f"r{i}" for i in range(len(vectors))])
    queries = vectors[:12] + 0.01
    exact = [dict(_hits(h)) for h in index.search_vectors(queries, k=10)]
    index.enable_ann(m=8, ef_construction=64, ef_search=128)
    for q, want in zip(queries, exact):
        for hit_id, score in _hits(index.search_vector(q, k=10)):
            if hit_id in want:
                assert score == want[hit_id]  # bit for bit, not approximately


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_bm25_search_many_equals_search_on_ties(method: str) -> None:
    texts = ["wing lift", "wing lift", "lift of a wing", "drag", "wing wing lift", "lift"] * 40
    index = BM25Index.from_texts(texts, ids=[f"t{i}" for i in range(len(texts))], method=method,
                                 metadatas=[{"odd": i % 2} for i in range(len(texts))])
    queries = ["wing", "lift wing", "drag lift wing", "nothing", "wing lift lift"]
    for k in (1, 5, 50, 500):
        for flt in (None, {"odd": 1}):
            many = index.search_many(queries, k=k, filter=flt)
            single = [_hits(index.search(q, k=k, filter=flt)) for q in queries]
            assert [_hits(h) for h in many] == single
