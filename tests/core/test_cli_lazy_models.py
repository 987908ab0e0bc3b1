"""A command-line search loads only the models its query needs (issue 45).

A hybrid index records its models' names, dimensions and identities in its manifests, so
loading it loads no model: each query encoder loads before the first query whose leg
has a weight above 0. A BM25-only index, or a search weighting the model legs 0, never
imports torch or sentence-transformers (checked in a fresh interpreter's ``sys.modules``);
the model names here point nowhere, so any attempt to load one would fail the search.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, SparseIndex, VectorIndex
from hybrid_retrievers.fusion import FusionSearcher
from hybrid_retrievers.models import SentenceTransformerEmbedder

TEXTS = ["configure the https proxy server", "bake bread with yeast", "tune a piano"]
IDS = ["proxy.md", "bread.md", "piano.md"]
MISSING = "/nonexistent/hybrid-retrievers-test-model"
ROOT = Path(__file__).resolve().parents[2]

# Runs the CLI in this interpreter, then prints which heavy modules it imported.
PROBE = """
import json, runpy, sys
sys.argv = ["hybrid-retrievers", *sys.argv[1:]]
try:
    runpy.run_module("hybrid_retrievers", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "imported": sorted(
    m for m in ("torch", "sentence_transformers", "transformers", "hybrid_retrievers.evaluation")
    if m in sys.modules)}))
"""


def _three_leg_index(folder: Path) -> Path:
    """A BM25 + dense + sparse index as ``index`` saves it, its models recorded by
    names that cannot be loaded (vectors given, so nothing is encoded)."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(TEXTS), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    metadatas = [{"file": i} for i in IDS]
    dense = VectorIndex.from_vectors(vectors, IDS, texts=TEXTS, metadatas=metadatas)
    sparse = SparseIndex.from_vectors([{w: 1.0 for w in t.split()} for t in TEXTS], IDS,
                                      texts=TEXTS, metadatas=metadatas)
    bm25 = BM25Index.from_texts(TEXTS, IDS, metadatas)
    fused = FusionSearcher([bm25, dense, sparse], names=["bm25", "dense", "sparse"])
    fused.save(folder, extra_settings={"ingest": {
        "model": MISSING, "model_id": MISSING, "sparse_model": MISSING + "-splade",
        "sparse_model_id": None}})
    return folder


def _run(*args: str) -> tuple[dict, str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(ROOT / "integrations"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1]), done.stderr


def test_help_imports_no_model_and_not_the_evaluation() -> None:
    """``--help`` builds the parser only: no model library, no metrics and datasets code."""
    for args in (["--help"], ["index", "--help"], ["eval", "--help"]):
        probe, _, _ = _run(*args)
        assert probe == {"code": 0, "imported": []}, args


def test_a_search_weighting_the_model_legs_0_loads_and_imports_no_model(tmp_path: Path) -> None:
    index = _three_leg_index(tmp_path / "idx")
    probe, out, err = _run("search", str(index), "https proxy", "-k", "1",
                           "--weights", "dense=0,sparse=0")
    assert probe == {"code": 0, "imported": []}, err
    assert out.startswith("1. proxy.md") and "bm25 #1, dense -, sparse -" in out
    assert "serve" not in err  # nothing was loaded, so nothing to point at


def test_a_bm25_only_index_never_imports_torch(tmp_path: Path) -> None:
    BM25Index.from_texts(TEXTS, IDS, [{"file": i} for i in IDS]).save(tmp_path / "bm25")
    probe, out, err = _run("search", str(tmp_path / "bm25"), "bread", "-k", "1", "--json")
    assert probe == {"code": 0, "imported": []}, err
    assert json.loads(out)["file"] == "bread.md"


