"""Compiled top-k kernels for `BM25Index`, used when numba is installed.

`BM25Index` hands a top-k query without a metadata filter to `match_top_k`, which
returns the exact top k (same documents, same float32 scores, ties to the earlier
document) as exhaustive scoring, or ``None`` when it cannot take the query (numba
missing, switched off, negative idfs); the numpy path then runs as before.

Two kernels (`hybrid_retrievers.bm25._numba`), chosen per query by `_prefer_maxscore`:

- TAAT (the usual one): every posting of every query term, in query order, adds its
  weight to a dense float32 accumulator, then a compiled scan keeps the top k; a query
  with many postings does both chunk by chunk of documents (`TAAT_CHUNK_DOCS`). Its
  cost is the query's postings; with Cranfield's ~10-term queries it beats pruning.
- Block-max MaxScore, for one long posting list with short others: each list is
  split into blocks of 64 postings that keep their last document and largest weight,
  so whole blocks are skipped unscored. That metadata (8 bytes per block plus 12 per
  term: 4.3 MB for 100k documents, 4.6M postings and 197k terms, on top of the
  index's 26 MB of arrays) is built lazily on the first query that uses it and kept
  for as long as the snapshot's score cache is current; an edit starts a new one.

`search_many` hands its whole batch to `match_top_k_many`: one compiled call
(`_numba_batch`) runs each query through the kernel `match_top_k` would pick for it and
ranks its hits, so the results are the same as one search at a time and the per-query
Python work around the kernel (~100 µs, as much as the kernel at 100k documents) goes.

TAAT reads posting weights from a table (`NormCodes`): one uint8 per document names
its length norm (the 255 most common), and ``table[norm, tf]`` holds the float32
weight for tf < 16, computed by the same operations, so results are bit for bit
unchanged. A random float32 norm read and a division per posting become a byte read
beside the document's accumulator slot and an L1 lookup. The codes were first kept
per posting (1 byte each, 44 MiB at 1M documents) for a sequential read; per document
they cost 1 MiB there and were measured as fast (accumulation medians at 1M: 0.899
vs 0.887 ms; at 100k 0.099 vs 0.100 ms, over 150 Cranfield queries). Lists of
`STORED_WEIGHTS_DF` postings or more also keep each posting's float32 weight (the
same value): TAAT streams it beside the document id, with no per-document lookup.

On by default when numba is installed, for indexes of `MIN_DOCS` documents or more
(measured faster than the numpy path at 10k and 100k documents; see `ENABLED`).
``HYBRID_RETRIEVERS_BM25_KERNEL=0`` in the environment before importing, or ``hybrid_retrievers.bm25.kernels.ENABLED = False``,
switches it off. The kernels are compiled with ``cache=True``: the first process
compiles them once (several seconds) and later ones load them from numba's cache.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..optional import is_available

__all__ = ["ENABLED", "MIN_DOCS", "STORED_WEIGHTS_DF", "STRATEGY", "TAAT_CHUNK_DOCS", "BlockMax",
           "NormCodes", "available", "block_max", "match_top_k", "match_top_k_many", "norm_codes"]

ENABLED: bool = os.environ.get("HYBRID_RETRIEVERS_BM25_KERNEL", "1").strip().lower() not in (
    "0", "false", "no", "off",
)
"""Use the compiled kernels when numba is installed (False: always the numpy path).

On by default: on bm25_speed's synthetic corpora with Cranfield queries, TAAT is
about 2x (10k docs) and 2.5x (100k docs) faster than the numpy path at the median,
and ~9x at p95 for 100k (interleaved measurements in the commit log)."""

MIN_DOCS: int = 5000
"""Smaller indexes keep the numpy path: it takes ~0.1 ms there, while the first
kernel use in a process imports numba and loads the compiled kernels (~1 s)."""

STRATEGY: str = "auto"
"""Which kernel takes a query: "taat" (exhaustive term-at-a-time), "maxscore"
(block-max MaxScore) or "auto" (the measured rule of `_prefer_maxscore`)."""

STORED_WEIGHTS_DF: int = 8192
"""Posting lists at least this long get their weights stored (float32, 4 bytes a posting).

