"""Save and load times of BM25 and vector indexes (what atomic, fsynced saves cost).

Usage::

    python benchmarks/persistence_speed.py [--docs 100000] [--dim 384] [--repeats 3]

Builds one synthetic BM25 index (Zipf-distributed words, ~60 words per document) and one
vector index of random unit vectors with ``--docs`` documents, then times, in one process,
``save`` (to a fresh path and over an earlier save) and ``load`` (plain, ``mmap=True`` and,
where the installed version has it, ``mmap=True, verify=True``). Median of ``--repeats``
runs. The directory lives under the system temporary folder, so the numbers include that
disk's ``fsync`` cost. Nothing is downloaded; the table is printed.
"""

from __future__ import annotations

import argparse
import inspect
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


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(name: str, index, load, root: Path, repeats: int) -> list[tuple[str, str, float]]:
    rows = []
    counter = iter(range(10**6))

    def save_fresh() -> None:
        index.save(root / f"{name}-fresh-{next(counter)}")

    rows.append((name, "save (new path)", timed(save_fresh, repeats)))
    path = root / f"{name}-main"
    index.save(path)
    rows.append((name, "save (over a save)", timed(lambda: index.save(path), repeats)))
    rows.append((name, "load", timed(lambda: load(path), repeats)))
    rows.append((name, "load mmap", timed(lambda: load(path, mmap=True), repeats)))
    if "verify" in inspect.signature(load).parameters:
        rows.append((name, "load mmap verify", timed(lambda: load(path, mmap=True, verify=True),
                                                      repeats)))
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    rows.append((name, f"bytes on disk (MB)", size / 1e6))
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
    root = Path(tempfile.mkdtemp(prefix="hr-persist-bench-"))
    try:
        rows = bench("bm25", bm25, BM25Index.load, root, args.repeats)
        rows += bench("vector", dense, VectorIndex.load, root, args.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{args.docs} documents, vectors {args.dim}-d; median of {args.repeats} runs\n")
    print("| index | operation | seconds |")
    print("|---|---|---:|")
    for name, op, value in rows:
        print(f"| {name} | {op} | {value:.3f} |")


if __name__ == "__main__":
    main()
