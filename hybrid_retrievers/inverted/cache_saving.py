"""The score cache's half of the on-disk format: what a pass over every posting produced.

A `ScoreCache` needs, besides cheap per-document and per-term arrays (length norms from
the document lengths, idf from the document frequencies), each term's largest weight and
the smallest weight of any posting (`PostingBounds`), and the compiled kernels need
per-block and per-posting metadata (`kernels.BlockMax`, `kernels.NormCodes`). Computing
those reads every posting: a memory-mapped index would page in all its postings on its
first query (778 MiB resident after 100 queries at 1M documents, against 63 MiB after
the load). So `write_score_cache` saves them beside the postings, and
`read_score_cache` gives them back to the loaded snapshot's score cache: queries then
read only their own terms' postings and metadata.

Files (all float32 but ``score_block_last``, int32):

* ``score_top.npy``: `PostingBounds.top`, one per term (before the idf);
* ``score_block_max.npy``, ``score_block_last.npy``, ``score_block_term_max.npy``:
  `BlockMax`'s arrays (its block offsets follow from the document frequencies);
* ``score_weights.npy``: `NormCodes`'s stored weights of the lists of
  ``weights_min_df`` postings or more (its codes and table follow from the norms);

and the manifest's ``"score_cache"`` entry: the key, `PostingBounds.least` and which
of the kernels' arrays are there (they are saved when numba is installed and the saving
index's backend uses the kernels). All of it is optional: an index without it (saved
before, or fielded) loads as before, and its cache is built on the first query.

The arrays depend on the tf weight, k1, b, delta, the document lengths, N and avgdl
(never on the idf or the analyzer). The key records them with the library version (a
release may weigh differently); when anything differs on load, the saved arrays are
ignored and the cache is built from the postings as before. Collection statistics are
never saved: `BM25Index.set_collection_stats` publishes a new snapshot, whose cache is
built with the statistics' avgdl and idf.

Trust: as for the postings (`saving.read_postings`). Size, dtype (exactly float32 or
int32) and length are always checked; the per-term arrays are read into memory,
checksummed and checked for values (finite, not below the lowest weight a posting can
have) on every load; the per-block and per-posting ones are memory-mapped with ``mmap``,
and their checksums and values checked unless ``mmap`` without ``verify``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._version import __version__
from ..optional import is_available
from ..persistence import IndexFormatError, IndexReader, IndexWriter
from . import kernels
from .backend import Backend
from .postings import Snapshot
from .score_cache import CorpusStatistics, PostingBounds, ScoreCache
from .scorer import Scorer

__all__ = ["CACHE_ENTRY", "write_score_cache", "read_score_cache"]

CACHE_ENTRY = "score_cache"
"""The manifest key of the saved score cache."""

_FORMAT = 1


def write_score_cache(w: IndexWriter, st: Snapshot, params: Scorer,
                      stats: CorpusStatistics | None, backend: Backend) -> dict[str, Any]:
    """Write ``st``'s posting bounds (and kernel metadata); the manifest entry back.

    ``stats`` are the index's collection statistics: with them its cache was built
    with another avgdl, so the local one is computed for saving (a loaded index
    scores with its own statistics until new ones are set). The kernels' metadata the
    cache already holds is saved as it is; what a query has not built yet is built
    for the save and dropped.
    """
    if stats is None:
        cache = ScoreCache.of(st, params, None)
    else:
        cache = ScoreCache.build(st, params, None)
    w.array("score_top", cache.bounds.top)
    least = float(cache.bounds.least)
    entry: dict[str, Any] = {**_key(st, params), "least": least if math.isfinite(least) else None,
                             "blocks": None, "weights_min_df": None}
    if not (cache.nonnegative and backend.uses_kernels(len(st.docs)) and kernels.available()):
        return {CACHE_ENTRY: entry}  # the kernels would not run: nothing of theirs to save
    from . import _numba_weights

    blocks = cache.saveable(kernels.BlockMax,
                            lambda: kernels.BlockMax(st, cache, params, backend))
    w.array("score_block_max", blocks.block_max)
    w.array("score_block_last", blocks.block_last)
    w.array("score_block_term_max", blocks.term_max)
    entry["blocks"] = int(_numba_weights.BLOCK)
    if params.variant.method != "impact":  # impacts are their own stored weights
        def build() -> kernels.NormCodes:
            return kernels.NormCodes(st, cache, params, backend)

        codes = cache.saveable(kernels.NormCodes, build)
        df = np.diff(st.indptr)
        if codes.weights.size != int(df[df >= backend.stored_weights_df].sum()):
            codes = build()  # seeded by a load that stores fewer lists than it saved
        w.array("score_weights", codes.weights)
        entry["weights_min_df"] = int(backend.stored_weights_df)
    return {CACHE_ENTRY: entry}


def read_score_cache(r: IndexReader, st: Snapshot, params: Scorer, backend: Backend, *,
                     mmap: bool = False, verify: bool = False) -> bool:
    """Give ``st`` its score cache from the saved arrays; False when there are none to use.

    None are used when the index has none (saved before them) or they were saved for
    other parameters, statistics or release: the cache is then built on first use, from
    the postings. The kernels' metadata is seeded into the cache (`ScoreCache.seed`)
    when numba is installed, it was saved with the same block size, and (the stored
    weights) ``backend`` stores weights of no shorter lists than the saving one did.

    Raises:
        IndexFormatError: the entry or a file is malformed, truncated or invalid.
    """
    if CACHE_ENTRY not in r.manifest:
        return False
    entry = r.field(CACHE_ENTRY, dict)
    if {k: entry.get(k) for k in _key(st, params)} != _key(st, params):
        return False
    full = not mmap or verify
    df = np.diff(st.indptr)
    low = -_absent_weight(params)  # no shifted weight is lower: tfw >= 0
    top = _floats(r, "score_top", df.size, low, in_memory=True, verify=verify)
    least = _least(r, entry, st, low)
    if df.size and st.post_docs.size:
        present = top[df > 0]
        if present.size and not least <= present.min():
            raise IndexFormatError(f"{r.where('score_top.npy')}: a term's largest weight is "
                                   f"below the smallest posting weight {least!r}")
    bounds = PostingBounds(top, np.float32(np.inf if least is None else least))
    cache = ScoreCache.build(st, params, None, bounds)
    blocks, min_df = _optional_int(r, entry, "blocks"), _optional_int(r, entry, "weights_min_df")
    numba = is_available("numba")  # not imported here: a numpy backend never needs it
    if blocks is not None and numba:
        _seed_blocks(r, st, params, cache, backend, blocks, low, mmap=mmap, verify=verify,
                     full=full)
    if (min_df is not None and numba and params.variant.method != "impact"
            and backend.stored_weights_df >= min_df):
        _seed_weights(r, st, params, cache, backend, min_df, low, mmap=mmap, verify=verify,
                      full=full)
    st.derived(lambda: cache)
    return True


def _key(st: Snapshot, params: Scorer) -> dict[str, Any]:
    """What the saved arrays depend on; all of it must match on load."""
    delta = params.delta
    return {"format": _FORMAT, "library_version": __version__,
            "method": str(getattr(params.variant.method, "value", params.variant.method)),
            "k1": float(params.k1), "b": float(params.b),
            "delta": None if delta is None else float(delta),
            "n_docs": len(st.docs), "n_postings": int(st.post_docs.size),
            "avgdl": float(st.avgdl)}


def _absent_weight(params: Scorer) -> float:
    """``tfw(0)`` as the cache shifts by it (0 for the variants without one)."""
    v = params.variant
    return 0.0 if v.absent is None else float(np.float32(v.absent(params.k1, params.delta)))


def _floats(r: IndexReader, name: str, length: int, low: float, *, in_memory: bool = False,
            mmap: bool = False, verify: bool = False, full: bool = True) -> NDArray[np.float32]:
    """``name.npy``: float32 of ``length`` rows; (``full``) finite and none below ``low``."""
    array = _exact(r, name, "f", np.float32, length, mmap=mmap and not in_memory, verify=verify)
    if (full or in_memory) and array.size:
        where = r.where(f"{name}.npy")
        if not np.isfinite(array).all():
            raise IndexFormatError(f"{where}: holds NaN or infinite values")
        if float(array.min()) < low:
            raise IndexFormatError(f"{where}: holds {float(array.min())!r}, below the lowest "
                                   f"weight a posting can have ({low!r})")
    return array


def _exact(r: IndexReader, name: str, kind: str, dtype: type, length: int, *, mmap: bool,
           verify: bool) -> NDArray[Any]:
    """``name.npy`` as a 1-d ``dtype`` array of ``length`` rows (native order), checked."""
    array = r.array(name, dtype_kind=kind, ndim=1, length=length, mmap=mmap, verify=verify)
    if array.dtype != np.dtype(dtype):
        raise IndexFormatError(f"{r.where(f'{name}.npy')}: expected {np.dtype(dtype)}, "
                               f"got {array.dtype}")
    return array


def _least(r: IndexReader, entry: Mapping[str, Any], st: Snapshot, low: float) -> float | None:
    """The saved smallest posting weight: a float32 value, None exactly without postings."""
    least = entry.get("least")
    where = f"{r.where('manifest.json')}: {CACHE_ENTRY}.least"
    if least is None:
        if st.post_docs.size:
            raise IndexFormatError(f"{where} is missing, but the index has postings")
        return None
    if (isinstance(least, bool) or not isinstance(least, (int, float))
            or not math.isfinite(least) or float(np.float32(least)) != least or least < low):
        raise IndexFormatError(f"{where} must be a finite float32 value >= {low!r}, "
                               f"got {least!r}")
    return float(least)


def _optional_int(r: IndexReader, entry: Mapping[str, Any], name: str) -> int | None:
    value = entry.get(name)
    if value is not None and (type(value) is not int or value < 1):
        raise IndexFormatError(f"{r.where('manifest.json')}: {CACHE_ENTRY}.{name} must be "
                               f"null or an int >= 1, got {value!r}")
    return value


def _seed_blocks(r: IndexReader, st: Snapshot, params: Scorer, cache: ScoreCache,
                 backend: Backend, block: int, low: float, *, mmap: bool, verify: bool,
                 full: bool) -> None:
    """Seed `kernels.BlockMax` from its saved arrays of ``block`` postings per block."""
    df = np.diff(st.indptr)
    counts = (df + block - 1) // block
    block_ptr = np.zeros(df.size + 1, dtype=np.int64)
    np.cumsum(counts, out=block_ptr[1:])
    n_blocks = int(block_ptr[-1])
    term_max = _floats(r, "score_block_term_max", df.size, 0.0, in_memory=True, verify=verify)
    block_max = _floats(r, "score_block_max", n_blocks, low, mmap=mmap, verify=verify, full=full)
    block_last = _exact(r, "score_block_last", "i", np.int32, n_blocks, mmap=mmap, verify=verify)
    if full and n_blocks:
        _check_blocks(r, st, block_ptr, counts, term_max, block_max, block_last)

    def build() -> kernels.BlockMax:
        from . import _numba_weights  # imports numba: only when a query needs the blocks

        if block != _numba_weights.BLOCK:  # saved by a release with other blocks
            return kernels.BlockMax(st, cache, params, backend)
        return kernels.BlockMax.from_arrays(params, cache, block_ptr=block_ptr,
                                            block_max=block_max, block_last=block_last,
                                            term_max=term_max)

    cache.seed(kernels.BlockMax, build)


def _check_blocks(r: IndexReader, st: Snapshot, block_ptr: NDArray[np.int64],
                  counts: NDArray[np.int64], term_max: NDArray[np.float32],
                  block_max: NDArray[np.float32], block_last: NDArray[np.int32]) -> None:
    """Each block's last document in range and increasing within its term; each block's
    largest weight at most its term's."""
    where = r.where("score_block_last.npy")
    if int(block_last.min()) < 0 or int(block_last.max()) >= len(st.docs):
        raise IndexFormatError(f"{where}: documents must lie in 0..{len(st.docs) - 1}")
    first = np.zeros(block_last.size, dtype=bool)
    first[block_ptr[:-1][counts > 0]] = True
    if not (first[1:] | (block_last[1:] > block_last[:-1])).all():
        raise IndexFormatError(f"{where}: each term's blocks must end at increasing documents")
    if not (block_max <= np.repeat(term_max, counts)).all():
        raise IndexFormatError(f"{r.where('score_block_max.npy')}: a block's largest weight "
                               "exceeds its term's (score_block_term_max.npy)")


