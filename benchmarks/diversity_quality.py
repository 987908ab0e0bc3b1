"""Diversity stages on passages: nDCG@10 and distinct sources in the top 10.

Usage::

    python benchmarks/diversity_quality.py [--data-dir DIR] [--datasets cranfield,cisi]
        [--chunk-size 200] [--fetch-k 50] [--dense]

Each document is split into passages with the default `SentenceSplitter`
(``--chunk-size`` characters, no overlap); the passages are indexed with BM25
(`BM25Index` defaults) and every query returns its top 10 passages, from BM25 alone or
through a diversity stage over the top ``--fetch-k`` (`SourceCap` on ``parent_id``,
`MMRReranker` with the lexical similarity, and with ``--dense`` MiniLM cosine over the
passages' vectors).

Scoring, since the judgments are per document: a passage is judged by its parent's
grade, and a parent counts once, at the position of its first passage (a second passage
of a relevant document adds no gain). nDCG@10 = DCG / IDCG with linear gains and
``log2(rank + 1)`` discounts at the passages' positions (trec_eval's definition once
repeats gain nothing); "sources@10" is the mean number of distinct parents among the
10 passages; "relevant sources@10" how many of them are judged relevant.
"""

from __future__ import annotations

import argparse
import math
import statistics
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

TOP = 10


def passage_scores(parents: list[str], judged: dict[str, int]) -> tuple[float, int, int]:
    """(nDCG@10 with repeats gaining nothing, distinct sources, distinct relevant sources)."""
    seen: set[str] = set()
    dcg = 0.0
    for position, parent in enumerate(parents[:TOP], 1):
        if parent not in seen:
            seen.add(parent)
            dcg += max(judged.get(parent, 0), 0) / math.log2(position + 1)
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:TOP]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    relevant = sum(1 for p in seen if judged.get(p, 0) > 0)
    return (dcg / idcg if idcg else 0.0), len(seen), relevant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default="cranfield,cisi")
    parser.add_argument("--chunk-size", type=int, default=200)
    parser.add_argument("--fetch-k", type=int, default=50)
    parser.add_argument("--dense", action="store_true", help="also MMR over MiniLM vectors")
    args = parser.parse_args()

    from hybrid_retrievers import BM25Index
    from hybrid_retrievers.rerank import MMRReranker, RerankingSearcher, SourceCap
    from hybrid_retrievers.text import SentenceSplitter, split_parents

    sections = []
    for coll in collections(args.datasets, args.data_dir):
        name, ds = coll.name, coll.dataset
        passages = split_parents(ds.corpus.values(), SentenceSplitter(args.chunk_size, 0))
        index = BM25Index.from_docs(passages)
        stages: dict[str, object] = {
            "BM25 passages": index,
            "SourceCap(parent_id, 1)": RerankingSearcher(index, SourceCap(),
                                                         fetch_k=args.fetch_k),
            "SourceCap(parent_id, 2)": RerankingSearcher(index, SourceCap(max_per_source=2),
                                                         fetch_k=args.fetch_k),
        }
        for lam in (0.9, 0.7, 0.5):
            stages[f"MMR lexical λ={lam}"] = RerankingSearcher(
                index, MMRReranker(lambda_mult=lam), fetch_k=args.fetch_k)
        if args.dense:
            from hybrid_retrievers.models import SentenceTransformerEmbedder, local_minilm_path
            from hybrid_retrievers.vector import VectorIndex

            vectors = VectorIndex.from_docs(
                passages, embedder=SentenceTransformerEmbedder(str(local_minilm_path())))
            for lam in (0.9, 0.7, 0.5):
                stages[f"MMR MiniLM λ={lam}"] = RerankingSearcher(
                    index, MMRReranker(lambda_mult=lam, vectors=vectors),
                    fetch_k=args.fetch_k)
        rows = []
        for label, searcher in stages.items():
            t0 = time.perf_counter()
            per_query = []
            for qid, text in ds.queries.items():
                hits = searcher.search(text, k=TOP)
                per_query.append(passage_scores(
                    [h.doc.metadata["parent_id"] for h in hits], ds.qrels.get(qid, {})))
            rows.append([label, *(f"{statistics.fmean(v[i] for v in per_query):.4f}"
                                  for i in range(3)),
                         f"{(time.perf_counter() - t0) / len(per_query) * 1000:.1f}"])
        table = markdown_table(["system", "nDCG@10", "sources@10", "relevant sources@10",
                                "ms/query"], rows)
        head = (f"### {name} ({len(ds.corpus)} docs -> {len(passages)} passages of <= "
                f"{args.chunk_size} chars, {len(ds.queries)} queries; source: {coll.source})")
        sections.append(head + "\n\n" + table)
        print(sections[-1] + "\n", flush=True)
    text = "\n\n".join([
        "# Diversity stages on passages (BM25 top 10, stages over the top "
        f"{args.fetch_k})", *sections, "\n".join(environment_lines())])
    print("results written to", write_results("diversity_quality", text))


if __name__ == "__main__":
    main()
