"""Fusion latency: does the sync hybrid path cost max(child latencies), not their sum?

Usage::

    python benchmarks/fusion_latency.py [--docs 100000] [--queries 100] [--rounds 5]

Children (realistic sizes, nothing downloaded):

* BM25: ``BM25Index`` over a synthetic corpus of ``--docs`` documents (the Zipf corpus of
  ``bm25_speed.py``: the Cranfield + CISI vocabulary padded with pseudo-words), queried
  with the Cranfield queries.
* dense: ``VectorIndex`` over ``--docs`` random unit vectors of dimension 384 (MiniLM's),
  exact search, with an embedder that looks query vectors up in a table (so the time
  is the search, not a model).

For every query, in interleaved rounds (so drift hits every system alike), we time:
each child alone asked for ``fetch_k`` candidates; ``FusionSearcher([bm25, dense])``
(RRF, top 10, children concurrently: one in the calling thread, one in the pool); the
same with ``max_workers=1`` (children one after the other); and LangChain's
``EnsembleRetriever`` over the two children wrapped as LangChain retrievers (it calls
them one after the other). Reported: medians over queries of each query's median
over rounds, and the per-query ratio fused / max(children).

Concurrency can only turn a sum into a max when there is a free core for each child and
the children release the GIL for their heavy parts, so the script also reports the
load average around the run, runs the dense child with OpenBLAS limited to
``--blas-threads`` threads (threadpoolctl, when installed; on a 2-core machine a 2-thread
gemv competes with the BM25 thread for the same cores), and times the same children
behind a simulated network round trip (``--remote-ms``; the case of remote vector stores
and search engines, where concurrency matters most), plus the fusion overhead itself.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    load_collection,
    markdown_table,
    percentile,
    quiet_third_party,
    write_results,
)

import numpy as np  # noqa: E402

DIM = 384
K = 10


class TableEmbedder:
    """Query vectors from a precomputed table: no model in the timed path."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError("documents are added as vectors")

    def embed_query(self, text: str) -> np.ndarray:
        return self.table[text]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def langchain_ensemble(bm25: Any, dense: Any, fetch_k: int) -> Any:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Live(BaseRetriever):
        searcher: Any
        k: int

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [Document(page_content=h.doc.text or h.id, id=h.id, metadata={"id": h.id})
                    for h in self.searcher.search(query, self.k)]

    return EnsembleRetriever(
        retrievers=[Live(searcher=bm25, k=fetch_k), Live(searcher=dense, k=fetch_k)],
        weights=[0.5, 0.5], id_key="id",
    )


class Remote:
    """A child behind a network round trip: sleeps (no CPU, no GIL), then searches."""

    def __init__(self, searcher: Any, seconds: float) -> None:
        self.searcher = searcher
        self.seconds = seconds

    def search(self, query: str, k: int = 10, *, filter: Any = None) -> Any:
        time.sleep(self.seconds)
        return self.searcher.search(query, k, filter=filter)


class Fixed:
    """A child that returns a precomputed list (measures the fusion machinery alone)."""

    def __init__(self, hits: Any) -> None:
        self.hits = hits

    def search(self, query: str, k: int = 10, *, filter: Any = None) -> Any:
        return self.hits


def blas_limit(threads: int | None) -> Any:
    if threads is None:
        return contextlib.nullcontext(), "OpenBLAS threads: library default"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext(), "OpenBLAS threads: default (threadpoolctl not installed)"
    return threadpool_limits(limits=threads, user_api="blas"), f"OpenBLAS threads: {threads}"


def load_average() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def measure(systems: dict[str, Any], queries: list[str], rounds: int) -> dict[str, list[float]]:
    """Per system, each query's median over ``rounds`` interleaved rounds (seconds)."""
    for q in queries[:10]:  # warm-up: caches, the thread pool, LangChain's first calls
        for run in systems.values():
            run(q)
    times: dict[str, list[list[float]]] = {name: [[] for _ in queries] for name in systems}
    for _ in range(rounds):
        for qi, q in enumerate(queries):
            for name, run in systems.items():
                t0 = time.perf_counter()
                run(q)
                times[name][qi].append(time.perf_counter() - t0)
    return {name: [statistics.median(t) for t in ts] for name, ts in times.items()}


