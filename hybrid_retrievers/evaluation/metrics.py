"""Ranking metrics with trec_eval's definitions: Recall@k, P@k, MRR@k, nDCG@k, MAP.

A *run* is ``{query_id: {doc_id: score}}`` and *qrels* are ``{query_id: {doc_id: grade}}``,
the shapes pytrec_eval and BEIR use. The numbers equal trec_eval's (checked against
``pytrec_eval`` in ``tests/oracle``) because the same conventions are followed:

* **Ordering.** A query's documents are ranked by score, highest first; equal scores are
  broken by document id in *descending* byte order (trec_eval's ``comp_sim_docno`` compares
  ``strcmp(b, a)``), so among tied docs ``"b9"`` comes before ``"b10"`` before ``"a"``. Any
  rank the searcher attached is ignored, exactly as trec_eval ignores the rank column. Use
  :func:`hits_to_run` with ``keep_order=True`` to evaluate a searcher's own order.
* **Relevance.** A grade ``>= 1`` is relevant; ``<= 0`` (including negative "junk" grades)
  is not, and adds no gain to nDCG.
* **Recall@k** = relevant docs in the top k / all relevant docs in the qrels.
* **P@k** = relevant docs in the top k / k (a run shorter than k is not given credit for
  the missing positions, as in trec_eval's ``P_k``).
* **MRR@k** = 1 / rank of the first relevant doc if it is within the top k, else 0. trec_eval's
  ``recip_rank`` has no cut-off; ``"mrr"`` (no ``@k``) is that measure.
* **nDCG@k** (trec_eval ``ndcg_cut_k``, Järvelin & Kekäläinen 2002) = DCG@k / IDCG@k with
  gain = grade and discount ``log2(rank + 1)``; the ideal ranking sorts *all* judged docs of
  the query by grade, so relevant docs missing from the run lower the score.
* **MAP** (trec_eval ``map``) = mean over the relevant docs of the precision at each one's
  rank (0 for relevant docs never retrieved); ``map@k`` (trec_eval ``map_cut_k``) only counts
  ranks within the top k but still divides by the number of relevant docs.

Averaging (:func:`evaluate_run`) differs from a plain pytrec_eval loop in two documented
ways, both matching what BEIR reports when every query was searched: the mean is over the
queries of the qrels with at least one relevant doc, and a query missing from the run (or
with an empty ranking) scores 0 rather than being skipped.

Example:
    >>> run = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.1}}
    >>> qrels = {"q1": {"d2": 1}}
    >>> evaluate_run(run, qrels, metrics=["mrr@10", "recall@1", "p@2"])
    {'mrr@10': 0.5, 'recall@1': 0.0, 'p@2': 0.5}
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hybrid_retrievers.types import Hit

__all__ = [
    "Run",
    "Qrels",
    "MetricSpec",
    "DEFAULT_METRICS",
    "parse_metric",
    "evaluate_run",
    "per_query_metrics",
    "hits_to_run",
]

Run = Mapping[str, Mapping[str, float]]
"""``{query_id: {doc_id: score}}``; higher scores rank first."""

Qrels = Mapping[str, Mapping[str, int]]
"""``{query_id: {doc_id: grade}}``; grade >= 1 is relevant."""

DEFAULT_METRICS: tuple[str, ...] = ("ndcg@10", "recall@100", "mrr@10", "map")

_ALIASES = {
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "recall": "recall",
    "r": "recall",
    "p": "precision",
    "precision": "precision",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "map": "map",
    "map_cut": "map",
}
# Kinds whose value needs a cut-off: Recall and precision over a whole ranking depend on the
# run length, which is a property of the searcher's k, not of the ranking's quality.
_NEEDS_K = {"recall", "precision"}
_NAME_RE = re.compile(r"^\s*([a-z_]*[a-z])(?:[@_](\S+))?\s*$")
_VALID_FORMS = (
    "'ndcg@K', 'recall@K', 'p@K' / 'precision@K', 'mrr@K', 'map@K' (K a positive int), "
    "or 'ndcg', 'mrr', 'map' over the whole ranking; case-insensitive"
)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A parsed metric name: its kind and cut-off (``None`` = the whole ranking).

    Example:
        >>> parse_metric("P@5")
        MetricSpec(kind='precision', k=5)
    """

    kind: str
    k: int | None

    @property
    def trec_name(self) -> str:
        """The trec_eval / pytrec_eval measure with the same definition."""
        if self.kind == "ndcg":
            return "ndcg" if self.k is None else f"ndcg_cut_{self.k}"
        if self.kind == "recall":
            return f"recall_{self.k}"
        if self.kind == "precision":
            return f"P_{self.k}"
        if self.kind == "map":
            return "map" if self.k is None else f"map_cut_{self.k}"
        # mrr@k has no trec_eval counterpart; recip_rank equals it when k >= run length.
        return "recip_rank"


