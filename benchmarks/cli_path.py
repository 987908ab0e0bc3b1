"""The command line's path against the Python API on Cranfield, and search latency.

1. ``hybrid-retrievers index corpus.jsonl --whole-files`` (a subprocess, as a user runs
   it), then every judged query through the ``search`` command's own loader and searcher
   (`FolderIndex`), scored with `evaluate`; the same retrievers built with the Python API
   (`BM25Index.from_docs`, `FusionSearcher.hybrid`) are scored beside it. nDCG@10 must be
   equal. One CLI index serves every row: a leg alone, or the two-way hybrid, is the index
   searched with the other legs' weights at 0 (a leg of weight 0 is not asked).
2. Latency per query: ``hybrid-retrievers search`` as a process (what a script pays, model
   load included), and the ``search`` tool of ``hybrid-retrievers serve`` over stdio with
   the MCP SDK's client (the model stays loaded).

3. ``--folder PATH``: a real folder instead (a copy of it): the first ``index`` (files/s,
   chunks, peak memory of the process), re-index after touching one file (mtime only:
   hashed, nothing re-made) and after changing one file's text (that file alone
   re-chunked and re-encoded), then both latencies above on generic queries.

Run: ``python benchmarks/cli_path.py [--dense] [--queries 20]`` (``--dense`` adds the dense
and hybrid rows, and with splade-tiny installed the sparse and three-way ``hybrid3`` rows;
it encodes Cranfield once, then the embedding caches serve it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "integrations")]

from hybrid_retrievers.ingest import FolderIndex  # noqa: E402
from hybrid_retrievers.datasets import load_dataset  # noqa: E402
from hybrid_retrievers.evaluation import evaluate  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")])}


class _Leg:
    """One weighting of the CLI's loaded index, as an evaluated searcher."""

    def __init__(self, loaded: FolderIndex, legs: dict[str, float] | None) -> None:
        self.loaded = loaded
        self.weights = None if legs is None else [legs.get(n, 0.0) for n in loaded.names]

    def search(self, query: str, k: int = 10, **_: object) -> list:
        return self.loaded.hits(query, k, weights=self.weights)


def cli(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hybrid_retrievers", *args], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dense", action="store_true")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--folder", type=Path, default=None,
                        help="time index / re-index / search on a copy of this folder")
    args = parser.parse_args()
    if args.folder is not None:
        folder_timings(args.folder, args.queries)
        return
    ds = load_dataset("cranfield")
    docs = list(ds.corpus.values())
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        corpus.write_text("".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in docs))
        idx = Path(tmp) / "idx"
        flags = [] if args.dense else ["--bm25-only"]
        print(f"index (CLI process): {cli('index', str(corpus), '--out', str(idx), '--whole-files', *flags):.1f} s")
        loaded = FolderIndex.open(idx)
        from hybrid_retrievers import BM25Index, FusionSearcher

        retrievers: dict[str, object] = {"cli bm25": _Leg(loaded, {"bm25": 1.0})}
        api: dict[str, object] = {"api bm25": BM25Index.from_docs(docs)}
        if args.dense:
            retrievers["cli dense"] = _Leg(loaded, {"dense": 1.0})
            retrievers["cli hybrid"] = _Leg(loaded, {"bm25": 1.0, "dense": 1.0})
            embedder = loaded.fused.leg("dense").embedder
            texts, ids = [d.text for d in docs], [d.id for d in docs]
            hybrid = FusionSearcher.hybrid(texts, embedder, ids, [d.metadata for d in docs],
                                           dense={"cache": _cache()})
            api["api dense"], api["api hybrid"] = hybrid.leg("dense"), hybrid
            if "sparse" in loaded.names:
                retrievers["cli sparse"] = _Leg(loaded, {"sparse": 1.0})
                retrievers["cli hybrid3"] = _Leg(loaded, None)  # the index's own weights
                three = FusionSearcher.hybrid(texts, embedder, ids, [d.metadata for d in docs],
                                              dense={"cache": _cache()},
                                              sparse=_sparse_encoder())
                api["api sparse"], api["api hybrid3"] = three.leg("sparse"), three
        report = evaluate({**retrievers, **api}, ds, k=100, metrics=["ndcg@10", "recall@100"])
        print(report.to_markdown())
        for name in retrievers:
            other = "api " + name.split()[1]
            a, b = report.means[name]["ndcg@10"], report.means[other]["ndcg@10"]
            print(f"{name} vs {other}: nDCG@10 {a:.4f} vs {b:.4f} -> {'EQUAL' if a == b else 'DIFFERENT'}")
        queries = list(ds.queries.values())[: args.queries]
        times = [cli("search", str(idx), q, "-k", "10", "--json") for q in queries[:5]]
        print(f"search as a CLI process: median {statistics.median(times) * 1000:.0f} ms per query "
              f"({len(times)} queries, process start and index/model load included)")
        print(f"search through MCP (stdio): {_mcp_latency(idx, queries):.1f} ms median per query")