TAAT then reads a list's weight beside its document instead of looking up the
document's norm code and the table: at 1M documents (bm25_speed's corpus) these lists
hold 31% of all postings, 54 MiB, and 96% of the postings Cranfield queries touch, and
a posting costs ~0.8 ns instead of ~1.2 ns. Built with the norm codes, on the first
TAAT query, and held in memory (a memory-mapped index too); set it above the corpus
size before that query to keep none."""

TAAT_CHUNK_DOCS: int = 65536
"""Documents per chunk of TAAT's dense accumulation (a query with a posting per 4 documents
or more): each chunk gets every query term's postings, then its top-k scan, so the
accumulator being written (256 KiB here, for an L2 of 512 KiB or more) stays in a core's
L2 cache. The hits are the same whatever its value; set it above the corpus size for one
pass. Measured at 1M documents (bm25_speed's corpus, 200 Cranfield queries, a Xeon with 2
MiB of L2 a core), where one pass over the 4 MiB accumulator missed L2 on most postings:

- kernel alone, warm: 1.04 / 1.54 ms median / p95 in one pass, 0.56 / 0.86 in chunks
  (128k-document chunks as fast, 512k ones 30% slower); with L2 flushed before each
  query, 1.05 / 1.58 against 0.65 / 1.01;
- `search`, in a shuffled rotation with bm25s's numpy and numba backends: 1.20 / 1.78
  against 0.94 / 1.60 (bm25s-numba 1.65 / 2.41). At 100k documents, where one pass fits
  L2, no change: 0.142 / 0.225 against 0.141 / 0.233.

An earlier machine measured a windowed variant of 128k documents slower when warm (0.74
to 0.83 ms), so the gain depends on the cache hierarchy."""

_MAXSCORE_MIN = 4096
"""Postings the longest list needs before MaxScore is considered (`_prefer_maxscore`)."""

_BATCH_CELLS = 1 << 22
"""Result slots (queries x k) one batched kernel call fills at most: a larger batch is cut."""

_VARIANT_CODES = {"lucene": 0, "robertson": 1, "bm25l": 2, "bm25+": 3}
_kernels: ModuleType | None = None
_checked = False
_lock = threading.Lock()  # guards the one-time import
_build_lock = threading.Lock()  # one block build at a time


def _load() -> ModuleType | None:
    """The kernels module, imported (and numba with it) on first use; None without numba."""
    global _kernels, _checked
    if not _checked:
        with _lock:
            if not _checked:
                if is_available("numba"):
                    from . import _numba

                    _kernels = _numba
                _checked = True
    return _kernels


def available() -> bool:
    """True when the kernel is switched on and numba can be imported."""
    return ENABLED and _load() is not None


class _Metadata:
    """What a kernel precomputes from one snapshot's postings under one score cache.

    Immutable once built; an edit gives the index a new score cache, and with it new
    metadata (`_kept`). A subclass names its arrays in ``__slots__`` and fills them in
    `_build`.
    """

    __slots__ = ("cache", "params")

    def __init__(self, index: Any, state: Any, cache: Any) -> None:
        kernels = _load()
        assert kernels is not None
        self.cache = cache
        self.params = _params(index, cache)
        self._build(kernels, state)

    def _build(self, kernels: ModuleType, state: Any) -> None:
        raise NotImplementedError

    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(sum(getattr(self, name).nbytes for name in type(self).__slots__))


class BlockMax(_Metadata):
    """MaxScore's block metadata: per block its last document and largest weight."""

    __slots__ = ("block_ptr", "block_max", "block_last", "term_max")

    def _build(self, kernels: ModuleType, state: Any) -> None:
        self.block_ptr, self.block_max, self.block_last, self.term_max = kernels.build_blocks(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf),
            self.cache.norm, *self.params,
        )


class NormCodes(_Metadata):
    """TAAT's per-document norm codes, weight table and long lists' stored weights."""

    __slots__ = ("doc_codes", "table", "weight_ptr", "weights")

    def _build(self, kernels: ModuleType, state: Any) -> None:
        self.doc_codes, self.table = _codes(kernels, self.cache, self.params)
        self.weight_ptr, self.weights = kernels.build_weights(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf),
            self.cache.norm, self.doc_codes, self.table, max(1, int(STORED_WEIGHTS_DF)),
            *self.params,
        )


def norm_codes(index: Any, state: Any, cache: Any) -> NormCodes:
    """The norm codes for ``state`` (built on first TAAT use, then kept on the index)."""
    return _kept(index, "_normcodes", NormCodes, state, cache)


