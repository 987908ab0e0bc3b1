"""The numba kernels (TAAT and block-max) return exactly what exhaustive numpy scoring returns.

Differential: random Zipf corpora and random queries (repeated terms, terms absent
from the vocabulary, k larger than the number of matches), every BM25 variant, before
and after edits; the kernel's top k must equal the exhaustive top k in ids, float32
scores and tie order (earlier document first). Skipped when numba is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from hybrid_retrievers import BM25Index  # noqa: E402
from hybrid_retrievers.bm25 import _numba as _bm25_kernels  # noqa: E402
from hybrid_retrievers.bm25 import _numba_batch  # noqa: E402,F401  (binds the real kernels before any spy)
from hybrid_retrievers.bm25 import kernels as bm25_blockmax  # noqa: E402
from hybrid_retrievers.bm25 import CollectionStats  # noqa: E402
from hybrid_retrievers.selection import top_k  # noqa: E402

METHODS = ["lucene", "robertson", "bm25l", "bm25+"]


@pytest.fixture(autouse=True, params=["taat", "taat-chunked", "taat-stored", "maxscore"])
def strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the kernel switched on, once per kernel strategy.

    "taat-stored" is TAAT with stored weights for every list of 3 or more postings
    (`kernels.STORED_WEIGHTS_DF`), so the test corpora mix both ways of weighing.
    "taat-chunked" and "taat-stored" cut dense accumulation into chunks of 97 documents
    (`kernels.TAAT_CHUNK_DOCS`), so chunk edges fall inside posting blocks; plain "taat"
    keeps the default, one chunk for these small corpora.
    """
    monkeypatch.setattr(bm25_blockmax, "ENABLED", True)
    monkeypatch.setattr(bm25_blockmax, "MIN_DOCS", 0)  # small test corpora take it too
    monkeypatch.setattr(bm25_blockmax, "STRATEGY", request.param.split("-")[0])
    if request.param in ("taat-chunked", "taat-stored"):
        monkeypatch.setattr(bm25_blockmax, "TAAT_CHUNK_DOCS", 97)
    if request.param == "taat-stored":
        monkeypatch.setattr(bm25_blockmax, "STORED_WEIGHTS_DF", 3)
    return request.param


def _taat_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the TAAT kernel's calls (one entry per call)."""
    calls: list[int] = []
    real = _bm25_kernels.search_taat

    def spy(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(_bm25_kernels, "search_taat", spy)
    return calls

WORDS = [f"w{i}" for i in range(400)]
_P = 1.0 / np.arange(1, len(WORDS) + 1) ** 1.1
_P /= _P.sum()


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    # Words repeat within a document (tf > 1), lengths vary (length norms differ),
    # and the Zipf head makes long posting lists of several blocks.
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 60)), p=_P)) for _ in range(n)]


def _queries(rng: np.random.Generator, n: int) -> list[str]:
    out = []
    for _ in range(n):
        words = list(rng.choice(WORDS, size=int(rng.integers(1, 12)), p=_P))
        if rng.random() < 0.3:
            words += words[: int(rng.integers(1, 3))]  # repeated terms
        if rng.random() < 0.2:
            words.append("absentterm")  # not in the vocabulary
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


def _exhaustive(index: BM25Index, query: str, k: int) -> list[tuple[str, float]]:
    terms, counts = index._query_terms(query)
    cand, scores = index._match(terms, counts)  # no k: every match, no pruning
    if not cand.size:
        return []
    best = top_k(scores, k, tiebreak=cand)
    ids = index.ids
    return [(ids[cand[i]], float(scores[i])) for i in best]


def _check(index: BM25Index, queries: list[str], ks=(1, 3, 10, 50, 10_000)) -> None:
    assert bm25_blockmax.available()
    for q in queries:
        for k in ks:
            got = [(h.id, h.score) for h in index.search(q, k=k)]
            assert got == _exhaustive(index, q, k), (q, k)  # exact, not approx
    for k in ks:  # one compiled call for the whole batch: the same hits as one at a time
        batch = [[(h.id, h.score) for h in hits] for hits in index.search_many(queries, k=k)]
        assert batch == [_exhaustive(index, x, k) for x in queries], k


@pytest.mark.parametrize("method", METHODS)
def test_kernel_equals_exhaustive(method: str, strategy: str, monkeypatch) -> None:
    rng = np.random.default_rng(METHODS.index(method))
    index = BM25Index.from_texts(_texts(rng, 2500), method=method)
    calls = _taat_calls(monkeypatch)
    _check(index, _queries(rng, 40))
    # The chosen kernel took the queries.
    if strategy == "maxscore":
        assert getattr(index, "_blockmax", None) is not None and not calls
    else:
        assert getattr(index, "_blockmax", None) is None and calls


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_kernel_after_edits(method: str) -> None:
    rng = np.random.default_rng(7)
    index = BM25Index.from_texts(_texts(rng, 1500), ids=[f"d{i}" for i in range(1500)],
                                 method=method, k1=1.2, b=0.6)
    queries = _queries(rng, 25)
    _check(index, queries, ks=(1, 10, 3000))
    index.add(_texts(rng, 400), ids=[f"n{i}" for i in range(400)])
    _check(index, queries, ks=(1, 10, 3000))
    index.delete([f"d{i}" for i in range(0, 1500, 3)])
    _check(index, queries, ks=(1, 10, 3000))
    index.upsert(_texts(rng, 50), ids=[f"d{i}" for i in range(1, 100, 2)])
    _check(index, queries, ks=(1, 10, 3000))


