"""Parent-document retrieval quality: match small children, return whole documents.

Usage::

    python benchmarks/parent_quality.py [--data-dir DIR] [--datasets cranfield,cisi]
        [--chunk-sizes 100,200,400,800] [--overlap 0.0]

Each document of the collection is a parent; it is split into children with the default
sentence-aware `SentenceSplitter` (``chunk_size`` characters, overlap a fraction of it),
the children are indexed with BM25 (`BM25Index` defaults), and `ParentChildSearcher`
returns the top 100 distinct parents per query (a parent's score is its best child's).
The baseline indexes whole documents with the same BM25. nDCG@10, Recall@10,
Recall@100 and MRR@10 are computed with ``hybrid_retrievers.evaluation.evaluate_run``.

Nothing is downloaded. The table is printed and written to
``benchmarks/results/parent_quality.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    fmt_float,
    load_collection,
    markdown_table,
    write_results,
)

TOP = 100
METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10"]


def run(dataset, searcher, k: int = TOP) -> dict[str, dict[str, float]]:
    out = {}
    for qid, text in dataset.queries.items():
        hits = searcher(text, k)
        n = len(hits)
        # Evaluate in the searcher's own order.
        out[qid] = {h.id: float(n - i) for i, h in enumerate(hits)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    parser.add_argument("--chunk-sizes", default="100,200,400,800")
    parser.add_argument("--overlap", type=float, default=0.0,
                        help="chunk overlap as a fraction of chunk size (default 0)")
    args = parser.parse_args()

    from hybrid_retrievers import BM25Index
    from hybrid_retrievers.evaluation import evaluate_run
    from hybrid_retrievers.parent import ParentChildSearcher
    from hybrid_retrievers.text.splitting import SentenceSplitter

    sizes = [int(s) for s in args.chunk_sizes.split(",")]
    sections = []
    for name in args.datasets.split(","):
        coll = load_collection(name, args.data_dir)
        if coll is None:
            print(f"skipping {name}: not found under {args.data_dir}")
            continue
        ds = coll.dataset
        docs = list(ds.corpus.values())
        lengths = [len(d.text) for d in docs]
        rows = []
        t0 = time.perf_counter()
        whole = BM25Index.from_docs(docs)
        scores = evaluate_run(run(ds, lambda q, k: whole.search(q, k)), ds.qrels, METRICS)
        rows.append(["whole documents (BM25)", f"{len(docs)}", "-",
                     *[fmt_float(scores[m]) for m in METRICS], f"{time.perf_counter() - t0:.1f}"])
        for size in sizes:
            t0 = time.perf_counter()
            splitter = SentenceSplitter(size, int(size * args.overlap))
            pc = ParentChildSearcher.from_docs(docs, splitter=splitter)
            n_children = len(pc.child_searcher)
            scores = evaluate_run(run(ds, lambda q, k: pc.search(q, k)), ds.qrels, METRICS)
            rows.append([f"parents of {size}-char children", f"{n_children}",
                         f"{n_children / len(docs):.1f}",
                         *[fmt_float(scores[m]) for m in METRICS],
                         f"{time.perf_counter() - t0:.1f}"])
        table = markdown_table(
            ["system", "indexed", "children/doc", *METRICS, "build+eval s"], rows
        )
        head = (f"### {name} ({len(docs)} docs, {len(ds.queries)} queries, median doc "
                f"{statistics.median(lengths):.0f} chars; source: {coll.source})")
        sections.append(head + "\n\n" + table)
        print(sections[-1] + "\n", flush=True)
    text = "\n\n".join([
        "# Parent-document retrieval quality (BM25 children vs whole documents)",
        f"Top {TOP} distinct parents per query; children overlap = {args.overlap:.0%} of "
        "chunk size; default SentenceSplitter and BM25Index settings.",
        *sections,
        "\n".join(environment_lines()),
    ])
    print("results written to", write_results("parent_quality", text))


if __name__ == "__main__":
    main()
