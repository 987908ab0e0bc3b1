"""The numba kernels (TAAT and block-max) return exactly what exhaustive numpy scoring returns.

Differential: random Zipf corpora and random queries (repeated terms, terms absent
from the vocabulary, k larger than the number of matches), every BM25 variant, before
and after edits; the kernel's top k must equal the exhaustive top k in ids, float32
scores and tie order (earlier document first). Skipped when numba is not installed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("numba")

from hybrid_retrievers import BM25Index  # noqa: E402
from hybrid_retrievers.inverted import Backend  # noqa: E402
from hybrid_retrievers.inverted import _numba as _compiled  # noqa: E402
from hybrid_retrievers.inverted import _numba_batch  # noqa: E402
from hybrid_retrievers.inverted import kernels  # noqa: E402
from hybrid_retrievers.inverted.kernels import BlockMax, NormCodes  # noqa: E402
from hybrid_retrievers.bm25 import CollectionStats  # noqa: E402
from hybrid_retrievers.selection import top_k  # noqa: E402

METHODS = ["lucene", "robertson", "bm25l", "bm25+", "textbook", "atire"]

STRATEGIES = {
    # The kernels at every size ("numba"), so small test corpora take them too.
    "taat": Backend("numba", strategy="taat"),
    # Dense accumulation cut into chunks of 97 documents, so chunk edges fall inside
    # posting blocks; plain "taat" keeps the default, one chunk for these corpora.
    "taat-chunked": Backend("numba", strategy="taat", taat_chunk_docs=97),
    # Stored weights for every list of 3 or more postings, so the test corpora mix both
    # ways of weighing.
    "taat-stored": Backend("numba", strategy="taat", taat_chunk_docs=97,
                               stored_weights_df=3),
    "maxscore": Backend("numba", strategy="maxscore"),
}


@pytest.fixture(params=list(STRATEGIES))
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test that takes it runs once per kernel strategy."""
    return STRATEGIES[request.param]


def _held(index: BM25Index, kind: type) -> object | None:
    """The kernel metadata of ``kind`` the index's current score cache holds, if built."""
    return index._cache(index._state).peek(kind)

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
    cand, scores = index._match(index._state, terms, counts)  # no k: every match, no pruning
    if not cand.size:
        return []
    best = top_k(scores, k, tiebreak=cand)
    ids = index.ids
    return [(ids[cand[i]], float(scores[i])) for i in best]


def _check(index: BM25Index, queries: list[str], ks=(1, 3, 10, 50, 10_000)) -> None:
    assert kernels.available()
    for q in queries:
        for k in ks:
            got = [(h.id, h.score) for h in index.search(q, k=k)]
            assert got == _exhaustive(index, q, k), (q, k)  # exact, not approx
    for k in ks:  # one compiled call for the whole batch: the same hits as one at a time
        batch = [[(h.id, h.score) for h in hits] for hits in index.search_many(queries, k=k)]
        assert batch == [_exhaustive(index, x, k) for x in queries], k


@pytest.mark.parametrize("method", METHODS)
def test_kernel_equals_exhaustive(method: str, backend: Backend) -> None:
    rng = np.random.default_rng(METHODS.index(method))
    index = BM25Index.from_texts(_texts(rng, 2500), method=method, backend=backend)
    queries = _queries(rng, 40)
    for q in queries:
        index.search(q, k=10)
    # The chosen kernel took the queries: each builds its own metadata.
    assert (_held(index, BlockMax) is not None) == (backend.strategy == "maxscore")
    assert (_held(index, NormCodes) is not None) == (backend.strategy == "taat")
    _check(index, queries)


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_kernel_after_edits(method: str, backend: Backend) -> None:
    rng = np.random.default_rng(7)
    index = BM25Index.from_texts(_texts(rng, 1500), ids=[f"d{i}" for i in range(1500)],
                                 method=method, k1=1.2, b=0.6, backend=backend)
    queries = _queries(rng, 25)
    _check(index, queries, ks=(1, 10, 3000))
    index.add(_texts(rng, 400), ids=[f"n{i}" for i in range(400)])
    _check(index, queries, ks=(1, 10, 3000))
    index.delete([f"d{i}" for i in range(0, 1500, 3)])
    _check(index, queries, ks=(1, 10, 3000))
    index.upsert(_texts(rng, 50), ids=[f"d{i}" for i in range(1, 100, 2)])
    _check(index, queries, ks=(1, 10, 3000))


