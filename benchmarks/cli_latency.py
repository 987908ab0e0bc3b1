"""What one command-line ``search`` (and one ``index``) costs in a new process (issue 45).

1. ``--index-from FOLDER``: ``hybrid-retrievers index FOLDER --out OUT`` with every leg the
   machine has (BM25, all-MiniLM-L6-v2 dense, splade-tiny sparse), its wall time and peak
   resident memory (the child's ``ru_maxrss``), with a fresh embedding cache so every
   vector is encoded.
2. ``hybrid-retrievers search OUT QUERY`` as a new process, ``--repeat`` times per weight
   setting: BM25 alone (``--weights dense=0,sparse=0``), BM25 + sparse, and all legs.
   Each row gives the median wall time, the peak memory, and what the process imported
   and loaded (the search's own note on stderr).
3. The import costs behind it, each in a new process: the package's CLI, torch,
   sentence-transformers, and the torch-free pair onnxruntime + tokenizers.

``--code PATH`` runs another checkout's package (e.g. ``git archive`` of an older commit
unpacked in /tmp); ``--before PATH`` times that checkout too, alternating its runs with
``--code``'s (before, after, before, after...) so both see the same load, and prints both
(a search after ``index`` exported the query encoders runs them on ONNX Runtime without
importing torch, `hybrid_retrievers.models.onnx_query`; an older checkout loads torch).
Timings on a loaded machine are noisy: the load average is printed first and per row.

Run: ``python benchmarks/cli_latency.py --index-from docs/ --out /tmp/idx [--repeat 3]``,
or ``--out EXISTING_INDEX`` alone to time searches only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = {"bm25 only": "dense=0,sparse=0", "bm25 + sparse": "dense=0", "all legs": None}
PROBE = ("import json, runpy, sys; sys.argv = ['hybrid-retrievers', *sys.argv[1:]]\n"
         "try: runpy.run_module('hybrid_retrievers', run_name='__main__')\n"
         "except SystemExit: pass\n"
         "print('imported:', [m for m in ('torch', 'sentence_transformers') "
         "if m in sys.modules], 'from', __import__('hybrid_retrievers').__file__, file=sys.stderr)")


def checkout_env(code: Path) -> dict[str, str]:
    """The environment that runs the package of the checkout ``code``."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(code), str(code / "integrations"), os.environ.get("PYTHONPATH", "")]),
        "HYBRID_RETRIEVERS_CODE": str(code)}


def run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB and stderr of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, cwd=env["HYBRID_RETRIEVERS_CODE"])  # `-c` puts cwd first
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    err = child.stderr.read() if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args[:6])} failed:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the index folder")
    parser.add_argument("--index-from", type=Path, help="index this folder into --out first")
    parser.add_argument("--query", default="how do I serve the index over MCP")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to run")
    parser.add_argument("--before", type=Path, help="another checkout, timed alternately")
    args = parser.parse_args()
    env = checkout_env(args.code)
    codes = {"before": checkout_env(args.before), "after": env} if args.before else {"": env}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; code {args.code}"
          + (f", before: {args.before}" if args.before else ""))
    if args.index_from is not None:
        with tempfile.TemporaryDirectory() as cache:
            wall, rss, _ = run([sys.executable, "-m", "hybrid_retrievers", "index",
                                str(args.index_from), "--out", str(args.out), "--rebuild"],
                               {**env, "HYBRID_RETRIEVERS_CACHE_DIR": cache})
        print(f"index {args.index_from}: {wall:.1f} s, peak {rss:,.0f} MB")
    print("| search | code | median wall s | peak MB | load average | imported / loaded |\n"
          "|---|---|---:|---:|---:|---|")
    for label, weights in WEIGHTS.items():
        walls: dict[str, list[float]] = {name: [] for name in codes}
        rss = dict.fromkeys(codes, 0.0)
        note = dict.fromkeys(codes, "")
        loads = []
        for _ in range(args.repeat):
            for name, code_env in codes.items():  # alternating: the same load for both
                cmd = [sys.executable, "-c", PROBE, "search", str(args.out), args.query,
                       "-k", "3"]
                wall, peak, err = run(cmd + (["--weights", weights] if weights else []),
                                      code_env)
                walls[name].append(wall)
                rss[name] = max(rss[name], peak)
                loads.append(os.getloadavg()[0])
                note[name] = " ".join(line.strip() for line in err.splitlines()
                                      if line.startswith(("imported:", "(loading")))
        for name in codes:
            print(f"| {label} | {name} | {statistics.median(walls[name]):.2f} | "
                  f"{rss[name]:,.0f} | {statistics.mean(loads):.1f} | {note[name]} |")
    print("\n| import in a new process | wall s |\n|---|---:|")
    for module in ("hybrid_retrievers.cli", "torch", "sentence_transformers",
                   "onnxruntime, tokenizers"):
        walls = [run([sys.executable, "-c", f"import {module}"], env)[0]
                 for _ in range(args.repeat)]
        print(f"| {module} | {statistics.median(walls):.2f} |")


if __name__ == "__main__":
    main()
