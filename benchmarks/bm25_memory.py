"""BM25 memory, one process per engine: ours, bm25s (numba backend) and tantivy.

Usage::

    python benchmarks/bm25_memory.py [--size 1000000] [--engines ours,bm25s,tantivy]

Each engine runs in its own subprocess, because an engine measured after another in
the same process reuses memory the first one freed (which once made ours look twice
bm25s's size). In that process: warm up (imports, numba kernels, tantivy's library) on
a small corpus, generate the synthetic corpus of `bm25_speed.py` (Zipf over real and
pseudo words, log-normal lengths), record the resident set size (RSS, ``VmRSS``),
reset the peak (``/proc/self/clear_refs``), build, and record:

* growth: RSS after the build (and a ``gc.collect()``) minus RSS before it: what the
  built index keeps, the corpus texts and ids (held before the build) not counted;
* build peak: the highest RSS during the build (``VmHWM``) minus RSS before it;
* process peak: the process's highest RSS, corpus and imports included.

For ours also: a breakdown of the growth (index arrays by ``nbytes``; the score cache
with the kernels' metadata; the document table; an estimate of the
vocabulary dict; the rest is allocator slack and what the estimates miss), then
``save`` (its time and size on disk, of which the saved score cache's ``score_*.npy``)
and, in a fresh process, ``load(mmap=True)``: RSS growth after the load, after the first
query and after 100 queries (which page in the postings they read and the saved score
cache's arrays of their terms; without a saved cache the first query read every posting
to build it).

The table is printed and written to ``benchmarks/results/bm25_memory.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    fmt_bytes,
    load_collection,
    markdown_table,
    quiet_third_party,
    write_results,
)

WARM_DOCS = 10_000
LOAD_QUERIES = 100
ENGINES = ("ours", "bm25s", "tantivy")


# ---------------------------------------------------------------------------- /proc


def proc_status(field: str) -> int:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_peak() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux ``clear_refs`` 5); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def rss() -> int:
    gc.collect()
    return proc_status("VmRSS")


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# ---------------------------------------------------------------------------- children


def corpus_and_queries(size: int, data_dir: Path) -> tuple[list[str], list[str], list[str]]:
    """The `bm25_speed.py` synthetic corpus of ``size`` documents, its ids and the queries."""
    import numpy as np
    from bm25_speed import (SEED, VOCAB_TYPES, normalise, pseudo_words, real_vocabulary,
                            synthetic_corpus)

    real = real_vocabulary(data_dir)
    vocabulary = real + pseudo_words(max(0, VOCAB_TYPES - len(real)), set(real),
                                     np.random.default_rng(SEED))
    corpus = synthetic_corpus(size, vocabulary)
    return corpus.texts, corpus.ids, cranfield_queries(data_dir)


def cranfield_queries(data_dir: Path) -> list[str]:
    from bm25_speed import normalise

    cran = load_collection("cranfield", data_dir)
    assert cran is not None
    return [normalise(q) for q in cran.dataset.queries.values()]


def engine_of(name: str) -> Any:
    from bm25_speed import bm25s_engine, ours_engine, stopword_list, tantivy_engine

    stop = stopword_list()
    if name == "ours":
        return ours_engine(stop)
    if name == "bm25s":
        return bm25s_engine(stop, "numba")
    if name == "tantivy":
        return tantivy_engine(stop)
    raise ValueError(f"unknown engine {name!r}; choose from {ENGINES}")


def warm(engine: Any, data_dir: Path) -> None:
    """Imports, compiled kernels and library code loaded on a small corpus, then dropped."""
    texts, ids, queries = corpus_and_queries(WARM_DOCS, data_dir)
    built = engine.build(texts, ids)
    engine.prepare(built, queries)
    for q in queries[:20]:
        engine.search(built, q)
    del built, texts, ids
    gc.collect()


def ours_breakdown(index: Any) -> dict[str, int]:
    """Where our growth goes: index arrays, score cache, documents and vocabulary (estimates
    by ``sys.getsizeof``; the id and text strings are the corpus's own, not counted)."""
    from hybrid_retrievers.inverted import kernels

    st = index._state  # private: read only to size its parts
    cache = index._cache(st)
    extra = sum(held.nbytes() for held in (cache.peek(kernels.BlockMax),
                                           cache.peek(kernels.NormCodes)) if held is not None)
    docs = getattr(st, "docs", None)
    doc_bytes = 0
    if isinstance(docs, list):
        doc_bytes = sys.getsizeof(docs) + sys.getsizeof(st.positions)
        doc_bytes += sum(sys.getsizeof(d) for d in docs)
    elif hasattr(docs, "nbytes"):  # DocColumns: id/metadata buffers, id lookup, text list
        doc_bytes = docs.nbytes() + 8 * len(docs)
    vocab = sys.getsizeof(st.vocab) + sum(sys.getsizeof(t) for t in st.vocab)
    return {"postings": int(st.nbytes()), "score_cache": int(cache.nbytes() + extra),
            "documents": int(doc_bytes), "vocabulary": int(vocab),
            "n_postings": int(st.post_docs.size), "heap_free": heap_free()}


def heap_free() -> int | None:
    """Free bytes inside glibc's heap (``mallinfo2``): slack, resident unless trimmed."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                    "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):  # not glibc 2.33+
        return None
    mallinfo2.restype = MallInfo2
    return int(mallinfo2().fordblks)


def child_build(name: str, size: int, data_dir: Path, save_to: str | None) -> dict[str, Any]:
    quiet_third_party()
    engine = engine_of(name)
    warm(engine, data_dir)
    texts, ids, _ = corpus_and_queries(size, data_dir)
    before = rss()
    resettable = reset_peak()
    t = time.perf_counter()
    built = engine.build(texts, ids)
    build_s = time.perf_counter() - t
    peak = proc_status("VmHWM") if resettable else None
    after = rss()
    out: dict[str, Any] = {"engine": engine.name, "build_s": build_s, "growth": after - before,
                           "build_peak": None if peak is None else peak - before,
                           "rss_before": before}
    if name == "ours":
        out["breakdown"] = ours_breakdown(built)
        if save_to:
            t = time.perf_counter()
            built.save(save_to)
            out["save_s"] = time.perf_counter() - t
            out["disk"] = disk_bytes(Path(save_to))
            out["disk_score_cache"] = sum(f.stat().st_size
                                          for f in Path(save_to).rglob("score_*.npy"))
    out["process_peak"] = proc_status("VmHWM") if not resettable else max(
        proc_status("VmHWM"), peak or 0)
    return out


def child_load(path: str, data_dir: Path) -> dict[str, Any]:
    """``load(mmap=True)`` in a fresh process: RSS growth after it and after 100 queries."""
    quiet_third_party()
    from hybrid_retrievers import BM25Index

    queries = cranfield_queries(data_dir)
    engine = engine_of("ours")
    warm(engine, data_dir)
    before = rss()
    reset_peak()
    t = time.perf_counter()
    index = BM25Index.load(path, mmap=True)
    load_s = time.perf_counter() - t
    loaded = rss()
    # Whether the load gave the snapshot its score cache (private: read only to report it;
    # a snapshot without one keeps None and builds it on the first query).
    saved_cache = index._state.derived(lambda: None) is not None
    for n, q in enumerate((queries * 2)[:LOAD_QUERIES]):
        index.search(q, k=10)
        if n == 0:
            first = rss()  # a score cache built now would have read every posting
    queried = rss()
    return {"load_s": load_s, "load_growth": loaded - before, "query_growth": queried - before,
            "first_query_growth": first - before, "saved_cache": saved_cache,
            "load_peak": proc_status("VmHWM") - before}


def run_child(args: list[str]) -> dict[str, Any]:
    """Run this script as a child process; its last stdout line is the JSON result."""
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        return {"error": f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- main


def mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="documents (default 1M)")
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help=f"comma-separated, of {', '.join(ENGINES)}")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--label", default="", help="a note for the results' title")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--save-to", help=argparse.SUPPRESS)
    parser.add_argument("--load", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        print(json.dumps(child_load(args.load, args.data_dir)))
        return 0
    if args.child:
        print(json.dumps(child_build(args.child, args.size, args.data_dir, args.save_to)))
        return 0

    rows, notes = [], []
    tmp = Path(tempfile.mkdtemp(prefix="bm25_memory_"))
    try:
        for name in [e.strip() for e in args.engines.split(",") if e.strip()]:
            child = ["--child", name, "--size", str(args.size), "--data-dir", str(args.data_dir)]
            saved = tmp / "ours"
            if name == "ours":
                child += ["--save-to", str(saved)]
            r = run_child(child)
            print(f"  {name}: {r}", file=sys.stderr, flush=True)
            if "error" in r:
                rows.append([name, *["n/a"] * 8, r["error"]])
                continue
            load: dict[str, Any] = {}
            if name == "ours":
                load = run_child(["--load", str(saved), "--data-dir", str(args.data_dir)])
                print(f"  {name} load: {load}", file=sys.stderr, flush=True)
                b = r["breakdown"]
                rest = r["growth"] - b["postings"] - b["score_cache"] - b["documents"] \
                    - b["vocabulary"]
                notes.append(
                    f"- ours, growth by part: postings arrays {mib(b['postings'])} MiB "
                    f"({b['n_postings'] / 1e6:.1f}M postings, "
                    f"{b['postings'] / max(b['n_postings'], 1):.2f} B each), score cache and "
                    f"kernel metadata {mib(b['score_cache'])}, document table "
                    f"{mib(b['documents'])}, vocabulary dict (estimate) {mib(b['vocabulary'])}, "
                    f"the rest {mib(rest)} MiB (free in the whole process's C heap after it: "
                    f"{mib(b.get('heap_free'))}).")
                notes.append(
                    f"- ours, save {r['save_s']:.1f} s, of the {mib(r['disk'])} MiB on disk "
                    f"{mib(r['disk_score_cache'])} are the saved score cache (``score_*.npy``); "
                    f"mmap load {load.get('load_s', float('nan')):.2f} s, "
                    f"{'with' if load.get('saved_cache') else 'without'} the saved cache.")
            rows.append([r["engine"], f"{r['build_s']:.1f}", mib(r["growth"]),
                         mib(r["build_peak"]), mib(r["process_peak"]),
                         mib(r.get("disk")),
                         mib(load.get("load_growth")) if load else "n/a",
                         mib(load.get("first_query_growth")) if load else "n/a",
                         mib(load.get("query_growth")) if load else "n/a", ""])
            shutil.rmtree(saved, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    headers = ["engine", "build (s)", "RSS growth (MiB)", "build peak over start (MiB)",
               "process peak (MiB)", "on disk (MiB)", "mmap load growth (MiB)",
               "after 1 query (MiB)",
               f"after {LOAD_QUERIES} queries (MiB)", "note"]
    load_avg = os.getloadavg()
    text = "\n".join([
        f"# BM25 memory at {args.size:,} documents, one process per engine"
        + (f" ({args.label})" if args.label else ""), "",
        "Each engine in its own process, warmed on 10,000 documents first; the corpus "
        "(texts and ids) already in memory. Growth: RSS after the build minus before. "
        "Build peak: highest RSS during the build minus RSS before it. Process peak: "
        "the process's highest RSS (corpus and imports included). mmap load: ours saved, "
        "then `BM25Index.load(mmap=True)` in a fresh warmed process.", "",
        *environment_lines(),
        f"- load average at the end: {load_avg[0]:.2f} {load_avg[1]:.2f} {load_avg[2]:.2f}",
        "", markdown_table(headers, rows), "", *notes, ""])
    print(text)
    path = write_results(f"bm25_memory_{args.size}", text)
    print(f"(written to {path})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