def test_ties_go_to_the_earlier_document() -> None:
    # Identical documents score identically: the earliest ones must win, in order.
    texts = ["alpha beta", "beta gamma", "alpha beta", "gamma", "alpha beta"] * 400
    index = BM25Index.from_texts(texts, ids=[f"d{i}" for i in range(len(texts))])
    for k in (1, 3, 10, 700):
        got = [(h.id, h.score) for h in index.search("alpha beta gamma", k=k)]
        assert got == _exhaustive(index, "alpha beta gamma", k)
        batch = index.search_many(["alpha beta gamma", "beta", "gamma alpha"], k=k)
        assert [(h.id, h.score) for h in batch[0]] == got
        assert [[(h.id, h.score) for h in hits] for hits in batch[1:]] == [
            _exhaustive(index, "beta", k), _exhaustive(index, "gamma alpha", k)]


def test_one_batch_mixes_both_kernels_and_is_cut_into_calls(monkeypatch) -> None:
    # "auto" with a low MaxScore threshold sends some queries of one batch to MaxScore
    # and the rest to TAAT; a small cell budget cuts the batch into several kernel calls.
    monkeypatch.setattr(bm25_blockmax, "STRATEGY", "auto")
    monkeypatch.setattr(bm25_blockmax, "_MAXSCORE_MIN", 200)
    monkeypatch.setattr(bm25_blockmax, "_BATCH_CELLS", 64)
    rng = np.random.default_rng(17)
    index = BM25Index.from_texts(_texts(rng, 3000))
    queries = _queries(rng, 30) + ["w0", "w0 w350", "absentterm", "w1 w2 w3 w4"]
    calls = []
    real = _numba_batch.search_many
    monkeypatch.setattr(_numba_batch, "search_many", lambda *a: calls.append(a[13]) or real(*a))
    for k in (1, 10, 40):
        calls.clear()
        batch = [[(h.id, h.score) for h in hits] for hits in index.search_many(queries, k=k)]
        assert batch == [_exhaustive(index, q, k) for q in queries], k
        pruned = np.concatenate(calls)
        assert len(calls) == -(-(len(queries) - 1) // max(1, 64 // k))  # absentterm: no call
        assert pruned.any() and not pruned.all()


def test_collection_stats_and_parameters() -> None:
    rng = np.random.default_rng(11)
    texts = _texts(rng, 1200)
    index = BM25Index.from_texts(texts[:600], method="bm25l", k1=0.9, b=0.3, delta=0.7)
    other = BM25Index.from_texts(texts[600:], method="bm25l", k1=0.9, b=0.3, delta=0.7)
    index.set_collection_stats(CollectionStats.merge(
        [CollectionStats.of_index(index), CollectionStats.of_index(other)]
    ))
    _check(index, _queries(rng, 25), ks=(1, 10, 1000))


def test_memory_mapped_index(tmp_path) -> None:
    rng = np.random.default_rng(5)
    BM25Index.from_texts(_texts(rng, 800), method="robertson").save(tmp_path / "index")
    index = BM25Index.load(tmp_path / "index", mmap=True)  # read-only mapped postings
    _check(index, _queries(rng, 10), ks=(1, 10))


def test_off_switch_uses_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    index = BM25Index.from_texts(_texts(rng, 300))
    monkeypatch.setattr(bm25_blockmax, "ENABLED", False)
    index.search("w1 w2 w3", k=5)
    assert getattr(index, "_blockmax", None) is None
    assert not bm25_blockmax.available()


def test_small_indexes_keep_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    index = BM25Index.from_texts(_texts(rng, 300))
    calls = _taat_calls(monkeypatch)
    monkeypatch.setattr(bm25_blockmax, "MIN_DOCS", 301)
    index.search("w1 w2 w3", k=5)
    assert not calls and getattr(index, "_blockmax", None) is None
    monkeypatch.setattr(bm25_blockmax, "MIN_DOCS", 300)
    index.search("w1 w2 w3", k=5)
    assert calls or getattr(index, "_blockmax", None) is not None


@pytest.mark.parametrize("method", METHODS)
def test_norm_codes_and_their_fallback(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # TAAT reads weights from a table for the 255 most common length norms and tf < 16
    # and computes the others: lengths of 1-700 words (more than 255 distinct norms)
    # and words repeated 16-40 times exercise both, and must agree bit for bit.
    rng = np.random.default_rng(21 + METHODS.index(method))
    texts = []
    for i in range(1500):
        words = list(rng.choice(WORDS, size=int(rng.integers(1, 700)), p=_P))
        if i % 7 == 0:
            words += ["w3"] * int(rng.integers(16, 40))
        texts.append(" ".join(words))
    index = BM25Index.from_texts(texts, method=method)
    stored_mode = bm25_blockmax.STORED_WEIGHTS_DF == 3
    if stored_mode:  # here every list has 3+ postings: store only the longer half
        df = np.diff(index._state.indptr)
        monkeypatch.setattr(bm25_blockmax, "STORED_WEIGHTS_DF", int(np.median(df)))
    _check(index, _queries(rng, 20) + ["w3 w1", "w3"], ks=(1, 10, 1000))
    held = getattr(index, "_normcodes", None)
    if bm25_blockmax.STRATEGY == "taat":
        codes = np.asarray(held.doc_codes)
        assert (codes == _bm25_kernels.NO_CODE).any() and (codes != _bm25_kernels.NO_CODE).any()
        stored = np.asarray(held.weight_ptr) >= 0
        if stored_mode:
            assert stored.any() and not stored.all() and held.weights.size > 0
        else:
            assert not stored.any()
