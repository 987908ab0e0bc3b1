"""The hybrid-retrievers command: demo, index, search, eval and its quality gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_retrievers.cli import main


def test_demo_bm25_only(capsys) -> None:
    assert main(["demo", "--bm25-only", "--examples", "1"]) == 0
    out = capsys.readouterr().out
    assert "| bm25 |" in out and "ndcg@10" in out and "score=" in out


def test_index_then_search_with_explanations(tmp_path: Path, capsys, passages) -> None:
    src = tmp_path / "docs"
    src.mkdir()
    for i, text in enumerate(passages):
        (src / f"p{i}.md").write_text(text, encoding="utf-8")
    assert main(["index", str(src), "--out", str(tmp_path / "idx")]) == 0
    assert main(["search", str(tmp_path / "idx"), "okapi weighting", "-k", "2", "--json",
                 "--explain"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert lines[0]["id"] == "p4.md" and lines[0]["explanation"]["terms"]


def test_index_jsonl_and_bad_inputs(tmp_path: Path, capsys) -> None:
    good = tmp_path / "docs.jsonl"
    good.write_text('{"id": "a", "text": "alpha beta"}\n{"text": "beta gamma"}\n')
    assert main(["index", str(good), "--out", str(tmp_path / "idx")]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n')
    assert main(["index", str(bad), "--out", str(tmp_path / "idx2")]) == 1
    assert "line 1" in capsys.readouterr().err
    assert main(["search", str(tmp_path / "nothing"), "q"]) == 1
    assert main(["search", str(tmp_path / "idx"), "   "]) == 1


def test_eval_quality_gate_exit_codes(capsys) -> None:
    assert main(["eval", "cranfield", "--max-queries", "30", "--min", "ndcg@10=0.1"]) == 0
    assert "| bm25 |" in capsys.readouterr().out
    assert main(["eval", "cranfield", "--max-queries", "30", "--min", "ndcg@10=0.99"]) == 1
    assert "FAIL bm25: ndcg@10" in capsys.readouterr().err
    assert main(["eval", "cranfield", "--min", "ndcg@10"]) == 1
    assert "METRIC=VALUE" in capsys.readouterr().err


def test_eval_several_bm25_variants_and_plot(tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "eval.png"
    code = main(["eval", "cranfield", "--retriever", "bm25", "--retriever", "bm25-bm25l",
                 "--max-queries", "20", "--plot", str(out)])
    assert code == 0 and out.stat().st_size > 10_000
    assert "bm25-bm25l" in capsys.readouterr().out


def test_demo_with_a_reranker_adds_a_row(monkeypatch, capsys) -> None:
    """--reranker wraps the hybrid searcher; a stand-in scorer keeps the test fast."""
    pytest.importorskip("sentence_transformers")
    from hybrid_retrievers import cli, rerank
    from hybrid_retrievers.models import HashingEmbedder

    class Overlap:
        model_id = "overlap"

        def score(self, pairs):
            return [len(set(q.split()) & set(p.split())) for q, p in pairs]

    def fake_dense(docs, model, progress):
        from hybrid_retrievers import VectorIndex

        return VectorIndex.from_docs(docs, embedder=HashingEmbedder(64))

    monkeypatch.setattr(cli, "_dense_index", fake_dense)
    monkeypatch.setattr(cli, "_dense_available", lambda model: None)
    monkeypatch.setattr(rerank.Reranker, "cross_encoder",
                        classmethod(lambda c, model, **kw: c(Overlap())))
    assert main(["demo", "--reranker", "any", "--examples", "0"]) == 0
    out = capsys.readouterr().out
    assert "| hybrid+rerank |" in out and "| hybrid |" in out