FOLDER_QUERIES = ["how do I report a bug", "license and copyright terms", "build from source",
                  "configuration file location", "security vulnerability disclosure",
                  "command line options", "changes in the latest release",
                  "python module documentation", "compression level", "install dependencies"]


def folder_timings(source: Path, n_queries: int) -> None:
    import resource
    import shutil

    with tempfile.TemporaryDirectory() as tmp:
        src, idx = Path(tmp) / "docs", Path(tmp) / "idx"
        shutil.copytree(source, src)
        files = sorted(p for p in src.rglob("*") if p.is_file())
        runs = []
        for what in ("first build", "touch one file (mtime)", "change one file's text"):
            if what.startswith("touch"):
                files[0].touch()
            elif what.startswith("change"):
                with files[0].open("a", encoding="utf-8") as f:
                    f.write("\nOne more paragraph, added to re-index this file alone.\n")
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "hybrid_retrievers", "index", str(src),
                                   "--out", str(idx)], check=True, env=ENV, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            runs.append((what, time.perf_counter() - t0, done.stdout.strip().splitlines()[-1]))
            if what == "first build":
                peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"folder {source}: {len(files)} files; peak RSS of the first index process "
              f"{peak:.0f} MiB")
        for what, seconds, summary in runs:
            print(f"index, {what}: {seconds:.1f} s wall (process) | {summary}")
        queries = (FOLDER_QUERIES * (1 + n_queries // len(FOLDER_QUERIES)))[:n_queries]
        times = [cli("search", str(idx), q, "-k", "10", "--json") for q in queries[:5]]
        print(f"search as a CLI process: median {statistics.median(times) * 1000:.0f} ms per query "
              f"({len(times)} queries, process start and index/model load included)")
        print(f"search through MCP (stdio): {_mcp_latency(idx, queries):.1f} ms median per query "
              f"({len(queries)} queries)")


def _sparse_encoder() -> object:
    """splade-tiny reading the CLI's sparse cache (the vectors the ``index`` run saved)."""
    from hybrid_retrievers.ingest.folder_models import sparse_encoder

    return sparse_encoder(None, log=print)[0]


def _cache() -> object:
    from hybrid_retrievers.ingest.folder_models import open_embedding_cache

    return open_embedding_cache(print)


def _mcp_latency(idx: Path, queries: list[str]) -> float:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(command=sys.executable, env=ENV,
                                   args=["-m", "hybrid_retrievers", "serve", str(idx)])
    times: list[float] = []

    async def run() -> None:
        async with Client(server, read_timeout_seconds=120) as client:
            await client.call_tool("search", {"query": "warm", "k": 10})
            for q in queries:
                t0 = time.perf_counter()
                result = await client.call_tool("search", {"query": q[:2000], "k": 10})
                times.append(time.perf_counter() - t0)
                assert not result.is_error, result

    anyio.run(run)
    return statistics.median(times) * 1000


if __name__ == "__main__":
    main()
