"""BM25 speed and memory: our BM25Index side by side with bm25s, tantivy, LangChain and LlamaIndex.

Usage::

    python benchmarks/bm25_speed.py [--sizes 10000,100000,1000000] [--queries 200] [--quick]

Corpora: Cranfield (1400 real abstracts) and synthetic corpora of ``--sizes`` documents.
A synthetic corpus draws words from a Zipf distribution (exponent 1.0, Zipf-Mandelbrot
shift 2.7) over a vocabulary of about 200k types: the real Cranfield + CISI words ranked by
their real frequency, padded with generated pseudo-words; document lengths are log-normal
with a mean of about 60 words. The queries are the real Cranfield queries, so query terms
have realistic frequencies (common words are common, technical words rare).

Every system gets the same tokenisation so the timings compare engines, not analyzers: the
texts and queries are reduced to lowercase ASCII words of two or more letters (so every
tokenizer splits them identically), English stopwords are removed (the 33-word Lucene list,
which both we and bm25s ship), and nothing is stemmed.

Measured per corpus and system, in ONE process and run:

* build: wall time from texts to a searchable index (tokenisation included; for us the
  lazily built score cache is included too).
* latency: single-query wall time (tokenising the query included), top 10; median and p95.
* batch: queries/s over the whole query list, using the system's batch API where it has
  one (``search_many``; ``bm25s.retrieve`` on all queries) and a loop otherwise.
* index arrays: bytes of the numeric index arrays (ours: ``index.nbytes()``; bm25s: its
  ``scores`` arrays) and an estimate of the vocabulary dict (``sys.getsizeof`` of the dict
  and its keys).
* traced memory: ``tracemalloc`` peak during a second, untimed build and what stays
  allocated after it (everything the index object keeps, such as stored documents), for
  corpora up to ``--trace-max`` documents (tracing slows builds by 2-3x).

Nothing is downloaded. The tables are printed and written to
``benchmarks/results/bm25_speed.md``.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import re
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    environment_lines,
    fmt_bytes,
    load_collection,
    markdown_table,
    median,
    percentile,
    quiet_third_party,
    write_results,
)

import numpy as np  # noqa: E402

K = 10
VOCAB_TYPES = 200_000
ZIPF_EXPONENT = 1.0
ZIPF_SHIFT = 2.7
MEAN_DOC_WORDS = 60
DOC_LENGTH_SIGMA = 0.6
SEED = 20240601

_WORDS = re.compile(r"[a-z]{2,}").findall


def normalise(text: str) -> str:
    """Lowercase ASCII words of 2+ letters joined by spaces: every tokenizer agrees on these."""
    return " ".join(_WORDS(text.lower()))


def stopword_list() -> list[str]:
    from hybrid_retrievers.text.stopwords import load_stopwords

    return sorted(load_stopwords("english"))


# ---------------------------------------------------------------------------- corpora


@dataclass
class Corpus:
    name: str
    texts: list[str]
    ids: list[str]
    note: str = ""


def real_vocabulary(data_dir: Path) -> list[str]:
    """Words of Cranfield (+ CISI when present), most frequent first."""
    counts: Counter[str] = Counter()
    for name in ("cranfield", "cisi"):
        collection = load_collection(name, data_dir)
        if collection is None:
            continue
        for doc in collection.dataset.corpus.values():
            counts.update(_WORDS(doc.text.lower()))
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def pseudo_words(n: int, taken: set[str], rng: np.random.Generator) -> list[str]:
    """``n`` distinct pronounceable-ish letter strings (4-12 letters) not in ``taken``."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    # Letter frequencies of English text, so pseudo-words look like words to a tokenizer.
    freq = np.array([8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.2, 0.8, 4.0, 2.4,
                     6.7, 7.5, 1.9, 0.1, 6.0, 6.3, 9.1, 2.8, 1.0, 2.4, 0.2, 2.0, 0.1])
    freq /= freq.sum()
    out: list[str] = []
    seen = set(taken)
    while len(out) < n:
        m = (n - len(out)) * 2
        lengths = rng.integers(4, 13, size=m)
        chars = letters[rng.choice(26, size=int(lengths.sum()), p=freq)]
        pos = 0
        for length in lengths.tolist():
            word = "".join(chars[pos:pos + length])
            pos += length
            if word not in seen:
                seen.add(word)
                out.append(word)
                if len(out) == n:
                    break
    return out