def _kept(index: Any, attr: str, make: Any, state: Any, cache: Any) -> Any:
    """``index.<attr>`` if it was built for ``cache``, else ``make(index, state, cache)``, kept.

    Built once under a lock (two first queries do not both build it); an edit gives the
    index a new score cache, so what was built for the old one is replaced.
    """
    held = getattr(index, attr, None)
    if held is not None and held.cache is cache:
        return held
    with _build_lock:
        held = getattr(index, attr, None)
        if held is None or held.cache is not cache:
            held = make(index, state, cache)
            setattr(index, attr, held)
        return held


def _codes(kernels: ModuleType, cache: Any, params: tuple[Any, ...]) -> tuple[Any, Any]:
    """Per document the table row of its length norm, and the weight table.

    The 255 most common norms get rows (a norm is a function of the document length,
    so a corpus has few distinct ones: 429 at 1M documents of bm25_speed's corpus);
    other documents' postings are weighed as before.
    """
    norms, inverse, counts = np.unique(cache.norm, return_inverse=True, return_counts=True)
    rows = np.argsort(-counts, kind="stable")[: kernels.NO_CODE]
    rank = np.full(norms.size, kernels.NO_CODE, dtype=np.uint8)
    rank[rows] = np.arange(rows.size, dtype=np.uint8)
    table = kernels.build_table(np.ascontiguousarray(norms[rows], dtype=np.float32), *params)
    return rank[inverse.reshape(-1)], table


def _chunk_docs() -> int:
    """`TAAT_CHUNK_DOCS`, at least 1."""
    return max(1, int(TAAT_CHUNK_DOCS))


def _params(index: Any, cache: Any) -> tuple[Any, ...]:
    """(variant, k1, k1 + 1, delta, tfw(0), has tfw(0)) as the float32 numpy scoring uses."""
    return (
        _VARIANT_CODES[index.method],
        np.float32(index.k1),
        np.float32(index.k1 + 1.0),
        np.float32(index.delta),
        np.float32(cache.absent_weight),
        bool(cache.absent_weight),
    )


def _prefer_maxscore(indptr: NDArray[np.int64], terms: NDArray[np.int64], k: int) -> bool:
    """Whether block-max MaxScore should take this query instead of TAAT scoring.

    TAAT's cost is the query's postings; MaxScore's is the postings it cannot skip,
    and with several long lists it skips few and pays per candidate. Measured at
    100k documents, k = 10 (bm25_speed's synthetic corpus): MaxScore wins 2.5-4x on
    one long list alone or with short ones (one 30k list: 0.07 vs 0.15-0.28 ms; with
    five lists of 258: 0.17 vs 0.22 ms) and loses 2-6x once two lists are long
    (two: 0.52 vs 0.22 ms; Cranfield queries: median 1.1 vs 0.26 ms). So: MaxScore
    when one list of at least 4096 postings (and 64·k) holds 8/9 of them.
    """
    if STRATEGY != "auto":
        return STRATEGY == "maxscore"
    lengths = indptr[terms + 1] - indptr[terms]
    return bool(_long_list_rule(int(lengths.max()), int(lengths.sum()), k))


def _long_list_rule(longest: Any, total: Any, k: int) -> Any:
    """`_prefer_maxscore`'s rule, for one query (ints) or many (arrays)."""
    return (longest >= max(_MAXSCORE_MIN, 64 * k)) & (8 * (total - longest) <= longest)


def block_max(index: Any, state: Any, cache: Any) -> BlockMax:
    """The block metadata for ``state`` (built on first use, then kept on the index)."""
    return _kept(index, "_blockmax", BlockMax, state, cache)


