"""Edge parameters score alike on every path: b = 1 with empty documents, k1 = 0, zero weights.

Each case is searched on both sides of the kernel threshold (``Backend.min_docs``
just above and at the corpus size, so "auto" takes numpy, then the kernels) and with
each kernel forced (TAAT, block-max MaxScore), for all four variants, with `search`
and `search_many`: every path must return the same hits with the same float32 scores.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.bm25 import BM25Params
from hybrid_retrievers.inverted import Backend
from hybrid_retrievers.optional import is_available

METHODS = ["lucene", "robertson", "bm25l", "bm25+", "textbook", "atire"]
PLAIN = Analyzer(stopwords=None, stemmer=None)


def _backends(n_docs: int) -> dict[str, Backend]:
    backends = {"auto below the threshold": Backend(min_docs=n_docs + 1)}
    if is_available("numba"):
        backends.update({
            "auto at the threshold": Backend(min_docs=n_docs),
            "taat": Backend("numba", strategy="taat"),
            "taat in chunks": Backend("numba", strategy="taat", taat_chunk_docs=97,
                                          stored_weights_df=3),
            "maxscore": Backend("numba", strategy="maxscore"),
        })
    return backends


def _hits_on_every_path(texts: list[str], queries: list[str], k: int,
                        **options) -> list[list[tuple[str, float]]]:
    """The hits of ``queries`` (ids, scores), asserted equal on every path and backend."""
    ids = [f"d{i}" for i in range(len(texts))]
    seen: dict[str, list[list[tuple[str, float]]]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0 hidden as a NaN either
        for name, backend in _backends(len(texts)).items():
            index = BM25Index.from_texts(texts, ids=ids, backend=backend, **options)
            one = [[(h.id, h.score) for h in index.search(q, k=k)] for q in queries]
            many = [[(h.id, h.score) for h in hits] for hits in index.search_many(queries, k=k)]
            assert many == one, name
            seen[name] = one
    first = next(iter(seen.values()))
    for name, hits in seen.items():
        assert hits == first, name
    return first


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("empty", ["!!!", ""])
def test_b_one_with_an_empty_document(method: str, empty: str) -> None:
    # b = 1 gives an empty document a length norm of exactly 0.
    texts = [f"t{i % 100} u{i % 37}" for i in range(299)] + [empty]
    hits = _hits_on_every_path(texts, ["t1 u2", "t1", "u5 t7 t8"], 3, analyzer=PLAIN,
                               method=method, b=1.0)
    assert all(len(h) == 3 for h in hits)


@pytest.mark.parametrize("method", METHODS)
def test_b_one_with_a_stopword_only_document(method: str) -> None:
    texts = [f"t{i % 100} u{i % 37}" for i in range(299)] + ["The and of"]
    hits = _hits_on_every_path(texts, ["t1 u2"], 3, method=method, b=1.0)
    assert len(hits[0]) == 3


@pytest.mark.parametrize("method", METHODS)
def test_k1_zero_ignores_term_frequency(method: str) -> None:
    # t1 is in d1, d101, d201 and d300, which repeats it: at k1 = 0 the four tie (and
    # ties go to the earlier document), whatever their lengths.
    texts = [f"t{i % 100} u{i % 37}" for i in range(300)] + ["t1 t1 t1 t1 u2 u3 u4"]
    hits = _hits_on_every_path(texts, ["t1 u2", "t1"], 3, analyzer=PLAIN, method=method,
                               k1=0.0)
    assert len(hits[0]) == 3
    assert [doc for doc, _ in hits[1]] == ["d1", "d101", "d201"]
    assert len({score for _, score in hits[1]}) == 1


@pytest.mark.parametrize("method", ["bm25l", "bm25+"])
def test_postings_whose_weight_rounds_to_zero_still_match(method: str) -> None:
    # A huge delta makes a long document's float32 shifted weight round to 0 with BM25L
    # (tfw(1) = tfw(0) in float32): it contains the term, so it must come back on every
    # path. BM25+ keeps a positive weight; it is checked for agreement.
    texts = ["alpha " + "filler " * 999, "alpha"] + ["other"] * 298
    hits = _hits_on_every_path(texts, ["alpha", "alpha other"], 10, analyzer=PLAIN,
                               method=method, delta=1000.0)
    assert {doc for doc, _ in hits[0]} == {"d0", "d1"}


def test_bm25l_refuses_k1_and_delta_both_zero() -> None:
    with pytest.raises(ValueError, match=r"bm25l needs k1 > 0 or delta > 0.*0/0"):
        BM25Params("bm25l", k1=0.0, delta=0.0)
    with pytest.raises(ValueError, match="bm25l needs"):
        BM25Index.from_texts(["a b"], method="bm25l", k1=0, delta=0)
    assert BM25Params("bm25+", k1=0.0, delta=0.0).k1 == 0.0  # the others take it



def _three_term_corpus(n: int) -> list[str]:
    rng = np.random.default_rng(7)
    texts = []
    for _ in range(n):
        words = [f"w{int(rng.integers(0, 500))}" for _ in range(int(rng.integers(1, 9)))]
        for term, share in (("wing", 0.9), ("lift", 0.6), ("drag", 0.3)):
            if rng.random() < share:
                words += [term] * int(rng.integers(1, 4))
        texts.append(" ".join(words))
    return texts


@pytest.mark.parametrize("method", METHODS)
def test_the_numpy_maxscore_path_is_within_the_documented_tolerance(method: str) -> None:
    # 75,000+ postings over three terms of different weight: the numpy path prunes term at
    # a time in impact order (drag, lift, wing), the kernels add in query order (wing, lift,
    # drag); float32 addition is not associative, so scores may differ, by less than the
    # documented relative 1e-6 (bm25/params.py).
    pytest.importorskip("numba")
    texts = _three_term_corpus(42_000)
    numpy_path = BM25Index.from_texts(texts, backend="numpy", method=method)
    kernels = BM25Index.from_texts(texts, backend="numba", method=method)
    got = {h.doc.id: h.score for h in numpy_path.search("wing lift drag", k=50)}
    want = {h.doc.id: h.score for h in kernels.search("wing lift drag", k=50)}
    shared = got.keys() & want.keys()
    assert len(shared) >= 45
    worst = max(abs(got[i] - want[i]) / abs(want[i]) for i in shared)
    assert worst < 1e-6, worst


def test_epsilon_floors_negative_robertson_idfs_and_is_saved(tmp_path) -> None:
    # "wing" is in 3 of 4 documents: its Robertson idf is negative, so it is floored at
    # epsilon times the mean idf (rank_bm25's BM25Okapi); epsilon changes its weight.
    texts = ["wing lift", "wing drag", "wing", "flutter"]
    scores = {}
    for epsilon in (0.25, 1.0):
        index = BM25Index.from_texts(texts, ids=list("abcd"), analyzer=PLAIN,
                                     method="okapi", epsilon=epsilon)
        scores[epsilon] = index.search("wing", k=1)[0].score
        assert index.params.epsilon == epsilon
        index.save(tmp_path / str(epsilon))
        loaded = BM25Index.load(tmp_path / str(epsilon))
        assert loaded.params == index.params
        assert loaded.search("wing", k=1)[0].score == scores[epsilon]
    assert scores[1.0] == pytest.approx(4 * scores[0.25], rel=1e-6)
    assert BM25Params("okapi") == BM25Params("robertson", epsilon=0.25)
    assert "epsilon" not in BM25Params("okapi").as_dict()  # older releases read it too


def test_epsilon_is_robertson_only_and_checked() -> None:
    with pytest.raises(ValueError, match="method 'bm25l' has none"):
        BM25Params("bm25l", epsilon=0.1)
    with pytest.raises(ValueError, match="epsilon must be >= 0, got -1"):
        BM25Params("robertson", epsilon=-1)
    assert BM25Params("lucene").epsilon is None
