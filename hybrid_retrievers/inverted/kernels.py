"""Compiled top-k kernels of the engine (`BM25Index`, `SparseIndex`), when the `Backend` allows.

`matching.match` hands a top-k query without a metadata filter to `match_top_k`, which
returns the exact top k (same documents, same float32 scores, ties to the earlier
document) as exhaustive scoring, or ``None`` when it cannot take the query (numba
missing, the backend says numpy, the index below ``Backend.min_docs`` with "auto",
negative idfs); the numpy path then runs as before. Everything here is a function of
(snapshot, score cache, params, scratch, backend): no index is passed or called back.

Two kernels (`hybrid_retrievers.inverted._numba`), chosen per query by `_long_list_rule`:

- TAAT (the usual one): every posting of every query term, in query order, adds its
  weight to a dense float32 accumulator, then a compiled scan keeps the top k; a query
  with many postings does both chunk by chunk of documents
  (``Backend.taat_chunk_docs``). Its cost is the query's postings; with Cranfield's
  ~10-term queries it beats pruning.
- Block-max MaxScore, for one long posting list with short others: each list is
  split into blocks of 64 postings that keep their last document and largest weight,
  so whole blocks are skipped unscored. That metadata (8 bytes per block plus 12 per
  term: 4.3 MB for 100k documents, 4.6M postings and 197k terms, on top of the
  index's 26 MB of arrays) is built lazily on the first query that uses it and kept by
  the snapshot's score cache (`ScoreCache.kept`); an edit starts a new one.

`search_many` hands its whole batch to `match_top_k_many`: one compiled call
(`_numba_batch`) runs each query through the kernel `match_top_k` would pick for it and
ranks its hits, so the results are the same as one search at a time and the per-query
Python work around the kernel (~100 µs, as much as the kernel at 100k documents) goes.

TAAT reads posting weights from a table (`NormCodes`): one uint8 per document names
its length norm (the 255 most common), and ``table[norm, tf]`` holds the float32
weight for tf < 16, computed by the same operations, so results are bit for bit
unchanged. A random float32 norm read and a division per posting become a byte read
beside the document's accumulator slot and an L1 lookup (per document they cost 1 MiB
at 1M documents and were measured as fast as per-posting codes). Lists of
``Backend.stored_weights_df`` postings or more also keep each posting's float32
weight (the same value): TAAT streams it beside the document id, with no lookup.

The kernels are compiled with ``cache=True``: the first process compiles them once
(several seconds) and later ones load them from numba's cache.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..optional import is_available
from .backend import Backend
from .scorer import Scorer

if TYPE_CHECKING:
    from .postings import Snapshot
    from .score_cache import ScoreCache
    from .scratch import Scratch

__all__ = ["BlockMax", "NormCodes", "available", "block_max", "match_top_k", "match_top_k_many",
           "norm_codes"]

# A code names a tf weight (the idf is applied outside the kernels, as the query scale),
# keyed by the variant's method name (`scorer.Variant.method`; BM25's are `BM25Method`
# values): textbook and atire weigh tf as robertson does, tf·(k1 + 1) / (tf + k1·norm).
_VARIANT_CODES: dict[str, int] = {"lucene": 0, "robertson": 1, "textbook": 1, "atire": 1,
                                  "bm25l": 2, "bm25+": 3, "impact": 4}
_IMPACT = 4  # `_numba_weights.IMPACT`: the posting value is the weight
_kernels: ModuleType | None = None
_checked = False
_lock = threading.Lock()  # guards the one-time import


def _load() -> ModuleType | None:
    """The kernels module, imported (and numba with it) on first use; None without numba."""
    global _kernels, _checked
    if not _checked:
        with _lock:
            if not _checked:
                if is_available("numba"):
                    import hybrid_retrievers.inverted._numba as compiled

                    _kernels = compiled
                _checked = True
    return _kernels


def _method_name(method: str) -> str:
    """A variant's method as a plain string (a `BM25Method` is a str enum, hashed by name)."""
    return str(getattr(method, "value", method))


def available() -> bool:
    """True when numba can be imported (and with it the kernels)."""
    return _load() is not None


