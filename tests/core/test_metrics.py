"""Hand-computed checks of the trec_eval-style metrics in hybrid_retrievers.evaluation."""

from __future__ import annotations

import math
import random
import time

import pytest

from hybrid_retrievers.evaluation import (
    DEFAULT_METRICS,
    MetricSpec,
    evaluate_run,
    hits_to_run,
    parse_metric,
    per_query_metrics,
)
from hybrid_retrievers.types import Doc, Hit

# One query, five retrieved docs (scores strictly decreasing, so no tie-breaking):
#   rank 1 d1 (unjudged), rank 2 d2 (grade 2), rank 3 d3 (grade 0), rank 4 d4 (grade 1),
#   rank 5 d5 (unjudged). d6 (grade 3) is relevant but never retrieved. Relevant = {d2,d4,d6}.
RUN = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6, "d5": 0.5}}
QRELS = {"q1": {"d2": 2, "d3": 0, "d4": 1, "d6": 3}}
L2 = math.log2


def one(metric: str, run=RUN, qrels=QRELS) -> float:
    return evaluate_run(run, qrels, [metric])[metric]


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("recall@1", 0 / 3),
        ("recall@2", 1 / 3),  # d2 within top 2
        ("recall@5", 2 / 3),  # d2, d4; d6 never retrieved
        ("recall@100", 2 / 3),
        ("p@1", 0.0),
        ("p@2", 1 / 2),
        ("precision@5", 2 / 5),
        ("P@10", 2 / 10),  # trec_eval divides by k even when the run is shorter
        ("mrr@1", 0.0),  # first relevant is at rank 2
        ("mrr@2", 1 / 2),
        ("mrr@10", 1 / 2),
        ("mrr", 1 / 2),
        # AP = (P@2 + P@4) / |relevant| = (1/2 + 2/4) / 3
        ("map", (1 / 2 + 2 / 4) / 3),
        # map@k counts only ranks <= k but still divides by all 3 relevant docs
        ("map@2", (1 / 2) / 3),
        ("map@1", 0.0),
        # DCG@5 = 2/log2(3) + 1/log2(5); ideal grades 3,2,1: 3/log2(2) + 2/log2(3) + 1/log2(4)
        ("ndcg@5", (2 / L2(3) + 1 / L2(5)) / (3 + 2 / L2(3) + 1 / L2(4))),
        # DCG@2 = 2/log2(3); IDCG@2 = 3 + 2/log2(3)
        ("ndcg@2", (2 / L2(3)) / (3 + 2 / L2(3))),
        ("ndcg@1", 0.0),
        ("ndcg", (2 / L2(3) + 1 / L2(5)) / (3 + 2 / L2(3) + 1 / L2(4))),
    ],
)
def test_hand_computed_values(metric: str, expected: float) -> None:
    assert one(metric) == pytest.approx(expected, abs=1e-12)


def test_perfect_ranking_scores_one() -> None:
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    qrels = {"q": {"a": 3, "b": 2, "c": 1}}
    result = evaluate_run(run, qrels, ["ndcg@10", "recall@3", "mrr@10", "map", "p@3"])
    assert result == pytest.approx({"ndcg@10": 1, "recall@3": 1, "mrr@10": 1, "map": 1, "p@3": 1})


def test_ndcg_uses_grades_as_gains() -> None:
    # Swapping a grade-3 and a grade-1 doc lowers nDCG: DCG = 1 + 3/log2(3) vs ideal 3 + 1/log2(3).
    run = {"q": {"low": 2.0, "high": 1.0}}
    qrels = {"q": {"low": 1, "high": 3}}
    assert one("ndcg@10", run, qrels) == pytest.approx((1 + 3 / L2(3)) / (3 + 1 / L2(3)))


def test_negative_grades_are_not_relevant_and_add_no_gain() -> None:
    run = {"q": {"junk": 2.0, "good": 1.0}}
    qrels = {"q": {"junk": -1, "good": 2}}
    # junk adds nothing; good at rank 2: DCG = 2/log2(3), IDCG = 2.
    assert one("ndcg@10", run, qrels) == pytest.approx(1 / L2(3))
    assert one("recall@1", run, qrels) == 0.0
    assert one("mrr", run, qrels) == 0.5


def test_ties_are_broken_by_doc_id_descending_like_trec_eval() -> None:
    # All scores equal: trec_eval orders c, b, a (strcmp descending), so "a" is third.
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    assert one("mrr", run, {"q": {"a": 1}}) == pytest.approx(1 / 3)
    assert one("mrr", run, {"q": {"c": 1}}) == 1.0
    # Byte order, not numeric order: "b9" > "b10" > "a".
    run = {"q": {"b10": 2.0, "b9": 2.0, "a": 2.0}}
    assert one("mrr", run, {"q": {"b10": 1}}) == pytest.approx(1 / 2)
    # Upper case sorts before lower case in bytes, so "B" comes after "a" in descending order.
    run = {"q": {"b": 1.0, "a": 1.0, "B": 1.0}}
    assert one("mrr", run, {"q": {"a": 1}}) == pytest.approx(1 / 2)


