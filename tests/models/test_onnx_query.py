"""Torch-free query encoders (`hybrid_retrievers.models.onnx_query`) give the model's vectors.

Models: the tiny seeded bi-encoder of `tiny_bi_encoder` (Transformer, mean Pooling,
Normalize) and the tiny seeded SPLADE of `tiny_splade` (the same BERT with its
masked-language-model head: Transformer + SpladePooling). Both are exported into a
temporary cache; nothing is downloaded. The command line's torch-free search is checked
in ``tests/core/test_cli_lazy_models.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="sentence-transformers (models extra) missing")
for _module in ("onnxruntime", "onnx", "tokenizers"):
    pytest.importorskip(_module, reason=f"{_module} (the onnx extra) is not installed")

from tiny_bi_encoder import build_tiny_bi_encoder  # noqa: E402
from tiny_cross_encoder import SAMPLE_TEXTS  # noqa: E402
from tiny_splade import build_tiny_splade  # noqa: E402

from hybrid_retrievers import SparseIndex, VectorIndex  # noqa: E402
from hybrid_retrievers.models import SentenceTransformerEmbedder, SpladeEncoder  # noqa: E402
from hybrid_retrievers.models import onnx_query  # noqa: E402
from hybrid_retrievers.models.onnx_query import (  # noqa: E402
    OnnxQueryEncoder,
    OnnxQueryPath,
    UnsupportedQueryEncoder,
    export_query_encoder,
    export_query_encoders,
)

DOCS = ["the boundary layer separates near the trailing edge of the wing",
        "sourdough bread rises because wild yeast ferment flour",
        "supersonic aircraft experience shock waves near mach one",
        "heat exchangers transfer heat between two fluids",
        "tomatoes need full sun and regular watering",
        "flaps and slats increase the maximum lift coefficient during take off",
        "dense retrieval encodes queries and passages as vectors",
        "a cross encoder reranker reads query and passage together"]
QUERIES = ["what causes lift on a wing", "  Why does BREAD rise?  ", "x", "mach",
           "heat transfer " * 60,  # longer than the tiny models' 64-token truncation
           *SAMPLE_TEXTS]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("onnx-query")
    return {"dense": build_tiny_bi_encoder(root / "bi"),
            "sparse": build_tiny_splade(root / "splade"), "cache": root / "cache"}


@pytest.fixture(scope="module")
def dense(models: dict[str, Path]) -> tuple[SentenceTransformerEmbedder, OnnxQueryEncoder]:
    torch_side = SentenceTransformerEmbedder(str(models["dense"]), backend="torch")
    return torch_side, OnnxQueryEncoder(export_query_encoder(torch_side,
                                                             cache_dir=models["cache"]))


@pytest.fixture(scope="module")
def sparse(models: dict[str, Path]) -> tuple[SpladeEncoder, OnnxQueryEncoder]:
    torch_side = SpladeEncoder(str(models["sparse"]))
    return torch_side, OnnxQueryEncoder(export_query_encoder(torch_side,
                                                             cache_dir=models["cache"]))


def test_dense_query_vectors_match_torch_and_rank_the_same(dense) -> None:
    torch_side, onnx = dense
    want, got = torch_side.embed_queries(QUERIES), onnx.embed_queries(QUERIES)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(onnx.embed_query(QUERIES[0]), want[0], atol=1e-5)
    index = VectorIndex.from_texts(DOCS, embedder=torch_side)
    for query, a, b in zip(QUERIES, want, got):
        assert [h.id for h in index.search_vector(a, 5)] == \
            [h.id for h in index.search_vector(b, 5)], query


def test_sparse_query_weights_match_torch_and_rank_the_same(sparse) -> None:
    torch_side, onnx = sparse
    want, got = torch_side.embed_queries(QUERIES), onnx.embed_queries(QUERIES)
    assert len(got) == len(want)
    for query, a, b in zip(QUERIES, want, got):
        assert a and a.keys() == b.keys(), query
        assert max(abs(a[t] - b[t]) for t in a) < 1e-5, query
        assert all(isinstance(w, float) and w > 0 for w in b.values())
    index = SparseIndex.from_texts(DOCS, embedder=torch_side)
    for query, a, b in zip(QUERIES, want, got):
        assert [h.id for h in index.search_vector(a, 5)] == \
            [h.id for h in index.search_vector(b, 5)], query


def test_the_export_is_made_once_and_reused(models, dense) -> None:
    torch_side, onnx = dense
    assert export_query_encoder(torch_side, cache_dir=models["cache"]) == onnx.folder
    settings = json.loads((onnx.folder / "query.json").read_text(encoding="utf-8"))
    assert settings["kind"] == "dense" and settings["max_length"] == 64
    assert settings["model_id"] == torch_side.model_id
    assert (onnx.folder / settings["graph"]).resolve().is_file()  # the backend's graph


def test_what_is_not_reproduced_is_refused(models) -> None:
    prompted = SentenceTransformerEmbedder(str(models["dense"]), backend="torch",
                                           query_prompt="query: ")
    with pytest.raises(UnsupportedQueryEncoder, match="query prompt"):
        export_query_encoder(prompted, cache_dir=models["cache"])
    pruned = SpladeEncoder(str(models["sparse"]), max_active_dims=4)
    with pytest.raises(UnsupportedQueryEncoder, match="max_active_dims"):
        export_query_encoder(pruned, cache_dir=models["cache"])


def test_the_query_path_uses_onnx_and_leaves_documents_to_the_model(models, dense) -> None:
    torch_side, onnx = dense
    lazy = SentenceTransformerEmbedder(str(models["dense"]), backend="torch")
    path = OnnxQueryPath(lazy, onnx.folder)
    assert path.model_id == lazy.model_id and path.dimension == 32 and not path.is_loaded
    assert path.load_onnx() and path.runtime == "onnx"
    np.testing.assert_allclose(path.embed_query("bread"), torch_side.embed_query("bread"),
                               atol=1e-5)
    assert not lazy.is_loaded  # the query side never loaded the model
    assert path.embed_documents(["bread"]).shape == (1, 32) and lazy.is_loaded


def test_the_query_path_falls_back_to_the_model_and_says_why(
    models, dense, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    torch_side, onnx = dense
    gone = OnnxQueryPath(SentenceTransformerEmbedder(str(models["dense"]), backend="torch"),
                         tmp_path / "nowhere")
    assert not gone.load_onnx() and not gone.is_loaded
    assert "no ONNX query encoder" in gone.fallback_reason
    assert "hybrid-retrievers[onnx]" in gone.fallback_reason
    np.testing.assert_allclose(gone.embed_query("bread"), torch_side.embed_query("bread"),
                               atol=1e-6)
    assert gone.runtime == "torch"
    monkeypatch.setattr(onnx_query, "missing_runtime", lambda modules=(): ["onnxruntime"])
    absent = OnnxQueryPath(SentenceTransformerEmbedder(str(models["dense"]), backend="torch"),
                           onnx.folder)
    absent.warm_up()
    assert absent.runtime == "torch" and absent.fallback_reason.startswith(
        "onnxruntime not installed")


def test_records_are_kept_without_loading_and_refusals_remembered(models, dense) -> None:
    torch_side, onnx = dense
    lazy = SentenceTransformerEmbedder(str(models["dense"]), backend="torch")
    kept = {"model_id": lazy.model_id, "folder": str(onnx.folder)}
    refused = {"model_id": "/some/splade", "unsupported": "max_active_dims"}
    splade = SpladeEncoder("/some/splade")
    logged: list[str] = []
    out = export_query_encoders({"dense": lazy, "sparse": splade, "bm25": None},
                                {"dense": kept, "sparse": refused}, log=logged.append,
                                cache_dir=models["cache"])
    assert out == {"dense": kept, "sparse": refused} and logged == []
    assert not lazy.is_loaded and not splade.is_loaded


def test_nothing_is_exported_without_the_runtime(
    models, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(onnx_query, "missing_runtime", lambda modules=(): ["onnx"])
    lazy = SentenceTransformerEmbedder(str(models["dense"]), backend="torch")
    logged: list[str] = []
    assert export_query_encoders({"dense": lazy}, None, log=logged.append,
                                 cache_dir=models["cache"]) == {}
    assert len(logged) == 1 and "onnx not installed" in logged[0]
    assert "hybrid-retrievers[onnx]" in logged[0] and not lazy.is_loaded


def test_a_failing_export_is_logged_and_left_out(
    models, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(encoder, *, cache_dir=None):
        raise OSError("No space left on device")

    monkeypatch.setattr(onnx_query, "export_query_encoder", fail)
    logged: list[str] = []
    lazy = SentenceTransformerEmbedder(str(models["dense"]), backend="torch")
    assert export_query_encoders({"dense": lazy}, None, log=logged.append) == {}
    assert logged == ["dense: exporting the query encoder failed (OSError: No space left on "
                      "device); a search loads torch for it, and the next index run tries again"]


def test_batches_of_any_size_and_token_budget_give_the_same_vectors(sparse, dense) -> None:
    for _, onnx in (sparse, dense):
        alone = onnx.encode(QUERIES, batch_size=1)
        np.testing.assert_allclose(onnx.encode(QUERIES), alone, atol=1e-6)
        np.testing.assert_allclose(onnx.encode(QUERIES, max_batch_tokens=16), alone, atol=1e-6)


def test_the_check_runs_one_probe_per_forward_pass(
    models, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The export's check bounds its memory: batched, the long probe padded the others to
    its length on both sides (a first three-leg ``index`` then peaked at 1.6 GB)."""
    widths: list[tuple[int, int]] = []
    features = OnnxQueryEncoder._features

    def spy(self, encodings):
        out = features(self, encodings)
        widths.append(out["input_ids"].shape)
        return out

    monkeypatch.setattr(OnnxQueryEncoder, "_features", spy)
    for torch_side in (SentenceTransformerEmbedder(str(models["dense"]), backend="torch"),
                       SpladeEncoder(str(models["sparse"]))):
        texts: list[int] = []
        model_side = torch_side.embed_queries
        monkeypatch.setattr(torch_side, "embed_queries",
                            lambda t, f=model_side: texts.append(len(t)) or f(t))
        widths.clear()
        export_query_encoder(torch_side, cache_dir=tmp_path)
        assert len(widths) == len(onnx_query._PROBES) and {w[0] for w in widths} == {1}
        assert texts and set(texts) == {1}, type(torch_side).__name__


def test_an_export_that_differs_from_the_model_is_refused(
    models, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pool = OnnxQueryEncoder._pool
    monkeypatch.setattr(OnnxQueryEncoder, "_pool", lambda self, t, m: pool(self, t, m) + 1e-3)
    torch_side = SentenceTransformerEmbedder(str(models["dense"]), backend="torch")
    with pytest.raises(UnsupportedQueryEncoder, match=r"differs from the model on probe "
                                                      r"texts \(max abs difference 1.00e-03"):
        export_query_encoder(torch_side, cache_dir=tmp_path)
    assert not list(tmp_path.glob("query-*/query.json"))  # nothing recorded