class _Metadata:
    """What a kernel precomputes from one snapshot's postings under one score cache.

    Immutable once built and kept by that score cache (`ScoreCache.kept`); an edit
    gives the index a new score cache, and with it new metadata. A subclass names its
    arrays in ``__slots__`` and fills them in `_build`.
    """

    __slots__ = ("params",)

    def __init__(self, state: Snapshot, cache: ScoreCache, params: Scorer,
                 backend: Backend) -> None:
        kernels = _load()
        assert kernels is not None
        self.params = _params(params, cache)
        self._build(kernels, state, cache, backend)

    @classmethod
    def from_arrays(cls, params: Scorer, cache: ScoreCache, **arrays: NDArray[Any]) -> Any:
        """The metadata of arrays built before (a saved index's, `cache_saving`), as they are."""
        held = cls.__new__(cls)
        held.params = _params(params, cache)
        for name in cls.__slots__:
            setattr(held, name, arrays[name])
        return held

    def _build(self, kernels: ModuleType, state: Snapshot, cache: ScoreCache,
               backend: Backend) -> None:
        raise NotImplementedError

    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(sum(getattr(self, name).nbytes for name in type(self).__slots__))


class BlockMax(_Metadata):
    """MaxScore's block metadata: per block its last document and largest weight."""

    __slots__ = ("block_ptr", "block_max", "block_last", "term_max")

    def _build(self, kernels: ModuleType, state: Snapshot, cache: ScoreCache,
               backend: Backend) -> None:
        self.block_ptr, self.block_max, self.block_last, self.term_max = kernels.build_blocks(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf),
            cache.norm, *self.params,
        )


class NormCodes(_Metadata):
    """TAAT's per-document norm codes, weight table and long lists' stored weights."""

    __slots__ = ("doc_codes", "table", "weight_ptr", "weights")

    def _build(self, kernels: ModuleType, state: Snapshot, cache: ScoreCache,
               backend: Backend) -> None:
        if self.params[0] == _IMPACT:
            # Impacts are their own weights: every list streams its stored float32 values
            # (the postings themselves, no copy), and no document has a norm code, so the
            # table (indexed by an integer tf) is never read.
            self.doc_codes = np.full(len(state.docs), kernels.NO_CODE, dtype=np.uint8)
            self.table = np.zeros(0, dtype=np.float32)
            self.weight_ptr = np.asarray(state.indptr[:-1], dtype=np.int64)
            self.weights = np.asarray(state.post_tf)
            return
        self.doc_codes, self.table = _codes(kernels, cache, self.params)
        self.weight_ptr, self.weights = kernels.build_weights(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf),
            cache.norm, self.doc_codes, self.table, backend.stored_weights_df,
            *self.params,
        )


def norm_codes(state: Snapshot, cache: ScoreCache, params: Scorer,
               backend: Backend) -> NormCodes:
    """TAAT's norm codes for ``state`` (built on first use, then kept by ``cache``)."""
    return cache.kept(NormCodes, lambda: NormCodes(state, cache, params, backend))


