"""BM25 query latency of two or more checkouts, interleaved on one saved index.

Usage::

    python benchmarks/bm25_query_compare.py DIR --checkout before=/tmp/base \\
        --checkout after=. [--passes 6]

``DIR`` is an index saved by ``bm25_query_profile.py prepare`` (its queries beside it).
Each checkout gets one worker process (``PYTHONPATH`` set to it) that loads the index
once and warms up; the workers then take turns, one pass at a time, in alternating
order (A B, B A, ...), so a load burst on a shared machine hits both alike. A pass
times every query once with ``search(q, k=10)`` (tokenising included), then the whole
list once with ``search_many``. The hits of every checkout are compared (ids and
float32 scores, in order): the script fails if they differ. Printed: per checkout
the median and p95 over all timed queries, the median of the per-pass medians, the
``search_many`` throughput (median pass), and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

K = 10


def worker(directory: str) -> None:
    """Serve passes over stdin/stdout: ``single``, ``many``, ``hits`` or ``quit``."""
    import hybrid_retrievers
    from hybrid_retrievers import BM25Index

    queries = json.loads(Path(f"{directory}.queries.json").read_text())
    index = BM25Index.load(directory)
    for q in queries:  # compiled kernels loaded, their metadata built, caches warm
        index.search(q, k=K)
    index.search_many(queries, k=K)
    print(json.dumps({"ready": hybrid_retrievers.__file__}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "single":
            times = []
            for q in queries:
                t = time.perf_counter()
                index.search(q, k=K)
                times.append(time.perf_counter() - t)
            print(json.dumps(times), flush=True)
        elif command == "many":
            t = time.perf_counter()
            index.search_many(queries, k=K)
            print(json.dumps(time.perf_counter() - t), flush=True)
        elif command == "hits":
            hits = [[(h.id, h.score) for h in index.search(q, k=K)] for q in queries]
            batch = [[(h.id, h.score) for h in hs] for hs in index.search_many(queries, k=K)]
            print(json.dumps([hits, batch]), flush=True)
        else:
            return


def _ask(proc: subprocess.Popen, command: str) -> object:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def compare(directory: str, checkouts: list[tuple[str, str]], passes: int) -> int:
    load_before = os.getloadavg()
    procs = {}
    for name, path in checkouts:
        env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()))
        procs[name] = subprocess.Popen(
            [sys.executable, __file__, "--worker", directory], env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for name, proc in procs.items():
        assert proc.stdout is not None
        print(f"{name}: {json.loads(proc.stdout.readline())['ready']}", flush=True)
    hits = {name: _ask(proc, "hits") for name, proc in procs.items()}
    first = next(iter(hits.values()))
    same = {name: h == first for name, h in hits.items()}
    singles: dict[str, list[list[float]]] = {name: [] for name in procs}
    many: dict[str, list[float]] = {name: [] for name in procs}
    names = list(procs)
    for i in range(passes):
        for name in names if i % 2 == 0 else names[::-1]:
            singles[name].append(_ask(procs[name], "single"))  # type: ignore[arg-type]
            many[name].append(_ask(procs[name], "many"))  # type: ignore[arg-type]
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        proc.wait()
    load_after = os.getloadavg()
    n_queries = len(singles[names[0]][0])
    print(f"\n{n_queries} queries, top {K}, {passes} passes each, alternating; "
          f"load average before {load_before[0]:.2f} / after {load_after[0]:.2f} "
          f"(1 min), {load_after[1]:.2f} (5 min)\n")
    print("| checkout | median (ms) | p95 (ms) | median of pass medians (ms) | "
          "search_many (queries/s, median pass) | hits equal to the first |")
    print("|---|---:|---:|---:|---:|---|")
    for name in names:
        pooled = sorted(t for p in singles[name] for t in p)
        p95 = pooled[min(len(pooled) - 1, int(round(0.95 * (len(pooled) - 1))))]
        medians = [statistics.median(p) for p in singles[name]]
        print(f"| {name} | {statistics.median(pooled) * 1e3:.3f} | {p95 * 1e3:.3f} | "
              f"{statistics.median(medians) * 1e3:.3f} | "
              f"{n_queries / statistics.median(many[name]):,.0f} | {same[name]} |")
    return 0 if all(same.values()) else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker(argv[1])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--checkout", action="append", required=True,
                        help="NAME=PATH of a source checkout (repeat; two or more)")
    parser.add_argument("--passes", type=int, default=6)
    args = parser.parse_args(argv)
    checkouts = [tuple(c.split("=", 1)) for c in args.checkout]
    return compare(args.directory, checkouts, args.passes)  # type: ignore[arg-type]


if __name__ == "__main__":
    raise SystemExit(main())