def test_ties_go_to_the_earlier_document(backend: Backend) -> None:
    # Identical documents score identically: the earliest ones must win, in order.
    texts = ["alpha beta", "beta gamma", "alpha beta", "gamma", "alpha beta"] * 400
    index = BM25Index.from_texts(texts, ids=[f"d{i}" for i in range(len(texts))],
                                 backend=backend)
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
    rng = np.random.default_rng(17)
    index = BM25Index.from_texts(_texts(rng, 3000), backend=Backend(
        "numba", strategy="auto", maxscore_min_postings=200, batch_cells=64))
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


def test_collection_stats_and_parameters(backend: Backend) -> None:
    rng = np.random.default_rng(11)
    texts = _texts(rng, 1200)
    index = BM25Index.from_texts(texts[:600], method="bm25l", k1=0.9, b=0.3, delta=0.7,
                                 backend=backend)
    other = BM25Index.from_texts(texts[600:], method="bm25l", k1=0.9, b=0.3, delta=0.7)
    index.set_collection_stats(CollectionStats.merge(
        [CollectionStats.of_index(index), CollectionStats.of_index(other)]
    ))
    _check(index, _queries(rng, 25), ks=(1, 10, 1000))


def test_memory_mapped_index(tmp_path, backend: Backend) -> None:
    rng = np.random.default_rng(5)
    BM25Index.from_texts(_texts(rng, 800), method="robertson").save(tmp_path / "index")
    # read-only mapped postings; the backend is a runtime choice, given to load
    index = BM25Index.load(tmp_path / "index", mmap=True, backend=backend)
    assert index.backend == backend
    _check(index, _queries(rng, 10), ks=(1, 10))


def test_numpy_backend_never_uses_the_kernels() -> None:
    rng = np.random.default_rng(3)
    index = BM25Index.from_texts(_texts(rng, 300), backend="numpy")
    index.search("w1 w2 w3", k=5)
    index.search_many(["w1 w2 w3", "w4"], k=5)
    assert _held(index, BlockMax) is None and _held(index, NormCodes) is None


def test_small_indexes_keep_the_numpy_path_on_auto() -> None:
    rng = np.random.default_rng(4)
    texts = _texts(rng, 300)
    index = BM25Index.from_texts(texts, backend=Backend(min_docs=301))
    index.search("w1 w2 w3", k=5)
    assert _held(index, BlockMax) is None and _held(index, NormCodes) is None
    index = BM25Index.from_texts(texts, backend=Backend(min_docs=300))
    index.search("w1 w2 w3", k=5)
    assert _held(index, BlockMax) is not None or _held(index, NormCodes) is not None


def test_backend_is_checked() -> None:
    with pytest.raises(ValueError, match=r"backend must be one of \['auto', 'numba', 'numpy'\]"):
        BM25Index(backend="gpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="strategy must be one of"):
        Backend(strategy="fastest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Backend.taat_chunk_docs must be >= 1"):
        Backend(taat_chunk_docs=0)
    with pytest.raises(TypeError, match="backend must be"):
        BM25Index(backend=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", METHODS)
def test_norm_codes_and_their_fallback(method: str, backend: Backend) -> None:
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
    index = BM25Index.from_texts(texts, method=method, backend=backend)
    stored_mode = backend.stored_weights_df == 3
    if stored_mode:  # here every list has 3+ postings: store only the longer half
        df = np.diff(index._state.indptr)
        backend = dataclasses.replace(backend, stored_weights_df=int(np.median(df)))
        index = BM25Index.from_texts(texts, method=method, backend=backend)
    _check(index, _queries(rng, 20) + ["w3 w1", "w3"], ks=(1, 10, 1000))
    held = _held(index, NormCodes)
    if backend.strategy == "taat":
        codes = np.asarray(held.doc_codes)
        assert (codes == _compiled.NO_CODE).any() and (codes != _compiled.NO_CODE).any()
        stored = np.asarray(held.weight_ptr) >= 0
        if stored_mode:
            assert stored.any() and not stored.all() and held.weights.size > 0
        else:
            assert not stored.any()