def _codes(kernels: ModuleType, cache: ScoreCache,
           params: tuple[Any, ...]) -> tuple[Any, Any]:
    """Per document the table row of its length norm, and the weight table.

    The 255 most common norms get rows (a norm is a function of the document length,
    so a corpus has few distinct ones: 429 at 1M documents of bm25_speed's corpus);
    other documents' postings are weighed as before.
    """
    norms, inverse, counts = np.unique(cache.norm, return_inverse=True, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    # A norm of 0 (an empty document with b = 1) gets no row: it has no postings to weigh,
    # and BM25L's c = tf / norm would divide by it.
    rows = order[norms[order] > 0][: kernels.NO_CODE]
    rank = np.full(norms.size, kernels.NO_CODE, dtype=np.uint8)
    rank[rows] = np.arange(rows.size, dtype=np.uint8)
    table = kernels.build_table(np.ascontiguousarray(norms[rows], dtype=np.float32), *params)
    return rank[inverse.reshape(-1)], table


def _params(params: Scorer, cache: ScoreCache) -> tuple[Any, ...]:
    """(variant, k1, k1 + 1, delta, tfw(0), has tfw(0)) as the float32 numpy scoring uses."""
    return (
        _VARIANT_CODES[_method_name(params.variant.method)],
        np.float32(params.k1),
        np.float32(params.k1 + 1.0),
        np.float32(params.delta),
        np.float32(cache.absent_weight),
        bool(cache.absent_weight),
    )


def _long_list_rule(longest: Any, total: Any, k: int, backend: Backend) -> Any:
    """Whether block-max MaxScore should take a query instead of TAAT scoring (arrays: many).

    TAAT's cost is the query's postings; MaxScore's is the postings it cannot skip,
    and with several long lists it skips few and pays per candidate. Measured at
    100k documents, k = 10 (bm25_speed's synthetic corpus): MaxScore wins 2.5-4x on
    one long list alone or with short ones (one 30k list: 0.07 vs 0.15-0.28 ms; with
    five lists of 258: 0.17 vs 0.22 ms) and loses 2-6x once two lists are long
    (two: 0.52 vs 0.22 ms; Cranfield queries: median 1.1 vs 0.26 ms; at 1M documents
    29 vs 1.9 ms). So: MaxScore when one list of at least ``_min_longest`` postings
    holds 8/9 of them (``longest``: the longest list, ``total``: all the query's).
    `_numba_batch.search_one` applies the same rule to one query, compiled.
    """
    return (longest >= _min_longest(k, backend)) & (8 * (total - longest) <= longest)


def _min_longest(k: int, backend: Backend) -> int:
    """Postings MaxScore's long list needs: ``backend.maxscore_min_postings``, and 64·k."""
    return max(backend.maxscore_min_postings, 64 * k)


def block_max(state: Snapshot, cache: ScoreCache, params: Scorer,
              backend: Backend) -> BlockMax:
    """MaxScore's block metadata for ``state`` (built on first use, then kept by ``cache``)."""
    return cache.kept(BlockMax, lambda: BlockMax(state, cache, params, backend))


def match_top_k(
    state: Snapshot,
    cache: ScoreCache,
    params: Scorer,
    ids: list[tuple[int, float]],
    positive: bool,
    constant: np.float32,
    k: int,
    scratch: Scratch,
    backend: Backend,
) -> tuple[NDArray[np.int32], NDArray[np.float32]] | None:
    """The exact top ``k`` of a query as ``(positions, scores)``, best first, or None.

    ``ids`` are the query's (term id, count) pairs in query order, all in the
    vocabulary, whose contributions must all be >= 0 (the kernels assume it;
    ``positive``: all > 0; both from `ScoreCache.signs`); ``constant`` the absent-term
    weight every document gets. Hits are ranked as `selection.top_k` ranks them (higher
    score, then the earlier document). None means "use the numpy path": ``backend``
    rules the kernels out for this index (or numba is missing), or an idf is negative.

    One compiled call (`_numba_batch.search_one`) chooses the kernel (TAAT, or block-max
    MaxScore by `_long_list_rule` or ``backend.strategy``), runs it and ranks its hits;
    the metadata that kernel needs is built on its first use.
    """
    if _kernels_for(state, cache, backend) is None or not ids:
        return None
    import hybrid_retrievers.inverted._numba_batch as compiled_batch

    terms = np.fromiter((t for t, _ in ids), dtype=np.int64, count=len(ids))
    scales = np.array([float(cache.idf[t]) * c for t, c in ids], dtype=np.float32)
    n = len(state.docs)
    k = max(1, min(k, n))
    codes, blocks = cache.peek(NormCodes), cache.peek(BlockMax)
    acc, seen = scratch.accumulators(n)  # the numpy path's zeroed per-thread buffers
    while True:
        meta = codes if codes is not None else blocks
        docs, scores, need = compiled_batch.search_one(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf), cache.norm,
            *_code_arrays(codes), *_block_arrays(blocks), terms, scales,
            _STRATEGY_CODES[backend.strategy], _min_longest(k, backend),
            *(meta.params if meta is not None else _params(params, cache)),
            np.float32(constant), k, backend.taat_chunk_docs, backend.taat_dense_ratio,
            positive, acc, seen, scratch.marks(n),  # marks: int32 scratch, any content
        )
        if need == compiled_batch.READY:
            return docs, scores
        if need == compiled_batch.NEED_CODES:
            codes = norm_codes(state, cache, params, backend)
        else:
            blocks = block_max(state, cache, params, backend)


def _prefer_maxscore_many(indptr: NDArray[np.int64], terms: NDArray[np.int64],
                          qptr: NDArray[np.int64], k: int,
                          backend: Backend) -> NDArray[np.bool_]:
    """`_long_list_rule` of each query ``terms[qptr[i]:qptr[i+1]]`` (none empty), vectorised."""
    if backend.strategy != "auto":
        return np.full(qptr.size - 1, backend.strategy == "maxscore")
    lengths = indptr[terms + 1] - indptr[terms]
    return _long_list_rule(np.maximum.reduceat(lengths, qptr[:-1]),
                           np.add.reduceat(lengths, qptr[:-1]), k, backend)


