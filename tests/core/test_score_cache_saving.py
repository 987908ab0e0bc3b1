"""The score cache saved with an index (`inverted.cache_saving`): a loaded index scores bit
for bit as one that computes its cache, without a pass over every posting; saved arrays
that do not apply are ignored, and forged ones refused naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, IndexFormatError, SparseIndex
from hybrid_retrievers.bm25 import CollectionStats
from hybrid_retrievers.inverted import Backend, ImpactScorer, kernels
from hybrid_retrievers.inverted.score_cache import PostingBounds, ScoreCache
from hybrid_retrievers.models import HashingSparseEmbedder

from index_tamper import edit_manifest, files_of, rehash

METHODS = ["lucene", "robertson", "textbook", "atire", "bm25l", "bm25+"]
NUMBA = kernels.available()
needs_numba = pytest.mark.skipif(not NUMBA, reason="the kernels' metadata needs numba")


def corpus(n: int = 400, seed: int = 7) -> tuple[list[str], list[str]]:
    """Zipfian words, log-normal lengths: a few long lists (several blocks, stored
    weights at a low threshold) and many short ones."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(120)]
    p = 1.0 / np.arange(1, len(words) + 1)
    lengths = np.clip(rng.lognormal(2.5, 0.6, n).astype(int), 1, 80)
    texts = [" ".join(rng.choice(words, size=k, p=p / p.sum())) for k in lengths]
    return texts, [f"d{i}" for i in range(n)]


QUERIES = ["w0", "w0 w1", "w3 w40 w77", "w1 w2 w5 w9 w17", "w0 w0 w119", "w100 w101", "zzz",
           "w2 w2 w2 w60"]


def backend(strategy: str = "auto") -> Backend:
    """The kernels on a small index, with stored weights for lists of 40+ postings."""
    if not NUMBA:
        return Backend("numpy")
    return Backend("numba", strategy=strategy, stored_weights_df=40,  # type: ignore[arg-type]
                   maxscore_min_postings=0)


def hits(index: Any, queries: list[str] = QUERIES, k: int = 10) -> list[list[tuple[str, float]]]:
    return [[(h.id, h.score) for h in index.search(q, k=k)] for q in queries]


def cache_of(index: Any) -> ScoreCache:
    st = index._state  # private: the test compares the cache itself
    return index._cache(st)


def assert_same_cache(got: ScoreCache, want: ScoreCache) -> None:
    for name in ("norm", "idf", "upper"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert (got.absent is None) == (want.absent is None)
    if want.absent is not None:
        assert got.absent.tobytes() == want.absent.tobytes()
    assert got.bounds.top.tobytes() == want.bounds.top.tobytes()
    assert np.float32(got.least).tobytes() == np.float32(want.least).tobytes()
    assert (got.nonnegative, got.positive, got.avgdl) == (
        want.nonnegative, want.positive, want.avgdl)


def assert_same_metadata(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    for name in type(want).__slots__:
        a, b = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert tuple(got.params) == tuple(want.params)


def no_posting_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every pass over all postings (bounds, block metadata, stored weights) fail."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read every posting")

    monkeypatch.setattr(PostingBounds, "of", classmethod(refuse))
    monkeypatch.setattr(kernels.BlockMax, "_build", refuse)
    if NUMBA:
        import hybrid_retrievers.inverted._numba as compiled

        real = compiled.build_weights

        def weights(indptr: Any, *args: Any) -> Any:
            ptr, w = real(indptr, *args)
            assert w.size == 0, "stored the weights of long lists again"
            return ptr, w

        monkeypatch.setattr(compiled, "build_weights", weights)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mmap", [False, True])
def test_a_loaded_index_scores_as_one_that_computes_its_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, mmap: bool) -> None:
    texts, ids = corpus()
    params = {"method": method, "k1": 1.3, "b": 0.6,
              "delta": 0.7 if method in ("bm25l", "bm25+") else None}
    BM25Index.from_texts(texts, ids, backend=backend(), **params).save(tmp_path / "idx")
    strategies = ("taat", "maxscore") if NUMBA else ("auto",)
    want = {s: hits(BM25Index.from_texts(texts, ids, backend=backend(s), **params))
            for s in strategies}
    assert hits(BM25Index.from_texts(texts, ids, backend="numpy", **params)) == want[
        strategies[0]]

    no_posting_pass(monkeypatch)
    for strategy, expected in want.items():
        loaded = BM25Index.load(tmp_path / "idx", mmap=mmap, backend=backend(strategy))
        assert hits(loaded) == expected
        many = loaded.search_many(QUERIES, k=10)
        assert [[(h.id, h.score) for h in r] for r in many] == expected
        cache = cache_of(loaded)
    monkeypatch.undo()
    rebuilt = ScoreCache.build(loaded._state, loaded.params, None)
    assert_same_cache(cache, rebuilt)
    if NUMBA:
        for kind in (kernels.BlockMax, kernels.NormCodes):
            seeded = cache.peek(kind)
            assert seeded is not None, kind
            assert_same_metadata(seeded, kind(loaded._state, rebuilt, loaded.params, backend()))
            if mmap and kind is kernels.BlockMax:
                assert isinstance(seeded.block_max, np.memmap)
        assert cache.peek(kernels.NormCodes).weights.size > 0  # long lists' weights, saved


