"""Our metrics equal pytrec_eval's (trec_eval's C code) on random graded runs, ties included."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_retrievers.evaluation import evaluate_run, parse_metric, per_query_metrics

pytrec_eval = pytest.importorskip("pytrec_eval")

# mrr@100000 exceeds every run length below, so it equals trec_eval's uncut recip_rank.
OURS = [
    "ndcg@10", "ndcg@3", "ndcg", "recall@100", "recall@5",
    "p@5", "p@20", "mrr@100000", "map", "map@10",
]
TREC = {
    "ndcg@10": "ndcg_cut_10",
    "ndcg@3": "ndcg_cut_3",
    "ndcg": "ndcg",
    "recall@100": "recall_100",
    "recall@5": "recall_5",
    "p@5": "P_5",
    "p@20": "P_20",
    "mrr@100000": "recip_rank",
    "map": "map",
    "map@10": "map_cut_10",
}


def _random_case(seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    # Short ids with shared prefixes ("d1", "d10", ...) and a few non-ASCII ones make the
    # doc-id tie-break matter; coarse scores make ties frequent.
    pool = [f"d{i}" for i in range(120)] + ["é1", "Z", "a", "ß", "日本"]
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(40):
        qid = f"q{q}"
        docs = rng.sample(pool, rng.randint(0, 110))
        coarse = rng.random() < 0.5
        if q % 13 != 5:  # some judged queries are never searched
            run[qid] = {
                d: float(rng.randint(0, 6)) if coarse else rng.uniform(-5, 5) for d in docs
            }
        judged = rng.sample(pool, rng.randint(0, 30))
        qrels[qid] = {d: rng.choice([-1, 0, 0, 1, 1, 2, 3, 4]) for d in judged}
    run["unjudged"] = {"d1": 1.0}
    return run, qrels


def _trec(run: dict, qrels: dict) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values()))
    return evaluator.evaluate(run)


@pytest.mark.parametrize("seed", range(12))
def test_per_query_values_match_pytrec_eval(seed: int) -> None:
    run, qrels = _random_case(seed)
    theirs = _trec(run, qrels)
    ours = per_query_metrics(run, qrels, OURS)
    assert ours, "the case must have evaluable queries"
    for qid, values in ours.items():
        if qid not in run:
            assert all(v == 0.0 for v in values.values())
            continue
        for name in OURS:
            assert values[name] == pytest.approx(theirs[qid][TREC[name]], abs=1e-9), (qid, name)
    # pytrec_eval reports no-relevant queries (as 0) which we leave out; nothing else differs.
    no_relevant = {q for q, judged in qrels.items() if not any(g >= 1 for g in judged.values())}
    assert set(theirs) - set(ours) <= no_relevant


@pytest.mark.parametrize("seed", range(4))
def test_mean_matches_pytrec_eval_with_documented_averaging(seed: int) -> None:
    run, qrels = _random_case(seed)
    theirs = _trec(run, qrels)
    evaluable = [q for q, judged in qrels.items() if any(g >= 1 for g in judged.values())]
    means = evaluate_run(run, qrels, OURS)
    for name in OURS:
        # Missing-from-run queries count 0; the mean is over queries with a relevant doc.
        total = math.fsum(theirs[q][TREC[name]] for q in evaluable if q in theirs)
        expected = total / len(evaluable)
        assert means[name] == pytest.approx(expected, abs=1e-9), name


def test_trec_names_match_pytrec_eval_measures() -> None:
    for name in OURS:
        assert parse_metric(name).trec_name == TREC[name]


ids = st.text(alphabet="abAB019é_", min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    ranking=st.dictionaries(ids, st.integers(-3, 3).map(float), max_size=25),
    judged=st.dictionaries(ids, st.integers(-1, 4), min_size=1, max_size=15),
)
def test_hypothesis_single_query_matches(ranking: dict, judged: dict) -> None:
    if not any(g >= 1 for g in judged.values()):
        return
    run, qrels = {"q": ranking}, {"q": judged}
    ours = per_query_metrics(run, qrels, OURS)["q"]
    theirs = _trec(run, qrels).get("q")
    if theirs is None:  # pytrec_eval skips a query with an empty ranking
        assert all(v == 0.0 for v in ours.values())
        return
    for name in OURS:
        assert ours[name] == pytest.approx(theirs[TREC[name]], abs=1e-9), name