def synthetic_corpus(n_docs: int, vocabulary: list[str]) -> Corpus:
    rng = np.random.default_rng(SEED + n_docs)
    ranks = np.arange(1, len(vocabulary) + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / (ranks + ZIPF_SHIFT) ** ZIPF_EXPONENT)
    cdf /= cdf[-1]
    mu = math.log(MEAN_DOC_WORDS) - DOC_LENGTH_SIGMA ** 2 / 2
    lengths = np.maximum(1, np.rint(rng.lognormal(mu, DOC_LENGTH_SIGMA, size=n_docs))).astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    words = np.searchsorted(cdf, rng.random(int(bounds[-1])), side="right").astype(np.int32)
    texts = []
    join = " ".join
    get = vocabulary.__getitem__
    for i in range(n_docs):
        texts.append(join(map(get, words[bounds[i]:bounds[i + 1]].tolist())))
    ids = [f"d{i}" for i in range(n_docs)]
    return Corpus(f"synthetic {n_docs:,}", texts, ids,
                  f"{int(bounds[-1]) / n_docs:.1f} words/doc, {len(np.unique(words)):,} distinct words used")


# ---------------------------------------------------------------------------- systems


@dataclass
class Engine:
    """One system under test: build it, then search one query or a batch."""

    name: str
    build: Callable[[list[str], list[str]], Any]
    search: Callable[[Any, str], list[str]]
    search_batch: Callable[[Any, list[str]], list[list[str]]]
    array_bytes: Callable[[Any], tuple[int | None, int | None]] = lambda _: (None, None)
    prepare: Callable[[Any, list[str]], None] = lambda _i, _q: None
    batch_note: str = "loop"


def vocab_bytes(vocab: dict[str, Any] | None) -> int | None:
    if vocab is None:
        return None
    return sys.getsizeof(vocab) + sum(sys.getsizeof(k) for k in vocab)


def ours_engine(stop: list[str], kernel: bool = True, n_jobs: int = 1) -> Engine:
    """Our index; ``kernel`` chooses the numba kernels (TAAT / block-max) or the numpy path.

    ``n_jobs`` > 1 tokenises the build in that many worker processes (`BM25Index.from_texts`'s
    ``n_jobs``); queries stay single-threaded.
    """
    from hybrid_retrievers import Analyzer, BM25Index
    from hybrid_retrievers.inverted import kernels

    # "auto": the kernels from Backend.min_docs documents on (numpy below), as by default.
    backend = "auto" if kernel else "numpy"

    def build(texts: list[str], ids: list[str]) -> Any:
        index = BM25Index.from_texts(texts, ids=ids, analyzer=Analyzer(stopwords=stop, stemmer=None),
                                     n_jobs=n_jobs, backend=backend)
        index.nbytes()  # builds the lazy per-posting score cache: part of the build
        st = index._state  # private, read only to build the kernels' metadata here
        if index.backend.uses_kernels(len(st.docs)) and kernels.available():
            # Block-max metadata and TAAT's norm codes (both built lazily, on the first
            # query that needs them) counted as part of the build.
            cache = index._cache(st)
            kernels.block_max(st, cache, index.params, index.backend)
            kernels.norm_codes(st, cache, index.params, index.backend)
        return index

    def search(index: Any, q: str) -> list[str]:
        return [h.doc.id for h in index.search(q, k=K)]

    def search_batch(index: Any, qs: list[str]) -> list[list[str]]:
        return [[h.doc.id for h in hits] for hits in index.search_many(qs, k=K)]

    def prepare(index: Any, qs: list[str]) -> None:
        for q in qs[:5]:  # loads (or JIT-compiles) the numba kernels before timing
            search(index, q)

    def array_bytes(index: Any) -> tuple[int | None, int | None]:
        # The vocabulary dict (index._state.vocab) is private; read only to size it like
        # bm25s's vocab_dict. The kernels' lazily built metadata is kept by the score cache.
        cache = index._cache(index._state)
        extra = sum(held.nbytes() for held in (cache.peek(kernels.BlockMax),
                                               cache.peek(kernels.NormCodes)) if held is not None)
        return index.nbytes() + extra, vocab_bytes(index._state.vocab)

    name = "ours (BM25Index, numba kernels)" if kernel else "ours (BM25Index, numpy path)"
    if n_jobs > 1:
        name = f"{name[:-1]}; build in {n_jobs} processes)"
    return Engine(name, build, search, search_batch, array_bytes, prepare,
                  batch_note="search_many")


