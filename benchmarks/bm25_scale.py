"""BM25 at scale: ours built from a stream of 10M documents, saved, memory-mapped, queried.

Usage::

    python benchmarks/bm25_scale.py [--size 10000000] [--engines ours,bm25s,tantivy]
                                    [--fallback 5000000,3000000,2000000] [--limit-gib 20]

The documents are `bm25_speed.py`'s synthetic corpus (Zipf over real and pseudo words,
log-normal lengths), generated in batches of 100,000 as the build consumes them, so no
list of the corpus's texts exists beside the index. Each engine runs in its own process,
watched by this one: past ``--limit-gib`` of resident memory (or with less than 1 GiB
left on the machine) it is stopped and the next smaller size of ``--fallback`` is tried.

* ours: ``BM25Index.from_texts`` over the stream (texts and ids generators: the index
  keeps them as its documents, encoded batch by batch into UTF-8 buffers, no Python
  string per document), the score cache and kernel metadata built, ``save``; then, in a
  fresh process, ``load(mmap=True)`` and the queries.
* bm25s (numba backend) and tantivy (one indexing thread, in RAM): built from the same
  stream (bm25s tokenises a list of all texts), queried in the building process.

Queries: 399 of 3-6 terms drawn from the corpus's own Zipf distribution (seeded; not
stopwords), top 10, each timed alone after 5 warm-up queries; median and p95. Build
time excludes the time spent generating texts (measured inside the stream). Peak RSS
is the process's ``VmHWM``. The load average is reported: the machine is shared.
Results are printed and written to ``benchmarks/results/bm25_scale.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    markdown_table,
    median,
    percentile,
    quiet_third_party,
    write_results,
)
from bm25_memory import disk_bytes, engine_of, proc_status  # noqa: E402

BATCH = 100_000
N_QUERIES = 399
K = 10


class Stream:
    """`bm25_speed.synthetic_corpus`'s distribution, generated ``BATCH`` documents at a time.

    ``seconds`` is the time spent generating, so builds can be timed without it.
    """

    def __init__(self, n_docs: int, data_dir: Path) -> None:
        import numpy as np
        from bm25_speed import (DOC_LENGTH_SIGMA, MEAN_DOC_WORDS, SEED, VOCAB_TYPES,
                                ZIPF_EXPONENT, ZIPF_SHIFT, pseudo_words, real_vocabulary)

        real = real_vocabulary(data_dir)
        self.vocabulary = real + pseudo_words(max(0, VOCAB_TYPES - len(real)), set(real),
                                              np.random.default_rng(SEED))
        ranks = np.arange(1, len(self.vocabulary) + 1, dtype=np.float64)
        self.cdf = np.cumsum(1.0 / (ranks + ZIPF_SHIFT) ** ZIPF_EXPONENT)
        self.cdf /= self.cdf[-1]
        self.mu = math.log(MEAN_DOC_WORDS) - DOC_LENGTH_SIGMA ** 2 / 2
        self.sigma = DOC_LENGTH_SIGMA
        self.seed = SEED + n_docs
        self.n_docs = n_docs
        self.seconds = 0.0

    def texts(self) -> Iterator[str]:
        import numpy as np

        join, get = " ".join, self.vocabulary.__getitem__
        for b, start in enumerate(range(0, self.n_docs, BATCH)):
            t = time.perf_counter()
            rng = np.random.default_rng([self.seed, b])
            n = min(BATCH, self.n_docs - start)
            lengths = np.maximum(1, np.rint(rng.lognormal(self.mu, self.sigma, size=n)))
            bounds = np.concatenate([[0], np.cumsum(lengths.astype(np.int64))])
            words = np.searchsorted(self.cdf, rng.random(int(bounds[-1])), side="right")
            batch = [join(map(get, words[bounds[i]:bounds[i + 1]].tolist())) for i in range(n)]
            self.seconds += time.perf_counter() - t
            yield from batch

    def ids(self) -> Iterator[str]:
        return (f"d{i}" for i in range(self.n_docs))

    def queries(self, stop: list[str]) -> list[str]:
        import numpy as np

        rng = np.random.default_rng(self.seed + 1)
        stopset, out = set(stop), []
        while len(out) < N_QUERIES:
            words = [self.vocabulary[i] for i in np.searchsorted(
                self.cdf, rng.random(int(rng.integers(3, 7))), side="right")]
            if not stopset & set(words):
                out.append(" ".join(words))
        return out


def timed_queries(engine: Any, built: Any, queries: list[str]) -> dict[str, float]:
    for q in queries[:5]:
        engine.search(built, q)
    times = []
    for q in queries:
        t = time.perf_counter()
        engine.search(built, q)
        times.append(time.perf_counter() - t)
    return {"median_ms": median(times) * 1e3, "p95_ms": percentile(times, 95) * 1e3}


def child_build(name: str, size: int, data_dir: Path, save_to: str | None) -> dict[str, Any]:
    quiet_third_party()
    from bm25_speed import stopword_list

    engine = engine_of(name)
    stream = Stream(size, data_dir)
    queries = stream.queries(stopword_list())
    t = time.perf_counter()
    texts, ids = stream.texts(), stream.ids()
    if name == "bm25s":  # its tokenizer and id map take lists
        texts, ids = list(texts), list(ids)
    built = engine.build(texts, ids)
    del texts, ids
    out: dict[str, Any] = {"engine": engine.name, "size": size,
                           "build_s": time.perf_counter() - t - stream.seconds,
                           "generate_s": stream.seconds}
    gc.collect()
    out["rss_built"] = proc_status("VmRSS")
    if name == "ours":
        t = time.perf_counter()
        built.save(save_to)
        out["save_s"] = time.perf_counter() - t
        out["disk"] = disk_bytes(Path(save_to))
    else:
        out.update(timed_queries(engine, built, queries))
    out["peak"] = proc_status("VmHWM")
    return out


def child_load(path: str, size: int, data_dir: Path) -> dict[str, Any]:
    quiet_third_party()
    from bm25_speed import stopword_list

    from hybrid_retrievers import BM25Index

    engine = engine_of("ours")
    queries = Stream(size, data_dir).queries(stopword_list())
    gc.collect()
    before = proc_status("VmRSS")
    t = time.perf_counter()
    index = BM25Index.load(path, mmap=True)
    out: dict[str, Any] = {"load_s": time.perf_counter() - t}
    out["load_growth"] = proc_status("VmRSS") - before
    out.update(timed_queries(engine, index, queries))
    out["query_growth"] = proc_status("VmRSS") - before
    out["peak"] = proc_status("VmHWM")
    return out


def watched(args: list[str], limit: int) -> dict[str, Any]:
    """Run this script as a child; stop it past ``limit`` bytes of RSS or near the
    machine's end of memory."""
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    reason = ""
    while proc.poll() is None:
        time.sleep(1.0)
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            rss = int(next(line for line in status.splitlines()
                           if line.startswith("VmRSS:")).split()[1]) * 1024
            meminfo = Path("/proc/meminfo").read_text()
            available = int(next(line for line in meminfo.splitlines()
                                 if line.startswith("MemAvailable:")).split()[1]) * 1024
        except (OSError, StopIteration):
            continue
        if rss > limit or available < (1 << 30):
            reason = (f"stopped at {rss / 2**30:.1f} GiB RSS "
                      f"({available / 2**30:.1f} GiB left on the machine)")
            proc.kill()
    stdout, stderr = proc.communicate()
    if reason:
        return {"error": reason}
    if proc.returncode != 0:
        sys.stderr.write(stderr[-4000:])
        return {"error": f"exit {proc.returncode}"}
    return json.loads(stdout.strip().splitlines()[-1])


