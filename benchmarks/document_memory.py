"""Memory of the stored documents: one measurement per process, before/after `DocColumns`.

Two measurements (run each in its own process; run it with another checkout first on
``PYTHONPATH`` for the "before" figure):

* ``traced``: the set-up of ``aesthetics-r4.md`` §1.7. `FusionSearcher.hybrid` over
  20,000 synthetic documents of 30 words with 3 metadata keys, with the hashing dense and
  sparse models; ``tracemalloc`` of the build, split into the three legs' index arrays
  (``nbytes``) and everything else (documents, vocabularies; and, unless ``--warm``, the
  modules the first build imports, as in §1.7). The texts are the caller's and are not
  counted.
* ``rss``: a `BM25Index` over N synthetic documents (the generator of
  ``bm25_speed.py``: Zipf over 50,000 pseudo-words, ~60 words a document), warmed first
  on 2,000 documents; the corpus is in memory before the build; RSS after the build
  minus before (also after ``malloc_trim``), and the process's peak RSS.
* ``load``: RSS growth of `BM25Index.load` (``--mmap``: memory-mapped) of such an index,
  saved by a first run.

    python benchmarks/document_memory.py traced [--warm]
    python benchmarks/document_memory.py rss --docs 1000000
    python benchmarks/document_memory.py load [--mmap]   # the first run saves the index
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import random
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

MIB = 1024 * 1024


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def traced(n_docs: int, warm: bool) -> None:
    from hybrid_retrievers import FusionSearcher
    from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder

    rng = random.Random(0)
    words = [f"word{i}" for i in range(5000)]
    texts = [" ".join(rng.choice(words) for _ in range(30)) for _ in range(n_docs)]
    metas = [{"source": f"s{i % 17}", "year": 1990 + i % 30, "lang": ("en", "fr")[i % 2]}
             for i in range(n_docs)]
    dense, sparse = HashingEmbedder(dimension=64), HashingSparseEmbedder()
    if warm:  # modules imported on first use are then not counted
        FusionSearcher.hybrid(texts[:50], dense, metadatas=metas[:50], sparse=sparse)
    gc.collect()
    tracemalloc.start()
    hybrid = FusionSearcher.hybrid(texts, dense, metadatas=metas, sparse=sparse)
    gc.collect()
    total, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    arrays = sum(leg.nbytes() for leg in hybrid.searchers)
    legs = hybrid.searchers
    shared = legs[0].docs[0] is legs[1].docs[0] or legs[0].docs is legs[1].docs
    print(f"traced ({'warm' if warm else 'cold: first use imports modules'}), {n_docs:,} "
          f"documents, {len(legs)} legs: all {total / 1e6:.1f} MB, "
          f"index arrays {arrays / 1e6:.1f} MB, everything else {(total - arrays) / 1e6:.1f} MB "
          f"({(total - arrays) / n_docs:.0f} B/document); legs share documents: {shared}")


def rss(n_docs: int) -> None:
    from bm25_speed import pseudo_words, synthetic_corpus

    from hybrid_retrievers import Analyzer, BM25Index

    vocabulary = pseudo_words(50_000, set(), np.random.default_rng(1))
    analyzer = Analyzer(stopwords=None, stemmer=None)
    warm = synthetic_corpus(2000, vocabulary)
    BM25Index.from_texts(warm.texts, ids=warm.ids, analyzer=analyzer).search("a b", k=10)
    corpus = synthetic_corpus(n_docs, vocabulary)
    del warm
    gc.collect()
    trim()
    before = rss_bytes()
    start = time.perf_counter()
    index = BM25Index.from_texts(corpus.texts, ids=corpus.ids, analyzer=analyzer)
    seconds = time.perf_counter() - start
    gc.collect()
    after = rss_bytes()
    trim()
    trimmed = rss_bytes()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    index.search(corpus.texts[0].split()[0], k=10)
    print(f"rss, BM25 over {corpus.name} ({corpus.note}): build {seconds:.1f} s, growth "
          f"{(after - before) / MIB:.0f} MiB, after malloc_trim {(trimmed - before) / MIB:.0f} "
          f"MiB, process peak {peak / MIB:.0f} MiB, index arrays {index.nbytes() / MIB:.0f} MiB")


def load(n_docs: int, folder: Path, mmap: bool) -> None:
    """RSS growth of loading a saved BM25 index (saved first, by this process, if absent)."""
    from hybrid_retrievers import Analyzer, BM25Index

    if not folder.exists():
        from bm25_speed import pseudo_words, synthetic_corpus

        vocabulary = pseudo_words(50_000, set(), np.random.default_rng(1))
        corpus = synthetic_corpus(n_docs, vocabulary)
        BM25Index.from_texts(corpus.texts, ids=corpus.ids,
                             analyzer=Analyzer(stopwords=None, stemmer=None)).save(folder)
        print(f"saved {corpus.name} to {folder}; run again to measure the load")
        return
    BM25Index.from_texts(["warm up the imports", "and the kernels"]).search("warm", k=1)
    gc.collect()
    trim()
    before = rss_bytes()
    start = time.perf_counter()
    index = BM25Index.load(folder, mmap=mmap)
    seconds = time.perf_counter() - start
    hits = index.search("a b c", k=10)
    gc.collect()
    after = rss_bytes()
    print(f"load{' (mmap)' if mmap else ''} of {len(index):,} documents: {seconds:.2f} s, RSS "
          f"growth {(after - before) / MIB:.0f} MiB ({len(hits)} hits after one query)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["traced", "rss", "load"])
    parser.add_argument("--docs", type=int, default=None,
                        help="documents (traced: 20,000; rss: 1,000,000)")
    parser.add_argument("--warm", action="store_true",
                        help="traced: build a small hybrid first (imports not counted)")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/document_memory_index"),
                        help="load: where the index is saved (the first run saves it)")
    parser.add_argument("--mmap", action="store_true", help="load: memory-map the arrays")
    args = parser.parse_args()
    import hybrid_retrievers

    print(f"hybrid_retrievers from {Path(hybrid_retrievers.__file__).parent}")
    if args.what == "traced":
        traced(args.docs or 20_000, args.warm)
    elif args.what == "rss":
        rss(args.docs or 1_000_000)
    else:
        load(args.docs or 1_000_000, args.folder, args.mmap)


if __name__ == "__main__":
    main()