def test_large_tie_groups_use_the_same_order() -> None:
    # Many tied docs take the full-sort path; the answer must equal the small-tie path's.
    ids = [f"d{i:04d}" for i in range(300)]
    run = {"q": {d: float(i % 2) for i, d in enumerate(ids)}}
    rel = {d: 1 for d in ids[::7]}
    got = per_query_metrics(run, {"q": rel}, ["map", "ndcg@20", "mrr"])["q"]
    order = sorted(ids, key=lambda d: (-run["q"][d], [-ord(c) for c in d]))
    ranks = [i for i, d in enumerate(order) if d in rel]
    ap = sum((n + 1) / (r + 1) for n, r in enumerate(ranks)) / len(rel)
    assert got["map"] == pytest.approx(ap, abs=1e-12)
    assert got["mrr"] == pytest.approx(1 / (ranks[0] + 1))


def test_rank_attached_to_hits_is_ignored_scores_decide() -> None:
    # Insertion order of the run dict does not matter, only scores.
    run = {"q": {"low": 0.1, "high": 0.9}}
    assert one("mrr", run, {"q": {"high": 1}}) == 1.0


def test_query_missing_from_run_counts_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}}  # q2 not searched
    assert evaluate_run(run, qrels, ["mrr@10", "recall@10"]) == {"mrr@10": 0.5, "recall@10": 0.5}
    per_query = per_query_metrics(run, qrels, ["mrr@10"])
    assert per_query == {"q1": {"mrr@10": 1.0}, "q2": {"mrr@10": 0.0}}


def test_empty_ranking_scores_zero() -> None:
    names = ["ndcg@10", "recall@10", "mrr@10", "map", "p@5"]
    result = evaluate_run({"q": {}}, {"q": {"a": 2}}, names)
    assert result == {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0, "map": 0.0, "p@5": 0.0}
    assert evaluate_run({}, {"q": {"a": 2}}, ["map"]) == {"map": 0.0}


def test_queries_without_relevant_docs_are_left_out_of_the_mean() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 0, "c": -1}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}}
    assert evaluate_run(run, qrels, ["mrr@10"]) == {"mrr@10": 1.0}  # not 0.5
    assert set(per_query_metrics(run, qrels, ["mrr@10"])) == {"q1"}


def test_no_query_with_a_relevant_doc_raises() -> None:
    with pytest.raises(ValueError, match="no query with a relevant document"):
        evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 0}})
    with pytest.raises(ValueError, match="no query with a relevant document"):
        evaluate_run({"q": {"a": 1.0}}, {})
    assert per_query_metrics({"q": {"a": 1.0}}, {"q": {"a": 0}}) == {}


def test_run_queries_not_in_qrels_are_ignored() -> None:
    run = {"q1": {"a": 1.0}, "extra": {"a": 1.0, "z": "not even checked"}}
    assert evaluate_run(run, {"q1": {"a": 1}}, ["map"]) == {"map": 1.0}


def test_k_larger_than_the_run() -> None:
    run = {"q": {"a": 2.0, "b": 1.0}}
    qrels = {"q": {"b": 1, "c": 1}}
    assert one("p@10", run, qrels) == pytest.approx(1 / 10)
    assert one("recall@1000", run, qrels) == pytest.approx(1 / 2)
    # IDCG@1000 has both relevant docs even though the run has only one of them.
    assert one("ndcg@1000", run, qrels) == pytest.approx((1 / L2(3)) / (1 + 1 / L2(3)))


def test_default_metrics_and_key_order() -> None:
    result = evaluate_run(RUN, QRELS)
    assert list(result) == list(DEFAULT_METRICS) == ["ndcg@10", "recall@100", "mrr@10", "map"]


def test_metric_keys_are_the_names_given_and_repeats_collapse() -> None:
    result = evaluate_run(RUN, QRELS, ["P@5", "precision@5", "P@5"])
    assert list(result) == ["P@5", "precision@5"]
    assert result["P@5"] == result["precision@5"] == pytest.approx(2 / 5)


def test_single_metric_string() -> None:
    assert evaluate_run(RUN, QRELS, "mrr@10") == {"mrr@10": 0.5}


@pytest.mark.parametrize(
    ("name", "spec", "trec"),
    [
        ("ndcg@10", MetricSpec("ndcg", 10), "ndcg_cut_10"),
        ("NDCG@10", MetricSpec("ndcg", 10), "ndcg_cut_10"),
        ("ndcg", MetricSpec("ndcg", None), "ndcg"),
        ("recall@100", MetricSpec("recall", 100), "recall_100"),
        ("p@5", MetricSpec("precision", 5), "P_5"),
        ("precision@5", MetricSpec("precision", 5), "P_5"),
        ("mrr@10", MetricSpec("mrr", 10), "recip_rank"),
        ("mrr", MetricSpec("mrr", None), "recip_rank"),
        ("map", MetricSpec("map", None), "map"),
        ("map@100", MetricSpec("map", 100), "map_cut_100"),
        ("ndcg_cut_10", MetricSpec("ndcg", 10), "ndcg_cut_10"),
        ("P_5", MetricSpec("precision", 5), "P_5"),
        ("recip_rank", MetricSpec("mrr", None), "recip_rank"),
        (" map@5 ", MetricSpec("map", 5), "map_cut_5"),
    ],
)
def test_parse_metric(name: str, spec: MetricSpec, trec: str) -> None:
    assert parse_metric(name) == spec
    assert parse_metric(name).trec_name == trec


