"""Dense search latency: exact VectorIndex vs numpy brute force and LangChain, plus HNSW.

Usage::

    python benchmarks/dense_search.py [--sizes 100000,1000000] [--queries 50]
                                      [--lc-max 100000] [--lc-queries 5] [--ann-sizes 100000]
                                      [--ann-m 16] [--ann-efc 100]
                                      [--batch-queries 128] [--rounds 3] [--block 64]

Vectors: 384-d float32, L2-normalised, drawn from a mixture of 1000 Gaussian clusters
(centres uniform on the sphere, noise 0.6 per unit): exact search costs the same on any
data, but approximate search needs neighbourhoods to exist, which uniform random vectors
in 384-d do not have. Queries are fresh draws from the same mixture. Top 10, cosine.

Systems, all in this one process on the same matrix:

* ``VectorIndex.search_vector`` (one query at a time) and ``search_vectors`` (all queries as
  one blocked matrix product; reported per query).
* numpy brute force: ``scores = V @ q`` then a full ``argsort``, and with ``argpartition``
  then sorting the k survivors (what we do, minus our tie handling and validation).
* LangChain ``InMemoryVectorStore.similarity_search_by_vector`` with a fake ``Embeddings``
  returning the precomputed vectors; it keeps vectors as Python lists, so it is run up to
  ``--lc-max`` documents and on ``--lc-queries`` queries only.
* Batched (``--batch-queries`` queries per call, ``--rounds`` interleaved rounds, median
  per query): ``VectorIndex.search_vectors`` with the numpy kernel and with
  ``enable_flat_faiss()``; numpy blocks of ``--block`` queries (``Q @ V.T``, then
  ``argpartition`` per row and a sort of the k survivors); faiss ``IndexFlatIP.search``
  on the whole batch (its copy of the matrix is built outside the timing).
* ``VectorIndex`` with the faiss HNSW backend (``enable_ann``): build time, latency and
  recall@10 against our exact results, for ``--ann-sizes``.

Latency is the median (and p95) of single-query wall times. Nothing is downloaded. The
tables are printed and written to ``benchmarks/results/dense_search.md``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from _common import (  # noqa: E402
    environment_lines,
    markdown_table,
    median,
    percentile,
    quiet_third_party,
    write_results,
)

DIM = 384
K = 10


def mixture(n: int, centers: np.ndarray, rng: np.random.Generator, noise: float = 0.6) -> np.ndarray:
    out = np.empty((n, centers.shape[1]), dtype=np.float32)
    step = 100_000
    for s in range(0, n, step):
        m = min(step, n - s)
        block = centers[rng.integers(0, len(centers), m)]
        block = block + (noise / np.sqrt(centers.shape[1])) * rng.standard_normal(block.shape, dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[s : s + m] = block
    return out


def time_each(fn, queries: np.ndarray) -> tuple[list[float], list]:  # type: ignore[no-untyped-def]
    times, results = [], []
    for q in queries:
        start = time.perf_counter()
        results.append(fn(q))
        times.append(time.perf_counter() - start)
    return times, results


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.2f}"


def blas_line() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "- BLAS: threadpoolctl not installed"
    info = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, "
            f"{i.get('num_threads')} threads)" for i in threadpool_info() if i.get("user_api") == "blas"]
    return "- BLAS: " + ("; ".join(info) or "unknown")


def batched_rows(index, V: np.ndarray, queries: np.ndarray, rounds: int, block: int,
                 n: int) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """Batched systems side by side, interleaved round by round; rows for the table."""

    def ours() -> list[list[int]]:
        index.disable_flat_faiss()
        return [[int(h.id) for h in hits] for hits in index.search_vectors(queries, k=K)]

    def ours_faiss() -> list[list[int]]:
        index.enable_flat_faiss()
        try:
            return [[int(h.id) for h in hits] for hits in index.search_vectors(queries, k=K)]
        finally:
            index.disable_flat_faiss()

    def numpy_blocks() -> list[list[int]]:
        out: list[list[int]] = []
        for s in range(0, len(queries), block):
            scores = queries[s : s + block] @ V.T
            top = np.argpartition(-scores, K, axis=1)[:, :K]
            order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
            out.extend(np.take_along_axis(top, order, axis=1).tolist())
        return out

    systems = {"hybrid_retrievers search_vectors (numpy kernel)": ours,
               f"numpy blocks of {block} (Q@V.T + argpartition)": numpy_blocks}
    try:
        import faiss
    except ImportError:
        faiss = None
    if faiss is not None:
        flat = faiss.IndexFlatIP(V.shape[1])
        flat.add(V)

        def faiss_flat() -> list[list[int]]:
            return flat.search(queries, K)[1].tolist()

        systems["hybrid_retrievers search_vectors (enable_flat_faiss)"] = ours_faiss
        systems["faiss IndexFlatIP.search (batch)"] = faiss_flat
    for fn in systems.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {name: [] for name in systems}
    results: dict[str, list[list[int]]] = {}
    for _ in range(rounds):
        for name, fn in systems.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append((time.perf_counter() - start) / len(queries))
    exact = results["hybrid_retrievers search_vectors (numpy kernel)"]
    rows = []
    for name, t in times.items():
        agree = sum(r == e for r, e in zip(results[name], exact))
        rows.append([f"{n:,}", name, ms(median(t)), f"{ms(min(t))}-{ms(max(t))}",
                     f"{agree}/{len(queries)}"])
    if faiss is not None:
        del flat
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--lc-max", type=int, default=100_000)
    parser.add_argument("--lc-queries", type=int, default=5)
    parser.add_argument("--ann-sizes", default="100000")
    parser.add_argument("--ann-m", type=int, default=16)
    parser.add_argument("--ann-efc", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-queries", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block", type=int, default=64)
    args = parser.parse_args(argv)
    quiet_third_party()

    from hybrid_retrievers.vector import VectorIndex

    rng = np.random.default_rng(args.seed)
    centers = rng.standard_normal((1000, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    queries = mixture(args.queries, centers, rng)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    ann_sizes = {int(s) for s in args.ann_sizes.split(",") if s}

    latency_rows, ann_rows, batch_rows = [], [], []
    batch_queries = mixture(args.batch_queries, centers, rng)
    for n in sizes:
        vectors = mixture(n, centers, rng)
        ids = [str(i) for i in range(n)]
        start = time.perf_counter()
        index = VectorIndex.from_vectors(vectors, ids=ids)
        build = time.perf_counter() - start
        V = index.vectors  # the same (normalised) matrix for every system

        def argsort_bf(q: np.ndarray) -> list[int]:
            s = V @ q
            return np.argsort(-s)[:K].tolist()

        def argpart_bf(q: np.ndarray) -> list[int]:
            s = V @ q
            top = np.argpartition(-s, K)[:K]
            return top[np.argsort(-s[top])].tolist()

        def ours(q: np.ndarray) -> list[int]:
            return [int(h.id) for h in index.search_vector(q, k=K)]

        for fn in (ours, argsort_bf, argpart_bf):  # warm-up
            fn(queries[0])
        systems = {}
        systems["hybrid_retrievers search_vector"] = time_each(ours, queries)
        systems["numpy V@q + argsort"] = time_each(argsort_bf, queries)
        systems["numpy V@q + argpartition"] = time_each(argpart_bf, queries)
        start = time.perf_counter()
        batch = index.search_vectors(queries, k=K)
        batch_s = time.perf_counter() - start
        exact = [[int(h.id) for h in hits] for hits in batch]
        for name, (times, results) in systems.items():
            agree = sum(r == e for r, e in zip(results, exact))
            latency_rows.append([f"{n:,}", name, ms(median(times)), ms(percentile(times, 95)),
                                 f"{len(times)}", f"{agree}/{len(times)}"])
        latency_rows.append([f"{n:,}", f"hybrid_retrievers search_vectors ({len(queries)} at once)",
                             ms(batch_s / len(queries)), "(per query)", f"{len(queries)}", "-"])
        batch_rows += batched_rows(index, V, batch_queries, args.rounds, args.block, n)
        if n <= args.lc_max:
            from langchain_core.embeddings import Embeddings
            from langchain_core.vectorstores import InMemoryVectorStore

            class Precomputed(Embeddings):
                def embed_documents(self, texts: list[str]) -> list[list[float]]:
                    raise AssertionError("not used: vectors are added directly")

                def embed_query(self, text: str) -> list[float]:
                    raise AssertionError("not used: searched by vector")

            store = InMemoryVectorStore(embedding=Precomputed())
            V_list = V.tolist()
            store.store = {
                i: {"id": i, "vector": v, "text": "", "metadata": {}} for i, v in zip(ids, V_list)
            }
            del V_list
            lcq = queries[: args.lc_queries]
            times, results = time_each(
                lambda q: [int(d.id) for d in store.similarity_search_by_vector(q.tolist(), k=K)], lcq
            )
            agree = sum(r == e for r, e in zip(results, exact))
            latency_rows.append([f"{n:,}", "LangChain InMemoryVectorStore", ms(median(times)),
                                 ms(percentile(times, 95)), f"{len(times)}", f"{agree}/{len(times)}"])
            del store
            gc.collect()
        else:
            latency_rows.append([f"{n:,}", "LangChain InMemoryVectorStore", "not run", "", "",
                                 f"> --lc-max (Python lists of floats: ~{n * DIM * 32 / 2**30:.0f} GiB)"])
        if n in ann_sizes:
            try:
                import faiss  # noqa: F401
            except ImportError:
                ann_rows.append([f"{n:,}", "faiss not installed", "", "", "", ""])
            else:
                for ef in (64, 128, 256):
                    index.enable_ann(m=args.ann_m, ef_construction=args.ann_efc, ef_search=ef)
                    start = time.perf_counter()
                    index.build_ann()
                    ann_build = time.perf_counter() - start
                    index.search_vector(queries[0], k=K)
                    times, results = time_each(
                        lambda q: [int(h.id) for h in index.search_vector(q, k=K)], queries
                    )
                    recall = np.mean([len(set(r) & set(e)) / K for r, e in zip(results, exact)])
                    ann_rows.append([f"{n:,}", f"HNSW m={args.ann_m} efC={args.ann_efc} efSearch={ef}",
                                     f"{ann_build:.1f}" if ef == 64 else "(same graph)",
                                     ms(median(times)), ms(percentile(times, 95)), f"{recall:.3f}"])
                index.disable_ann()
        print(f"n={n:,}: from_vectors {build:.2f}s", file=sys.stderr, flush=True)
        del index, vectors, V
        gc.collect()

    out = [
        "# Dense search latency (384-d, top 10, cosine)",
        "",
        *environment_lines(),
        blas_line(),
        "",
        "## Exact search, single query (median / p95 ms)",
        "",
        "'same as ours' counts queries whose top-10 ids equal our batched exact result.",
        "",
        markdown_table(["docs", "system", "median ms", "p95 ms", "queries", "same as ours"],
                       latency_rows),
    ]
    out += [
        "",
        f"## Exact search, batched ({args.batch_queries} queries per call, median of "
        f"{args.rounds} interleaved rounds, ms per query)",
        "",
        "'same as ours' counts queries whose top-10 ids equal `search_vectors` (numpy kernel); "
        "numpy blocks and faiss break ties in their own order, so a tied 10th place can differ.",
        "",
        markdown_table(["docs", "system", "median ms/query", "range over rounds", "same as ours"],
                       batch_rows),
    ]
    if ann_rows:
        out += [
            "",
            "## Approximate search (faiss HNSW via VectorIndex.enable_ann; exact re-scoring)",
            "",
            markdown_table(["docs", "backend", "build s", "median ms", "p95 ms", "recall@10 vs exact"],
                           ann_rows),
        ]
    text = "\n".join(out)
    print(text)
    write_results("dense_search", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
