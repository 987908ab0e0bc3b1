"""Paired significance: the randomization test and the t-test against scipy on fixed data,
and the report's significance() and table markers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hybrid_retrievers import BM25Index
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.evaluation import evaluate, paired_test
from hybrid_retrievers.text import Analyzer

RNG = np.random.default_rng(20071106)
A12 = RNG.random(12)
B12 = np.clip(A12 + RNG.normal(0.05, 0.1, 12), 0, 1)
A40 = RNG.random(40)
B40 = np.clip(A40 + RNG.normal(0.03, 0.1, 40), 0, 1)


def _mean_diff(x, y, axis=-1):  # type: ignore[no-untyped-def]
    return np.mean(x - y, axis=axis)


def test_exact_randomization_test_equals_scipy_permutation_test() -> None:
    ours = paired_test(A12, B12, "permutation")
    theirs = stats.permutation_test((A12, B12), _mean_diff, permutation_type="samples",
                                    vectorized=True, n_resamples=10_000)
    assert ours.exact and ours.permutations == 2 ** 12 and ours.queries == 12
    assert ours.p_value == pytest.approx(theirs.pvalue, abs=1e-12)
    assert ours.mean_difference == pytest.approx(float(np.mean(A12 - B12)))


def test_monte_carlo_randomization_test_is_seeded_and_close_to_scipy() -> None:
    ours = paired_test(A40, B40, permutations=20_000, seed=5)
    assert not ours.exact and ours.seed == 5 and ours.permutations == 20_000
    assert ours == paired_test(A40, B40, permutations=20_000, seed=5)
    theirs = stats.permutation_test((A40, B40), _mean_diff, permutation_type="samples",
                                    vectorized=True, n_resamples=20_000, rng=1)
    assert ours.p_value == pytest.approx(theirs.pvalue, abs=0.01)  # Monte Carlo error ~0.0025


def test_t_test_equals_scipy_ttest_rel() -> None:
    ours = paired_test(A40, B40, "t")
    assert ours.p_value == pytest.approx(stats.ttest_rel(A40, B40).pvalue, rel=1e-12)
    assert paired_test([0.5, 0.5], [0.5, 0.5], "t").p_value == 1.0  # no difference at all


def test_no_difference_is_p_one_and_bad_input_is_refused() -> None:
    assert paired_test(A12, A12).p_value == 1.0
    with pytest.raises(ValueError, match="same length"):
        paired_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="empty"):
        paired_test([], [])
    with pytest.raises(ValueError, match="test must be one of"):
        paired_test([1.0], [0.0], "wilcoxon")
    with pytest.raises(ValueError, match="finite"):
        paired_test([float("nan")], [0.0])
    with pytest.raises(ValueError, match="permutations"):
        paired_test([1.0], [0.0], permutations=0)


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    ds = load_dataset("cranfield")
    docs = list(ds.corpus.values())
    return evaluate({"stem": BM25Index.from_docs(docs),
                     "no stem": BM25Index.from_docs(docs, analyzer=Analyzer(stemmer=None)),
                     "stem again": BM25Index.from_docs(docs)}, ds, k=100)


def test_report_significance_pairs_the_queries(report) -> None:  # type: ignore[no-untyped-def]
    result = report.significance("stem", "no stem", "ndcg@10")
    a = [report.per_query["stem"][q]["ndcg@10"] for q in report.per_query["stem"]]
    b = [report.per_query["no stem"][q]["ndcg@10"] for q in report.per_query["stem"]]
    assert result.queries == 225 and result.metric == "ndcg@10"
    assert result.mean_difference == pytest.approx(
        report.means["stem"]["ndcg@10"] - report.means["no stem"]["ndcg@10"])
    assert result.p_value == paired_test(a, b).p_value
    assert report.significance("stem", "no stem", "ndcg@10", "t").p_value == pytest.approx(
        stats.ttest_rel(a, b).pvalue)
    same = report.significance("stem", "stem again", "ndcg@10")
    assert same.mean_difference == 0.0 and same.p_value == 1.0
    with pytest.raises(KeyError, match="no retriever named 'x'"):
        report.significance("x", "stem")
    with pytest.raises(ValueError, match="was not computed"):
        report.significance("stem", "no stem", "map")


def test_table_marks_significant_rows_and_shows_the_queries(report) -> None:  # type: ignore[no-untyped-def]
    plain = report.to_markdown()
    assert "*" not in plain
    marked = report.to_markdown(baseline="stem")
    lines = marked.splitlines()
    row = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ")}
    significant = report.significance("no stem", "stem", "ndcg@10").significant()
    assert (f"{report.means['no stem']['ndcg@10']:.4f}*" in row["no stem"]) == significant
    assert "*" not in row["stem"] and "*" not in row["stem again"]
    assert "n = 225 queries" in marked and "against 'stem'" in marked
    assert "Smucker et al. 2007" in marked
    with pytest.raises(KeyError, match="baseline"):
        report.to_markdown(baseline="nope")