def table(per_query: dict[str, list[float]], a: str, b: str) -> tuple[list[list[str]], float]:
    child_max = [max(x, y) for x, y in zip(per_query[a], per_query[b])]
    child_sum = [x + y for x, y in zip(per_query[a], per_query[b])]
    rows = []
    for name, values in per_query.items():
        rows.append([name, ms(statistics.median(values)), ms(percentile(values, 95)),
                     f"{statistics.median([v / m for v, m in zip(values, child_max)]):.2f}",
                     f"{statistics.median([v / s for v, s in zip(values, child_sum)]):.2f}"])
    rows.append([f"max({a}, {b}) per query", ms(statistics.median(child_max)),
                 ms(percentile(child_max, 95)), "1.00", ""])
    rows.append([f"{a} + {b} per query", ms(statistics.median(child_sum)),
                 ms(percentile(child_sum, 95)), "", "1.00"])
    fused = next(v for n, v in per_query.items() if "concurrent" in n)
    ratio = statistics.median([v / m for v, m in zip(fused, child_max)])
    return rows, ratio


HEADERS = ["system", "median ms", "p95 ms", "median ratio to max(children)",
           "median ratio to sum(children)"]


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="OpenBLAS threads for the dense child (0: library default)")
    parser.add_argument("--remote-ms", type=float, default=10.0,
                        help="simulated round trip of each remote child, ms")
    args = parser.parse_args(argv)
    quiet_third_party()
    if args.blas_threads == 0:
        args.blas_threads = None

    from bm25_speed import VOCAB_TYPES, pseudo_words, real_vocabulary, synthetic_corpus

    from hybrid_retrievers import BM25Index
    from hybrid_retrievers.fusion import FusionSearcher, default_fetch_k
    from hybrid_retrievers.vector import VectorIndex

    rng = np.random.default_rng(7)
    real = real_vocabulary(args.data_dir)
    vocabulary = real + pseudo_words(max(0, VOCAB_TYPES - len(real)), set(real), rng)
    corpus = synthetic_corpus(args.docs, vocabulary)
    start = time.perf_counter()
    bm25 = BM25Index.from_texts(corpus.texts, ids=corpus.ids)
    bm25_build = time.perf_counter() - start
    cran = load_collection("cranfield", args.data_dir)
    assert cran is not None
    queries = [q for q in cran.dataset.queries.values()][: args.queries]

    vectors = rng.standard_normal((args.docs, DIM), dtype=np.float32)
    qvecs = rng.standard_normal((len(queries), DIM), dtype=np.float32)
    dense = VectorIndex.from_vectors(vectors, ids=corpus.ids,
                                     embedder=TableEmbedder(dict(zip(queries, qvecs))))
    del vectors

    fetch_k = default_fetch_k(K)
    load_before = load_average()
    limit, blas_note = blas_limit(args.blas_threads)
    with limit:
        fused = FusionSearcher([bm25, dense])
        serial = FusionSearcher([bm25, dense], max_workers=1)
        ensemble = langchain_ensemble(bm25, dense, fetch_k)
        per_query = measure({
            "BM25": lambda q: bm25.search(q, fetch_k),
            "dense": lambda q: dense.search(q, fetch_k),
            "FusionSearcher (concurrent)": lambda q: fused.search(q, K),
            "FusionSearcher (max_workers=1)": lambda q: serial.search(q, K),
            "LangChain EnsembleRetriever": lambda q: ensemble.invoke(q),
        }, queries, args.rounds)
        cpu_rows, cpu_ratio = table(per_query, "BM25", "dense")

        # batch path: search_many over all queries
        batch_rows = []
        for name, searcher in (("FusionSearcher.search_many (concurrent)", fused),
                               ("FusionSearcher.search_many (max_workers=1)", serial)):
            best = min(_timed(lambda: searcher.search_many(queries, K)) for _ in range(3))
            batch_rows.append([name, f"{1000 * best:.1f}", ms(best / len(queries))])
        for name, child in (("BM25.search_many", bm25), ("dense.search_many", dense)):
            best = min(_timed(lambda: child.search_many(queries, fetch_k)) for _ in range(3))
            batch_rows.append([name, f"{1000 * best:.1f}", ms(best / len(queries))])

        # remote children: the same searches behind a simulated round trip
        remote_bm25 = Remote(bm25, args.remote_ms / 1000)
        remote_dense = Remote(dense, args.remote_ms / 1000)
        r_fused = FusionSearcher([remote_bm25, remote_dense])
        r_serial = FusionSearcher([remote_bm25, remote_dense], max_workers=1)
        r_ensemble = langchain_ensemble(remote_bm25, remote_dense, fetch_k)
        remote_q = queries[: max(10, len(queries) // 2)]
        remote = measure({
            "remote BM25": lambda q: remote_bm25.search(q, fetch_k),
            "remote dense": lambda q: remote_dense.search(q, fetch_k),
            "FusionSearcher (concurrent)": lambda q: r_fused.search(q, K),
            "FusionSearcher (max_workers=1)": lambda q: r_serial.search(q, K),
            "LangChain EnsembleRetriever": lambda q: r_ensemble.invoke(q),
        }, remote_q, max(2, args.rounds // 2))
        remote_rows, remote_ratio = table(remote, "remote BM25", "remote dense")

    # the machinery alone: fusing two precomputed lists, with and without the pool
    a, b = bm25.search(queries[0], fetch_k), dense.search(queries[0], fetch_k)
    from hybrid_retrievers.fusion import fuse

    overhead_rows = []
    for name, call in (
        ("fuse([bm25, dense], 'rrf') on two 20-hit lists", lambda: fuse([a, b], limit=K)),
        ("FusionSearcher over two fixed lists (concurrent)",
         lambda f=FusionSearcher([Fixed(a), Fixed(b)]): f.search("q", K)),
        ("FusionSearcher over two fixed lists (max_workers=1)",
         lambda f=FusionSearcher([Fixed(a), Fixed(b)], max_workers=1): f.search("q", K)),
    ):
        for _ in range(200):
            call()
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        overhead_rows.append([name, f"{1e6 * (time.perf_counter() - t0) / n:.0f}"])
    load_after = load_average()
    for f in (fused, serial, r_fused, r_serial):
        f.close()

    verdict = "met" if cpu_ratio <= 1.10 else "NOT met"
    r_verdict = "met" if remote_ratio <= 1.10 else "NOT met"
    text = "\n".join([
        "# Fusion latency: FusionSearcher vs its children and LangChain's EnsembleRetriever",
        "",
        f"BM25 over {args.docs:,} synthetic docs ({corpus.note}; built in {bm25_build:.1f}s) "
        f"and exact dense search over {args.docs:,} random {DIM}-d vectors; "
        f"{len(queries)} Cranfield queries x {args.rounds} rounds, interleaved; children asked "
        f"for fetch_k = {fetch_k}, fused top {K} (RRF). {blas_note}. Load average (1/5/15 min) "
        f"before: {load_before}, after: {load_after} ({os.cpu_count()} CPUs; other processes "
        "running on the machine compete for the same cores).",
        "",
        *environment_lines(),
        "",
        "## CPU-bound children, per query (medians over queries of the per-query median)",
        "",
        markdown_table(HEADERS, cpu_rows),
        "",
        f"Target: the sync hybrid path costs at most max(child latencies) + 10%: median "
        f"per-query ratio {cpu_ratio:.2f} -> {verdict}.",
        "",
        f"## Remote children ({args.remote_ms:g} ms simulated round trip each, "
        f"{len(remote_q)} queries)",
        "",
        markdown_table(HEADERS, remote_rows),
        "",
        f"Target on remote children: median per-query ratio {remote_ratio:.2f} -> {r_verdict}.",
        "",
        f"## Batch ({len(queries)} queries in one call; best of 3)",
        "",
        markdown_table(["system", "total ms", "ms/query"], batch_rows),
        "",
        "## Fusion machinery alone",
        "",
        markdown_table(["what", "µs per call"], overhead_rows),
    ])
    print(text)
    write_results("fusion_latency", text)
    return 0


def _timed(func: Any) -> float:
    t0 = time.perf_counter()
    func()
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
