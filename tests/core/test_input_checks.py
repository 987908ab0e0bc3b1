"""Bad texts, ids and filter values get our own clear errors naming the parameter.

These are the checks of the ``from_texts`` recipes and of editing. What every searcher
does with a bad ``k`` or query, and how filters select, is the shared contract
(`tests/contract.py`, run for every core searcher by `test_searcher_contract.py`).
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_retrievers.bm25 import BM25Index
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.parent import ParentChildSearcher
from hybrid_retrievers.vector import VectorIndex

TEXTS = ["wing lift and drag", "bread dough", "lift coefficient of a wing"]


def bm25(texts, **kw):  # noqa: ANN001, ANN003, ANN201
    return BM25Index.from_texts(texts, **kw)


def vector(texts, **kw):  # noqa: ANN001, ANN003, ANN201
    return VectorIndex.from_texts(texts, embedder=HashingEmbedder(16), **kw)


def parent(texts, **kw):  # noqa: ANN001, ANN003, ANN201
    return ParentChildSearcher.from_texts(texts, chunk_size=40, chunk_overlap=0, **kw)


FROM_TEXTS = {"bm25": bm25, "vector": vector, "parent": parent}
"""The searchers built from raw texts, whose recipe and editing checks this file covers."""


@pytest.mark.parametrize("kind", FROM_TEXTS)
@pytest.mark.parametrize(("texts", "words"), [
    (None, "texts must be a list of str, got NoneType"),
    (5, "texts must be a list of str, got int"),
    (b"wing", "texts must be a list of str, got bytes"),
    ("wing lift", "not a single str"),
    ({"a": "wing lift", "b": "bread"}, "got a dict .its keys would be indexed"),
    (["wing", 3], r"texts\[1\] must be a str, got int"),
])
def test_bad_texts_are_refused(kind: str, texts: object, words: str) -> None:
    with pytest.raises(TypeError, match=words):
        FROM_TEXTS[kind](texts)


@pytest.mark.parametrize("kind", FROM_TEXTS)
def test_a_set_of_texts_cannot_be_paired_with_ids(kind: str) -> None:
    with pytest.raises(TypeError, match="no order"):
        FROM_TEXTS[kind]({"wing lift", "bread"}, ids=["a", "b"])
    assert FROM_TEXTS[kind]({"wing lift", "bread"}).search("wing", k=5)[0].doc.text == "wing lift"


@pytest.mark.parametrize("kind", FROM_TEXTS)
def test_dict_fix_in_the_message_works(kind: str) -> None:
    d = {"a": "wing lift", "b": "bread"}
    index = FROM_TEXTS[kind](list(d.values()), ids=list(d.keys()))
    assert index.search("wing", k=2)[0].id == "a"


@pytest.mark.parametrize("kind", FROM_TEXTS)
@pytest.mark.parametrize(("ids", "error", "words"), [
    (5, TypeError, "ids must be a list of str"),
    ([["a"], "b", "c"], TypeError, r"ids\[0\] must be a str or None, got list"),
    ([1, 2, 3], TypeError, r"ids\[0\] must be a str or None, got int"),
    ({"a": 1, "b": 2, "c": 3}, TypeError, "ids must be a list of str"),
])
def test_bad_ids_at_build_are_refused(kind: str, ids: object, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        FROM_TEXTS[kind](TEXTS, ids=ids)


@pytest.mark.parametrize("kind", FROM_TEXTS)
@pytest.mark.parametrize(("ids", "words"), [
    (None, "must be a list of str ids .or one str id., got NoneType"),
    (5, "got int"),
    ([["a"]], r"\[0\] must be a str id, got list"),
    ([{"a"}], r"\[0\] must be a str id, got set"),
    ([3], r"\[0\] must be a str id, got int"),
    ({"a": 1}, "got dict"),
])
def test_bad_ids_at_delete_are_refused(kind: str, ids: object, words: str) -> None:
    index = FROM_TEXTS[kind](TEXTS, ids=["a", "b", "c"])
    before = [h.id for h in index.search("wing lift bread", k=5)]
    with pytest.raises(TypeError, match=words):
        index.delete(ids)
    assert [h.id for h in index.search("wing lift bread", k=5)] == before  # nothing removed


def test_delete_still_takes_one_str_id_and_generators() -> None:
    index = bm25(TEXTS, ids=["a", "b", "c"])
    index.delete("a")
    index.delete(i for i in ["b"])
    assert len(index) == 1


@pytest.mark.parametrize("kind", FROM_TEXTS)
def test_a_numpy_array_filter_value_is_a_clear_error(kind: str) -> None:
    metas = [{"tags": [1, 2]}, {"tags": [3]}, {"tags": [1, 2]}]
    index = FROM_TEXTS[kind](TEXTS, ids=["a", "b", "c"], metadatas=metas)
    with pytest.raises(TypeError, match=r"filter\['tags'\] is a numpy.ndarray.*tolist"):
        index.search("wing", k=5, filter={"tags": np.array([1, 2])})
    # The suggested fix gives the intended semantics (a whole-value comparison).
    hits = index.search("wing", k=5, filter={"tags": np.array([1, 2]).tolist()})
    assert sorted(h.id for h in hits) == ["a", "c"]


def test_numpy_scalar_filter_values_still_work() -> None:
    index = bm25(TEXTS, ids=["a", "b", "c"], metadatas=[{"n": 1}, {"n": 2}, {"n": 1}])
    for value in (np.int64(1), np.array(1)):  # a scalar and a 0-d array
        assert sorted(h.id for h in index.search("wing", k=5, filter={"n": value})) == ["a", "c"]


@pytest.mark.parametrize("vectors", [
    [[1.0, 0.0], [1.0, 0.0, 0.0]],
    [[1.0, 0.0], [0.5]],
])
def test_ragged_vectors_are_our_clear_error(vectors: list) -> None:
    with pytest.raises(ValueError, match="rows of equal length.*lengths"):
        VectorIndex.from_vectors(vectors, ids=["a", "b"])
    index = VectorIndex.from_vectors([[1.0, 0.0]], ids=["x"])
    with pytest.raises(ValueError, match="rows of equal length"):
        index.add_vectors(vectors, ids=["a", "b"])


def test_from_vectors_refuses_dict_texts() -> None:
    with pytest.raises(TypeError, match="got a dict"):
        VectorIndex.from_vectors([[1.0, 0.0], [0.0, 1.0]], texts={"a": "x", "b": "y"})


def test_mean_vector_names_bad_vectors_and_keeps_float64_when_asked() -> None:
    from hybrid_retrievers.integration import mean_vector

    exact = mean_vector([[0.1, 0.2], [0.3, 0.4]], dtype=np.float64)
    assert exact.dtype == np.float64 and exact.tolist() == [(0.1 + 0.3) / 2, (0.2 + 0.4) / 2]
    assert mean_vector([[1.0, 2.0]]).dtype == np.float32
    with pytest.raises(ValueError, match=r"shape \(n, dimension\), got \(0,\)"):
        mean_vector([])
    with pytest.raises(ValueError, match=r"one dimension, got lengths \[1, 2\]"):
        mean_vector([[1.0, 2.0], [3.0]])


def test_check_keywords_names_the_nearest_accepted_name() -> None:
    from hybrid_retrievers.integration import check_keywords

    check_keywords("f", ["timeout"], ["timeout", "n"])
    with pytest.raises(TypeError,
                       match=r"'timout' \(did you mean timeout=\?\); accepted: n, timeout"):
        check_keywords("f", ["timout"], ["timeout", "n"])
    with pytest.raises(TypeError, match=r"'llm_predictor' \(use llm=\)"):
        check_keywords("f", ["llm_predictor"], ["llm"], {"llm_predictor": "use llm="})