def _bm25s_build(stop: list[str], backend: str) -> Callable[[list[str], list[str]], Any]:
    import bm25s

    def build(texts: list[str], ids: list[str]) -> Any:
        tokens = bm25s.tokenize(texts, stopwords=stop, show_progress=False)
        retriever = bm25s.BM25(backend=backend)
        retriever.index(tokens, show_progress=False)
        # bm25s returns row numbers; the id list maps them back, as any caller must do.
        return retriever, np.asarray(ids, dtype=object)

    return build


def bm25s_engine(stop: list[str], backend: str) -> Engine:
    import bm25s

    def tok(qs: list[str]) -> list[list[str]]:
        return bm25s.tokenize(qs, stopwords=stop, return_ids=False, show_progress=False)

    def retrieve(built: Any, qs: list[str]) -> Any:
        r, ids = built
        kw = {"backend_selection": "numba"} if backend == "numba" else {}
        rows, _ = r.retrieve(tok(qs), k=K, show_progress=False, n_threads=0, **kw)
        return ids[rows]

    def search(built: Any, q: str) -> list[str]:
        return retrieve(built, [q])[0].tolist()

    def search_batch(built: Any, qs: list[str]) -> list[list[str]]:
        return retrieve(built, qs).tolist()

    def array_bytes(built: Any) -> tuple[int | None, int | None]:
        r = built[0]
        arrays = sum(v.nbytes for v in r.scores.values() if isinstance(v, np.ndarray))
        return arrays, vocab_bytes(r.vocab_dict)

    def prepare(r: Any, qs: list[str]) -> None:
        retrieve(r, qs[:5])  # JIT-compiles numba kernels (and warms caches) before timing

    name = f"bm25s ({backend} backend)"
    return Engine(name, _bm25s_build(stop, backend), search, search_batch, array_bytes,
                  prepare, batch_note="retrieve(batch)")


def tantivy_engine(stop: list[str], threads: int = 1) -> Engine:
    """Tantivy (Rust, Lucene-style BM25 with k1=1.2, b=0.75), in RAM, ``threads`` indexing threads.

    Its ``default`` tokenizer splits and lowercases exactly like our normalised texts; the
    stopwords are dropped from texts and queries first (inside the timed build), so every
    engine indexes the same tokens.
    """
    import tantivy

    stopset = frozenset(stop)

    def strip(text: str) -> str:
        return " ".join(w for w in text.split() if w not in stopset)

    def build(texts: list[str], ids: list[str]) -> Any:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        sb.add_text_field("body", stored=False, tokenizer_name="default")
        index = tantivy.Index(sb.build())
        writer = index.writer(heap_size=256_000_000, num_threads=threads)
        for doc_id, text in zip(ids, texts):
            writer.add_document(tantivy.Document(id=doc_id, body=strip(text)))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return index, index.searcher()

    def search(built: Any, q: str) -> list[str]:
        index, searcher = built
        terms = strip(q)
        if not terms:
            return []
        hits = searcher.search(index.parse_query(terms, ["body"]), K).hits
        return [searcher.doc(address)["id"][0] for _, address in hits]

    def search_batch(built: Any, qs: list[str]) -> list[list[str]]:
        return [search(built, q) for q in qs]

    name = "tantivy" if threads == 1 else f"tantivy ({threads} indexing threads)"
    return Engine(name, build, search, search_batch)


def langchain_engine(stop: list[str]) -> Engine:
    from langchain_community.retrievers import BM25Retriever

    stopset = frozenset(stop)

    def preprocess(text: str) -> list[str]:
        return [w for w in text.split() if w not in stopset]

    def build(texts: list[str], ids: list[str]) -> Any:
        return BM25Retriever.from_texts(texts, ids=ids, preprocess_func=preprocess, k=K)

    def search(r: Any, q: str) -> list[str]:
        return [d.id for d in r.invoke(q)]

    def search_batch(r: Any, qs: list[str]) -> list[list[str]]:
        return [search(r, q) for q in qs]

    return Engine("LangChain BM25Retriever (rank_bm25)", build, search, search_batch)


