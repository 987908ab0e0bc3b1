"""`tune`: choose BM25, analyzer and fusion settings against judgments, with cross-validation.

Choosing settings on the same queries that report the result flatters it: the best of
many settings on 200 queries is partly the setting that fits those queries' noise. So
`tune` reports three numbers (Stone 1974, "Cross-validatory choice and assessment of
statistical predictions", J. R. Stat. Soc. B 36; Hastie, Tibshirani & Friedman 2009,
*The Elements of Statistical Learning* §7.10):

* **default** — the library's defaults (the empty setting), on every judged query;
* **in-sample** — the best setting's mean on the queries it was chosen on (optimistic);
* **out-of-fold** — the number that matters: the queries are shuffled (``seed``) and cut
  into ``folds`` parts; for each part, the setting with the best mean on the *other*
  parts is chosen and scored on this part only. Every query is scored exactly once, by
  a setting chosen without it, and the mean over all queries estimates what tuning
  buys on unseen queries.

Whether out-of-fold differs from default by more than noise is the paired randomization
test of the two per-query score lists (`paired_test`, Smucker, Allan & Carterette 2007),
reported as `TuningResult.significance` with the number of queries: tuning a few
settings usually moves the mean by less than its noise, and the p-value says so.

How: every setting of the grid (the cartesian product of ``space``) is built and
evaluated once over all judged queries, giving a (settings × queries) matrix of the
metric; BM25 and fusion settings learn nothing from queries beyond this choice, so the
per-fold choice can be read off that matrix (`cross_validate`) without re-running
anything. Ties go to the earlier setting (the defaults come first).

The space (`SPACE_KEYS`): BM25 ``k1``, ``b``, ``delta``, ``method``; BM25F
``field_weights`` (each value a ``{field: weight}`` mapping, fields left out weighing 1:
one fielded index is built from `BeirDataset.fielded_corpus` — title apart from text —
and each setting's weights are passed per query, ``search(..., field_weights=...)``, so
weights cost no rebuild; the defaults stay one field, title and text joined); analyzer
``language``, ``stopwords``, ``stemmer``, ``token_pattern``, ``accent_folding``
(`hybrid_retrievers.Analyzer`); fusion ``mode``, ``weights``, ``k_rrf``, ``fetch_k``
(`hybrid_retrievers.FusionSearcher`, fusing the BM25 index with the ``dense`` searcher
you pass; it is built once and reused).

Example:
    >>> from hybrid_retrievers.evaluation import tune
    >>> result = tune("cranfield", {"k1": [0.9, 1.2], "b": [0.75]}, folds=2,
    ...               max_queries=20)
    >>> sorted(result.chosen), len(result.fold_choices)
    (['b', 'k1'], 2)
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..progress import progress
from ..validation import check_number
from ..datasets import BeirDataset, load_dataset
from .significance import Significance, paired_test

__all__ = ["SPACE_KEYS", "FoldChoice", "TuningResult", "cross_validate", "tune"]

BM25_KEYS = ("k1", "b", "delta", "method")
FIELD_KEYS = ("field_weights",)
ANALYZER_KEYS = ("language", "stopwords", "stemmer", "token_pattern", "accent_folding")
FUSION_KEYS = ("mode", "weights", "k_rrf", "fetch_k")
SPACE_KEYS = BM25_KEYS + FIELD_KEYS + ANALYZER_KEYS + FUSION_KEYS
"""The settings `tune` can search over."""

Setting = dict[str, Any]


@dataclass(frozen=True)
class FoldChoice:
    """One fold: the queries held out, the setting chosen on the others, both means."""

    test: tuple[str, ...]
    train: tuple[str, ...]
    chosen: Setting
    train_score: float
    test_score: float


def cross_validate(scores: np.ndarray, qids: Sequence[str], settings: Sequence[Setting], *,
                   folds: int, seed: int) -> tuple[np.ndarray, list[FoldChoice]]:
    """Out-of-fold scores per query from a (settings × queries) matrix, and each fold.

    The queries are permuted by ``numpy.random.default_rng(seed)`` and split into
    ``folds`` nearly equal parts; a fold's choice reads only its training columns.

    Example:
        >>> s = np.array([[0.5, 0.5, 0.5, 0.5], [1.0, 0.0, 1.0, 0.0]])
        >>> oof, chosen = cross_validate(s, ["a", "b", "c", "d"], [{}, {"k1": 2}],
        ...                              folds=2, seed=0)
        >>> [c.chosen for c in chosen], oof.tolist()
        ([{}, {'k1': 2}], [0.5, 0.0, 0.5, 0.0])

        Setting ``{"k1": 2}`` wins on one fold's training queries (a, c) and loses on its
        held-out ones (b, d): out of fold 0.25, though both settings average 0.5.
    """
    n = len(qids)
    if not 2 <= folds <= n:
        raise ValueError(f"folds must be between 2 and the number of judged queries ({n}), "
                         f"got {folds}")
    order = np.random.default_rng(seed).permutation(n)
    oof = np.empty(n)
    out = []
    for test in np.array_split(order, folds):
        train = np.setdiff1d(order, test)
        means = scores[:, train].mean(axis=1)
        best = int(np.argmax(means))
        oof[test] = scores[best, test]
        out.append(FoldChoice(tuple(qids[i] for i in sorted(test)),
                              tuple(qids[i] for i in sorted(train)), dict(settings[best]),
                              float(means[best]), float(scores[best, test].mean())))
    return oof, out


@dataclass(frozen=True)
class TuningResult:
    """What `tune` found; `out_of_fold` next to `default` is the honest comparison."""

    dataset: str
    metric: str
    folds: int
    seed: int
    chosen: Setting
    """The setting with the best mean on all queries: the one to use."""
    default: float
    in_sample: float
    out_of_fold: float
    fold_choices: tuple[FoldChoice, ...]
    settings: tuple[Setting, ...]
    """Every setting tried, the defaults (``{}``) first."""
    means: tuple[float, ...]
    """Each setting's mean over all queries, in the order of `settings`."""
    per_query_default: dict[str, float] = field(repr=False)
    per_query_out_of_fold: dict[str, float] = field(repr=False)
    """Per query: the defaults' score and the fold-chosen setting's score (paired, for a
    significance test; `significance` is the randomization test of the two)."""
    fused: bool = False
    """Whether the settings were fused with a ``dense`` searcher."""
    significance: Significance | None = None
    """Out-of-fold minus default per query: the paired randomization test (`paired_test`,
    seeded with ``seed``), its mean difference, p-value and number of queries."""

    @property
    def n_queries(self) -> int:
        return len(self.per_query_default)

    def to_code(self) -> str:
        """The chosen setting as the Python that builds it, after a comment with the
        out-of-fold result and its significance against the defaults."""
        note = (f"# {self.dataset} {self.metric}: default {self.default:.4f}, out-of-fold "
                f"{self.out_of_fold:.4f} ({self.folds} folds, seed {self.seed})")
        if self.significance is not None:
            note += "\n# " + str(self.significance)
        return note + "\n" + setting_code(self.chosen, self.fused)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: the chosen setting (split by where it goes) and the numbers."""
        return {"format": "hybrid-retrievers-tuning", "format_version": 1,
                "dataset": self.dataset, "metric": self.metric, "folds": self.folds,
                "seed": self.seed, "queries": self.n_queries,
                "chosen": {"bm25": _part(self.chosen, BM25_KEYS + FIELD_KEYS),
                           "analyzer": _part(self.chosen, ANALYZER_KEYS),
                           "fusion": _part(self.chosen, FUSION_KEYS)},
                "default": self.default, "in_sample": self.in_sample,
                "out_of_fold": self.out_of_fold,
                "significance": (None if self.significance is None
                                 else asdict(self.significance)),
                "fold_choices": [fc.chosen for fc in self.fold_choices],
                "code": self.to_code()}

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write `to_dict` as JSON, atomically (a temporary file renamed into place)."""
        target = Path(path)
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".",
                                   prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def build(self, docs: Sequence[Any], dense: Any = None) -> Any:
        """The chosen setting's searcher over ``docs`` (a BM25 index, fused with ``dense``
        when the setting or ``dense`` asks for fusion). A setting with ``field_weights``
        builds a fielded index: pass ``docs`` with the title apart
        (`BeirDataset.fielded_corpus`)."""
        builder = _Builder(list(docs), dense, list(docs), per_query_weights=False)
        builder.check(self.chosen)
        return builder.searcher(self.chosen)

    def to_markdown(self) -> str:
        rows = [("default (library defaults)", self.default),
                (f"in-sample best ({setting_label(self.chosen)})", self.in_sample),
                (f"out-of-fold ({self.folds} folds, seed {self.seed})", self.out_of_fold)]
        lines = [f"| {self.dataset}: {self.metric} over {self.n_queries} queries | value |",
                 "|---|---:|"]
        lines += [f"| {name} | {value:.4f} |" for name, value in rows]
        if self.significance is not None:
            lines += ["", str(self.significance)]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_markdown() + "\n\nchosen:\n" + self.to_code()


