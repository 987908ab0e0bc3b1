"""Evaluation: trec_eval-compatible ranking metrics, runs, significance and tuning.

`BeirDataset` and `load_beir` live in `hybrid_retrievers.datasets` (beside the bundled
collections) and are re-exported here, where evaluation code looks for them.

Example:
    >>> from hybrid_retrievers.evaluation import evaluate_run
    >>> evaluate_run({"q1": {"d1": 1.0, "d2": 0.5}}, {"q1": {"d2": 2}}, ["ndcg@10", "mrr@10"])
    {'ndcg@10': 0.6309297535714575, 'mrr@10': 0.5}
"""

from __future__ import annotations

from hybrid_retrievers.datasets import BeirDataset, load_beir
from hybrid_retrievers.evaluation.callers import Ranking, RankingCallable
from hybrid_retrievers.evaluation.metrics import (
    DEFAULT_METRICS,
    MetricSpec,
    Qrels,
    Run,
    evaluate_run,
    hits_to_run,
    parse_metric,
    per_query_metrics,
)
from hybrid_retrievers.evaluation.significance import (
    SIGNIFICANCE_TESTS,
    Significance,
    paired_test,
)
from hybrid_retrievers.evaluation.tuning import (
    SPACE_KEYS,
    FoldChoice,
    TuningResult,
    cross_validate,
    tune,
)
from hybrid_retrievers.evaluation.runner import (
    TABLE_METRICS,
    EvaluationReport,
    QueryDiff,
    evaluate,
)

__all__ = [
    "BeirDataset",
    "DEFAULT_METRICS",
    "EvaluationReport",
    "FoldChoice",
    "QueryDiff",
    "Ranking",
    "RankingCallable",
    "SIGNIFICANCE_TESTS",
    "Significance",
    "SPACE_KEYS",
    "TABLE_METRICS",
    "TuningResult",
    "cross_validate",
    "evaluate",
    "MetricSpec",
    "Qrels",
    "Run",
    "evaluate_run",
    "hits_to_run",
    "load_beir",
    "paired_test",
    "parse_metric",
    "per_query_metrics",
    "tune",
]