def llama_index_engine(stop: list[str]) -> Engine:
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    def build(texts: list[str], ids: list[str]) -> Any:
        nodes = [TextNode(text=t, id_=i) for t, i in zip(texts, ids)]
        return BM25Retriever(nodes=nodes, similarity_top_k=K, skip_stemming=True, language=stop)

    def search(r: Any, q: str) -> list[str]:
        return [n.node.node_id for n in r.retrieve(q)]

    def search_batch(r: Any, qs: list[str]) -> list[list[str]]:
        return [search(r, q) for q in qs]

    def array_bytes(r: Any) -> tuple[int | None, int | None]:
        arrays = sum(v.nbytes for v in r.bm25.scores.values() if isinstance(v, np.ndarray))
        return arrays, vocab_bytes(r.bm25.vocab_dict)

    return Engine("LlamaIndex BM25Retriever (bm25s)", build, search, search_batch, array_bytes)


# ---------------------------------------------------------------------------- measuring


@dataclass
class Result:
    engine: str
    build_s: float | None = None
    lat_median_ms: float | None = None
    lat_p95_ms: float | None = None
    n_latency: int = 0
    batch_qps: float | None = None
    n_batch: int = 0
    arrays: int | None = None
    vocab: int | None = None
    traced_peak: int | None = None
    traced_kept: int | None = None
    note: str = ""
    top_ids: list[list[str]] = field(default_factory=list)


def traced_build(engine: Engine, corpus: Corpus) -> tuple[int, int]:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        obj = engine.build(corpus.texts, corpus.ids)
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del obj
    gc.collect()
    return peak - before, kept - before


def measure(engine: Engine, corpus: Corpus, queries: list[str], n_queries: int,
            trace: bool) -> Result:
    res = Result(engine.name)
    gc.collect()
    t0 = time.perf_counter()
    obj = engine.build(corpus.texts, corpus.ids)
    res.build_s = time.perf_counter() - t0
    engine.prepare(obj, queries)
    qs = queries[:n_queries]
    times = []
    for q in qs:
        t = time.perf_counter()
        engine.search(obj, q)
        times.append(time.perf_counter() - t)
    res.n_latency = len(qs)
    res.lat_median_ms = median(times) * 1e3
    res.lat_p95_ms = percentile(times, 95) * 1e3
    t = time.perf_counter()
    res.top_ids = engine.search_batch(obj, qs)
    res.batch_qps = len(qs) / (time.perf_counter() - t)
    res.n_batch = len(qs)
    res.arrays, res.vocab = engine.array_bytes(obj)
    del obj
    gc.collect()
    if trace:
        res.traced_peak, res.traced_kept = traced_build(engine, corpus)
    return res


def measure_interleaved(engines: list[Engine], corpus: Corpus, queries: list[str],
                        trace: bool) -> dict[str, Result]:
    """`measure` for several engines at once, their latencies timed query by query.

    Every engine is built first; then each query is timed on every engine in turn, so
    load changes on a shared machine hit all engines alike. The order is shuffled
    from query to query (seeded), so each engine follows each other one about equally
    often: what one engine leaves in the caches (a memory-heavy one evicts them) then
    lands on all alike. A fixed rotation put the same predecessor before an engine on
    3 queries in 4. Batches run one engine after another, twice, best kept.
    """
    built, results = {}, {}
    for engine in engines:
        res = results[engine.name] = Result(engine.name)
        gc.collect()
        t0 = time.perf_counter()
        built[engine.name] = engine.build(corpus.texts, corpus.ids)
        res.build_s = time.perf_counter() - t0
        engine.prepare(built[engine.name], queries)
    times: dict[str, list[float]] = {e.name: [] for e in engines}
    rng = random.Random(SEED)
    for q in queries:
        for engine in rng.sample(engines, len(engines)):
            t = time.perf_counter()
            engine.search(built[engine.name], q)
            times[engine.name].append(time.perf_counter() - t)
    for engine in engines:
        res, obj = results[engine.name], built[engine.name]
        res.n_latency = len(queries)
        res.lat_median_ms = median(times[engine.name]) * 1e3
        res.lat_p95_ms = percentile(times[engine.name], 95) * 1e3
        best = float("inf")
        for _ in range(2):
            t = time.perf_counter()
            res.top_ids = engine.search_batch(obj, queries)
            best = min(best, time.perf_counter() - t)
        res.batch_qps = len(queries) / best
        res.n_batch = len(queries)
        res.arrays, res.vocab = engine.array_bytes(obj)
        res.note = "interleaved"
    built.clear()
    gc.collect()
    if trace:
        for engine in engines:
            r = results[engine.name]
            r.traced_peak, r.traced_kept = traced_build(engine, corpus)
    return results