def test_edits_after_a_load_score_as_the_same_edits_in_memory(tmp_path: Path) -> None:
    texts, ids = corpus()
    for method in ("lucene", "bm25+"):
        index = BM25Index.from_texts(texts, ids, method=method, backend=backend())
        index.save(tmp_path / method)
        loaded = BM25Index.load(tmp_path / method, mmap=True, backend=backend())
        assert hits(loaded) == hits(index)
        for edited in (index, loaded):
            edited.add(["w0 w0 w7 new", "w5 w119"], ids=["n1", "n2"])
            edited.delete(["d3", "d50"])
            edited.upsert(["w1 w1 w1"], ids=["d9"])
        assert hits(loaded) == hits(index)
        assert_same_cache(cache_of(loaded), ScoreCache.build(loaded._state, loaded.params, None))
        rebuilt = BM25Index.from_texts([d.text for d in index.docs], index.ids, method=method,
                                       backend=backend())
        assert hits(loaded) == hits(rebuilt)


def test_collection_statistics_replace_the_saved_bounds(tmp_path: Path) -> None:
    texts, ids = corpus()
    index = BM25Index.from_texts(texts[:300], ids[:300], backend=backend())
    other = BM25Index.from_texts(texts[300:], ids[300:])
    stats = CollectionStats.merge([CollectionStats.of_index(index),
                                   CollectionStats.of_index(other)])
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx", mmap=True, backend=backend())
    assert hits(loaded) == hits(index)
    for shard in (index, loaded):
        shard.set_collection_stats(stats)
    assert hits(loaded) == hits(index)
    cache = cache_of(loaded)
    assert cache.stats is stats and cache.avgdl == stats.avgdl != loaded._state.avgdl
    assert_same_cache(cache, ScoreCache.build(loaded._state, loaded.params, stats))
    loaded.set_collection_stats(None)
    assert hits(loaded) == hits(BM25Index.from_texts(texts[:300], ids[:300]))


def test_an_index_scoring_with_collection_statistics_saves_its_own(tmp_path: Path) -> None:
    texts, ids = corpus()
    index = BM25Index.from_texts(texts[:300], ids[:300], method="bm25l", backend=backend())
    index.set_collection_stats(CollectionStats.merge([
        CollectionStats.of_index(index),
        CollectionStats.of_index(BM25Index.from_texts(texts[300:], ids[300:]))]))
    hits(index)  # its cache, with the corpus's avgdl, is built
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx", backend=backend())
    local = BM25Index.from_texts(texts[:300], ids[:300], method="bm25l", backend=backend())
    assert hits(loaded) == hits(local)
    assert_same_cache(cache_of(loaded), cache_of(local))


def test_saved_arrays_of_other_parameters_or_none_fall_back_to_the_postings(
        tmp_path: Path) -> None:
    texts, ids = corpus()
    index = BM25Index.from_texts(texts, ids, method="bm25+", backend=backend())
    want = hits(index)
    index.save(tmp_path / "idx")
    manifest = json.loads((files_of(tmp_path / "idx") / "manifest.json").read_text())
    entry = manifest["score_cache"]
    calls: list[int] = []
    real = PostingBounds.of

    def counted(*args: Any) -> PostingBounds:
        calls.append(1)
        return real(*args)

    for change in ({"k1": entry["k1"] + 0.5}, {"b": 0.5}, {"delta": 2.0},
                   {"avgdl": entry["avgdl"] * 2}, {"n_docs": 3},
                   {"library_version": "0.0.1"}, {"method": "lucene"}, None):
        if change is None:  # an index saved before the score cache was
            stripped = {k: v for k, v in manifest.items() if k != "score_cache"}
            (files_of(tmp_path / "idx") / "manifest.json").write_text(json.dumps(stripped))
            rehash(tmp_path / "idx")
        else:
            edit_manifest(tmp_path / "idx", score_cache={**entry, **change})
        calls.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(PostingBounds, "of", classmethod(lambda cls, *a: counted(*a)))
            for mmap in (False, True):
                loaded = BM25Index.load(tmp_path / "idx", mmap=mmap, backend=backend())
                assert hits(loaded) == want
        assert calls, change  # built from the postings, not taken from the files


