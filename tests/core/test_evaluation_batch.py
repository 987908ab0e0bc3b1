"""evaluate() sends queries through a retriever's batch path and charges latency honestly."""

from __future__ import annotations

import pytest

from hybrid_retrievers import BM25Index, VectorIndex
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.evaluation import evaluate
from hybrid_retrievers.models import HashingEmbedder


@pytest.fixture(scope="module")
def cranfield():
    return load_dataset("cranfield")


class Counting:
    """A searcher that records how it is called (search vs search_many)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.single = 0
        self.batches: list[int] = []

    def search(self, query, k=10):  # type: ignore[no-untyped-def]
        self.single += 1
        return self.inner.search(query, k=k)

    def search_many(self, queries, k=10):  # type: ignore[no-untyped-def]
        self.batches.append(len(queries))
        return self.inner.search_many(queries, k=k)


def test_search_many_is_used_in_batches_with_per_query_latency(cranfield) -> None:
    docs = list(cranfield.corpus.values())
    bm25 = Counting(BM25Index.from_docs(docs))
    dense = Counting(VectorIndex.from_docs(docs, embedder=HashingEmbedder(dimension=128)))
    report = evaluate({"bm25": bm25, "dense": dense}, cranfield, k=20, max_queries=21,
                      batch_size=8)
    for searcher in (bm25, dense):
        assert searcher.single == 1  # the untimed warm-up / id check only
        assert searcher.batches == [8, 8, 5]
    assert report.batch_sizes == {"bm25": 8, "dense": 8}
    lat = report.latencies_ms["dense"]
    assert len(lat) == 21 and all(x > 0 for x in lat)
    # Every query of a batch is charged the batch's average: three distinct values.
    assert len(set(lat[:8])) == 1 and len(set(lat[8:16])) == 1 and len(set(lat[16:])) == 1
    assert "Batched (bm25, dense)" in report.to_markdown()

    single = evaluate({"bm25": bm25.inner, "dense": dense.inner}, cranfield, k=20,
                      max_queries=21, batch=False)
    assert single.batch_sizes == {"bm25": 1, "dense": 1}
    assert single.runs == report.runs and single.means == report.means
    assert "Batched" not in single.to_markdown()


def test_batch_false_and_plain_callables_go_one_query_at_a_time(cranfield) -> None:
    docs = list(cranfield.corpus.values())
    counting = Counting(BM25Index.from_docs(docs))
    evaluate({"c": counting}, cranfield, k=10, max_queries=5, batch=False)
    assert counting.batches == [] and counting.single == 6
    report = evaluate({"fn": lambda q, k: [h.id for h in counting.inner.search(q, k)]},
                      cranfield, k=10, max_queries=5)
    assert report.batch_sizes == {"fn": 1}


def test_batch_size_is_checked(cranfield) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        evaluate({"x": lambda q, k: []}, cranfield, batch_size=0)


def test_a_batch_with_the_wrong_number_of_rankings_is_refused(cranfield) -> None:
    class Broken(Counting):
        def search_many(self, queries, k=10):  # type: ignore[no-untyped-def]
            return super().search_many(queries, k)[:-1]

    docs = list(cranfield.corpus.values())
    with pytest.raises(ValueError, match="rankings for a batch"):
        evaluate({"b": Broken(BM25Index.from_docs(docs))}, cranfield, k=10, max_queries=4)


def test_latency_queries_times_a_sample_alone_while_quality_comes_from_batches(cranfield) -> None:
    docs = list(cranfield.corpus.values())
    bm25 = Counting(BM25Index.from_docs(docs))
    report = evaluate({"bm25": bm25}, cranfield, k=20, max_queries=21, batch_size=8,
                      latency_queries=5)
    assert bm25.batches == [8, 8, 5]          # quality: every query, batched
    assert bm25.single == 1 + 5               # the warm-up, then the timed sample alone
    assert report.batch_sizes == {"bm25": 1} and len(report.latencies_ms["bm25"]) == 5
    assert len(report.runs["bm25"]) == 21 and "Batched" not in report.to_markdown()
    batched = evaluate({"bm25": bm25.inner}, cranfield, k=20, max_queries=21, batch_size=8)
    assert report.runs == batched.runs and report.means == batched.means
    with pytest.raises(ValueError, match="latency_queries"):
        evaluate({"bm25": bm25}, cranfield, latency_queries=0)