def parse_metric(name: str) -> MetricSpec:
    """Parse a metric name such as ``"ndcg@10"``, ``"recall@100"``, ``"p@5"`` or ``"map"``.

    trec_eval spellings (``"ndcg_cut_10"``, ``"P_5"``, ``"recip_rank"``, ``"map_cut_100"``)
    are accepted too, so numbers can be compared with pytrec_eval output by name.

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: unknown metric, missing or invalid cut-off; the message lists valid forms.
    """
    if not isinstance(name, str):
        raise TypeError(
            f"metric name must be a str like 'ndcg@10', got {type(name).__name__}: {name!r}"
        )
    match = _NAME_RE.match(name.lower())
    kind = _ALIASES.get(match.group(1)) if match else None
    if match is None or kind is None:
        raise ValueError(f"unknown metric {name!r}; valid forms: {_VALID_FORMS}")
    raw_k = match.group(2)
    if raw_k is None:
        if kind in _NEEDS_K:
            raise ValueError(
                f"metric {name!r} needs a cut-off, e.g. '{kind}@10'; valid forms: {_VALID_FORMS}"
            )
        return MetricSpec(kind, None)
    if not raw_k.isdigit() or int(raw_k) < 1:
        raise ValueError(
            f"metric {name!r} has cut-off {raw_k!r}; the cut-off must be a positive int, "
            f"e.g. '{kind}@10'; valid forms: {_VALID_FORMS}"
        )
    return MetricSpec(kind, int(raw_k))


def _parse_metrics(metrics: str | Iterable[str]) -> dict[str, MetricSpec]:
    if isinstance(metrics, str):
        metrics = [metrics]
    try:
        names = list(metrics)
    except TypeError:
        raise TypeError(
            f"metrics must be a sequence of names like ['ndcg@10', 'map'], "
            f"got {type(metrics).__name__}: {metrics!r}"
        ) from None
    if not names:
        raise ValueError("metrics must name at least one metric, got an empty sequence; "
                         f"valid forms: {_VALID_FORMS}")
    # dict keeps the caller's order and drops repeats.
    return {name: parse_metric(name) for name in names}


def per_query_metrics(
    run: Run,
    qrels: Qrels,
    metrics: str | Iterable[str] = DEFAULT_METRICS,
) -> dict[str, dict[str, float]]:
    """Each metric for each query of ``qrels`` that has at least one relevant doc.

    Queries without a relevant doc (no grade >= 1) are left out: every metric is undefined
    or trivially 0 for them (pytrec_eval reports them as 0). Queries of ``run`` that are not
    in ``qrels`` are ignored; queries of ``qrels`` that are missing from ``run`` score 0.

    Args:
        run: ``{query_id: {doc_id: score}}``; order is by score, ties by doc id descending.
        qrels: ``{query_id: {doc_id: grade}}`` with integer grades.
        metrics: names such as ``"ndcg@10"``; the keys of each result dict are these names
            exactly as given.

    Returns:
        ``{query_id: {metric_name: value}}`` in the order of ``qrels``.

    Raises:
        TypeError: ``run`` or ``qrels`` has the wrong shape, or a grade is not an int.
        ValueError: an unknown metric name, or a NaN score.
    """
    specs = _parse_metrics(metrics)
    _check_mapping(run, "run", "{query_id: {doc_id: score}}")
    _check_mapping(qrels, "qrels", "{query_id: {doc_id: grade}}")
    out: dict[str, dict[str, float]] = {}
    for qid, judged in qrels.items():
        _check_mapping(judged, f"qrels[{qid!r}]", "{doc_id: grade}")
        relevant = _relevant_grades(qid, judged)
        if not relevant:
            continue
        ranking = run.get(qid)
        if ranking is None:
            ranking = {}
        else:
            _check_mapping(ranking, f"run[{qid!r}]", "{doc_id: score}")
        ranks, grades = _ranks_of_relevant(qid, ranking, relevant)
        ideal = np.sort(np.fromiter(relevant.values(), dtype=np.float64, count=len(relevant)))[::-1]
        out[qid] = {
            name: float(_score(spec, ranks, grades, ideal)) for name, spec in specs.items()
        }
    return out


