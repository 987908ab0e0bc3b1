"""BM25 retrieval quality: our BM25Index side by side with LangChain, LlamaIndex and bm25s.

Usage::

    python benchmarks/bm25_quality.py [--data-dir DIR] [--datasets cranfield,cisi] [--quick]

For each test collection (BEIR folders ``cranfield`` and ``cisi`` under ``--data-dir``;
document text = title + " " + text) every system retrieves the top 100 documents for every
judged query, and nDCG@10, Recall@10, Recall@100 and MRR@10 are computed with
``hybrid_retrievers.evaluation.evaluate_run`` (trec_eval definitions, checked against
pytrec_eval in the test suite). Each system is evaluated in the order it returned its
documents (its own tie-breaking), which is what a user of that system gets.

Nothing is downloaded. The tables are printed and written to
``benchmarks/results/bm25_quality.md``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    fmt_float,
    load_collection,
    markdown_table,
    quiet_third_party,
    write_results,
)

TOP = 100
METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
# Measured elsewhere for bm25s (lucene, stopwords="en", PyStemmer english); our default
# should reach at least these.
BM25S_REFERENCE = {"cranfield": 0.3735, "cisi": 0.3937}

Docs = Sequence[tuple[str, str]]  # (doc_id, text)
Queries = Sequence[tuple[str, str]]  # (query_id, text)
RankFn = Callable[[Docs, Queries], dict[str, list[str]]]  # qid -> doc ids, best first


# ---------------------------------------------------------------------------- systems


def ours(**params: object) -> RankFn:
    def rank(docs: Docs, queries: Queries) -> dict[str, list[str]]:
        from hybrid_retrievers import BM25Index, Doc

        index = BM25Index.from_docs([Doc(i, t, {}) for i, t in docs], **params)  # type: ignore[arg-type]
        results = index.search_many([q for _, q in queries], k=TOP)
        return {qid: [h.doc.id for h in hits] for (qid, _), hits in zip(queries, results)}

    return rank


def ours_no_stemming(docs: Docs, queries: Queries) -> dict[str, list[str]]:
    from hybrid_retrievers import Analyzer

    return ours(analyzer=Analyzer(stemmer=None))(docs, queries)


def _stemming_preprocess() -> Callable[[str], list[str]]:
    """Lowercase, split into words, drop English stopwords, Snowball-stem (PyStemmer)."""
    import Stemmer

    from hybrid_retrievers.text.stopwords import load_stopwords

    stop = load_stopwords("english")
    stem = Stemmer.Stemmer("english").stemWords
    word = re.compile(r"\w+").findall

    def preprocess(text: str) -> list[str]:
        return stem([w for w in word(text.lower()) if w not in stop])

    return preprocess


def langchain(stemmed: bool) -> RankFn:
    def rank(docs: Docs, queries: Queries) -> dict[str, list[str]]:
        from langchain_community.retrievers import BM25Retriever

        extra = {"preprocess_func": _stemming_preprocess()} if stemmed else {}
        retriever = BM25Retriever.from_texts(
            [t for _, t in docs], ids=[i for i, _ in docs], k=TOP, **extra
        )
        return {qid: [d.id for d in retriever.invoke(q)] for qid, q in queries}

    return rank


def llama_index(docs: Docs, queries: Queries) -> dict[str, list[str]]:
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    retriever = BM25Retriever(
        nodes=[TextNode(text=t, id_=i) for i, t in docs], similarity_top_k=TOP
    )
    return {qid: [n.node.node_id for n in retriever.retrieve(q)] for qid, q in queries}


def bm25s_stemmed(docs: Docs, queries: Queries) -> dict[str, list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(
        [t for _, t in docs], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(
        [q for _, q in queries], stopwords="en", stemmer=stemmer, show_progress=False
    )
    found, _ = retriever.retrieve(query_tokens, k=TOP, show_progress=False)
    return {qid: [docs[int(j)][0] for j in row] for (qid, _), row in zip(queries, found)}


SYSTEMS: list[tuple[str, RankFn]] = [
    ("ours (default: lucene, stopwords + Snowball)", ours()),
    ("ours, method=robertson", ours(method="robertson")),
    ("ours, method=bm25+", ours(method="bm25+")),
    ("ours, method=bm25l", ours(method="bm25l")),
    ("ours, no stemming", ours_no_stemming),
    ("LangChain BM25Retriever (default: text.split())", langchain(stemmed=False)),
    ("LangChain BM25Retriever + stemming preprocess", langchain(stemmed=True)),
    ("LlamaIndex BM25Retriever (default, bm25s)", llama_index),
    ("bm25s (stopwords='en', PyStemmer english)", bm25s_stemmed),
]


# ---------------------------------------------------------------------------- running


def evaluate(name: str, dataset: object, fn: RankFn) -> tuple[dict[str, float] | None, float, str]:
    from hybrid_retrievers.evaluation import evaluate_run

    docs = [(d.id, d.text) for d in dataset.corpus.values()]  # type: ignore[attr-defined]
    queries = list(dataset.queries.items())  # type: ignore[attr-defined]
    start = time.perf_counter()
    try:
        ranked = fn(docs, queries)
    except ImportError as exc:
        return None, 0.0, f"skipped ({exc})"
    seconds = time.perf_counter() - start
    # Scores n, n-1, ..., 1: each system is judged in its own returned order.
    run = {qid: {d: float(len(ids) - r) for r, d in enumerate(ids)} for qid, ids in ranked.items()}
    return evaluate_run(run, dataset.qrels, METRICS), seconds, ""  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="folder holding BEIR folders cranfield/ and cisi/ "
                        f"(default: {DEFAULT_DATA_DIR}); bundled Cranfield when absent")
    parser.add_argument("--datasets", default="cranfield,cisi",
                        help="comma-separated collection names (default: cranfield,cisi)")
    parser.add_argument("--quick", action="store_true", help="Cranfield only")
    args = parser.parse_args(argv)
    quiet_third_party()

    names = ["cranfield"] if args.quick else [n.strip() for n in args.datasets.split(",") if n.strip()]
    out = [
        "# BM25 quality: hybrid-retrievers vs LangChain, LlamaIndex, bm25s",
        "",
        f"Top {TOP} retrieved per query; metrics by `hybrid_retrievers.evaluation.evaluate_run` "
        "(trec_eval definitions; graded nDCG; each system judged in its own returned order). "
        "Document text = title + \" \" + text. All systems use BM25 k1=1.5, b=0.75 "
        "(LangChain: rank_bm25 BM25Okapi defaults, epsilon=0.25).",
        "",
        *environment_lines(),
        "",
    ]
    print("\n".join(out), flush=True)
    misses = []
    for name in names:
        collection = load_collection(name, args.data_dir)
        if collection is None:
            note = f"## {name}\n\nskipped: no BEIR folder at {args.data_dir / name}\n"
            print(note, flush=True)
            out.append(note)
            continue
        ds = collection.dataset
        header = (f"## {name} ({len(ds.corpus)} docs, {len(ds.queries)} queries, "
                  f"{sum(len(j) for j in ds.qrels.values())} judgments; {collection.source})")
        rows = []
        ours_ndcg = None
        for label, fn in SYSTEMS:
            scores, seconds, note = evaluate(label, ds, fn)
            if scores is None:
                rows.append([label, *["n/a"] * len(METRICS), note])
            else:
                rows.append([label, *(fmt_float(scores[m]) for m in METRICS), f"{seconds:.1f}"])
                if label.startswith("ours (default"):
                    ours_ndcg = scores["ndcg@10"]
            print(f"  {name}: {label}: done in {seconds:.1f}s", file=sys.stderr, flush=True)
        table = markdown_table(["system", *METRICS, "build+search (s)"], rows)
        ref = BM25S_REFERENCE.get(name)
        verdict = ""
        if ref is not None and ours_ndcg is not None:
            ok = ours_ndcg >= ref
            verdict = (f"\nTarget: ours (default) nDCG@10 >= {ref:.4f} (bm25s stemmed+stopwords, "
                       f"measured elsewhere): {fmt_float(ours_ndcg)} -> {'met' if ok else 'MISSED'}\n")
            if not ok:
                misses.append(name)
        block = f"{header}\n\n{table}\n{verdict}"
        print(block, flush=True)
        out.append(block)
    path = write_results("bm25_quality", "\n".join(out))
    print(f"(written to {path})", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
