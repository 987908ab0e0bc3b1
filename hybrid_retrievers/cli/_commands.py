"""The subcommands: ``demo``, ``eval``, ``index``, ``search`` and ``serve``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import hybrid_retrievers.cli._build as _build  # a module: tests patch its functions
from ..ingest import folder_models  # a module: tests patch its availability checks

NEXT_COMMAND = ("eval cranfield --retriever bm25 --retriever hybrid "
                "--min hybrid:ndcg@10=0.40")
LATENCY_QUERIES = 25
"""The demo times this many queries one at a time for its latency columns (its quality
columns come from batched runs over every judged query)."""


def _say(*parts: Any) -> None:
    print(*parts, flush=True)


def demo(args: argparse.Namespace) -> int:
    from ..datasets import load_dataset
    from ..evaluation import evaluate

    started = time.perf_counter()
    ds = load_dataset(args.dataset)
    docs = list(ds.corpus.values())
    _say(f"Dataset {ds.name}: {len(docs)} documents, {len(ds.queries)} judged queries")

    names = ["bm25"]
    why_not = "--bm25-only given" if args.bm25_only else folder_models.dense_available(args.model)
    if why_not is None:
        names += ["dense", "hybrid"]
    else:
        _say(f"Dense and hybrid retrieval skipped: {why_not}. Running BM25 only.")
    sparse_why_not = "--bm25-only given" if args.bm25_only else (
        why_not or folder_models.sparse_available(args.sparse_model))
    if sparse_why_not is None and args.sparse:
        names += ["sparse", "hybrid3"]
    elif sparse_why_not is None:
        _say("Learned sparse (SPLADE) rows are off: add --sparse for them (the first run "
             "encodes the corpus with splade-tiny, about 10 minutes on 2 CPU cores; cached "
             "afterwards).")
    elif why_not is None and args.sparse:
        _say(f"Learned sparse (SPLADE) and three-way retrieval skipped: {sparse_why_not}.")
    _say("Building indexes" + (" (encoding the corpus with the dense model takes minutes on "
                               "a CPU the first time; its vectors are cached for the next "
                               "run)" if why_not is None else "") + " ...")
    t0 = time.perf_counter()
    retrievers = _build.build_retrievers(names, docs, args.model, sparse_model=args.sparse_model,
                                         progress=True, cache=not args.no_cache, log=_say)
    _say(f"Built {', '.join(retrievers)} in {time.perf_counter() - t0:.1f} s\n")

    if args.rerank and "hybrid" in retrievers:
        from ..rerank import Reranker, RerankingSearcher

        retrievers["hybrid+rerank"] = RerankingSearcher(
            retrievers["hybrid"], Reranker.cross_encoder(args.rerank), fetch_k=20)
    elif "hybrid" in retrievers:
        _say("Reranking skipped: no cross-encoder checkpoint ships offline; pass --rerank "
             "cross-encoder/ms-marco-MiniLM-L-6-v2 (or a local folder) to add hybrid + rerank.")

    judged = len([q for q in ds.queries if ds.qrels.get(q)])
    _say(f"Evaluating on the {judged} judged queries (in batches; then "
         f"{min(LATENCY_QUERIES, judged)} of them one at a time for the latency columns) ...")
    report = evaluate(retrievers, ds, k=100, show_progress=True, batch=True,
                      latency_queries=LATENCY_QUERIES)
    _say(report.to_markdown())
    _say(f"Quality: every judged query, run in batches. mean/p95 ms: wall time per query "
         f"for the first {min(LATENCY_QUERIES, judged)} judged queries run one at a time after "
         "a warm-up query, measured the same way for every row (in one worker thread"
         + ("; queries encoded with one torch thread). Dense includes encoding the query on "
            "the CPU; hybrid runs BM25 and dense concurrently, then fuses, so it costs about "
            "as much as dense." if "dense" in retrievers else ").")
         + (" sparse encodes the query with splade-tiny; hybrid3 fuses BM25, dense and "
            "sparse with BM25 and sparse sharing the lexical vote (weights 0.5:1:0.5, "
            "relative_score fusion)."
            if "hybrid3" in retrievers else ""))
    if "dense" in retrievers:
        wins = report.compare("bm25", "dense", "recall@10", limit=1000)
        losses = report.compare("dense", "bm25", "recall@10", limit=1000)
        _say(f"\nBM25 beats dense on recall@10 for {len(wins)} queries, dense beats BM25 on "
             f"{len(losses)}: fusing them is what the hybrid row shows.")

    index = retrievers["bm25"]
    if args.examples > 0:
        _say("\nExample queries: the top 3 of each retriever (* = judged relevant, - = not), "
             "then why the top BM25 document scored what it did (terms are the index's "
             "stemmed forms; the contributions sum to the score):")
    for qid in list(ds.queries)[: max(args.examples, 0)]:
        query = ds.queries[qid]
        _say(f"\nQ{qid}: {query}")
        for name, retriever in retrievers.items():
            hits = retriever.search(query, k=3)  # type: ignore[attr-defined]
            marks = ["*" if ds.qrels.get(qid, {}).get(h.id, 0) > 0 else "-" for h in hits]
            _say(f"  {name:>6}: " + "  ".join(f"{h.id}{m}" for h, m in zip(hits, marks)))
        hits = index.search(query, k=1)  # type: ignore[attr-defined]
        if hits:
            _say(index.explain(query, hits[0].id))  # type: ignore[attr-defined]
    _say(f"\nDemo finished in {time.perf_counter() - started:.1f} s. Next, a CI quality gate "
         f"on the same data:\n  {command_name()} {NEXT_COMMAND}")
    return 0


def command_name() -> str:
    """How to run this program from the user's shell: ``hybrid-retrievers`` when that
    name is on PATH and is this installation, else its path (relative when it is under
    the current folder, as ``.venv/bin/hybrid-retrievers`` after ``make demo``, which
    runs it without activating the environment, so a printed command must say where
    it is), else ``python -m hybrid_retrievers``."""
    import os
    import shutil

    here = os.path.join(os.path.dirname(sys.executable), "hybrid-retrievers")
    found = shutil.which("hybrid-retrievers")
    if found is not None and (not os.path.exists(here) or os.path.samefile(found, here)):
        return "hybrid-retrievers"
    if os.path.exists(here):
        relative = os.path.relpath(here)
        return here if relative.startswith("..") else relative
    return f"{sys.executable} -m hybrid_retrievers"


def evaluate_cmd(args: argparse.Namespace) -> int:
    from ..datasets import load_dataset
    from ..evaluation import evaluate
    from ._gate import check_bounds, parse_bounds

    names = list(dict.fromkeys(args.retriever or ["bm25"]))
    bounds = parse_bounds(args.min, names)
    ds = load_dataset(args.dataset)
    retrievers = _build.build_retrievers(
        names, list(ds.corpus.values()), args.model, sparse_model=args.sparse_model,
        progress=args.progress,
        cache=not args.no_cache, log=lambda *a: print(*a, file=sys.stderr, flush=True))
    metrics = list(dict.fromkeys(["ndcg@10", "recall@10", "recall@100", "mrr@10",
                                  *(b.metric for b in bounds)]))
    report = evaluate(retrievers, ds, k=args.k, metrics=metrics, max_queries=args.max_queries,
                      show_progress=args.progress)
    print(report.to_markdown())
    if args.plot is not None:
        report.plot(args.plot)
        print(f"plot saved to {args.plot}")
    results = check_bounds(report, bounds)
    for _, line in results:
        print(line)
    failed = sum(1 for passed, _ in results if not passed)
    if failed:
        print(f"quality gate failed: {failed} of {len(results)} bounds not met", file=sys.stderr)
        return 1
    if results:
        print(f"quality gate passed: {len(results)} of {len(results)} bounds met")
    return 0


def tune_cmd(args: argparse.Namespace) -> int:
    from ..datasets import load_dataset
    from ..evaluation.tuning import FUSION_KEYS, tune

    space = _parse_space(args.space)
    ds = load_dataset(args.dataset)
    dense = None
    if set(space) & set(FUSION_KEYS):
        dense = _build.dense_index(list(ds.corpus.values()), args.model, progress=args.progress,
                                   log=lambda *a: print(*a, file=sys.stderr, flush=True))
    result = tune(ds, space, dense=dense, folds=args.folds, seed=args.seed, metric=args.metric,
                  k=args.k, max_queries=args.max_queries, show_progress=args.progress)
    print(result)
    if args.save is not None:
        result.save(args.save)
        print(f"saved to {args.save}")
    return 0


def _parse_space(items: list[str]) -> dict[str, list[Any]]:
    """``["k1=0.9,1.2", "stopwords=default,none"]`` as ``{"k1": [0.9, 1.2], ...}``."""
    def value(text: str) -> Any:
        if text.lower() == "none":
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text

    space: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise ValueError(f"--space must look like KEY=V1,V2 (e.g. k1=0.9,1.2), got {item!r}")
        # Split at commas outside brackets and braces, so weights=[1,1],[2,1] and
        # field_weights={"title":2,"text":1},{"title":3} stay two values.
        parts, depth, start = [], 0, 0
        for i, ch in enumerate(values):
            depth += {"[": 1, "]": -1, "{": 1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(values[start:i])
                start = i + 1
        parts.append(values[start:])
        space.setdefault(key.strip(), []).extend(value(p.strip()) for p in parts)
    return space


def index(args: argparse.Namespace) -> int:
    from ._index import index_command

    return index_command(args)


def search(args: argparse.Namespace) -> int:
    from ..ingest import FolderIndex
    from ..ingest.passages import bold, brackets
    from ._search import parse_filters, parse_weights

    if args.query is None and args.image is None:
        raise ValueError("search needs a QUERY, an --image PATH, or both")
    describer = None
    if args.describer:
        from ._images import load_describer

        describer = load_describer(args.describer)
    index = FolderIndex.open(args.index, model=args.model, sparse_model=args.sparse_model,
                             reranker=args.rerank, clip_model=args.clip_model,
                             describer=describer, describe_timeout=args.describe_timeout)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    query = args.query or ""
    results = index.search(args.query, args.k, mode=args.mode,
                           weights=parse_weights(args.weights, index.names),
                           filter=parse_filters(args.filter), parents=args.parents,
                           rerank=args.rerank is not None,
                           image=None if args.image is None else str(args.image),
                           explain=args.explain, mark=bold if color and not args.json
                           else brackets)
    for result in results:
        if args.json:
            print(json.dumps(result.as_dict(), ensure_ascii=False))
            continue
        print(_headline(result.as_dict()))
        print(f"   {result.passage}")
        if result.explanation is not None:
            print("   " + str(result.explanation).replace("\n", "\n   "))
    first = results[0].hit.explanation if results and results[0].hit else None
    if not args.json and first and "multimodal" in first:
        print(_routes_line(first["multimodal"]))
    if not results:
        print("no chunk matches the query (its BM25 terms, after stopwords and stemming: "
              f"{index.lexical.analyzer.tokenize(query)})", file=sys.stderr)
    for note in index.notes:
        print(f"({note})", file=sys.stderr)
    if index.loads:  # on stderr: --json output stays one record per line
        took = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in index.loads)
        print(f"(loading the query models took {took}; for many queries, `hybrid-retrievers "
              f"serve {args.index}` keeps them loaded: 0.06-0.25 s a query)", file=sys.stderr)
    return 0


def _routes_line(info: dict[str, Any]) -> str:
    """``routes asked: text x1, descriptions x2 (visual words: diagram)``"""
    weights = ", ".join(f"{r} x{w:g}" for r, w in info.get("weights", {}).items())
    words = info.get("visual_words") or []
    line = f"routes asked: {weights}" + (f" (visual words: {', '.join(words)})" if words else "")
    if info.get("query_image_description"):
        line += f"\nquery image described as: {info['query_image_description']}"
    return line


def serve(args: argparse.Namespace) -> int:
    from ._serve import serve_command

    return serve_command(args)


def _headline(record: dict[str, Any]) -> str:
    """``1. notes.md › Setup > Proxy  chars 120-480  score 0.0325 (rrf: bm25 #1, dense #4)``;
    an image: ``2. [image] diagrams/flow.png  score 0.0311 (routes: descriptions #1,
    images #3; rrf: bm25 #1, dense #2)``."""
    where = record["file"] + (f" › {record['section']}" if record.get("section") else "")
    if record.get("type") == "image":
        where = f"[image] {record['image']}"
    span = ""
    if record.get("start") is not None:
        span = f"  chars {record['start']}-{record['end']}"
    if record.get("page") is not None:
        span += f"  page {record['page']}" + (f"-{record['page_end']}"
                                              if record.get("page_end") else "")
    legs = ", ".join(f"{name} #{leg['rank']}" if leg else f"{name} -"
                     for name, leg in record["legs"].items())
    how = f"{record['mode']}: {legs}" if record.get("mode") else legs
    if "routes" in record:
        routes = ", ".join(f"{name} #{r['rank']}" for name, r in record["routes"].items())
        how = f"routes: {routes}" + (f"; {how}" if record.get("mode") else "")
    if "rerank" in record:
        how = f"reranked from #{record['rerank']['previous_rank']}; {how}"
    if "parent" in record:
        how += f"; {len(record['parent']['matched_chunks'])} of {record['parent']['n_chunks']}" \
               " chunks matched"
    return f"{record['rank']}. {where}{span}  score {record['score']:.4f} ({how})"