def evaluate_run(
    run: Run,
    qrels: Qrels,
    metrics: str | Iterable[str] = DEFAULT_METRICS,
) -> dict[str, float]:
    """Mean of each metric over the queries of ``qrels`` with at least one relevant doc.

    A query that is in ``qrels`` but missing from ``run`` counts as 0 for every metric, so a
    searcher cannot look better by skipping hard queries. This is what BEIR / pytrec_eval
    users expect when every query was searched; pytrec_eval itself only reports the queries
    present in both (and includes no-relevant queries as 0), so its plain mean differs when
    queries are missing from the run or have no relevant doc.

    Args:
        run: ``{query_id: {doc_id: score}}``.
        qrels: ``{query_id: {doc_id: grade}}``; grade >= 1 is relevant.
        metrics: names such as ``"ndcg@10"``, ``"recall@100"``, ``"p@5"``, ``"mrr@10"``,
            ``"map"``, ``"map@100"``; a single string is one metric.

    Returns:
        ``{metric_name: mean}`` keyed by the names as given, in the order given.

    Raises:
        ValueError: no query in ``qrels`` has a relevant doc, or an unknown metric name.

    Example:
        >>> evaluate_run({"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 1}}, ["mrr", "map@1"])
        {'mrr': 0.5, 'map@1': 0.0}
    """
    specs = _parse_metrics(metrics)
    per_query = per_query_metrics(run, qrels, list(specs))
    if not per_query:
        raise ValueError(
            f"qrels has no query with a relevant document (grade >= 1) among its "
            f"{len(qrels)} queries; there is nothing to average. Check that the qrels were "
            "loaded from the right split and that grades are integers >= 1 for relevant docs"
        )
    n = len(per_query)
    return {name: math.fsum(values[name] for values in per_query.values()) / n for name in specs}


def hits_to_run(
    hits_by_qid: Mapping[str, Sequence[Hit]], *, keep_order: bool = False
) -> dict[str, dict[str, float]]:
    """Turn ``{query_id: [Hit, ...]}`` into a run ``{query_id: {doc_id: score}}``.

    Args:
        hits_by_qid: each query's hits, as a searcher returned them.
        keep_order: ``False`` (default) keeps each hit's score, so ties are re-broken by doc
            id exactly as trec_eval would. ``True`` replaces scores by ``n, n-1, ..., 1`` so
            the evaluated order is the searcher's own order (its tie-breaking included).

    Raises:
        TypeError: not a mapping of sequences of ``Hit``.
        ValueError: a query lists the same doc id twice.

    Example:
        >>> from hybrid_retrievers.types import Doc, Hit
        >>> hits_to_run({"q1": [Hit(Doc("d1", "x"), 2.5, 1)]})
        {'q1': {'d1': 2.5}}
    """
    from hybrid_retrievers.types import Hit

    _check_mapping(hits_by_qid, "hits_by_qid", "{query_id: [Hit, ...]}")
    run: dict[str, dict[str, float]] = {}
    for qid, hits in hits_by_qid.items():
        if isinstance(hits, (str, bytes)) or not isinstance(hits, Sequence):
            raise TypeError(
                f"hits_by_qid[{qid!r}] must be a list of Hit, got {type(hits).__name__}"
            )
        ranking: dict[str, float] = {}
        n = len(hits)
        for i, hit in enumerate(hits):
            if not isinstance(hit, Hit):
                raise TypeError(
                    f"hits_by_qid[{qid!r}][{i}] must be a Hit, "
                    f"got {type(hit).__name__}: {hit!r:.80}"
                )
            if hit.doc.id in ranking:
                raise ValueError(
                    f"hits_by_qid[{qid!r}] lists doc id {hit.doc.id!r} twice (positions "
                    f"{list(ranking).index(hit.doc.id)} and {i}); a ranking must have unique ids"
                )
            ranking[hit.doc.id] = float(n - i) if keep_order else float(hit.score)
        run[qid] = ranking
    return run


# --------------------------------------------------------------------------------------
# internals


def _check_mapping(value: Any, name: str, shape: str) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name} must be a mapping {shape}, got {type(value).__name__}: {value!r:.80}"
        )