def test_a_leg_with_weight_loads_its_model_only(tmp_path: Path) -> None:
    """Weighting the dense leg loads the dense model (here: fails, naming it) but never
    the sparse one."""
    from hybrid_retrievers.ingest import FolderIndex

    loaded = FolderIndex.open(_three_leg_index(tmp_path / "idx"))
    dense, sparse = (leg.embedder for leg in loaded.fused.searchers[1:])
    assert not dense.is_loaded and not sparse.is_loaded
    assert loaded.load_encoders([1.0, 0.0, 0.0]) == [] and loaded.loads == []
    assert loaded.search("bread", 1, weights=[1.0, 0.0, 0.0])[0].id == "bread.md"
    with pytest.raises(Exception, match="hybrid-retrievers-test-model"):
        loaded.search("bread", 1, weights=[1.0, 1.0, 0.0])
    assert not sparse.is_loaded


def test_vector_index_load_does_not_load_a_lazy_embedder(tmp_path: Path) -> None:
    """The dimension comes from the saved manifest; a query vector of another size is
    still refused, at the query."""
    vectors = np.eye(4, dtype=np.float32)[:3]
    VectorIndex.from_vectors(vectors, IDS, texts=TEXTS).save(tmp_path / "v")
    embedder = SentenceTransformerEmbedder(MISSING)
    index = VectorIndex.load(tmp_path / "v", embedder)
    assert not embedder.is_loaded and index.dimension == 4
    assert index.search_vector(vectors[1], k=1)[0].id == "bread.md"
    with pytest.raises(ValueError, match="dimension 3 but this index holds 4-d"):
        index.search_vector(np.ones(3, dtype=np.float32), k=1)


def test_a_loaded_embedder_of_another_size_is_still_refused_at_load(tmp_path: Path) -> None:
    from hybrid_retrievers.models import HashingEmbedder

    VectorIndex.from_vectors(np.eye(4, dtype=np.float32)[:3], IDS).save(tmp_path / "v")
    with pytest.raises(ValueError, match="makes 8-d vectors but the index"):
        VectorIndex.load(tmp_path / "v", HashingEmbedder(dimension=8))


def _ranks(out: str) -> list[tuple[str, dict]]:
    hits = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [(h["id"], {leg: (v or {}).get("rank") for leg, v in h["legs"].items()})
            for h in hits]


def test_a_search_through_both_model_legs_imports_no_torch_once_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``index`` exports the query encoders (`hybrid_retrievers.models.onnx_query`); a
    search through the dense and sparse legs then runs them on ONNX Runtime: no torch,
    transformers or sentence-transformers imported, and the ranks the torch path gives
    (checked by removing the exports, which also prints how to get them back)."""
    for module in ("sentence_transformers", "onnxruntime", "onnx", "tokenizers"):
        pytest.importorskip(module)
    from tiny_bi_encoder import build_tiny_bi_encoder
    from tiny_splade import build_tiny_splade

    source = tmp_path / "notes"
    source.mkdir()
    for name, text in zip(IDS, TEXTS):
        (source / name).write_text(text + "\n", encoding="utf-8")
    models = ["--model", str(build_tiny_bi_encoder(tmp_path / "bi")),
              "--sparse-model", str(build_tiny_splade(tmp_path / "splade"))]
    monkeypatch.setenv("HYBRID_RETRIEVERS_ONNX_CACHE", str(tmp_path / "onnx"))
    monkeypatch.setenv("HYBRID_RETRIEVERS_CACHE_DIR", str(tmp_path / "cache"))
    index = tmp_path / "idx"
    probe, _, err = _run("index", str(source), "--out", str(index), *models)
    assert probe["code"] == 0, err
    search = ("search", str(index), "bake bread with yeast", "-k", "3", "--json")
    probe, fast, err = _run(*search)
    assert probe == {"code": 0, "imported": []}, err
    assert "runs on torch" not in err and "loading the query models took dense" in err
    ranks = _ranks(fast)
    assert len(ranks) == 3 and all(legs["dense"] and legs["sparse"] for _, legs in ranks)
    shutil.rmtree(tmp_path / "onnx")
    probe, slow, err = _run(*search)
    assert probe["code"] == 0 and "torch" in probe["imported"], err
    assert "dense: the query encoder runs on torch" in err and "index` on this index" in err
    assert _ranks(slow) == ranks
