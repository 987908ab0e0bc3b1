"""Issue 35: code written for ``langchain_community.retrievers.BM25Retriever`` runs on ours.

Our own tests of the original's arguments (``k``, ``preprocess_func``, ``bm25_params``,
``bm25_variant``) and usage patterns; scores are checked against rank_bm25, which the
original wraps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document

from hybrid_retrievers.text import register_tokenizer, unregister_tokenizer
from langchain_hybrid_retrievers import BM25Retriever

rank_bm25 = pytest.importorskip("rank_bm25")

TEXTS = ["foo", "bar", "world", "hello", "foo bar", "Foo foo baz", "bar bar world qux"]


def _scores(retriever: BM25Retriever, query: str) -> dict[str, float]:
    return {d.page_content: d.metadata["score"] for d in retriever.invoke(query)}


def _expected(ref: object, query: str) -> dict[str, float]:
    got = ref.get_scores(query.split())  # type: ignore[attr-defined]
    return {t: float(s) for t, s in zip(TEXTS, got) if s != 0}


def test_original_usage_from_texts_and_from_documents() -> None:
    retriever = BM25Retriever.from_texts(TEXTS)
    assert retriever.k == 4
    docs = [Document(page_content=t, metadata={"n": i}) for i, t in enumerate(TEXTS)]
    from_docs = BM25Retriever.from_documents(docs, k=2)
    assert len(from_docs.invoke("foo bar")) == 2
    from_docs.k = 1  # assigned, as users of the original do
    assert len(from_docs.invoke("foo")) == 1


@pytest.mark.parametrize(("variant", "oracle", "params"), [
    (None, "BM25Okapi", {"k1": 1.2, "b": 0.6, "epsilon": 0.5}),
    ("okapi", "BM25Okapi", {}),
    ("plus", "BM25Plus", {"k1": 1.1, "delta": 0.7}),
])
def test_preprocess_func_bm25_params_and_variant_score_as_rank_bm25(
        variant: str | None, oracle: str, params: dict[str, float]) -> None:
    extra = {} if variant is None else {"bm25_variant": variant}
    retriever = BM25Retriever.from_texts(TEXTS, preprocess_func=str.split, bm25_params=params,
                                         k=len(TEXTS), **extra)
    ref = getattr(rank_bm25, oracle)([t.split() for t in TEXTS], **params)
    for query in ["foo", "foo bar", "Foo", "world qux bar"]:
        got, want = _scores(retriever, query), _expected(ref, query)
        if oracle == "BM25Plus":  # rank_bm25 scores non-matching texts too (idf·delta)
            want = {t: s for t, s in want.items() if t in got}
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[t] for t in want], list(want.values()), rtol=1e-5)


def test_preprocess_func_gets_the_text_as_given() -> None:
    seen: list[str] = []

    def tokens(text: str) -> list[str]:
        seen.append(text)
        return text.split()

    retriever = BM25Retriever.from_texts(TEXTS, preprocess_func=tokens)
    assert "Foo foo baz" in seen  # not lowercased
    assert [d.page_content for d in retriever.invoke("Foo")] == ["Foo foo baz"]


def test_bad_values_and_refusals() -> None:
    with pytest.raises(ValueError, match="bm25_variant='l'.*method='bm25l'"):
        BM25Retriever.from_texts(TEXTS, bm25_variant="l")
    with pytest.raises(ValueError, match="bm25_variant must be"):
        BM25Retriever.from_texts(TEXTS, bm25_variant="x")
    with pytest.raises(TypeError, match=r"unexpected \['delta'\]"):
        BM25Retriever.from_texts(TEXTS, bm25_params={"delta": 1.0})
    with pytest.raises(TypeError, match="preprocess_func="):
        BM25Retriever.from_texts(TEXTS, bm25_params={"tokenizer": str.split})
    with pytest.raises(ValueError, match="not both"):
        BM25Retriever.from_texts(TEXTS, bm25_params={"k1": 1.0}, k1=1.2)
    with pytest.raises(ValueError, match="k must be >= 1"):
        BM25Retriever.from_texts(TEXTS, k=0)
    with pytest.raises(TypeError, match="'vectorizer'"):
        BM25Retriever(vectorizer=None, docs=[])  # type: ignore[call-arg]


def test_a_callable_preprocess_func_saves_only_when_registered(tmp_path: Path) -> None:
    def words(text: str) -> list[str]:
        return text.split()

    retriever = BM25Retriever.from_texts(TEXTS, preprocess_func=words)
    with pytest.raises(ValueError, match="unregistered tokenizer callable"):
        retriever.save_local(tmp_path / "no")
    register_tokenizer("tests.words", words, replace=True)
    try:
        retriever.save_local(tmp_path / "yes")
        loaded = BM25Retriever.load_local(tmp_path / "yes")
        assert _scores(loaded, "Foo") == _scores(retriever, "Foo")
    finally:
        unregister_tokenizer("tests.words")


def test_docs_lists_the_indexed_documents_as_the_original_does() -> None:
    from langchain_core.documents import Document

    from langchain_hybrid_retrievers import BM25Retriever

    docs = [Document("I have a pen.", id="a", metadata={"n": 1}),
            Document("Do you have a pen?", id="b"), Document("I have a bag.", id="c")]
    retriever = BM25Retriever.from_documents(docs)
    assert [(d.id, d.page_content, d.metadata) for d in retriever.docs] == [
        ("a", "I have a pen.", {"n": 1}), ("b", "Do you have a pen?", {}),
        ("c", "I have a bag.", {})]
    retriever.docs.clear()  # a copy: the index keeps its documents
    assert len(retriever.docs) == 3
    retriever.delete(["b"])
    assert [d.id for d in retriever.docs] == ["a", "c"]