@pytest.mark.parametrize(
    "name", ["bleu", "ndcg@0", "ndcg@-1", "ndcg@abc", "recall", "p", "ndcg@10@5", "", "map@1.5"]
)
def test_parse_metric_rejects_bad_names_listing_valid_forms(name: str) -> None:
    with pytest.raises(ValueError, match="valid forms") as info:
        parse_metric(name)
    assert repr(name) in str(info.value)


def test_bad_metric_list_errors() -> None:
    with pytest.raises(TypeError, match="metric name must be a str"):
        evaluate_run(RUN, QRELS, [10])
    with pytest.raises(ValueError, match="at least one metric"):
        evaluate_run(RUN, QRELS, [])
    with pytest.raises(TypeError, match="metrics must be a sequence"):
        evaluate_run(RUN, QRELS, 5)  # type: ignore[arg-type]


def test_bad_run_and_qrels_shapes() -> None:
    with pytest.raises(TypeError, match="run must be a mapping"):
        evaluate_run([("q", "a")], QRELS)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"qrels\['q1'\] must be a mapping"):
        evaluate_run(RUN, {"q1": ["d2"]})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"run\['q1'\] must be a mapping"):
        evaluate_run({"q1": ["d2"]}, QRELS)  # type: ignore[dict-item]


def test_grades_must_be_ints() -> None:
    with pytest.raises(TypeError, match=r"qrels\['q'\]\['a'\] must be an int grade"):
        evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 1.0}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="must be an int grade"):
        evaluate_run({"q": {"a": 1.0}}, {"q": {"a": True}})


def test_scores_must_be_real_numbers() -> None:
    with pytest.raises(TypeError, match=r"run\['q'\]\['b'\] must be a real number score"):
        evaluate_run({"q": {"a": 1.0, "b": "0.5"}}, {"q": {"a": 1}})
    with pytest.raises(ValueError, match=r"run\['q'\]\['b'\] is NaN"):
        evaluate_run({"q": {"a": 1.0, "b": float("nan")}}, {"q": {"a": 1}})


def test_numpy_scores_and_grades_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    run = {"q": {"a": np.float32(0.5), "b": np.int64(2)}}
    assert evaluate_run(run, {"q": {"a": np.int32(2)}}, ["mrr"]) == {"mrr": 0.5}


def test_infinite_scores_order_normally() -> None:
    run = {"q": {"a": float("-inf"), "b": 0.0, "c": float("inf")}}
    assert one("mrr", run, {"q": {"a": 1}}) == pytest.approx(1 / 3)


def test_hits_to_run_keeps_scores_or_order() -> None:
    hits = [Hit(Doc("a", "x"), 1.0, 1), Hit(Doc("b", "y"), 1.0, 2), Hit(Doc("c", "z"), 0.5, 3)]
    assert hits_to_run({"q": hits}) == {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}
    ordered = hits_to_run({"q": hits}, keep_order=True)
    assert ordered == {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    qrels = {"q": {"a": 1}}
    # With raw scores trec_eval puts "b" before "a" (tie, id descending); keep_order does not.
    assert one("mrr", hits_to_run({"q": hits}), qrels) == 0.5
    assert one("mrr", ordered, qrels) == 1.0


def test_hits_to_run_errors() -> None:
    hit = Hit(Doc("a", "x"), 1.0, 1)
    with pytest.raises(ValueError, match="twice"):
        hits_to_run({"q": [hit, hit]})
    with pytest.raises(TypeError, match=r"hits_by_qid\['q'\]\[0\] must be a Hit"):
        hits_to_run({"q": [("a", 1.0)]})  # type: ignore[list-item]
    with pytest.raises(TypeError, match="must be a list of Hit"):
        hits_to_run({"q": hit})  # type: ignore[dict-item]
    assert hits_to_run({}) == {}


def test_inputs_are_not_mutated() -> None:
    run = {"q": {"a": 1.0, "b": 1.0}}
    qrels = {"q": {"a": 1, "b": 0}}
    snapshot = (repr(run), repr(qrels))
    evaluate_run(run, qrels)
    assert (repr(run), repr(qrels)) == snapshot


def test_thousand_by_thousand_is_fast() -> None:
    # A guard against accidental quadratic code, not a benchmark: ~0.1-0.2 s on 2 cores.
    rng = random.Random(7)
    run = {f"q{i}": {f"d{j}": float(rng.randint(0, 20)) for j in range(1000)} for i in range(1000)}
    qrels = {
        f"q{i}": {f"d{rng.randrange(1500)}": rng.randint(0, 3) for _ in range(10)}
        for i in range(1000)
    }
    start = time.perf_counter()
    evaluate_run(run, qrels, ["ndcg@10", "recall@100", "mrr@10", "map", "p@5"])
    assert time.perf_counter() - start < 3.0
