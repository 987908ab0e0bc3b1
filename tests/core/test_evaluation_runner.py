"""evaluate(): side-by-side runs over a judged dataset, diagnostics and the quality gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.evaluation import EvaluationReport, evaluate, evaluate_run, hits_to_run


@pytest.fixture(scope="module")
def cranfield():
    return load_dataset("cranfield")


@pytest.fixture(scope="module")
def report(cranfield) -> EvaluationReport:
    docs = list(cranfield.corpus.values())
    stemmed = BM25Index.from_docs(docs)
    plain = BM25Index.from_docs(docs, analyzer=Analyzer(stemmer=None, stopwords=None))
    return evaluate({"bm25": stemmed, "bm25 plain": plain}, cranfield, k=100, max_queries=60)


def test_means_match_evaluate_run_over_the_same_hits(cranfield, report: EvaluationReport) -> None:
    index = BM25Index.from_docs(list(cranfield.corpus.values()))
    qids = [q for q in cranfield.queries if cranfield.qrels.get(q)][:60]
    run = hits_to_run({q: index.search(cranfield.queries[q], k=100) for q in qids}, keep_order=True)
    expected = evaluate_run(run, {q: cranfield.qrels[q] for q in qids}, report.metrics)
    assert report.means["bm25"] == pytest.approx(expected)
    assert report.names == ["bm25", "bm25 plain"]
    assert len(report.latencies_ms["bm25"]) == 60


def test_markdown_table_lists_every_retriever(report: EvaluationReport) -> None:
    table = report.to_markdown()
    assert "| retriever | ndcg@10 | recall@10 | recall@100 | mrr@10 | mean ms | p95 ms |" in table
    assert "bm25 plain" in table and str(report) == table


def test_compare_lists_queries_one_finds_and_the_other_misses(report: EvaluationReport) -> None:
    diffs = report.compare("bm25", "bm25 plain", "recall@10")
    assert diffs and all(d.a > d.b for d in diffs)
    assert diffs == sorted(diffs, key=lambda d: -(d.a - d.b))
    assert all(d.query and d.relevant > 0 for d in diffs)
    with pytest.raises(KeyError, match="no retriever"):
        report.compare("bm25", "nope")


def test_quality_gate(report: EvaluationReport) -> None:
    assert report.check({"ndcg@10": 0.2}) == []
    problems = report.check({"ndcg@10": 0.99}, name="bm25")
    assert problems and "ndcg@10" in problems[0]
    with pytest.raises(ValueError, match="not computed"):
        report.check({"map": 0.1})


def test_callables_and_lists_are_accepted(cranfield) -> None:
    index = BM25Index.from_docs(list(cranfield.corpus.values()))
    rep = evaluate(
        [index, lambda q, k: [h.id for h in index.search(q, k)]], cranfield, k=10, max_queries=10
    )
    a, b = rep.names
    assert rep.means[a] == rep.means[b]


def test_bad_inputs(cranfield) -> None:
    with pytest.raises(ValueError, match="empty"):
        evaluate({}, cranfield)
    with pytest.raises(TypeError, match="not supported"):
        evaluate({"x": 3}, cranfield, max_queries=1)
    with pytest.raises(ValueError, match="k must be >= 1"):
        evaluate({"x": lambda q, k: []}, cranfield, k=0)


def test_plot_writes_a_png(report: EvaluationReport, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "report.png"
    report.plot(out)
    assert out.stat().st_size > 10_000


def test_ids_that_do_not_match_the_dataset_are_refused_loudly() -> None:
    """Documents rebuilt without their ids score 0.0 silently unless evaluate() checks."""
    from hybrid_retrievers import BM25Index
    from hybrid_retrievers.datasets import load_dataset
    from hybrid_retrievers.evaluation import evaluate

    ds = load_dataset("cranfield")
    texts = [d.text for d in ds.corpus.values()]
    calls = []

    def no_ids(query, k):
        calls.append(query)
        return [(f"x{h.id}", h.score) for h in BM25Index.from_texts(texts[:50]).search(query, k)]

    with pytest.raises(ValueError, match=r"not the dataset's.*Document\(id=doc.id"):
        evaluate({"no ids": no_ids}, ds, max_queries=20)
    assert len(calls) == 1  # found on the warm-up query, not after the whole run
    ok = evaluate({"bm25": BM25Index.from_docs(ds.corpus.values())}, ds, max_queries=5)
    assert ok.means["bm25"]["ndcg@10"] > 0


def test_every_row_is_timed_in_the_same_worker_thread() -> None:
    """Warm-up in the caller's thread, then every row's timed queries in one worker."""
    import threading

    from hybrid_retrievers.datasets import load_dataset
    from hybrid_retrievers.evaluation import evaluate

    ds = load_dataset("cranfield")
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def make(name):
        def call(query, k):
            seen[name].append(threading.current_thread().name)
            return list(ds.qrels[next(iter(ds.qrels))])[:k]
        return call

    evaluate({"a": make("a"), "b": make("b")}, ds, max_queries=3)
    main = threading.main_thread().name
    assert seen["a"][0] == seen["b"][0] == main  # the untimed warm-up
    assert set(seen["a"][1:]) == set(seen["b"][1:]) and len(seen["a"]) == 4
    assert main not in seen["a"][1:]