def test_old_indexes_still_load() -> None:
    old = Path(__file__).parent / "data" / "bm25_analyzer_v1"
    for mmap in (False, True):
        index = BM25Index.load(old, mmap=mmap)
        assert len(index) > 0
        word = next(iter(index._state.vocab))
        assert index.search(word, k=3)


def test_a_fielded_index_saves_no_cache(tmp_path: Path) -> None:
    BM25Index.from_texts(["a wing", "a tail"], metadatas=[{"lang": "en"}, {"lang": "fr"}],
                         fields={"text": 1.0, "lang": 2.0}).save(tmp_path / "f")
    assert not list(files_of(tmp_path / "f").glob("score_*.npy"))
    assert BM25Index.load(tmp_path / "f", mmap=True).search("wing", k=1)[0].doc.text == "a wing"


@pytest.mark.parametrize("mmap", [False, True])
def test_sparse_index_loads_its_saved_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             mmap: bool) -> None:
    texts, ids = corpus(300)
    emb = HashingSparseEmbedder()
    index = SparseIndex.from_texts(texts, ids, embedder=emb, backend=backend())
    queries = QUERIES[:6]
    want = {s: [[(h.id, h.score) for h in SparseIndex.from_texts(
        texts, ids, embedder=emb, backend=backend(s)).search(q, k=10)] for q in queries]
            for s in (("taat", "maxscore") if NUMBA else ("auto",))}
    index.save(tmp_path / "s")
    no_posting_pass(monkeypatch)
    for strategy, expected in want.items():
        loaded = SparseIndex.load(tmp_path / "s", emb, mmap=mmap, backend=backend(strategy))
        assert [[(h.id, h.score) for h in loaded.search(q, k=10)] for q in queries] == expected
    monkeypatch.undo()
    assert_same_cache(cache_of(loaded), ScoreCache.build(loaded._state, ImpactScorer(), None))
    if NUMBA:
        assert not (files_of(tmp_path / "s") / "score_weights.npy").exists()


# ---------------------------------------------------------------------- forged files


def saved(tmp_path: Path, method: str = "bm25l") -> Path:
    texts, ids = corpus(200)
    BM25Index.from_texts(texts, ids, method=method, backend=backend()).save(tmp_path / "idx")
    return tmp_path / "idx"


def forge_array(path: Path, name: str, array: np.ndarray) -> None:
    np.save(files_of(path) / name, array)
    rehash(path)


def _top(path: Path) -> np.ndarray:
    return np.load(files_of(path) / "score_top.npy")


@pytest.mark.parametrize(("forge", "message"), [
    (lambda a: a[:-1], r"score_top.npy: expected \d+ rows"),
    (lambda a: np.where(np.arange(a.size) == 2, np.nan, a).astype(np.float32),
     r"score_top.npy: holds NaN or infinite values"),
    (lambda a: np.where(np.arange(a.size) == 2, -5.0, a).astype(np.float32),
     r"score_top.npy: holds -5.0, below the lowest weight"),
    (lambda a: a.astype(np.float64), r"score_top.npy: expected float32, got float64"),
    (lambda a: a.astype(">f4"), r"score_top.npy: expected float32, got >f4"),
    (lambda a: a.astype(np.int32), r"score_top.npy: expected a 1-d array of kind 'f'"),
    (lambda a: a.reshape(1, -1), r"score_top.npy: expected a 1-d array"),
])
@pytest.mark.parametrize("mmap", [False, True])
def test_forged_bounds_are_refused_naming_the_file(tmp_path: Path, forge: Any, message: str,
                                                   mmap: bool) -> None:
    path = saved(tmp_path)
    forge_array(path, "score_top.npy", forge(_top(path)))
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(path, mmap=mmap, backend=backend())


def test_a_truncated_or_unlisted_bounds_file_is_refused(tmp_path: Path) -> None:
    path = saved(tmp_path)
    target = files_of(path) / "score_top.npy"
    target.write_bytes(target.read_bytes()[:-8])
    with pytest.raises(IndexFormatError, match=r"score_top.npy"):
        BM25Index.load(path, mmap=True)
    rehash(path)  # a consistent forgery: the header no longer matches the size
    with pytest.raises(IndexFormatError, match=r"score_top.npy: its header declares"):
        BM25Index.load(path, mmap=True)
    target.unlink()
    rehash(path)
    with pytest.raises(IndexFormatError, match=r"does not list 'score_top.npy'|score_top.npy"):
        BM25Index.load(path)