def tune(
    dataset: BeirDataset | str | os.PathLike[str],
    space: Mapping[str, Sequence[Any]],
    *,
    dense: Any = None,
    folds: int = 5,
    seed: int = 0,
    metric: str = "ndcg@10",
    k: int = 100,
    max_queries: int | None = None,
    show_progress: bool = False,
) -> TuningResult:
    """Grid-search ``space`` on ``dataset`` and report the out-of-fold metric.

    Args:
        dataset: A `BeirDataset`, a bundled name (``"cranfield"``) or a BEIR folder.
        space: ``{key: [values...]}`` over `SPACE_KEYS`, e.g. ``{"k1": [0.9, 1.2],
            "b": [0.4, 0.75], "stopwords": ["default", None]}`` or ``{"field_weights":
            [{"title": 1.0}, {"title": 2.0}, {"title": 3.0}]}``.
        dense: A searcher over the same corpus (e.g. a `VectorIndex`) to fuse with BM25;
            needed for the fusion keys. Built once by you, reused for every setting.
        folds: Number of cross-validation folds (2..number of judged queries).
        seed: Seed of the query shuffle: the same seed gives the same folds and result.
        metric: The metric to maximise (`hybrid_retrievers.evaluation.parse_metric`).
        k: Results asked per query.
        max_queries: Use only the first N judged queries (quick checks).
        show_progress: A tqdm bar over the settings.

    Raises:
        ValueError: for an unknown key, an empty value list, fusion keys without
            ``dense``, a bad value (named by the index that refuses it) or bad ``folds``.
    """
    from .metrics import parse_metric
    from .runner import evaluate

    if isinstance(dataset, (str, os.PathLike)):
        dataset = load_dataset(dataset)
    if not isinstance(dataset, BeirDataset):
        raise TypeError(f"dataset must be a BeirDataset, name or path, got "
                        f"{type(dataset).__name__}")
    parse_metric(metric)
    folds = check_number(folds, "folds", low=2, integer=True)
    seed = check_number(seed, "seed", low=0, integer=True)
    settings = [{}, *grid(space)]
    if dense is None and any(set(s) & set(FUSION_KEYS) for s in settings):
        raise ValueError(f"the fusion keys {FUSION_KEYS} need dense=: a searcher over the "
                         "same corpus (e.g. a VectorIndex) to fuse with BM25")
    fielded = any("field_weights" in s for s in settings)
    builder = _Builder(list(dataset.corpus.values()), dense,
                       list(dataset.fielded_corpus().values()) if fielded else None)
    for s in settings:
        builder.check(s)
    rows = []
    for s in progress(settings, show=show_progress, desc="Tuning", unit="setting"):
        report = evaluate({"s": builder.searcher(s)}, dataset, k=k, metrics=[metric],
                          max_queries=max_queries)
        per_query = report.per_query["s"]
        qids = list(per_query)
        rows.append([per_query[q][metric] for q in qids])
    scores = np.asarray(rows)
    oof, choices = cross_validate(scores, qids, settings, folds=folds, seed=seed)
    means = scores.mean(axis=1)
    best = int(np.argmax(means))
    significance = paired_test(oof, scores[0], "permutation", seed=seed, metric=metric,
                               names=("out-of-fold", "default"))
    return TuningResult(dataset.name, metric, folds, seed, dict(settings[best]),
                        float(means[0]), float(means[best]), float(oof.mean()),
                        tuple(choices), tuple(settings), tuple(float(m) for m in means),
                        dict(zip(qids, scores[0].tolist())), dict(zip(qids, oof.tolist())),
                        fused=dense is not None, significance=significance)


