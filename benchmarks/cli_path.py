"""The command line's path against the Python API on Cranfield, and search latency.

1. ``hybrid-retrievers index corpus.jsonl --whole-files`` (a subprocess, as a user runs
   it), then every judged query through the ``search`` command's own loader and searcher
   (`LoadedIndex`), scored with `evaluate`; the same retrievers built with the Python API
   (`BM25Index.from_docs`, `FusionSearcher.hybrid`) are scored beside it. nDCG@10 must be
   equal.
2. Latency per query: ``hybrid-retrievers search`` as a process (what a script pays, model
   load included), and the ``search`` tool of ``hybrid-retrievers serve`` over stdio with
   the MCP SDK's client (the model stays loaded).

Run: ``python benchmarks/cli_path.py [--dense] [--queries 20]`` (``--dense`` adds the dense
and hybrid rows; it encodes Cranfield once, then the embedding cache serves it).
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

from hybrid_retrievers.cli._search import LoadedIndex  # noqa: E402
from hybrid_retrievers.datasets import load_dataset  # noqa: E402
from hybrid_retrievers.evaluation import evaluate  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")])}


class _Leg:
    """One weighting of the CLI's loaded index, as an evaluated searcher."""

    def __init__(self, loaded: LoadedIndex, weights: list[float] | None) -> None:
        self.loaded, self.weights = loaded, weights

    def search(self, query: str, k: int = 10, **_: object) -> list:
        return self.loaded.search(query, k, weights=self.weights)


def cli(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hybrid_retrievers", *args], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dense", action="store_true")
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    ds = load_dataset("cranfield")
    docs = list(ds.corpus.values())
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        corpus.write_text("".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in docs))
        idx = Path(tmp) / "idx"
        flags = [] if args.dense else ["--bm25-only"]
        print(f"index (CLI process): {cli('index', str(corpus), '--out', str(idx), '--whole-files', *flags):.1f} s")
        loaded = LoadedIndex(idx)
        from hybrid_retrievers import BM25Index, FusionSearcher

        retrievers: dict[str, object] = {"cli bm25": _Leg(loaded, [1.0, 0.0][:len(loaded.names)])}
        api: dict[str, object] = {"api bm25": BM25Index.from_docs(docs)}
        if args.dense:
            retrievers["cli dense"] = _Leg(loaded, [0.0, 1.0])
            retrievers["cli hybrid"] = _Leg(loaded, None)
            embedder = loaded.fused.searchers[1].embedder
            hybrid = FusionSearcher.hybrid([d.text for d in docs], embedder, [d.id for d in docs],
                                           [d.metadata for d in docs],
                                           dense={"cache": _cache()})
            api["api dense"], api["api hybrid"] = hybrid.searchers[1], hybrid
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


def _cache() -> object:
    from hybrid_retrievers.cli._build import open_embedding_cache

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
