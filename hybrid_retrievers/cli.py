"""The ``hybrid-retrievers`` command: a demo on a bundled real corpus, and index tools.

Examples:
    hybrid-retrievers demo
    hybrid-retrievers index docs/ --out my-index
    hybrid-retrievers search my-index "boundary layer transition" --explain
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, KeyError, FileNotFoundError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybrid-retrievers", description="Retrieval for RAG that explains and measures itself."
    )
    sub = parser.add_subparsers(dest="command")

    demo = sub.add_parser("demo", help="index a bundled test collection and compare retrievers")
    demo.add_argument("--dataset", default="cranfield", help="bundled name or BEIR folder")
    demo.add_argument("--examples", type=int, default=3, help="example queries to explain")
    demo.set_defaults(func=_demo)

    index = sub.add_parser("index", help="build a BM25 index from text/markdown files or JSONL")
    index.add_argument("source", type=Path, help="a folder of .txt/.md files, or a .jsonl file")
    index.add_argument("--out", type=Path, required=True, help="directory to save the index to")
    index.add_argument("--language", default="english")
    index.add_argument("--method", default="lucene")
    index.set_defaults(func=_index)

    search = sub.add_parser("search", help="query a saved BM25 index")
    search.add_argument("index", type=Path)
    search.add_argument("query")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("--explain", action="store_true", help="show per-term contributions")
    search.add_argument("--json", action="store_true", help="print results as JSON lines")
    search.set_defaults(func=_search)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from . import BM25Index
    from .datasets import load_dataset
    from .evaluation import evaluate_run, hits_to_run

    ds = load_dataset(args.dataset)
    docs = list(ds.corpus.values())
    print(f"Dataset {ds.name}: {len(docs)} documents, {len(ds.queries)} judged queries\n")

    t0 = time.perf_counter()
    index = BM25Index.from_docs(docs)
    build = time.perf_counter() - t0
    print(f"BM25 index built in {build * 1000:.0f} ms: {index!r}\n")

    qids = list(ds.queries)
    latencies = []
    hits_by_qid = {}
    for qid in qids:
        t = time.perf_counter()
        hits_by_qid[qid] = index.search(ds.queries[qid], k=100)
        latencies.append(time.perf_counter() - t)
    metrics = evaluate_run(
        hits_to_run(hits_by_qid), ds.qrels, ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
    )
    _print_table(
        ["retriever", *metrics, "mean ms", "p95 ms"],
        [["bm25 (lucene, english)", *(f"{v:.4f}" for v in metrics.values()),
          f"{statistics.fmean(latencies) * 1000:.3f}", f"{_p95(latencies) * 1000:.3f}"]],
    )

    print("\nExample queries, with why the top document scored what it did:")
    for qid in qids[: max(args.examples, 0)]:
        query = ds.queries[qid]
        hits = hits_by_qid[qid][:3]
        print(f"\nQ{qid}: {query}")
        for hit in hits:
            mark = "relevant" if ds.qrels.get(qid, {}).get(hit.id, 0) > 0 else "-"
            title = str(hit.doc.metadata.get("title", hit.doc.text))[:70]
            print(f"  {hit.rank}. [{hit.id}] {hit.score:7.3f}  {title}  ({mark})")
        if hits:
            print(index.explain(query, hits[0].id))
    return 0


def _index(args: argparse.Namespace) -> int:
    from . import Analyzer, BM25Index, Doc

    source: Path = args.source
    docs: list[Doc] = []
    if source.is_dir():
        files = sorted(p for p in source.rglob("*") if p.suffix.lower() in {".txt", ".md"})
        if not files:
            raise ValueError(f"no .txt or .md files under {source}")
        docs = [Doc(str(p.relative_to(source)), p.read_text(encoding="utf-8"), {"path": str(p)})
                for p in files]
    elif source.suffix == ".jsonl" and source.is_file():
        with source.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    text = row["text"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise ValueError(f"{source}, line {lineno}: expected a JSON object with 'text' ({exc})") from None
                doc_id = str(row.get("id", row.get("_id", "")))
                from .ids import content_id

                docs.append(Doc(doc_id or content_id(text), text, row.get("metadata", {})))
    else:
        raise FileNotFoundError(f"{source} is neither a folder nor a .jsonl file")
    index = BM25Index.from_docs(docs, analyzer=Analyzer(language=args.language), method=args.method)
    index.save(args.out)
    print(f"indexed {len(index)} documents ({index.vocabulary_size} terms) into {args.out}")
    return 0


def _search(args: argparse.Namespace) -> int:
    from . import BM25Index

    index = BM25Index.load(args.index)
    hits = index.search(args.query, k=args.k, explain=args.explain)
    for hit in hits:
        if args.json:
            print(json.dumps({"id": hit.id, "rank": hit.rank, "score": hit.score,
                              "text": hit.doc.text, "metadata": dict(hit.doc.metadata),
                              **({"explanation": hit.explanation["bm25"]} if args.explain else {})}))
            continue
        print(f"{hit.rank}. [{hit.id}] {hit.score:.4f}  {hit.doc.text[:100]!r}")
        if args.explain:
            print(index.explain(args.query, hit.id))
    if not hits:
        print("no document matches the query", file=sys.stderr)
    return 0


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