def match_top_k(
    index: Any,
    state: Any,
    cache: Any,
    ids: list[tuple[int, int]],
    constant: np.float32,
    k: int,
) -> tuple[NDArray[np.int32], NDArray[np.float32]] | None:
    """The exact top ``k`` of a query as ``(positions, scores)``, unordered, or None.

    ``ids`` are the query's (term id, count) pairs in query order, all in the
    vocabulary; ``constant`` the absent-term weight every document gets. None means
    "use the numpy path": the kernel is off or missing, the index is below
    `MIN_DOCS`, or an idf is negative (the kernels assume contributions >= 0).
    """
    if not ENABLED or not cache.nonnegative or not ids or len(state.docs) < MIN_DOCS:
        return None
    kernels = _load()
    if kernels is None:
        return None
    terms = np.fromiter((t for t, _ in ids), dtype=np.int64, count=len(ids))
    scales = np.array([float(cache.idf[t]) * c for t, c in ids], dtype=np.float32)
    n = len(state.docs)
    k = max(1, min(k, n))
    if not _prefer_maxscore(state.indptr, terms, k):
        meta = norm_codes(index, state, cache)
        acc, seen = index._buffers(n)  # the numpy path's zeroed per-thread buffers
        return kernels.search_taat(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf), cache.norm,
            meta.doc_codes, meta.table, meta.weight_ptr, meta.weights, terms, scales, *meta.params,
            np.float32(constant), k, _chunk_docs(),
            cache.positive, acc, seen, index._marks(n),  # marks: int32 scratch, any content
        )
    meta = block_max(index, state, cache)
    return kernels.search_top_k(
        state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf), cache.norm,
        meta.block_ptr, meta.block_max, meta.block_last, meta.term_max,
        terms, scales, *meta.params, np.float32(constant), k,
    )


def _prefer_maxscore_many(indptr: NDArray[np.int64], terms: NDArray[np.int64],
                          qptr: NDArray[np.int64], k: int) -> NDArray[np.bool_]:
    """`_prefer_maxscore` of each query ``terms[qptr[i]:qptr[i+1]]`` (none empty), vectorised."""
    if STRATEGY != "auto":
        return np.full(qptr.size - 1, STRATEGY == "maxscore")
    lengths = indptr[terms + 1] - indptr[terms]
    return _long_list_rule(np.maximum.reduceat(lengths, qptr[:-1]),
                           np.add.reduceat(lengths, qptr[:-1]), k)


def match_top_k_many(
    index: Any,
    state: Any,
    cache: Any,
    queries: list[tuple[list[tuple[int, int]], np.float32]],
    k: int,
) -> list[tuple[NDArray[np.int32], NDArray[np.float32]]] | None:
    """`match_top_k` of each ``(ids, constant)`` query, ranked best first, or None.

    One compiled call runs the whole batch (`_numba_batch.search_many`), each query
    through the kernel `match_top_k` would pick for it, so the hits are identical;
    a query with no ids gets no hits. None when `match_top_k` would return None.
    """
    if not ENABLED or not cache.nonnegative or len(state.docs) < MIN_DOCS:
        return None
    kernels = _load()
    if kernels is None:
        return None
    from . import _numba_batch

    n = len(state.docs)
    k = max(1, min(k, n))
    empty = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
    out: list[tuple[NDArray[np.int32], NDArray[np.float32]]] = [empty] * len(queries)
    live = [i for i, (ids, _) in enumerate(queries) if ids]
    step = max(1, _BATCH_CELLS // k)
    for start in range(0, len(live), step):
        chunk = live[start:start + step]
        flat = [pair for i in chunk for pair in queries[i][0]]
        terms = np.fromiter((t for t, _ in flat), dtype=np.int64, count=len(flat))
        counts = np.fromiter((c for _, c in flat), dtype=np.float64, count=len(flat))
        # float64 idf times the count, then float32: `match_top_k`'s scales exactly.
        scales = (cache.idf[terms].astype(np.float64) * counts).astype(np.float32)
        qptr = np.zeros(len(chunk) + 1, dtype=np.int64)
        np.cumsum([len(queries[i][0]) for i in chunk], out=qptr[1:])
        constants = np.array([queries[i][1] for i in chunk], dtype=np.float32)
        pruned = _prefer_maxscore_many(state.indptr, terms, qptr, k)
        codes = norm_codes(index, state, cache)
        blocks = block_max(index, state, cache) if pruned.any() else None
        docs, scores, sizes = _numba_batch.search_many(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf), cache.norm,
            codes.doc_codes, codes.table, codes.weight_ptr, codes.weights, *_block_arrays(blocks),
            qptr, terms, scales, pruned,
            *codes.params, constants, k, _chunk_docs(), cache.positive, *index._buffers(n),
            index._marks(n),
        )
        for row, i in enumerate(chunk):
            out[i] = (docs[row, :sizes[row]], scores[row, :sizes[row]])
    return out


def _block_arrays(blocks: BlockMax | None) -> tuple[Any, ...]:
    """The kernels' block metadata arguments; empty arrays when no query is pruned."""
    if blocks is None:
        return (np.zeros(1, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int32),
                np.zeros(0, np.float32))
    return blocks.block_ptr, blocks.block_max, blocks.block_last, blocks.term_max
