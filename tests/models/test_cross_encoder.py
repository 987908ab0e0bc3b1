"""CrossEncoderScorer through the real ``sentence_transformers.CrossEncoder`` loading path.

The model is a tiny BERT cross-encoder built in a temp folder (`tiny_cross_encoder`), in a
one-logit and a two-logit variant: nothing is downloaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest.importorskip("sentence_transformers")
torch = pytest.importorskip("torch")

from sentence_transformers import CrossEncoder  # noqa: E402
from tiny_cross_encoder import build_tiny_cross_encoder  # noqa: E402

from hybrid_retrievers import Doc  # noqa: E402
from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER, CrossEncoderScorer  # noqa: E402
from hybrid_retrievers.rerank import RERANK_KEY, Reranker  # noqa: E402

from corpora import CORPUS, QUERIES  # noqa: E402

PAIRS = [(q, text) for q in QUERIES for _, text, _ in CORPUS]
# Mixed lengths (including one longer than the model's 128 positions: truncation).
PAIRS += [("wing", "lift " * 300), ("x", "y"), ("heat transfer", "heat " * 40)]


@pytest.fixture(scope="module")
def one_logit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("ce1"), num_labels=1)


@pytest.fixture(scope="module")
def two_logit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("ce2"), num_labels=2, seed=1)


@pytest.fixture(scope="module")
def one_logit(one_logit_dir: Path) -> CrossEncoder:
    return CrossEncoder(str(one_logit_dir), device="cpu")


@pytest.fixture(scope="module")
def two_logit(two_logit_dir: Path) -> CrossEncoder:
    return CrossEncoder(str(two_logit_dir), device="cpu")


def _identity() -> torch.nn.Module:
    return torch.nn.Identity()


# ------------------------------------------------------------------- loading


def test_constructing_does_not_load_or_import_torch(one_logit_dir: Path) -> None:
    code = (
        "import sys; from hybrid_retrievers.models import CrossEncoderScorer as S; "
        "from hybrid_retrievers.rerank import Reranker; "
        f"s = S({str(one_logit_dir)!r}); r = Reranker(s); "
        "print(s.is_loaded, 'torch' in sys.modules, 'sentence_transformers' in sys.modules, "
        f"r.model_id == {str(one_logit_dir)!r})"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False", "True"]


def test_loads_from_a_path_on_first_use_once(one_logit_dir: Path, one_logit: CrossEncoder) -> None:
    scorer = CrossEncoderScorer(str(one_logit_dir), device="cpu", batch_size=4)
    assert not scorer.is_loaded and scorer.model_id == str(one_logit_dir)
    assert scorer.score([]).shape == (0,) and not scorer.is_loaded  # empty: no load
    out = scorer.score(PAIRS[:5])
    assert scorer.is_loaded and out.dtype == np.float32 and out.shape == (5,)
    np.testing.assert_allclose(out, one_logit.predict(PAIRS[:5]), atol=1e-5)
    # concurrent first use loads one model
    fresh = CrossEncoderScorer(str(one_logit_dir), device="cpu")
    models: list[object] = []
    threads = [threading.Thread(target=lambda: models.append(fresh.model)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(m) for m in models}) == 1


def test_max_length_is_passed_when_loading(one_logit_dir: Path) -> None:
    scorer = CrossEncoderScorer(str(one_logit_dir), device="cpu", max_length=16)
    reference = CrossEncoder(str(one_logit_dir), device="cpu", max_length=16)
    np.testing.assert_allclose(scorer.score(PAIRS), reference.predict(PAIRS), atol=1e-5)
    full = CrossEncoder(str(one_logit_dir), device="cpu").predict(PAIRS)
    assert not np.allclose(reference.predict(PAIRS), full, atol=1e-4)  # truncation bites


def test_default_model_name() -> None:
    scorer = CrossEncoderScorer()
    assert scorer.model_id == DEFAULT_CROSS_ENCODER == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert not scorer.is_loaded
    assert "loaded=False" in repr(scorer)


# ------------------------------------------------------------------- scoring


@pytest.mark.parametrize("batch_size", [2, 7, 32, 1000])
def test_sorted_batching_restores_input_order(one_logit: CrossEncoder, batch_size: int) -> None:
    scorer = CrossEncoderScorer(one_logit, batch_size=batch_size)
    expected = one_logit.predict(PAIRS, batch_size=batch_size)
    ours = scorer.score(PAIRS)
    assert ours.dtype == np.float32 and ours.shape == (len(PAIRS),)
    np.testing.assert_allclose(ours, expected, atol=1e-5)
    unsorted = CrossEncoderScorer(one_logit, batch_size=batch_size, sort_by_length=False)
    np.testing.assert_allclose(unsorted.score(PAIRS), expected, atol=1e-5)
    # the scores really differ between pairs, so a wrong order would be caught
    assert np.ptp(expected) > 0.05


def test_batches_are_length_sorted(one_logit: CrossEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[list[tuple[str, str]]] = []
    original = one_logit.predict

    def spy(batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        batches.append(list(batch))
        return original(batch, *args, **kwargs)

    monkeypatch.setattr(one_logit, "predict", spy)
    CrossEncoderScorer(one_logit, batch_size=4).score(PAIRS)
    lengths = [[len(q) + len(p) for q, p in b] for b in batches]
    flat = [x for b in lengths for x in b]
    assert flat == sorted(flat, reverse=True)
    assert all(len(b) <= 4 for b in batches) and sum(map(len, batches)) == len(PAIRS)
    assert torch.is_inference_mode_enabled() is False  # only inside score()


def test_scoring_runs_under_inference_mode(one_logit: CrossEncoder,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    original = one_logit.predict

    def spy(batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(torch.is_inference_mode_enabled())
        return original(batch, *args, **kwargs)

    monkeypatch.setattr(one_logit, "predict", spy)
    CrossEncoderScorer(one_logit).score(PAIRS[:3])
    assert seen == [True]


def test_one_logit_activation_none_gives_logits(one_logit: CrossEncoder) -> None:
    logits = one_logit.predict(PAIRS, activation_fn=_identity())
    ours = CrossEncoderScorer(one_logit, activation=None, batch_size=5).score(PAIRS)
    np.testing.assert_allclose(ours, logits, atol=1e-5)
    probs = CrossEncoderScorer(one_logit).score(PAIRS)
    np.testing.assert_allclose(probs, 1 / (1 + np.exp(-logits)), atol=1e-5)


def test_two_logit_model_uses_the_positive_class(two_logit: CrossEncoder) -> None:
    assert two_logit.num_labels == 2
    logits = two_logit.predict(PAIRS, activation_fn=_identity())
    assert logits.shape == (len(PAIRS), 2)
    softmax = two_logit.predict(PAIRS, apply_softmax=True, activation_fn=_identity())
    probs = CrossEncoderScorer(two_logit, batch_size=6).score(PAIRS)
    assert probs.shape == (len(PAIRS),) and probs.dtype == np.float32
    np.testing.assert_allclose(probs, softmax[:, 1], atol=1e-5)
    log_odds = CrossEncoderScorer(two_logit, activation=None).score(PAIRS)
    np.testing.assert_allclose(log_odds, logits[:, 1] - logits[:, 0], atol=1e-5)
    # both activations rank identically
    assert np.all(np.diff(probs[np.argsort(-log_odds)]) <= 1e-7)


def test_reranker_over_the_real_model(one_logit: CrossEncoder, two_logit: CrossEncoder) -> None:
    docs = [Doc(i, t, m) for i, t, m in CORPUS]
    for model in (one_logit, two_logit):
        scorer = CrossEncoderScorer(model, model_id="tiny")
        hits = Reranker(scorer, top_n=4).rerank(QUERIES[0], docs)
        expected = scorer.score([(QUERIES[0], d.text) for d in docs])
        best = np.argsort(-expected, kind="stable")[:4]
        assert [h.id for h in hits] == [docs[i].id for i in best]
        assert [h.score for h in hits] == pytest.approx([float(expected[i]) for i in best])
        assert hits[0].explanation[RERANK_KEY]["model"] == "tiny"


def test_instance_model_id(one_logit: CrossEncoder, one_logit_dir: Path) -> None:
    assert CrossEncoderScorer(one_logit).model_id == str(one_logit_dir)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch_size": 0}, ValueError, "batch_size must be >= 1"),
        ({"batch_size": 2.0}, TypeError, "batch_size"),
        ({"max_length": 0}, ValueError, "max_length"),
        ({"activation": "softmax"}, ValueError, "activation must be one of"),
        ({"device": 0}, TypeError, "device"),
        ({"model_id": " "}, ValueError, "model_id"),
        ({"model_kwargs": [1]}, TypeError, "model_kwargs"),
    ],
)
def test_constructor_validation(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        CrossEncoderScorer("some/model", **kwargs)


def test_model_argument_validation(one_logit: CrossEncoder) -> None:
    with pytest.raises(ValueError, match="model must be"):
        CrossEncoderScorer("")
    with pytest.raises(TypeError, match="model must be"):
        CrossEncoderScorer(42)
    with pytest.raises(ValueError, match="max_length, device only apply when the scorer loads"):
        CrossEncoderScorer(one_logit, max_length=8, device="cpu")


def test_pairs_validation(one_logit: CrossEncoder) -> None:
    scorer = CrossEncoderScorer(one_logit)
    with pytest.raises(TypeError, match="single pair"):
        scorer.score(("q", "p"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pairs must be a list"):
        scorer.score("q p")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"pairs\[1\]"):
        scorer.score([("q", "p"), ("q", 3)])  # type: ignore[list-item]


def test_more_than_two_logits_is_a_clear_error(tmp_path: Path) -> None:
    model = CrossEncoder(str(build_tiny_cross_encoder(tmp_path, num_labels=3)), device="cpu")
    with pytest.raises(ValueError, match="1 or 2 output logits"):
        CrossEncoderScorer(model).score(PAIRS[:2])