def _relevant_grades(qid: str, judged: Mapping[str, Any]) -> dict[str, int]:
    relevant: dict[str, int] = {}
    for doc_id, grade in judged.items():
        if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)):
            raise TypeError(
                f"qrels[{qid!r}][{doc_id!r}] must be an int grade (>= 1 relevant), "
                f"got {type(grade).__name__}: {grade!r}; convert grades with int()"
            )
        if grade >= 1:
            relevant[doc_id] = int(grade)
    return relevant


def _ranks_of_relevant(
    qid: str, ranking: Mapping[str, Any], relevant: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """0-based ranks (sorted) and grades of the relevant docs that the run retrieved.

    Every metric here depends only on where the relevant docs sit, so instead of sorting the
    whole ranking we count, for each retrieved relevant doc, the docs ranked above it:
    ``#(score > s) + #(score == s and doc_id > its id)``. That is O(n log n) for one numpy
    sort plus a binary search per relevant doc, and the rare ties are resolved in Python.
    """
    scores = _scores_array(qid, ranking)
    found = [(doc_id, grade) for doc_id, grade in relevant.items() if doc_id in ranking]
    if not found:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    ordered = np.sort(scores)
    rel_scores = np.array([float(ranking[doc_id]) for doc_id, _ in found])
    right = np.searchsorted(ordered, rel_scores, side="right")
    left = np.searchsorted(ordered, rel_scores, side="left")
    ranks = len(scores) - right  # docs with a strictly higher score
    group = right - left
    tied = np.flatnonzero(group > 1)
    if tied.size and int(group[tied].sum()) <= len(scores):
        ids = list(ranking)
        for i in tied:
            doc_id = found[i][0]
            same = np.flatnonzero(scores == rel_scores[i])
            # trec_eval orders ties by doc id descending (strcmp on bytes; code-point order of
            # Python str is the same order as UTF-8 bytes).
            ranks[i] += sum(1 for j in same.tolist() if ids[j] > doc_id)
    elif tied.size:
        # Large tie groups: one full sort is cheaper. Sort by id descending, then stably by
        # score descending (``reverse=True`` keeps equal elements in their existing order).
        order = sorted(sorted(ranking, reverse=True), key=ranking.__getitem__, reverse=True)
        wanted = {doc_id for doc_id, _ in found}
        position = {doc_id: i for i, doc_id in enumerate(order) if doc_id in wanted}
        ranks = np.array([position[doc_id] for doc_id, _ in found], dtype=np.int64)
    grades = np.array([grade for _, grade in found], dtype=np.float64)
    order = np.argsort(ranks, kind="stable")
    return ranks[order], grades[order]


def _scores_array(qid: str, ranking: Mapping[str, Any]) -> np.ndarray:
    """The ranking's scores as float64, refusing non-numbers and NaN (which cannot be ordered)."""
    for kind in set(map(type, ranking.values())):
        if not issubclass(kind, (int, float, np.integer, np.floating)):
            doc_id, value = next((d, v) for d, v in ranking.items() if type(v) is kind)
            raise TypeError(
                f"run[{qid!r}][{doc_id!r}] must be a real number score, got "
                f"{kind.__name__}: {value!r:.80}"
            )
    scores = np.fromiter(ranking.values(), dtype=np.float64, count=len(ranking))
    nan = np.flatnonzero(np.isnan(scores))
    if nan.size:
        doc_id = list(ranking)[int(nan[0])]
        raise ValueError(
            f"run[{qid!r}][{doc_id!r}] is NaN; scores must be comparable numbers "
            "(drop the doc or give it -inf)"
        )
    return scores


def _score(spec: MetricSpec, ranks: np.ndarray, grades: np.ndarray, ideal: np.ndarray) -> float:
    """One metric for one query. ``ranks`` are sorted 0-based ranks of retrieved relevants."""
    k = spec.k
    num_rel = ideal.size
    within = ranks if k is None else ranks[ranks < k]
    if spec.kind == "recall":
        return within.size / num_rel
    if spec.kind == "precision":
        return within.size / k  # type: ignore[operator]  # precision always has a k
    if spec.kind == "mrr":
        return 1.0 / (within[0] + 1) if within.size else 0.0
    if spec.kind == "map":
        if not within.size:
            return 0.0
        precisions = np.arange(1, within.size + 1) / (within + 1)
        return math.fsum(precisions.tolist()) / num_rel
    # ndcg
    gains = grades if k is None else grades[: within.size]
    dcg = math.fsum((gains / np.log2(within + 2)).tolist())
    best = ideal if k is None else ideal[:k]
    idcg = math.fsum((best / np.log2(np.arange(best.size) + 2)).tolist())
    return dcg / idcg