def _seed_weights(r: IndexReader, st: Snapshot, params: Scorer, cache: ScoreCache,
                  backend: Backend, min_df: int, low: float, *, mmap: bool, verify: bool,
                  full: bool) -> None:
    """Seed `kernels.NormCodes` with its saved stored weights (codes and table computed)."""
    df = np.diff(st.indptr)
    stored = df >= min_df
    starts = np.zeros(df.size, dtype=np.int64)
    np.cumsum(np.where(stored, df, 0)[:-1], out=starts[1:])
    weights = _floats(r, "score_weights", int(df[stored].sum()), low, mmap=mmap, verify=verify,
                      full=full)
    # The loading backend may store fewer lists (a larger threshold): they read the rest.
    weight_ptr = np.where(df >= backend.stored_weights_df, starts, -1).astype(np.int64)

    def build() -> kernels.NormCodes:
        # Codes and table only: no list reaches this threshold, so no posting is read.
        bare = kernels.NormCodes(st, cache, params, dataclasses.replace(
            backend, stored_weights_df=len(st.docs) + 1))
        return kernels.NormCodes.from_arrays(params, cache, doc_codes=bare.doc_codes,
                                             table=bare.table, weight_ptr=weight_ptr,
                                             weights=weights)

    cache.seed(kernels.NormCodes, build)
