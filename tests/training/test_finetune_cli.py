"""``hybrid-retrievers finetune`` end to end on bundled Cranfield with a tiny local model,
then ``eval --dense-model`` on the tuned folder; and its argument errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("datasets")
pytest.importorskip("accelerate")

from hybrid_retrievers.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def small_beir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A BEIR folder of Cranfield's first 200 documents and the queries judged on them."""
    from hybrid_retrievers.datasets import load_dataset

    ds = load_dataset("cranfield")
    folder = tmp_path_factory.mktemp("beir") / "cran200"
    (folder / "qrels").mkdir(parents=True)
    docs = list(ds.corpus.values())[:200]
    ids = {d.id for d in docs}
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for d in docs:
            title = d.metadata["title"]
            f.write(json.dumps({"_id": d.id, "title": title,
                                "text": d.text[len(title):].strip()}) + "\n")
    judged = {q: {d: g for d, g in rel.items() if d in ids} for q, rel in ds.qrels.items()}
    judged = {q: rel for q, rel in judged.items() if rel}
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in judged:
            f.write(json.dumps({"_id": q, "text": ds.queries[q]}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, rel in judged.items()
                                              for d, g in rel.items()]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(folder)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tiny_bi_encoder import build_tiny_bi_encoder

    return str(build_tiny_bi_encoder(tmp_path_factory.mktemp("tiny") / "bi"))


def test_finetune_then_eval_the_tuned_model(base: str, small_beir: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path / "cache"))
    # eval (like demo) caches the base model's corpus vectors; finetune reads them back.
    assert main(["eval", small_beir, "--retriever", "dense", "--dense-model", base,
                 "--max-queries", "2"]) == 0
    capsys.readouterr()
    out = tmp_path / "tuned"
    code = main(["finetune", small_beir, "--mine", "titles", "--base", base, "--out", str(out),
                 "--max-steps", "2", "--batch-size", "4", "--max-pairs", "40",
                 "--max-seq-length", "32"])
    captured = capsys.readouterr()
    text = captured.out
    assert code == 0, text
    assert "cran200: 200 documents;" in text and "held out for evaluation" in text
    assert "Estimated training time:" in text and "Trained 2 steps" in text
    assert re.search(r"Training pairs: \d+, mined from the corpus \(titles\)\n", text)
    assert "(encoding 200 documents: 0 base, 200 tuned; 200 base vectors cached)" in text
    assert "Embeddings: 200 distinct texts read from the EmbeddingCache" in text
    assert ", 0 encoded (the cache held 200 vectors of this model)" in text
    assert "Evaluated base and tuned in " in text
    assert "train_runtime" not in text + captured.err
    assert "Computing widget examples" not in captured.err
    assert "| dense (tuned) |" in text and "dense ndcg@10: tuned - base = " in text
    card = json.loads((out / "model_card.json").read_text(encoding="utf-8"))
    assert card["evaluation"]["queries"] > 5 and card["pairs"]["count"] <= 40
    code = main(["eval", small_beir, "--retriever", "dense", "--dense-model", str(out),
                 "--max-queries", "5"])
    captured = capsys.readouterr()
    assert code == 0 and "| dense |" in captured.out
    assert "Dense encoder: backend 'torch'" in captured.err


def test_finetune_argument_errors(base: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "exists").mkdir()
    assert main(["finetune", "cranfield", "--mine", "titles", "--base", base,
                 "--out", str(tmp_path / "exists")]) == 1
    assert "exists" in capsys.readouterr().err
    assert main(["finetune", "cranfield", "--mine", "llm", "--base", base,
                 "--out", str(tmp_path / "o")]) == 1
    assert "needs a language model" in capsys.readouterr().err
    assert main(["finetune", "cranfield", "--pairs", str(tmp_path / "nope.jsonl"), "--base",
                 base, "--out", str(tmp_path / "o")]) == 1
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "q"}\n', encoding="utf-8")
    assert main(["finetune", "cranfield", "--pairs", str(bad), "--base", base,
                 "--out", str(tmp_path / "o")]) == 1
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["finetune", "cranfield", "--mine", "titles", "--fold", "3", "--base", base,
                 "--out", str(tmp_path / "o")]) == 1
    assert "--fold must be between 1 and --folds" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