@pytest.mark.parametrize(("least", "message"), [
    (float("nan"), r"score_cache.least must be a finite float32 value"),
    ("0.5", r"score_cache.least must be a finite float32 value"),
    (True, r"score_cache.least must be a finite float32 value"),
    (0.1, r"score_cache.least must be a finite float32 value"),  # not a float32 value
    (-100.0, r"score_cache.least must be a finite float32 value >= "),
    (None, r"score_cache.least is missing"),
    (1000.0, r"score_top.npy: a term's largest weight is below the smallest"),
])
def test_a_forged_least_weight_is_refused(tmp_path: Path, least: Any, message: str) -> None:
    path = saved(tmp_path)
    entry = json.loads((files_of(path) / "manifest.json").read_text())["score_cache"]
    edit_manifest(path, score_cache={**entry, "least": least})
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(path, mmap=True)


def test_a_malformed_entry_is_refused(tmp_path: Path) -> None:
    path = saved(tmp_path)
    entry = json.loads((files_of(path) / "manifest.json").read_text())["score_cache"]
    for bad, message in ((["x"], r"'score_cache' must be dict"),
                         ({**entry, "blocks": "64"}, r"score_cache.blocks must be null or an "
                                                     r"int >= 1, got '64'"),
                         ({**entry, "weights_min_df": 0}, r"score_cache.weights_min_df")):
        edit_manifest(path, score_cache=bad)
        with pytest.raises(IndexFormatError, match=message):
            BM25Index.load(path, mmap=True)


@needs_numba
@pytest.mark.parametrize(("name", "forge", "message"), [
    ("score_block_last.npy", lambda a: np.where(np.arange(a.size) == 0, 10**6, a).astype(
        np.int32), r"score_block_last.npy: documents must lie in 0..199"),
    ("score_block_last.npy", lambda a: a[::-1].copy(),
     r"score_block_last.npy: each term's blocks must end at increasing documents"),
    ("score_block_max.npy", lambda a: (a + np.float32(50)).astype(np.float32),
     r"score_block_max.npy: a block's largest weight exceeds its term's"),
    ("score_weights.npy", lambda a: np.where(np.arange(a.size) == 1, np.inf, a).astype(
        np.float32), r"score_weights.npy: holds NaN or infinite values"),
    ("score_weights.npy", lambda a: a[:-1], r"score_weights.npy: expected \d+ rows"),
    ("score_block_term_max.npy", lambda a: -a - 1, r"score_block_term_max.npy: holds -"),
])
def test_forged_kernel_metadata_is_refused_naming_the_file(tmp_path: Path, name: str,
                                                           forge: Any, message: str) -> None:
    path = saved(tmp_path)
    forge_array(path, name, forge(np.load(files_of(path) / name)))
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(path, backend=backend())
    # Memory-mapped, per-block and per-posting values go unchecked unless verify (as the
    # postings'); their structure (length, dtype) and the per-term arrays always are.
    structural = "rows" in message or "score_block_term_max" in name
    if structural:
        with pytest.raises(IndexFormatError, match=message):
            BM25Index.load(path, mmap=True, backend=backend())
    else:
        BM25Index.load(path, mmap=True, backend=backend())
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(path, mmap=True, verify=True, backend=backend())


@needs_numba
def test_kernel_metadata_is_used_only_when_it_fits_the_loading_backend(tmp_path: Path) -> None:
    path = saved(tmp_path)
    saving = backend()
    for threshold, seeded in ((saving.stored_weights_df, True), (80, True), (10, False)):
        loading = Backend("numba", stored_weights_df=threshold, maxscore_min_postings=0)
        loaded = BM25Index.load(path, mmap=True, backend=loading)
        fresh = BM25Index.from_texts(*corpus(200), method="bm25l", backend=loading)
        assert hits(loaded) == hits(fresh)
        codes = cache_of(loaded).peek(kernels.NormCodes)
        want = kernels.NormCodes(loaded._state, cache_of(fresh), loaded.params, loading)
        assert codes is not None and isinstance(codes.weights, np.memmap) == seeded
        # The same lists store weights, each the same ones (a larger threshold than the
        # saving index's leaves the shorter lists' saved weights unread).
        df = np.diff(loaded._state.indptr)
        assert np.array_equal(codes.weight_ptr >= 0, want.weight_ptr >= 0)
        for t in np.flatnonzero(want.weight_ptr >= 0):
            got = codes.weights[codes.weight_ptr[t]:codes.weight_ptr[t] + df[t]]
            assert got.tobytes() == want.weights[want.weight_ptr[t]:][:df[t]].tobytes()
        assert codes.doc_codes.tobytes() == want.doc_codes.tobytes()
        assert codes.table.tobytes() == want.table.tobytes()
        loaded.save(tmp_path / f"again-{threshold}")  # its weights for its own threshold
        again = BM25Index.load(tmp_path / f"again-{threshold}", mmap=True, backend=loading)
        assert hits(again) == hits(fresh)
    numpy_loaded = BM25Index.load(path, mmap=True, backend="numpy")
    assert hits(numpy_loaded) == hits(BM25Index.from_texts(*corpus(200), method="bm25l",
                                                           backend="numpy"))