def grid(space: Mapping[str, Sequence[Any]]) -> list[Setting]:
    """The cartesian product of ``space``'s value lists, in key then value order."""
    if not isinstance(space, Mapping) or not space:
        raise TypeError(f"space must be a non-empty mapping of key -> list of values, got "
                        f"{space!r:.80}; e.g. {{'k1': [0.9, 1.2], 'b': [0.4, 0.75]}}")
    for key, values in space.items():
        if key not in SPACE_KEYS:
            raise ValueError(f"space has an unknown key {key!r}; known keys: "
                             f"{', '.join(SPACE_KEYS)}")
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"space[{key!r}] must be a non-empty list of values, got "
                             f"{values!r:.80}")
    keys = list(space)
    return [dict(zip(keys, combo)) for combo in itertools.product(*space.values())]


def _part(setting: Setting, keys: Sequence[str]) -> Setting:
    return {k: setting[k] for k in keys if k in setting}


def setting_label(setting: Setting) -> str:
    """``"k1=0.9 b=0.4"`` (``"defaults"`` for the empty setting)."""
    return " ".join(f"{k}={v!r}" for k, v in setting.items()) or "defaults"


def setting_code(setting: Setting, fused: bool = False) -> str:
    """The Python that builds ``setting`` over ``docs`` (and a ``dense`` searcher)."""
    def args(part: Setting) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in part.items())

    analyzer = _part(setting, ANALYZER_KEYS)
    weights = setting.get("field_weights")
    bm25 = ", ".join(filter(None, [f"analyzer=Analyzer({args(analyzer)})" if analyzer else "",
                                   args(_part(setting, BM25_KEYS)),
                                   f"fields={_fields(weights)!r}" if weights else ""]))
    code = f"BM25Index.from_docs(docs{', ' + bm25 if bm25 else ''})"
    if weights:
        code = ("# docs with the title apart: BeirDataset.fielded_corpus().values()\n"
                + code)
    fusion = _part(setting, FUSION_KEYS)
    if fusion or fused:
        extra = args(fusion)
        code = f"FusionSearcher([{code}, dense]{', ' + extra if extra else ''})"
    return "from hybrid_retrievers import Analyzer, BM25Index, FusionSearcher\n" + code


