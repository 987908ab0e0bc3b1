"""Where one BM25 query's time goes, stage by stage, on bm25_speed's synthetic corpus.

Usage::

    python benchmarks/bm25_query_profile.py prepare DIR [--docs 1000000]
    python benchmarks/bm25_query_profile.py profile DIR [--repeats 3]

``prepare`` generates `bm25_speed`'s synthetic corpus (Zipf words over Cranfield + CISI's
vocabulary padded with pseudo-words, ~60 words a document, same seed), builds a
`BM25Index` with bm25_speed's analyzer, saves it to ``DIR`` and the normalised Cranfield
queries beside it (``DIR.queries.json``), so several checkouts can be timed on the
very same index (`bm25_query_compare.py`).

``profile`` loads it and times `BM25Index.search` (top 10, tokenising included) and,
query by query, each stage of the path it takes, calling the engine's own functions in
the same order: tokenising, the score cache lookup, the vocabulary lookup
(`matching.query_ids`), `matching.ranked_matches` split into the compiled call (each
``search_*`` entry of `_numba` and `_numba_batch` is wrapped by a timer: the kernel,
and with it the ranking where the checkout ranks in the same call) and the engine's
Python around it (signs, argument arrays, the kernel choice, dispatch, ranking where
it is done in numpy), and building the `Hit` objects.
It prints per stage the median and p95 over the queries in µs, the same for the queries
around the median end-to-end time and the slowest 5%, and per query its postings, its
rarest list and the kernel that took it.

Timing stages one by one adds a little (one ``perf_counter`` per stage, ~0.1 µs); the
end-to-end column is measured separately, without them. The package imported is the
one on ``PYTHONPATH`` (this script adds no checkout of its own), so the same script
profiles any checkout: ``PYTHONPATH=/path/to/checkout python .../bm25_query_profile.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bm25_speed, for `prepare`

K = 10
STAGES = ["tokenise", "cache", "lookup", "engine Python", "compiled", "hits"]


def prepare(directory: Path, n_docs: int) -> None:
    """Generate, build and save the corpus and its queries (`bm25_speed`'s generator)."""
    import bm25_speed as speed

    from hybrid_retrievers import Analyzer, BM25Index

    stop = speed.stopword_list()
    cran = speed.load_collection("cranfield", speed.DEFAULT_DATA_DIR)
    assert cran is not None
    queries = [speed.normalise(q) for q in cran.dataset.queries.values()]
    real = speed.real_vocabulary(speed.DEFAULT_DATA_DIR)
    vocabulary = real + speed.pseudo_words(max(0, speed.VOCAB_TYPES - len(real)), set(real),
                                           np.random.default_rng(speed.SEED))
    t = time.perf_counter()
    corpus = speed.synthetic_corpus(n_docs, vocabulary)
    print(f"generated {corpus.name} in {time.perf_counter() - t:.1f} s: {corpus.note}")
    t = time.perf_counter()
    index = BM25Index.from_texts(corpus.texts, ids=corpus.ids,
                                 analyzer=Analyzer(stopwords=stop, stemmer=None))
    print(f"built in {time.perf_counter() - t:.1f} s")
    index.save(directory)
    Path(f"{directory}.queries.json").write_text(json.dumps(queries))


def load(directory: Path) -> tuple[Any, list[str]]:
    """The saved index (read into memory) and its queries."""
    from hybrid_retrievers import BM25Index

    queries = json.loads(Path(f"{directory}.queries.json").read_text())
    return BM25Index.load(directory), queries


class KernelTimer:
    """Wraps the compiled ``search_*`` entry points so each call's time is kept.

    Those of `_numba` (the kernels) and `_numba_batch` (the entry that chooses, runs and
    ranks, where it exists): the engine looks them up on their modules at each call, so
    it calls the wrappers. Compiled code calling compiled code is not seen, so nothing
    is counted twice.
    """

    def __init__(self) -> None:
        import importlib

        from hybrid_retrievers.inverted import kernels

        assert kernels._load() is not None, "numba is needed"
        self.spent = 0.0
        self.name = ""
        for module_name in ("_numba", "_numba_batch"):
            module = importlib.import_module(f"hybrid_retrievers.inverted.{module_name}")
            for name in [n for n in dir(module) if n.startswith("search_")]:
                setattr(module, name, self._timed(name, getattr(module, name)))

    def _timed(self, name: str, kernel: Any) -> Any:
        def call(*args: Any) -> Any:
            t = time.perf_counter()
            out = kernel(*args)
            self.spent += time.perf_counter() - t
            self.name = name
            return out

        return call


def profile_query(index: Any, query: str, timer: KernelTimer) -> dict[str, float]:
    """One query through `BM25Index.search`'s path, each stage timed (seconds)."""
    from hybrid_retrievers.inverted.matching import query_ids, ranked_matches

    c0 = time.perf_counter()
    terms, counts = index._query_terms(query)
    c1 = time.perf_counter()
    st = index._state
    cache = index._cache(st)
    c2 = time.perf_counter()
    ids, constant = query_ids(st, cache, index.params, terms, counts)
    c3 = time.perf_counter()
    timer.spent = 0.0
    positions, scores = ranked_matches(st, cache, index.params, ids, constant, K, None,
                                       index._scratch, index.backend)
    c4 = time.perf_counter()
    kernel = timer.spent
    index._hits(st, query, terms, counts, positions, scores, False)
    c5 = time.perf_counter()
    return {"tokenise": c1 - c0, "cache": c2 - c1, "lookup": c3 - c2,
            "engine Python": (c4 - c3) - kernel, "compiled": kernel, "hits": c5 - c4,
            "staged": c5 - c0}


def query_shape(index: Any, query: str) -> dict[str, Any]:
    """The query's distinct terms in the vocabulary, its postings and its rarest list."""
    terms, _ = index._query_terms(query)
    st = index._state
    lengths = [int(st.indptr[st.vocab[w] + 1] - st.indptr[st.vocab[w]])
               for w in terms if w in st.vocab]
    return {"terms": len(lengths), "postings": sum(lengths),
            "rarest": min(lengths) if lengths else 0}


def us(v: float) -> str:
    return f"{v * 1e6:,.1f}"


def run_profile(directory: Path, repeats: int) -> None:
    index, queries = load(directory)
    timer = KernelTimer()
    for q in queries[:20]:  # loads the compiled kernels and builds their metadata
        index.search(q, k=K)
    rows: list[dict[str, float]] = []
    for q in queries:
        per = [profile_query(index, q, timer) for _ in range(repeats)]
        e2e = []
        for _ in range(repeats):
            t = time.perf_counter()
            index.search(q, k=K)
            e2e.append(time.perf_counter() - t)
        row = {s: min(p[s] for p in per) for s in [*STAGES, "staged"]}
        row["search"] = min(e2e)
        row["kernel_name"] = timer.name  # type: ignore[assignment]
        row.update(query_shape(index, q))
        rows.append(row)
    order = np.argsort([r["search"] for r in rows])
    n = len(rows)
    middle = [rows[i] for i in order[int(n * 0.4):int(n * 0.6)]]
    slowest = [rows[i] for i in order[int(n * 0.95):]]
    cols = [*STAGES, "staged", "search"]
    import hybrid_retrievers

    print(f"{hybrid_retrievers.__file__}: {len(index):,} documents, {n} queries, top {K}, "
          f"best of {repeats} per query; µs; load average {os.getloadavg()[0]:.2f}")
    print()
    print("| stage | median | p95 | mean, queries at 40-60% | mean, slowest 5% |")
    print("|---|---:|---:|---:|---:|")
    for c in cols:
        vals = [r[c] for r in rows]
        print(f"| {c} | {us(statistics.median(vals))} | {us(float(np.percentile(vals, 95)))} | "
              f"{us(statistics.fmean(r[c] for r in middle))} | "
              f"{us(statistics.fmean(r[c] for r in slowest))} |")
    print()
    for label, group in (("40-60%", middle), ("slowest 5%", slowest)):
        kinds: dict[str, int] = {}
        for r in group:
            kinds[str(r["kernel_name"])] = kinds.get(str(r["kernel_name"]), 0) + 1
        print(f"queries at {label}: terms median {statistics.median(r['terms'] for r in group)}, "
              f"postings median {statistics.median(r['postings'] for r in group):,.0f}, "
              f"rarest list median {statistics.median(r['rarest'] for r in group):,.0f}; "
              f"kernels {kinds}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="generate, build and save the corpus")
    p.add_argument("directory", type=Path)
    p.add_argument("--docs", type=int, default=1_000_000)
    p = sub.add_parser("profile", help="time each stage of every query")
    p.add_argument("directory", type=Path)
    p.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.directory, args.docs)
    else:
        run_profile(args.directory, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
