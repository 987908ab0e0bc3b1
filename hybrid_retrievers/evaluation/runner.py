"""Run retrievers over a judged dataset and compare them: quality, latency, diagnostics.

`evaluate` accepts any mix of our searchers, LangChain retrievers, LlamaIndex
retrievers and plain callables, so a notebook can put a whole stack side by side:

    >>> from hybrid_retrievers import BM25Index, Analyzer
    >>> from hybrid_retrievers.datasets import load_dataset
    >>> ds = load_dataset("cranfield")
    >>> docs = list(ds.corpus.values())
    >>> report = evaluate(
    ...     {"bm25": BM25Index.from_docs(docs),
    ...      "bm25 (no stem)": BM25Index.from_docs(docs, analyzer=Analyzer(stemmer=None))},
    ...     ds, k=100, max_queries=20)
    >>> sorted(report.names)
    ['bm25', 'bm25 (no stem)']

Retrievers with a batch path get the queries in batches (``batch_size`` at a time):
``search_many(queries, k)`` for our searchers, ``batch(queries, k=k)`` for LangChain.
The others are called once per query with ``k``: ``search(query, k)``,
``invoke(query, k=k)`` for LangChain with ``batch=False`` (falling back to
``invoke(query)`` when the retriever takes no ``k``), ``retrieve(query)`` for LlamaIndex
(which has no batch retrieval), ``fn(query, k)`` for callables returning ids,
``(id, score)`` pairs or `Hit`s.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..progress import progress
from ..datasets import BeirDataset, load_dataset
from .callers import Ranking, batch_caller_for, caller_for
from .metrics import evaluate_run, per_query_metrics
from .significance import DEFAULT_PERMUTATIONS, Significance, paired_test, significance_note

__all__ = ["evaluate", "EvaluationReport", "QueryDiff", "TABLE_METRICS"]

TABLE_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
"""The metrics every report shows unless told otherwise."""

@dataclass(frozen=True)
class QueryDiff:
    """One query where retriever ``a`` and ``b`` disagree on a metric."""

    query_id: str
    query: str
    a: float
    b: float
    relevant: int


@dataclass
class EvaluationReport:
    """Results of `evaluate`: mean metrics, latency, and per-query detail."""

    dataset: str
    k: int
    metrics: tuple[str, ...]
    means: dict[str, dict[str, float]]
    per_query: dict[str, dict[str, dict[str, float]]]
    latencies_ms: dict[str, list[float]]
    runs: dict[str, dict[str, dict[str, float]]]
    queries: dict[str, str] = field(repr=False)
    qrels: dict[str, dict[str, int]] = field(repr=False)
    batch_sizes: dict[str, int] = field(default_factory=dict)
    """Per retriever, the batch size its latencies come from (1: timed one query at a time)."""

    @property
    def names(self) -> list[str]:
        """Retriever names, in the order given."""
        return list(self.means)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per retriever: name, each metric, mean and p95 latency (ms)."""
        out = []
        for name in self.names:
            lat = self.latencies_ms[name]
            out.append({"retriever": name, **self.means[name],
                        "mean ms": statistics.fmean(lat) if lat else float("nan"),
                        "p95 ms": _percentile(lat, 95)})
        return out

    def to_markdown(self, *, baseline: str | None = None, test: str = "permutation",
                    alpha: float = 0.05) -> str:
        """The side-by-side table as markdown.

        Args:
            baseline: a retriever to test every other row against: a metric cell gets a
                ``*`` when its row differs from the baseline's with ``p < alpha`` (see
                `significance`), and a footnote names the test and the number of queries.
            test: ``"permutation"`` or ``"t"``.
            alpha: the significance level of the marker.
        """
        if baseline is not None and baseline not in self.means:
            raise KeyError(f"no retriever named {baseline!r} to use as baseline; have "
                           f"{self.names}")
        header = ["retriever", *self.metrics, "mean ms", "p95 ms"]
        lines = ["| " + " | ".join(header) + " |",
                 "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
        note = None
        for row in self.rows():
            cells = [row["retriever"]]
            for m in self.metrics:
                mark = ""
                if baseline is not None and row["retriever"] != baseline:
                    result = self.significance(row["retriever"], baseline, m, test=test)
                    mark = "*" if result.significant(alpha) else ""
                    note = significance_note(result, alpha)
                cells.append(f"{row[m]:.4f}{mark}")
            cells += [f"{row['mean ms']:.2f}", f"{row['p95 ms']:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
        if note is not None:
            lines += ["", note]
        batched = [n for n in self.names if self.batch_sizes.get(n, 1) > 1]
        if batched:
            lines += ["", "Batched (" + ", ".join(batched) + "): ms per query = wall time of "
                      "a batch / its queries; p95 is over those batch averages."]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_markdown()

    def compare(self, a: str, b: str, metric: str = "recall@10", *, limit: int = 10) -> list[QueryDiff]:
        """Queries where ``a`` does better than ``b`` on ``metric``, largest gap first.

        The debugging move for hybrid search: list the queries one retriever finds
        and the other misses, then read both rankings for them.
        """
        for name in (a, b):
            if name not in self.per_query:
                raise KeyError(f"no retriever named {name!r}; have {self.names}")
        if metric not in self.metrics:
            raise ValueError(f"metric {metric!r} was not computed; have {list(self.metrics)}")
        diffs = []
        for qid, scores in self.per_query[a].items():
            va, vb = scores[metric], self.per_query[b].get(qid, {}).get(metric, 0.0)
            if va > vb:
                relevant = sum(1 for g in self.qrels.get(qid, {}).values() if g > 0)
                diffs.append(QueryDiff(qid, self.queries.get(qid, ""), va, vb, relevant))
        diffs.sort(key=lambda d: (-(d.a - d.b), d.query_id))
        return diffs[:limit]

    def significance(
        self, a: str, b: str, metric: str = "ndcg@10", test: str = "permutation", *,
        permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
    ) -> Significance:
        """Whether ``a`` and ``b`` differ on ``metric`` beyond chance, paired over queries.

        `compare` lists the queries that differ; this says whether the mean difference
        is more than noise: a 0.004 nDCG gap on 30 queries usually is not. The tests
        (paired randomization, Smucker, Allan & Carterette 2007; paired t-test) are in
        `hybrid_retrievers.evaluation.significance`.

        Returns:
            A `Significance`: ``mean_difference`` (``a - b``), ``p_value`` (two-sided)
            and ``queries`` (how many were paired).

        Example:
            >>> from hybrid_retrievers import BM25Index, Analyzer
            >>> from hybrid_retrievers.datasets import load_dataset
            >>> ds = load_dataset("cranfield")
            >>> docs = list(ds.corpus.values())
            >>> report = evaluate({"stem": BM25Index.from_docs(docs),
            ...                    "no stem": BM25Index.from_docs(
            ...                        docs, analyzer=Analyzer(stemmer=None))}, ds)
            >>> result = report.significance("stem", "no stem", "ndcg@10")
            >>> result.queries, result.mean_difference > 0
            (225, True)
        """
        for name in (a, b):
            if name not in self.per_query:
                raise KeyError(f"no retriever named {name!r}; have {self.names}")
        if metric not in self.metrics:
            raise ValueError(f"metric {metric!r} was not computed; have {list(self.metrics)}")
        qids = [q for q in self.per_query[a] if q in self.per_query[b]]
        return paired_test([self.per_query[a][q][metric] for q in qids],
                           [self.per_query[b][q][metric] for q in qids], test,
                           permutations=permutations, seed=seed, metric=metric,
                           names=(a, b))

    def failing(self, name: str, metric: str = "recall@10") -> list[str]:
        """Query ids where ``name`` scores 0 on ``metric``."""
        return [qid for qid, s in self.per_query[name].items() if s.get(metric, 0.0) == 0.0]

    def check(self, minimums: Mapping[str, float], name: str | None = None) -> list[str]:
        """Violations of metric lower bounds (empty when all pass): the CI quality gate.

        Args:
            minimums: ``{"ndcg@10": 0.40, ...}``.
            name: the retriever to check; every retriever when ``None``.
        """
        problems = []
        for n in [name] if name is not None else self.names:
            for metric, bound in minimums.items():
                value = self.means[n].get(metric)
                if value is None:
                    raise ValueError(f"metric {metric!r} was not computed; have {list(self.metrics)}")
                if value < bound:
                    problems.append(f"{n}: {metric} = {value:.4f} < {bound}")
        return problems

    def plot(self, path: str | Path | None = None, *, cutoffs: Sequence[int] = (1, 3, 5, 10, 20, 50, 100)) -> Any:
        """Metric bars per retriever and recall@k curves (matplotlib); saved when ``path`` is given."""
        from ..optional import require

        require("matplotlib", extra="plot", feature="EvaluationReport.plot")
        import matplotlib

        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (bars, curves) = plt.subplots(1, 2, figsize=(12, 4.5))
        width = 0.8 / max(len(self.names), 1)
        for i, name in enumerate(self.names):
            xs = [j + i * width for j in range(len(self.metrics))]
            bars.bar(xs, [self.means[name][m] for m in self.metrics], width, label=name)
            recall = [evaluate_run(self.runs[name], self.qrels, [f"recall@{c}"])[f"recall@{c}"]
                      for c in cutoffs if c <= self.k]
            curves.plot([c for c in cutoffs if c <= self.k], recall, marker="o", label=name)
        bars.set_xticks([j + width * (len(self.names) - 1) / 2 for j in range(len(self.metrics))])
        bars.set_xticklabels(self.metrics)
        bars.set_title(f"{self.dataset}: quality")
        bars.legend(fontsize="small")
        curves.set_xscale("log")
        curves.set_xlabel("k")
        curves.set_ylabel("recall@k")
        curves.set_title(f"{self.dataset}: recall@k")
        curves.legend(fontsize="small")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=110)
            plt.close(fig)
        return fig


def evaluate(
    retrievers: Mapping[str, Any] | Sequence[Any],
    dataset: BeirDataset | str | Path,
    *,
    k: int = 100,
    metrics: Sequence[str] = TABLE_METRICS,
    max_queries: int | None = None,
    show_progress: bool = False,
    batch: bool = True,
    batch_size: int = 64,
    latency_queries: int | None = None,
) -> EvaluationReport:
    """Run every retriever over the dataset's judged queries and score the rankings.

    Args:
        retrievers: ``{name: retriever}``, or a list (named by class and position).
        dataset: a `BeirDataset`, a bundled name (``"cranfield"``) or a BEIR folder.
        k: how many results to ask each retriever for.
        metrics: metric names (see `hybrid_retrievers.evaluation.parse_metric`).
        max_queries: evaluate only the first N judged queries (quick checks).
        show_progress: a tqdm bar per retriever (needs the ``progress`` extra).
        batch: use a retriever's batch path when it has one (our ``search_many``,
            LangChain ``batch``); ``False`` times every query alone.
        batch_size: queries per batch call.
        latency_queries: time single queries apart from the quality run: the rankings
            (and every metric) still come from the batched run over all queries, while
            the latency columns come from the first N judged queries run again one at a
            time (``batch_sizes`` says 1). Fast quality from batches, honest per-query
            latency from a sample: what ``hybrid-retrievers demo`` shows.

    Latency (the ``mean ms`` / ``p95 ms`` columns) is the wall time of each
    ``search``/``invoke``/``retrieve`` call, queries one after another, measured the
    same way for every retriever: in one worker thread, after one untimed warm-up
    query in the calling thread. For a batched retriever it is the wall time of each
    batch call divided by the queries in it, recorded once per query (so the mean is
    the true cost per query, and p95 is over batch averages, not single queries: use
    ``batch=False`` for single-query tail latency); `EvaluationReport.batch_sizes`
    says which rows are batched. A fused row includes its children (run concurrently)
    and the fusion. torch runs its multi-threaded pool only in the thread that first
    used it, so a dense model called directly and one called as a fusion's child (in a
    pool thread) can run under different threading; for comparable rows on a busy
    machine call ``torch.set_num_threads(1)`` first (the ``hybrid-retrievers`` CLI does).

    Raises:
        ValueError: when most ids a retriever returns are not in the dataset's corpus
            or qrels (for example LangChain ``Document``s built without ``id=``): the
            run would otherwise score 0.0 silently. Checked on the warm-up query first,
            so a mismatch fails at once.
    """
    from ..validation import check_k

    k = check_k(k)
    batch_size = check_k(batch_size, name="batch_size")
    if latency_queries is not None:
        latency_queries = check_k(latency_queries, name="latency_queries")
    if isinstance(dataset, (str, Path)):
        dataset = load_dataset(dataset)
    if not isinstance(dataset, BeirDataset):
        raise TypeError(f"dataset must be a BeirDataset, name or path, got {type(dataset).__name__}")
    named = _name(retrievers)
    if not named:
        raise ValueError("retrievers must not be empty; pass at least one retriever")
    qids = [q for q in dataset.queries if dataset.qrels.get(q)]
    if max_queries is not None:
        qids = qids[: check_k(max_queries, name="max_queries")]
    queries = {q: dataset.queries[q] for q in qids}
    qrels = {q: dataset.qrels[q] for q in qids}
    metrics = tuple(metrics)

    known = _known_ids(dataset)
    means, per_query, latencies, runs, sizes = {}, {}, {}, {}, {}
    # Every row is timed the same way: one untimed warm-up query in the calling thread
    # (models load there), then the queries one after another in one worker thread.
    # Why a worker: torch gives its multi-threaded (OpenMP) pool to the thread that
    # first ran it, and other threads compute single-threaded. Timing a plain dense
    # searcher in that first thread and a fusion's dense child in a pool thread made
    # dense look 5-20x slower than the hybrid that contains it on a busy machine, where
    # two spinning OpenMP threads fight other processes for the cores.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluate") as worker:
        for name, retriever in named.items():
            call = caller_for(retriever, name)
            many = batch_caller_for(retriever) if batch else None
            if qids:
                _check_ids(name, [doc_id for doc_id, _ in call(queries[qids[0]], k)], known)
            def one_at_a_time(qs: list[str], k: int, call: Any = call) -> list[Ranking]:
                return [call(q, k) for q in qs]
            call_many = many if many is not None else one_at_a_time
            size = batch_size if many is not None else 1
            run, lat = worker.submit(
                _run_queries, call_many, name, qids, queries, k, known, show_progress, size
            ).result()
            if latency_queries is not None and size > 1:
                _, lat = worker.submit(
                    _run_queries, one_at_a_time, name, qids[:latency_queries], queries, k,
                    known, False, 1).result()
                size = 1
            sizes[name] = size
            runs[name] = run
            latencies[name] = lat
            means[name] = evaluate_run(run, qrels, metrics)
            per_query[name] = per_query_metrics(run, qrels, metrics)
    return EvaluationReport(dataset.name, k, metrics, means, per_query, latencies, runs,
                            queries, qrels, sizes)


def _run_queries(
    call_many: Callable[[list[str], int], list[Ranking]],
    name: str,
    qids: Sequence[str],
    queries: Mapping[str, str],
    k: int,
    known: frozenset[str],
    show_progress: bool,
    batch_size: int = 1,
) -> tuple[dict[str, dict[str, float]], list[float]]:
    """One retriever's timed run: rankings and per-query latencies (ms).

    Queries go ``batch_size`` at a time to ``call_many``; each query is charged its
    batch's wall time divided by the batch's length (its own time when 1).
    """
    run: dict[str, dict[str, float]] = {}
    lat: list[float] = []
    returned: list[str] = []
    chunks = [list(qids[i : i + batch_size]) for i in range(0, len(qids), batch_size)]
    for chunk in progress(chunks, show=show_progress, desc=name, unit="query" if batch_size == 1
                           else "batch"):
        t0 = time.perf_counter()
        rankings = call_many([queries[q] for q in chunk], k)
        per_query_ms = (time.perf_counter() - t0) * 1000 / len(chunk)
        if len(rankings) != len(chunk):
            raise ValueError(f"retriever {name!r} returned {len(rankings)} rankings for a "
                             f"batch of {len(chunk)} queries")
        for qid, ranking in zip(chunk, rankings):
            lat.append(per_query_ms)
            # Scores become n..1 so each retriever is judged in its own order, even
            # when its scores tie or are missing.
            n = len(ranking)
            run[qid] = {}
            for i, (doc_id, _) in enumerate(ranking):
                run[qid].setdefault(doc_id, float(n - i))
                returned.append(doc_id)
    _check_ids(name, returned, known)
    return run, lat


def _known_ids(dataset: BeirDataset) -> frozenset[str]:
    """Ids a retriever of this dataset can return: the corpus and the judged documents."""
    if not dataset.corpus:  # a qrels-only dataset: nothing to check against
        return frozenset()
    judged = (doc_id for rel in dataset.qrels.values() for doc_id in rel)
    return frozenset(dataset.corpus).union(judged)


def _check_ids(name: str, returned: Sequence[str], known: frozenset[str]) -> None:
    """Refuse a run whose ids mostly are not the dataset's: it would score 0 silently."""
    if not known or not returned:
        return
    unknown = [doc_id for doc_id in returned if doc_id not in known]
    if 2 * len(unknown) <= len(returned):
        return
    examples = ", ".join(repr(d) for d in list(dict.fromkeys(unknown))[:3])
    raise ValueError(
        f"retriever {name!r} returned ids that are not the dataset's: {len(unknown)} of "
        f"{len(returned)} returned ids are unknown to its corpus and qrels (e.g. {examples}), "
        "so every metric would be 0. Build the retriever from the dataset's documents and "
        "keep their ids: LangChain Document(id=doc.id, page_content=doc.text), LlamaIndex "
        "TextNode(id_=doc.id, text=doc.text), our from_docs(dataset.corpus.values())"
    )


def _name(retrievers: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    if isinstance(retrievers, Mapping):
        return {str(k): v for k, v in retrievers.items()}
    if isinstance(retrievers, (str, bytes)) or not isinstance(retrievers, Sequence):
        raise TypeError("retrievers must be a mapping {name: retriever} or a list of retrievers")
    return {f"{i}: {type(r).__name__}": r for i, r in enumerate(retrievers)}


def _percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]