def _fields(weights: Mapping[str, float]) -> dict[str, float]:
    """A setting's ``field_weights`` as the index's ``fields``: ``"text"`` weighs 1 unless
    named."""
    return {"text": 1.0, **weights}


class _FieldWeighted:
    """A fielded BM25 index searched with one setting's ``field_weights`` on every query."""

    def __init__(self, index: Any, weights: Mapping[str, float]) -> None:
        self.index, self.weights = index, dict(weights)

    def search(self, query: str, k: int = 10, *, filter: Any = None) -> Any:
        return self.index.search(query, k, filter=filter, field_weights=self.weights)

    def search_many(self, queries: Sequence[str], k: int = 10, *, filter: Any = None) -> Any:
        return self.index.search_many(queries, k, filter=filter, field_weights=self.weights)


class _Builder:
    """Searchers for settings over one corpus, sharing analyzers and BM25 indexes.

    ``fielded_docs`` (the title apart) back the settings with ``field_weights``: with
    ``per_query_weights``, one fielded index per BM25/analyzer setting, holding every field
    any checked setting names, searched with each setting's weights; without, an index
    built with the setting's weights (what `TuningResult.build` returns).
    """

    def __init__(self, docs: list[Any], dense: Any, fielded_docs: list[Any] | None = None,
                 *, per_query_weights: bool = True) -> None:
        self.docs, self.dense, self.fielded_docs = docs, dense, fielded_docs
        self.per_query_weights = per_query_weights
        self._analyzers: dict[str, Any] = {}
        self._indexes: dict[str, Any] = {}
        self._field_names: dict[str, float] = {"text": 1.0}

    def check(self, setting: Setting) -> None:
        """Refuse a bad BM25, field or analyzer value before any index is built."""
        from ..bm25.fields import check_fields, check_method
        from ..bm25.params import params_from

        params = params_from(None, **_part(setting, BM25_KEYS))
        if "field_weights" in setting:
            given = setting["field_weights"]
            weights = check_fields(_fields(given) if isinstance(given, Mapping) else given,
                                   "space['field_weights'] value")
            check_method(params)
            self._field_names.update(dict.fromkeys(weights, 1.0))
        self._analyzer(setting)

    def _analyzer(self, setting: Setting) -> Any:
        from ..text import Analyzer

        options = _part(setting, ANALYZER_KEYS)
        key = repr(sorted(options.items()))
        if key not in self._analyzers:
            self._analyzers[key] = Analyzer(**options)
        return self._analyzers[key]

    def searcher(self, setting: Setting) -> Any:
        from ..bm25 import BM25Index

        weights = setting.get("field_weights")
        wrap = weights is not None and self.per_query_weights
        built = {k: v for k, v in setting.items() if k not in FUSION_KEYS}
        if wrap:
            built["field_weights"] = "per query"
        key = repr(sorted(built.items()))
        if key not in self._indexes:
            fielded = {} if weights is None else {
                "fields": self._field_names if wrap else _fields(weights)}
            self._indexes[key] = BM25Index.from_docs(
                self.docs if weights is None else self.fielded_docs,
                analyzer=self._analyzer(setting), **_part(setting, BM25_KEYS), **fielded)
        index = self._indexes[key]
        if wrap:
            index = _FieldWeighted(index, _fields(weights))
        if self.dense is None:
            return index
        from ..fusion import FusionSearcher

        return FusionSearcher([index, self.dense], names=["bm25", "dense"],
                              **_part(setting, FUSION_KEYS))