def match_top_k_many(
    state: Snapshot,
    cache: ScoreCache,
    params: Scorer,
    queries: list[tuple[list[tuple[int, int]], np.float32]],
    k: int,
    scratch: Scratch,
    backend: Backend,
) -> list[tuple[NDArray[np.int32], NDArray[np.float32]]] | None:
    """`match_top_k` of each ``(ids, constant)`` query, ranked best first, or None.

    One compiled call runs the whole batch (`_numba_batch.search_many`), each query
    through the kernel `match_top_k` would pick for it, so the hits are identical;
    a query with no ids gets no hits. None when `match_top_k` would return None.
    """
    if _kernels_for(state, cache, backend) is None:
        return None
    import hybrid_retrievers.inverted._numba_batch as compiled_batch

    n = len(state.docs)
    k = max(1, min(k, n))
    empty = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
    out: list[tuple[NDArray[np.int32], NDArray[np.float32]]] = [empty] * len(queries)
    live = [i for i, (ids, _) in enumerate(queries) if ids]
    step = max(1, backend.batch_cells // k)
    for start in range(0, len(live), step):
        chunk = live[start:start + step]
        flat = [pair for i in chunk for pair in queries[i][0]]
        terms = np.fromiter((t for t, _ in flat), dtype=np.int64, count=len(flat))
        counts = np.fromiter((c for _, c in flat), dtype=np.float64, count=len(flat))
        # float64 idf times the count, then float32: `match_top_k`'s scales exactly.
        scales = (cache.idf[terms].astype(np.float64) * counts).astype(np.float32)
        nonnegative, positive = cache.signs(flat)
        if not nonnegative:  # a negative query weight: the numpy path, query by query
            return None
        qptr = np.zeros(len(chunk) + 1, dtype=np.int64)
        np.cumsum([len(queries[i][0]) for i in chunk], out=qptr[1:])
        constants = np.array([queries[i][1] for i in chunk], dtype=np.float32)
        pruned = _prefer_maxscore_many(state.indptr, terms, qptr, k, backend)
        codes = norm_codes(state, cache, params, backend)
        blocks = block_max(state, cache, params, backend) if pruned.any() else None
        docs, scores, sizes = compiled_batch.search_many(
            state.indptr, np.asarray(state.post_docs), np.asarray(state.post_tf), cache.norm,
            codes.doc_codes, codes.table, codes.weight_ptr, codes.weights, *_block_arrays(blocks),
            qptr, terms, scales, pruned,
            *codes.params, constants, k, backend.taat_chunk_docs, backend.taat_dense_ratio,
            positive,
            *scratch.accumulators(n), scratch.marks(n),
        )
        for row, i in enumerate(chunk):
            out[i] = (docs[row, :sizes[row]], scores[row, :sizes[row]])
    return out


def _kernels_for(state: Snapshot, cache: ScoreCache, backend: Backend) -> ModuleType | None:
    """The compiled kernels if ``backend`` lets them score ``state`` under ``cache``, else None."""
    if not cache.nonnegative or not backend.uses_kernels(len(state.docs)):
        return None
    return _load()


_STRATEGY_CODES = {"auto": 0, "taat": 1, "maxscore": 2}  # `_numba_batch.AUTO`, TAAT, MAXSCORE
_NO_CODES = (np.zeros(0, np.uint8), np.zeros(0, np.float32), np.zeros(0, np.int64),
             np.zeros(0, np.float32))
_NO_BLOCKS = (np.zeros(1, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int32),
              np.zeros(0, np.float32))


def _code_arrays(codes: NormCodes | None) -> tuple[Any, ...]:
    """TAAT's metadata arguments; empty arrays when they are not built yet."""
    if codes is None:
        return _NO_CODES
    return codes.doc_codes, codes.table, codes.weight_ptr, codes.weights


def _block_arrays(blocks: BlockMax | None) -> tuple[Any, ...]:
    """The kernels' block metadata arguments; empty arrays when no query is pruned."""
    if blocks is None:
        return _NO_BLOCKS
    return blocks.block_ptr, blocks.block_max, blocks.block_last, blocks.term_max
