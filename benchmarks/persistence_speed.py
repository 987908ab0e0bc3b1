"""Save and load times of BM25 and vector indexes (what atomic, fsynced saves cost).

Usage::

    python benchmarks/persistence_speed.py [--docs 100000] [--dim 384] [--repeats 3]

Builds one synthetic BM25 index (Zipf-distributed words, ~60 words per document) and one
vector index of random unit vectors with ``--docs`` documents, then times, in one process,
``save`` (to a fresh path and over an earlier save) and ``load`` (plain, ``mmap=True`` and,
where the installed version has it, ``mmap=True, verify=True``). Median of ``--repeats``
runs for the wall time, minimum for the CPU time (on a shared machine the CPU time is the
steadier figure; the wall time includes waiting for the disk). The directory lives under
the system temporary folder, so wall times include that disk's ``fsync`` cost, which is
also reported on its own (time spent inside ``os.fsync`` per save). Nothing is downloaded;
the table is printed.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from hybrid_retrievers import BM25Index, VectorIndex


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    ranks = np.arange(1, vocab.size + 1)
    p = 1.0 / (ranks + 2.7)
    p /= p.sum()
    lengths = rng.integers(20, 100, size=n)
    words = rng.choice(vocab, size=int(lengths.sum()), p=p)
    out, pos = [], 0
    for length in lengths:
        out.append(" ".join(words[pos : pos + length]))
        pos += length
    return out


_FSYNC = [0.0]


def _timed_fsync(real):
    def fsync(fd: int) -> None:
        t0 = time.perf_counter()
        real(fd)
        _FSYNC[0] += time.perf_counter() - t0
    return fsync


def timed(fn, repeats: int) -> tuple[float, float]:
    """(median wall seconds, minimum CPU seconds) over ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), min(cpu)


def bench(name: str, index, load, root: Path, repeats: int) -> list[tuple[str, str, str]]:
    rows = []
    counter = iter(range(10**6))

    def save_fresh() -> None:
        index.save(root / f"{name}-fresh-{next(counter)}")

    def row(op: str, fn) -> None:
        _FSYNC[0] = 0.0
        wall, cpu = timed(fn, repeats)
        fsync = f"{_FSYNC[0] / repeats:.3f}" if op.startswith("save") else ""
        rows.append((name, op, f"{wall:.3f} | {cpu:.3f} | {fsync}"))

    row("save (new path)", save_fresh)
    path = root / f"{name}-main"
    index.save(path)
    row("save (over a save)", lambda: index.save(path))
    row("load", lambda: load(path))
    row("load mmap", lambda: load(path, mmap=True))
    if "verify" in inspect.signature(load).parameters:
        row("load mmap verify", lambda: load(path, mmap=True, verify=True))
    manifest = json.loads((path / "manifest.json").read_text())
    current = path / manifest["current"] if "current" in manifest else path
    size = sum(f.stat().st_size for f in current.rglob("*") if f.is_file())
    rows.append((name, "size of one saved version (MB)", f"{size / 1e6:.1f} | |"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    texts = corpus(args.docs)
    ids = [f"d{i}" for i in range(args.docs)]
    metas = [{"n": i, "group": i % 7} for i in range(args.docs)]
    bm25 = BM25Index.from_texts(texts, ids=ids, metadatas=metas)
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((args.docs, args.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    dense = VectorIndex.from_vectors(vectors, ids=ids, metadatas=metas)
    os.fsync = _timed_fsync(os.fsync)
    root = Path(tempfile.mkdtemp(prefix="hr-persist-bench-"))
    try:
        rows = bench("bm25", bm25, BM25Index.load, root, args.repeats)
        rows += bench("vector", dense, VectorIndex.load, root, args.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{args.docs} documents, vectors {args.dim}-d; {args.repeats} runs each\n")
    print("| index | operation | wall s (median) | CPU s (min) | in fsync s |")
    print("|---|---|---:|---:|---:|")
    for name, op, value in rows:
        print(f"| {name} | {op} | {value} |")


if __name__ == "__main__":
    main()