def gib(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--engines", default="ours,bm25s,tantivy")
    parser.add_argument("--fallback", default="5000000,3000000,2000000",
                        help="smaller sizes tried, in order, when an engine goes past the limit")
    parser.add_argument("--limit-gib", type=float, default=20.0)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--child")
    parser.add_argument("--load")
    parser.add_argument("--save-to")
    parser.add_argument("--results", default="bm25_scale",
                        help="results file name under benchmarks/results (default bm25_scale)")
    args = parser.parse_args(argv)
    if args.load:
        print(json.dumps(child_load(args.load, args.size, args.data_dir)))
        return 0
    if args.child:
        print(json.dumps(child_build(args.child, args.size, args.data_dir, args.save_to)))
        return 0

    limit = int(args.limit_gib * 2**30)
    sizes = [args.size] + [int(s) for s in args.fallback.split(",") if s.strip()]
    rows, notes = [], []
    tmp = Path(tempfile.mkdtemp(prefix="bm25_scale_", dir=os.environ.get("BM25_SCALE_DIR")))
    try:
        for name in [e.strip() for e in args.engines.split(",") if e.strip()]:
            for size in sizes:
                saved = tmp / "ours"
                child = ["--child", name, "--size", str(size), "--data-dir", str(args.data_dir)]
                if name == "ours":
                    child += ["--save-to", str(saved)]
                r = watched(child, limit)
                print(f"  {name} @ {size:,}: {r}", file=sys.stderr, flush=True)
                if "error" in r:
                    notes.append(f"- {name} at {size:,} documents: {r['error']}")
                    shutil.rmtree(saved, ignore_errors=True)
                    continue
                peak = r["peak"]
                if name == "ours":
                    load = watched(["--load", str(saved), "--size", str(size),
                                    "--data-dir", str(args.data_dir)], limit)
                    print(f"  {name} load: {load}", file=sys.stderr, flush=True)
                    r.update({k: v for k, v in load.items() if k != "peak"})
                    r["load_peak"] = load.get("peak")
                    shutil.rmtree(saved, ignore_errors=True)
                rows.append([r["engine"], f"{size:,}", f"{r['build_s']:.0f}", gib(peak),
                             gib(r.get("disk")), f"{r['load_s']:.1f}" if "load_s" in r else
                             "n/a", gib(r.get("load_growth")), gib(r.get("load_peak")),
                             f"{r['median_ms']:.2f}" if "median_ms" in r else "n/a",
                             f"{r['p95_ms']:.2f}" if "p95_ms" in r else "n/a"])
                break
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    headers = ["engine", "documents", "build (s)", "build peak RSS (GiB)", "on disk (GiB)",
               "mmap load (s)", "RSS after load (GiB)", "load process peak (GiB)",
               "query median (ms)", "query p95 (ms)"]
    load_avg = os.getloadavg()
    text = "\n".join([
        "# BM25 at scale: streamed build, save, mmap load, queries", "",
        f"Synthetic corpus of `bm25_speed.py` generated in batches of {BATCH:,}; each "
        f"engine in its own process, stopped past {args.limit_gib:g} GiB. Queries: "
        f"{N_QUERIES} of 3-6 terms from the corpus's Zipf distribution, top {K}, one at a "
        "time. Ours: queried after `load(mmap=True)` in a fresh process; the others in "
        "their building process (in RAM). Build time excludes generating the texts.", "",
        *environment_lines(),
        f"- load average at the end: {load_avg[0]:.2f} {load_avg[1]:.2f} {load_avg[2]:.2f} "
        "(2 cores shared with other work)",
        "", markdown_table(headers, rows), "", *notes, ""])
    print(text)
    path = write_results(args.results, text)
    print(f"(written to {path})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
