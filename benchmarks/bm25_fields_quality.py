"""BM25F fields on Cranfield and CISI: one field vs fields with default weights vs tuned weights.

Usage::

    python benchmarks/bm25_fields_quality.py [--data-dir DIR] [--datasets cranfield,cisi]
        [--folds 5] [--seed 0]

Three BM25 systems (library defaults otherwise: Lucene BM25, k1=1.2, b=0.75, the English
analyzer), each evaluated on every judged query:

* **one field** — ``Doc.text`` is ``title + " " + text`` (how `BeirDataset.corpus` joins
  them), `BM25Index.from_docs(corpus)`;
* **BM25F title 2, text 1** — the title apart (`BeirDataset.fielded_corpus`),
  ``fields={"title": 2.0, "text": 1.0}`` (Robertson & Zaragoza 2009 §3.5);
* **BM25F tuned, out-of-fold** — `hybrid_retrievers.evaluation.tune` over a grid of
  ``field_weights`` (title 0.5..8 × text 0.25..1, 18 settings) and the one-field
  default, choosing by nDCG@10 under ``--folds``-fold cross-validation over the queries: every query is scored
  by weights chosen on the other folds. Its Recall@100 is that of the same fold choices
  (chosen by nDCG@10, not by recall).

Each row's p-value is the paired randomization test against one field over the same
queries (`hybrid_retrievers.evaluation.paired_test`, 10,000 seeded sign patterns;
Smucker, Allan & Carterette 2007).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    collections,
    environment_lines,
    markdown_table,
    write_results,
)

METRICS = ["ndcg@10", "recall@100"]
DEFAULT_WEIGHTS = {"title": 2.0, "text": 1.0}
GRID = [{"title": t, "text": x} for t in (0.5, 1.0, 2.0, 3.0, 5.0, 8.0) for x in (0.25, 0.5, 1.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from hybrid_retrievers import BM25Index
    from hybrid_retrievers.evaluation import evaluate, paired_test, tune

    sections = []
    for coll in collections(args.datasets, args.data_dir):
        name, ds = coll.name, coll.dataset
        t0 = time.perf_counter()
        fielded = list(ds.fielded_corpus().values())
        one = BM25Index.from_docs(list(ds.corpus.values()))
        fields = BM25Index.from_docs(fielded, fields=DEFAULT_WEIGHTS)
        report = evaluate({"one": one, "fields": fields}, ds, k=100, metrics=METRICS)
        result = tune(ds, {"field_weights": GRID}, folds=args.folds, seed=args.seed,
                      metric="ndcg@10", k=100)
        qids = list(result.per_query_default)
        per_query = {"one": report.per_query["one"], "fields": report.per_query["fields"]}
        # Out of fold, per metric: each query scored by its own fold's choice.
        tuned: dict[str, dict[str, float]] = {q: {} for q in qids}
        for fold in result.fold_choices:
            weights = fold.chosen.get("field_weights")
            if weights is None:
                scores = per_query["one"]
            else:
                chosen = BM25Index.from_docs(fielded, fields={"text": 1.0, **weights})
                scores = evaluate({"c": chosen}, ds, k=100, metrics=METRICS).per_query["c"]
            for q in fold.test:
                tuned[q] = dict(scores[q])
        assert all(abs(tuned[q]["ndcg@10"] - result.per_query_out_of_fold[q]) < 1e-9
                   for q in qids)
        per_query["tuned"] = tuned
        labels = {"one": "one field (title + text)",
                  "fields": "BM25F title 2, text 1",
                  "tuned": f"BM25F tuned, out-of-fold ({args.folds} folds, seed {args.seed})"}
        rows = []
        for key, label in labels.items():
            row = [label]
            for metric in METRICS:
                values = [per_query[key][q][metric] for q in qids]
                mean = sum(values) / len(values)
                if key == "one":
                    row += [f"{mean:.4f}", ""]
                    continue
                sig = paired_test(values, [per_query["one"][q][metric] for q in qids],
                                  seed=args.seed)
                row += [f"{mean:.4f}", f"{sig.mean_difference:+.4f}, p = {sig.p_value:.3f}"]
            rows.append(row)
        table = markdown_table(["system", "nDCG@10", "vs one field", "Recall@100",
                                "vs one field"], rows)
        choices = ", ".join(str(f.chosen.get("field_weights", "one field"))
                            for f in result.fold_choices)
        sections.append(
            f"### {name} ({len(ds.corpus)} docs, {len(qids)} queries; source: {coll.source})"
            f"\n\n{table}\n\nweights chosen per fold (by nDCG@10): {choices}; on all queries "
            f"(in-sample, optimistic): {result.chosen.get('field_weights', 'one field')} "
            f"nDCG@10 {result.in_sample:.4f}. {time.perf_counter() - t0:.1f} s.")
        print(sections[-1] + "\n", flush=True)
    text = "\n\n".join(["# BM25F fields: one field vs default weights vs tuned weights",
                        *sections, "\n".join(environment_lines())])
    print("results written to", write_results("bm25_fields_quality", text))


if __name__ == "__main__":
    main()