def ms(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.0f}"


def result_row(r: Result) -> list[str]:
    if r.build_s is None:
        return [r.engine, *["n/a"] * 8, r.note]
    total = None if r.arrays is None else r.arrays + (r.vocab or 0)
    return [
        r.engine,
        f"{r.build_s:.2f}",
        ms(r.lat_median_ms),
        ms(r.lat_p95_ms),
        f"{r.batch_qps:,.0f}" if r.batch_qps and r.batch_qps >= 10 else f"{r.batch_qps:.2f}",
        str(r.n_latency),
        fmt_bytes(r.arrays),
        fmt_bytes(total),
        fmt_bytes(r.traced_peak) + " / " + fmt_bytes(r.traced_kept) if r.traced_peak is not None else "n/a",
        r.note,
    ]


HEADERS = ["system", "build (s)", "latency median (ms)", "latency p95 (ms)", "batch (q/s)",
           "queries", "index arrays", "arrays + vocab", "traced build peak / kept", "note"]


def agreement(ours: Result, other: Result) -> float | None:
    """Mean overlap of the top-10 id sets on the queries both ran (sanity: same engine math)."""
    n = min(len(ours.top_ids), len(other.top_ids))
    if not n:
        return None
    return sum(len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(ours.top_ids[:n], other.top_ids[:n])) / n


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"folder holding BEIR folders (default: {DEFAULT_DATA_DIR}); "
                        "the bundled Cranfield is used when absent")
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="comma-separated synthetic corpus sizes (default: 10000,100000,1000000)")
    parser.add_argument("--queries", type=int, default=200,
                        help="queries timed per system (default 200, at most 225 Cranfield queries)")
    parser.add_argument("--langchain-queries", default="20000:all,200000:20,inf:5",
                        help="LangChain query caps as size:cap pairs (default: all up to 20k "
                        "docs, 20 up to 200k, else 5); it scores every document per query term")
    parser.add_argument("--skip-langchain-above", type=int, default=1_000_000,
                        help="skip LangChain for corpora larger than this (default 1000000)")
    parser.add_argument("--skip-llama-index-above", type=int, default=100_000,
                        help="skip LlamaIndex for corpora larger than this (default 100000; it "
                        "is bm25s plus per-node metadata dicts)")
    parser.add_argument("--trace-max", type=int, default=100_000,
                        help="tracemalloc builds only up to this corpus size (default 100000)")
    parser.add_argument("--no-numba", action="store_true", help="skip the bm25s numba backend")
    parser.add_argument("--jobs", type=int, default=1,
                        help="also build ours with this many worker processes and tantivy with "
                        "this many indexing threads (rows added beside the single-threaded ones)")
    parser.add_argument("--quick", action="store_true", help="Cranfield and 10k only")
    parser.add_argument("--engines", default="",
                        help="comma-separated prefixes: run only systems whose name starts with "
                        "one (e.g. 'ours,bm25s'); separate them with '|' instead to use prefixes "
                        "with commas (e.g. 'ours (BM25Index, numba|bm25s (numba'); default all")
    parser.add_argument("--no-cranfield", action="store_true", help="skip the Cranfield corpus")
    parser.add_argument("--interleave", action="store_true",
                        help="build every system of a corpus first and time their queries "
                        "round-robin (fairer on a shared machine; LangChain and LlamaIndex "
                        "still run one after another)")
    args = parser.parse_args(argv)
    quiet_third_party()
    started = time.perf_counter()

    sizes = [10_000] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    caps = []
    for pair in args.langchain_queries.split(","):
        size, cap = pair.split(":")
        caps.append((float(size), None if cap == "all" else int(cap)))

    stop = stopword_list()
    cran = load_collection("cranfield", args.data_dir)
    assert cran is not None
    queries = [normalise(q) for q in cran.dataset.queries.values()][: max(1, args.queries)]

    engines: list[Engine] = [ours_engine(stop), ours_engine(stop, kernel=False),
                             bm25s_engine(stop, "numpy")]
    notes: list[str] = []
    if not _numba_installed():
        notes.append("- ours: numba is not installed, so both 'ours' rows run the numpy path.")
    if not args.no_numba:
        try:
            import numba  # noqa: F401

            engines.append(bm25s_engine(stop, "numba"))
        except ImportError:
            notes.append("- bm25s numba backend skipped: numba is not installed.")
    for factory in (tantivy_engine, langchain_engine, llama_index_engine):
        try:
            engines.append(factory(stop))
        except ImportError as exc:
            notes.append(f"- {factory.__name__} skipped: {exc}")
    if args.jobs > 1:
        engines.insert(1, ours_engine(stop, n_jobs=args.jobs))
        if any(e.name == "tantivy" for e in engines):
            engines.append(tantivy_engine(stop, threads=args.jobs))
        notes.append(f"- Rows naming {args.jobs} processes or threads build in parallel (our "
                     "tokenisation in worker processes, tantivy's indexing threads); every "
                     "query still runs on one thread.")

    if args.engines:
        sep = "|" if "|" in args.engines else ","  # names themselves contain commas
        wanted = [w.strip().lower() for w in args.engines.split(sep) if w.strip()]
        engines = [e for e in engines if any(e.name.lower().startswith(w) for w in wanted)]

    header = [
        "# BM25 speed and memory: hybrid-retrievers vs bm25s, LangChain, LlamaIndex",
        "",
        "Same process, same queries, same tokenisation for every system (lowercase ASCII "
        "words of 2+ letters, the 33 Lucene English stopwords removed, no stemming), top "
        f"{K}. Single-threaded (bm25s `n_threads=0`). Build includes tokenisation. Latency "
        "includes tokenising the query. bm25s numba: kernels JIT-compiled by a warm-up "
        "before timing. Traced memory: tracemalloc during a separate untimed build, "
        f"corpora up to {args.trace_max:,} docs only (n/a above). 'kept' includes stored documents.",
        "",
        *environment_lines(),
        *notes,
        "",
    ]
    print("\n".join(header), flush=True)
    out = list(header)

    vocabulary: list[str] | None = None
    corpora: list[tuple[str, Callable[[], Corpus]]] = []
    if not args.no_cranfield:
        corpora.append(("cranfield", lambda: Corpus(
            f"Cranfield ({cran.source})",
            [normalise(d.text) for d in cran.dataset.corpus.values()],
            list(cran.dataset.corpus), "real abstracts")))
    for n in sizes:
        corpora.append((str(n), lambda n=n: synthetic_corpus(n, vocabulary)))  # type: ignore[arg-type]

    per_size: dict[str, dict[str, Result]] = {}
    for key, make in corpora:
        if key != "cranfield" and vocabulary is None:
            real = real_vocabulary(args.data_dir)
            vocabulary = real + pseudo_words(max(0, VOCAB_TYPES - len(real)), set(real),
                                             np.random.default_rng(SEED))
        t = time.perf_counter()
        corpus = make()
        gen_s = time.perf_counter() - t
        n_docs = len(corpus.texts)
        results: dict[str, Result] = {}
        if args.interleave:
            together = [e for e in engines if not e.name.startswith(("LangChain", "LlamaIndex"))]
            t = time.perf_counter()
            results.update(measure_interleaved(together, corpus, queries, n_docs <= args.trace_max))
            print(f"  {corpus.name}: interleaved {len(together)} systems: "
                  f"{time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
        for engine in engines:
            if engine.name in results:
                continue
            is_lc = engine.name.startswith("LangChain")
            is_li = engine.name.startswith("LlamaIndex")
            if is_lc and n_docs > args.skip_langchain_above:
                results[engine.name] = Result(engine.name, note=f"skipped above {args.skip_langchain_above:,} docs")
                continue
            if is_li and n_docs > args.skip_llama_index_above:
                results[engine.name] = Result(engine.name, note=f"skipped above {args.skip_llama_index_above:,} docs")
                continue
            n_q = len(queries)
            note = ""
            if is_lc:
                cap = next(c for s, c in caps if n_docs <= s)
                if cap is not None and cap < n_q:
                    n_q, note = cap, f"capped at {cap} queries"
            t = time.perf_counter()
            try:
                r = measure(engine, corpus, queries, n_q, trace=n_docs <= args.trace_max)
            except MemoryError:
                r = Result(engine.name, note="MemoryError during build")
            r.note = note or r.note
            results[engine.name] = r
            print(f"  {corpus.name}: {engine.name}: {time.perf_counter() - t:.1f}s",
                  file=sys.stderr, flush=True)
        per_size[key] = results
        ours = results[engines[0].name]
        agree = [f"{name}: {a:.3f}" for name, r in results.items() if name != ours.engine
                 and (a := agreement(ours, r)) is not None]
        title = f"## {corpus.name}: {n_docs:,} docs; {corpus.note}"
        if key != "cranfield":
            title += f" (generated in {gen_s:.1f}s)"
        block = [title, "", markdown_table(HEADERS, [result_row(r) for r in results.values()]), "",
                 "Top-10 overlap with ours (same tokens, same BM25 => ~1.0; ties may differ): "
                 + "; ".join(agree), ""]
        block += targets(results, engines, n_docs)
        print("\n".join(block), flush=True)
        out += block

    block = scaling(per_size, engines, sizes)
    block.append(f"Total benchmark wall time: {time.perf_counter() - started:.0f}s")
    print("\n".join(block), flush=True)
    out += block
    path = write_results("bm25_speed_quick" if args.quick else "bm25_speed", "\n".join(out))
    print(f"(written to {path})", file=sys.stderr)
    return 0


def _numba_installed() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def targets(results: dict[str, Result], engines: list[Engine], n_docs: int) -> list[str]:
    ours = results.get(engines[0].name)
    np_ = results.get("bm25s (numpy backend)")
    if ours is None or np_ is None or ours.build_s is None or np_.build_s is None:
        return []
    lines = ["Targets:"]

    def check(label: str, ok: bool, detail: str) -> None:
        lines.append(f"- {label}: {detail} -> {'met' if ok else 'MISSED'}")

    check("latency <= bm25s numpy", ours.lat_median_ms <= np_.lat_median_ms,  # type: ignore[operator]
          f"median {ms(ours.lat_median_ms)} vs {ms(np_.lat_median_ms)} ms")
    nb = results.get("bm25s (numba backend)")
    if nb is not None and nb.lat_median_ms is not None:
        check("latency <= bm25s numba", ours.lat_median_ms <= nb.lat_median_ms  # type: ignore[operator]
              and ours.lat_p95_ms <= nb.lat_p95_ms,  # type: ignore[operator]
              f"median {ms(ours.lat_median_ms)} vs {ms(nb.lat_median_ms)} ms, "
              f"p95 {ms(ours.lat_p95_ms)} vs {ms(nb.lat_p95_ms)} ms")
    check("batch >= bm25s numpy", ours.batch_qps >= np_.batch_qps,  # type: ignore[operator]
          f"{ours.batch_qps:,.0f} vs {np_.batch_qps:,.0f} q/s")
    check("build within 1.5x of bm25s numpy", ours.build_s <= 1.5 * np_.build_s,
          f"{ours.build_s:.2f} vs {np_.build_s:.2f} s ({ours.build_s / np_.build_s:.2f}x)")
    if ours.arrays is not None and np_.arrays is not None:
        mine, theirs = ours.arrays + (ours.vocab or 0), np_.arrays + (np_.vocab or 0)
        check("memory (arrays + vocab) <= bm25s", mine <= theirs,
              f"{fmt_bytes(mine)} vs {fmt_bytes(theirs)}")
    lc = results.get("LangChain BM25Retriever (rank_bm25)")
    if lc is not None and lc.lat_median_ms is not None and 50_000 <= n_docs <= 200_000:
        ratio = lc.lat_median_ms / ours.lat_median_ms  # type: ignore[operator]
        check(">= 100x faster than LangChain (median latency)", ratio >= 100, f"{ratio:,.0f}x")
    lines.append("")
    return lines


def scaling(per_size: dict[str, dict[str, Result]], engines: list[Engine],
            sizes: Sequence[int]) -> list[str]:
    keys = [str(n) for n in sizes if str(n) in per_size]
    if len(keys) < 2:
        return []
    rows = []
    for engine in engines:
        lat = [per_size[k][engine.name].lat_median_ms for k in keys]
        if lat[0] is None:
            continue
        cells = [ms(v) for v in lat]
        ratios = [f"{b / a:.1f}x" if a and b else "n/a" for a, b in zip(lat, lat[1:])]
        rows.append([engine.name, *cells, *ratios])
    headers = ["system", *(f"median ms @ {int(k):,}" for k in keys),
               *(f"{int(a):,} -> {int(b):,}" for a, b in zip(keys, keys[1:]))]
    return ["## How query cost grows with corpus size (median single-query latency)", "",
            markdown_table(headers, rows), ""]


if __name__ == "__main__":
    raise SystemExit(main())
