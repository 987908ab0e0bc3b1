"""fine_tune_embedder end to end on a tiny local bi-encoder: pairs -> negatives -> training ->
saved folder -> reload -> evaluate -> card; and its bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("datasets")
pytest.importorskip("accelerate")

from hybrid_retrievers.evaluation import BeirDataset  # noqa: E402
from hybrid_retrievers.models import SentenceTransformerEmbedder  # noqa: E402
from hybrid_retrievers.training import fine_tune_embedder  # noqa: E402
from hybrid_retrievers.training.negatives import add_hard_negatives  # noqa: E402
from hybrid_retrievers.training.pairs import mine_pairs  # noqa: E402
from hybrid_retrievers.types import Doc  # noqa: E402

TOPICS = {
    "lift": ("wing lift and angle of attack",
             "the lift of a wing depends on its angle of attack the air density and the square "
             "of the airspeed flaps and slats increase the maximum lift coefficient"),
    "swept": ("swept wings at high speeds",
              "swept wings delay the onset of compressibility drag at high subsonic speeds "
              "which is why airliners use them over the upper surface"),
    "stall": ("boundary layer separation and stall",
              "boundary layer separation on the upper surface of a wing causes stall and a "
              "sudden loss of lift during take off and landing"),
    "shock": ("supersonic shock waves",
              "supersonic aircraft experience shock waves that sharply increase wave drag "
              "near mach one at high speeds over the wing"),
    "bread": ("why sourdough bread rises",
              "sourdough bread rises because wild yeast and lactic acid bacteria ferment the "
              "flour and kneading develops gluten that traps gas in the dough"),
    "crust": ("a crisp bread crust",
              "a hot oven and steam in the first minutes of baking give bread a crisp crust "
              "because the dough surface stays elastic while the bread rises"),
    "tomato": ("tomatoes need full sun",
               "tomatoes need full sun regular watering and support stakes as the plants "
               "grow taller and compost improves the soil structure"),
    "compost": ("compost feeds the soil",
                "compost improves soil structure and feeds the microorganisms that help plant "
                "roots and pruning fruit trees in late winter encourages strong growth"),
}
DOCS = [Doc(key, f"{title} . {body}", {"title": title}) for key, (title, body) in TOPICS.items()]
EVAL = BeirDataset("tiny", {d.id: d for d in DOCS},
                   {"q1": "what causes stall", "q2": "how does yeast make bread rise",
                    "q3": "drag near mach one"},
                   {"q1": {"stall": 1}, "q2": {"bread": 1}, "q3": {"shock": 1}})


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tiny_bi_encoder import build_tiny_bi_encoder

    return str(build_tiny_bi_encoder(tmp_path_factory.mktemp("tiny") / "bi"))


def _tune(base: str, out: Path, **kwargs):  # type: ignore[no-untyped-def]
    options = dict(corpus=DOCS, mine="titles", negatives=1, max_steps=3, batch_size=4,
                   max_seq_length=32, learning_rate=1e-3, eval_dataset=EVAL, seed=0)
    options.update(kwargs)
    return fine_tune_embedder(base, output_dir=out, **options)


def test_the_loop_end_to_end(base: str, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    lines: list[str] = []
    result = _tune(base, tmp_path / "tuned", log=lines.append)
    folder = result.model_path
    assert folder == tmp_path / "tuned" and (folder / "modules.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folder left
    assert any(line.startswith("Estimated training time") for line in lines)
    # The card: written in the folder, equal to the returned one, with what matters.
    card = json.loads((folder / "model_card.json").read_text(encoding="utf-8"))
    assert card == result.card
    assert card["base_model"] == base
    expected = add_hard_negatives(mine_pairs(DOCS, "titles"), DOCS, 1)
    assert len(expected) >= 5
    assert card["pairs"]["count"] == len(expected)
    assert card["pairs"]["by_kind"] == {"titles": len(expected)}
    assert card["pairs"]["negatives_per_pair"] == 1
    assert card["hyperparameters"]["steps"] == 3 and card["hyperparameters"]["seed"] == 0
    assert card["hybrid_retrievers_version"]
    assert set(card["evaluation"]["metrics"]) == {"dense (base)", "dense (tuned)",
                                                  "hybrid (base)", "hybrid (tuned)"}
    assert "model.safetensors" in card["files"]
    # The weights really changed, and the folder reloads as a bi-encoder.
    texts = [d.text for d in DOCS]
    before = SentenceTransformer(base, device="cpu").encode(texts)
    after = SentenceTransformer(str(folder), device="cpu").encode(texts)
    assert after.shape == before.shape and not np.allclose(after, before, atol=1e-4)
    # Trained on 32-token inputs, it reads documents as far as its base does.
    assert card["hyperparameters"]["max_seq_length"] == 32
    assert SentenceTransformer(str(folder)).max_seq_length == \
        SentenceTransformer(base).max_seq_length > 32
    # The report: four rows on the held-out queries, significance tuned vs base.
    report = result.report
    assert report.names == ["dense (base)", "dense (tuned)", "hybrid (base)", "hybrid (tuned)"]
    assert set(report.queries) == set(EVAL.queries)
    sig = result.significance["dense ndcg@10"]
    assert sig.queries == 3 and 0.0 <= sig.p_value <= 1.0
    assert sig.mean_difference == pytest.approx(
        report.means["dense (tuned)"]["ndcg@10"] - report.means["dense (base)"]["ndcg@10"])
    # It drops into SentenceTransformerEmbedder; its identity carries the weights' hash.
    emb = SentenceTransformerEmbedder(str(folder), device="cpu")
    assert emb.backend == "torch"  # auto: a tuned model's bf16 quality is unchecked
    assert emb.model_id.startswith(f"{folder}@") and len(emb.model_id) == len(str(folder)) + 17
    np.testing.assert_allclose(emb.embed_documents(texts), after, atol=1e-5)


def test_same_seed_same_model(base: str, tmp_path: Path) -> None:
    a = _tune(base, tmp_path / "a", eval_dataset=None)
    b = _tune(base, tmp_path / "b", eval_dataset=None)
    assert a.report is None and a.significance == {}
    assert a.card["files"]["model.safetensors"] == b.card["files"]["model.safetensors"]


def test_user_pairs_and_qrels(base: str, tmp_path: Path) -> None:
    pairs = [("flour yeast gluten", "bread"), ("wave drag at mach one", DOCS[3].text)]
    result = _tune(base, tmp_path / "u", mine=None, pairs=pairs, eval_dataset=None,
                   max_steps=1, negatives=0)
    assert result.card["pairs"]["source"] == "user pairs" and result.card["pairs"]["count"] == 2
    train = BeirDataset("tiny", EVAL.corpus, {"t": "soil and compost"}, {"t": {"compost": 1}})
    result = _tune(base, tmp_path / "q", mine=None, pairs=train, max_steps=1, negatives=0)
    assert result.card["pairs"]["count"] == 1 and "qrels" in result.card["pairs"]["source"]


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    (dict(mine=None, pairs=[]), ValueError, "pairs is empty"),
    (dict(mine=None, pairs=[("query words", "a passage that is nowhere")]), ValueError,
     "not in the corpus"),
    (dict(mine=None), ValueError, "exactly one of pairs= .* and mine="),
    (dict(pairs=[("a b c", "bread")]), ValueError, "exactly one of"),
    (dict(mine="paragraphs"), ValueError, "how must be one of"),
    (dict(mine=None, pairs=[("what causes stall", "stall")]), ValueError,
     "evaluation queries"),
    (dict(mine=None, pairs=BeirDataset("tiny", EVAL.corpus, {"q1": "what causes stall"},
                                       {"q1": {"stall": 1}})), ValueError,
     "training queries are evaluation queries"),
    (dict(corpus=[], eval_dataset=None), ValueError, "corpus is empty"),
    (dict(batch_size=0), ValueError, "batch_size"),
])
def test_bad_inputs_are_clear_errors(base: str, tmp_path: Path, kwargs, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        _tune(base, tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


def test_existing_output_folder_is_refused(base: str, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError, match="exists"):
        _tune(base, tmp_path / "out")


def test_a_base_that_is_not_a_bi_encoder_is_refused(tmp_path: Path) -> None:
    from tiny_cross_encoder import build_tiny_cross_encoder

    ce = build_tiny_cross_encoder(tmp_path / "ce")
    with pytest.raises(ValueError, match="is a cross-encoder .* not a bi-encoder"):
        _tune(str(ce), tmp_path / "out")
    with pytest.raises(ValueError, match="is not a model folder"):
        _tune(str(tmp_path / "missing"), tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is not a model folder"):
        _tune(str(tmp_path / "empty"), tmp_path / "out")


def test_the_base_models_vectors_come_from_the_cache(base: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The before/after encodes the corpus with the base model only when the cache lacks it:
    both models are evaluated on the backend ``"auto"`` picks for the base (as demo and
    eval encode it), so the demo's vectors match; the tuned model's are new."""
    from hybrid_retrievers.models import backends
    from hybrid_retrievers.vector import EmbeddingCache

    # As for all-MiniLM-L6-v2 on this CPU: "auto" picks bfloat16 (the model_id says so).
    monkeypatch.setattr(backends, "bf16_checked", lambda model: True)
    monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda: True)
    cache = EmbeddingCache()
    demo_embedder = SentenceTransformerEmbedder(base)  # what demo / eval build
    assert demo_embedder.backend == "torch-bf16"
    cache.embed(demo_embedder, [d.text for d in DOCS])
    cache.hits = cache.misses = 0
    lines: list[str] = []
    _tune(base, tmp_path / "tuned", eval_cache=cache, log=lines.append)
    assert (cache.hits, cache.misses) == (len(DOCS), 0)
    assert cache.model_ids == [demo_embedder.model_id]  # the tuned model's are not kept
    estimate = next(line for line in lines if line.startswith("Estimated training time"))
    assert f"encoding {len(DOCS)} documents: 0 base, {len(DOCS)} tuned; {len(DOCS)} base " \
           "vectors cached" in estimate


def test_the_output_is_ours_alone(base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  recwarn: pytest.WarningsRecorder) -> None:
    """One bar of steps and our log lines: no trainer metrics dict, no "Computing widget
    examples" bar, no pin_memory warning, readable wording."""
    lines: list[str] = []
    _tune(base, tmp_path / "tuned", log=lines.append, show_progress=True, eval_dataset=None)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "train_runtime" not in text and "{'" not in text
    assert "Computing widget examples" not in text
    assert "Training:" in captured.err  # our bar of steps
    assert not [w for w in recwarn if "pin_memory" in str(w.message)]
    expected = len(mine_pairs(DOCS, "titles"))
    assert lines[0] == f"Training pairs: {expected}, mined from the corpus (titles)"
    assert any(line.startswith("Trained 3 steps in ") for line in lines)


def test_bf16_training_is_recorded(base: str, tmp_path: Path) -> None:
    assert _tune(base, tmp_path / "f", eval_dataset=None, max_steps=1).card[
        "hyperparameters"]["bf16"] is False
    assert _tune(base, tmp_path / "b", eval_dataset=None, max_steps=1, bf16=True).card[
        "hyperparameters"]["bf16"] is True
