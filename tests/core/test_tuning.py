"""`tune` and `cross_validate`: choosing settings without scoring them on their own queries."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, Doc
from hybrid_retrievers.cli import main
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.evaluation import BeirDataset, cross_validate, evaluate, paired_test, tune

QIDS = [f"q{i}" for i in range(23)]
SETTINGS = [{}, {"k1": 0.5}, {"k1": 2.0}, {"b": 0.3}]


def test_no_evaluation_query_leaks_into_training_folds() -> None:
    scores = np.random.default_rng(1).random((len(SETTINGS), len(QIDS)))
    oof, folds = cross_validate(scores, QIDS, SETTINGS, folds=5, seed=7)
    held_out = [q for f in folds for q in f.test]
    assert sorted(held_out) == sorted(QIDS)  # every query evaluated exactly once
    for f in folds:
        assert not set(f.test) & set(f.train)
        assert set(f.test) | set(f.train) == set(QIDS)
    # The proof: change every held-out score of a fold to anything at all; the setting
    # chosen for that fold does not move, so it was chosen without those queries.
    for i, f in enumerate(folds):
        poisoned = scores.copy()
        columns = [QIDS.index(q) for q in f.test]
        poisoned[:, columns] = np.random.default_rng(i).random((len(SETTINGS), len(columns))) * 100
        _, again = cross_validate(poisoned, QIDS, SETTINGS, folds=5, seed=7)
        assert again[i].chosen == f.chosen and again[i].train == f.train
    # And each query's out-of-fold score is its own fold's chosen setting's score.
    for f in folds:
        row = SETTINGS.index(f.chosen)
        for q in f.test:
            assert oof[QIDS.index(q)] == scores[row, QIDS.index(q)]


def test_the_seed_fixes_the_folds() -> None:
    scores = np.random.default_rng(2).random((len(SETTINGS), len(QIDS)))
    a = cross_validate(scores, QIDS, SETTINGS, folds=4, seed=3)[1]
    b = cross_validate(scores, QIDS, SETTINGS, folds=4, seed=3)[1]
    c = cross_validate(scores, QIDS, SETTINGS, folds=4, seed=4)[1]
    assert [f.test for f in a] == [f.test for f in b] != [f.test for f in c]
    with pytest.raises(ValueError, match="folds must be between 2"):
        cross_validate(scores, QIDS, SETTINGS, folds=1, seed=0)


def test_tune_on_cranfield_reports_default_in_sample_and_out_of_fold(tmp_path) -> None:
    ds = load_dataset("cranfield")
    result = tune(ds, {"k1": [0.6, 1.2], "b": [0.3, 0.75]}, folds=3, seed=0, max_queries=40)
    assert result.settings[0] == {} and len(result.settings) == 5
    assert result.n_queries == 40 and len(result.fold_choices) == 3
    # The defaults' number is the plain evaluation's.
    plain = evaluate({"bm25": BM25Index.from_docs(list(ds.corpus.values()))}, ds,
                     metrics=["ndcg@10"], max_queries=40).means["bm25"]["ndcg@10"]
    assert result.default == pytest.approx(plain)
    assert result.in_sample == max(result.means) >= result.out_of_fold
    assert result.chosen == dict(result.settings[result.means.index(max(result.means))])
    assert "BM25Index.from_docs(docs" in result.to_code()
    result.save(tmp_path / "tuned.json")
    saved = json.loads((tmp_path / "tuned.json").read_text())
    assert saved["out_of_fold"] == result.out_of_fold and saved["queries"] == 40
    assert saved["chosen"]["bm25"] == result.chosen
    assert isinstance(result.build(list(ds.corpus.values())), BM25Index)


def test_tune_tests_out_of_fold_against_the_defaults_per_query(tmp_path) -> None:
    result = tune("cranfield", {"k1": [0.3, 2.5], "b": [0.2, 0.9]}, folds=3, seed=1,
                  max_queries=40)
    qids = list(result.per_query_default)
    expected = paired_test([result.per_query_out_of_fold[q] for q in qids],
                           [result.per_query_default[q] for q in qids], "permutation",
                           seed=1)
    sig = result.significance
    assert sig is not None and sig.test == "permutation" and sig.queries == 40
    assert sig.p_value == expected.p_value and 0.0 < sig.p_value <= 1.0
    assert sig.mean_difference == pytest.approx(result.out_of_fold - result.default)
    assert (sig.a, sig.b, sig.metric) == ("out-of-fold", "default", "ndcg@10")
    line = f"p = {sig.p_value:.4g}"
    assert line in result.to_markdown() and "40 queries" in result.to_markdown()
    assert line in result.to_code() and result.to_code().count("\n# ") == 1
    result.save(tmp_path / "tuned.json")
    saved = json.loads((tmp_path / "tuned.json").read_text())["significance"]
    assert saved["p_value"] == sig.p_value and saved["queries"] == 40
    assert saved["mean_difference"] == sig.mean_difference and saved["test"] == "permutation"


def test_fielded_corpus_puts_the_title_apart_exactly() -> None:
    ds = BeirDataset("t", {"a": Doc("a", "Wing flow over a wing", {"title": "Wing"}),
                           "b": Doc("b", "Only title", {"title": "Only title"}),
                           "c": Doc("c", "no title here", {"title": ""}),
                           "d": Doc("d", "by hand", {"title": "Other"})}, {}, {})
    apart = ds.fielded_corpus()
    assert [apart[i].text for i in "abcd"] == ["flow over a wing", "", "no title here",
                                               "by hand"]
    assert apart["a"].metadata["title"] == "Wing"
    cranfield = load_dataset("cranfield")
    for doc_id, doc in cranfield.fielded_corpus().items():
        joined = cranfield.corpus[doc_id].text
        title = doc.metadata["title"]
        assert joined == (f"{title} {doc.text}" if title and doc.text else title or doc.text)


def test_tune_chooses_field_weights_on_one_fielded_index() -> None:
    ds = load_dataset("cranfield")
    space = {"field_weights": [{"title": 0.0}, {"title": 3.0}, {"title": 2.0, "text": 0.5}]}
    result = tune(ds, space, folds=3, seed=0, max_queries=40)
    assert result.settings[0] == {} and len(result.settings) == 4
    # Each setting's mean is that of an index built with those weights (per-query weights
    # on the shared fielded index change nothing but the weights), the default one field.
    fielded = list(ds.fielded_corpus().values())
    for setting, mean in zip(result.settings[1:], result.means[1:]):
        fields = {"text": 1.0, **setting["field_weights"]}
        built = BM25Index.from_docs(fielded, fields=fields)
        plain = evaluate({"f": built}, ds, metrics=["ndcg@10"], max_queries=40)
        assert mean == pytest.approx(plain.means["f"]["ndcg@10"])
    assert len(set(result.means)) == 4  # the weights do change the ranking
    assert result.chosen == {"field_weights": {"title": 2.0, "text": 0.5}}  # beats one field
    fields = {"text": 0.5, "title": 2.0}
    assert f"fields={fields!r}" in result.to_code() and "fielded_corpus" in result.to_code()
    assert result.build(fielded).fields == fields
    assert result.to_dict()["chosen"]["bm25"] == result.chosen


@pytest.mark.parametrize("space, match", [
    ({"field_weights": [{"title": -1.0}]}, "field_weights"),
    ({"field_weights": [["title"]]}, "field_weights"),
    ({"field_weights": [{"title": 2.0}], "method": ["bm25l"]}, "BM25F"),
    ({"k2": [1]}, "unknown key 'k2'"),
    ({"k1": []}, r"space\['k1'\] must be a non-empty list"),
    ({"mode": ["rrf"]}, "need dense="),
    ({"k1": [-1.0]}, "k1"),
    ({"language": ["klingon"]}, "klingon"),
])
def test_tune_refuses_a_bad_space(space: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        tune("cranfield", space, max_queries=5)


def test_cli_tune_prints_the_numbers_and_saves_json(tmp_path, capsys) -> None:
    out = tmp_path / "t.json"
    code = main(["tune", "cranfield", "--space", "k1=0.9,1.2", "--space", "b=0.75",
                 "--folds", "2", "--max-queries", "20", "--save", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "out-of-fold" in text and "BM25Index.from_docs" in text
    assert "out-of-fold - default on ndcg@10" in text and "20 queries" in text
    saved = json.loads(out.read_text())
    assert saved["folds"] == 2 and saved["significance"]["queries"] == 20
    code = main(["tune", "cranfield", "--space", 'field_weights={"title":0},{"title":3,"text":1}',
                 "--folds", "2", "--max-queries", "20"])
    text = capsys.readouterr().out
    assert code == 0 and "out-of-fold - default" in text
    assert main(["tune", "cranfield", "--space", "k1"]) == 1
    assert "--space must look like KEY=V1,V2" in capsys.readouterr().err
