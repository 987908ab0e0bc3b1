"""BM25Index behaviour: building, searching, filtering, explaining, editing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybrid_retrievers import Analyzer, BM25Index, Doc, Hit
from hybrid_retrievers.bm25 import BM25Explanation


@pytest.fixture()
def index(passages: list[str]) -> BM25Index:
    metas = [{"n": i, "kind": "even" if i % 2 == 0 else "odd"} for i in range(len(passages))]
    return BM25Index.from_texts(passages, ids=[f"p{i}" for i in range(len(passages))], metadatas=metas)


def test_search_returns_relevant_first(index: BM25Index) -> None:
    hits = index.search("okapi bm25 weighting", k=3)
    assert hits[0].id == "p4"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(isinstance(h, Hit) for h in hits)
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_only_matching_documents_are_returned(index: BM25Index) -> None:
    hits = index.search("connector", k=10)
    assert [h.id for h in hits] == ["p9"]
    assert index.search("zebra quantum", k=5) == []


def test_k_larger_than_corpus_returns_what_matches(index: BM25Index) -> None:
    hits = index.search("retrieval rank documents", k=1000)
    assert 1 < len(hits) < len(index)
    assert len({h.id for h in hits}) == len(hits)


def test_stemming_matches_inflections(index: BM25Index) -> None:
    ids = {h.id for h in index.search("ranked", k=10)}
    assert {"p0", "p5"} <= ids


def test_codes_survive_tokenisation(index: BM25Index) -> None:
    assert index.search("IPC-420", k=1)[0].id == "p9"
    assert index.search("ipc 420", k=1)[0].id == "p9"


def test_filter_mapping_and_callable_apply_before_top_k(index: BM25Index) -> None:
    unfiltered = index.search("the", k=100)
    odd = index.search("retrieval ranking documents passage", k=2, filter={"kind": "odd"})
    assert len(odd) == 2 and all(h.doc.metadata["kind"] == "odd" for h in odd)
    evens = index.search("retrieval ranking documents passage", k=2, filter=lambda d: d.metadata["n"] % 2 == 0)
    assert all(h.doc.metadata["n"] % 2 == 0 for h in evens)
    assert index.search("connector", k=5, filter={"kind": "even"}) == []
    assert index.search("connector", k=5, filter={"missing": None}) == []
    assert unfiltered == []  # "the" is a stopword


def test_filter_rejects_wrong_kind(index: BM25Index) -> None:
    with pytest.raises(TypeError, match="filter"):
        index.search("bm25", filter=["kind"])  # type: ignore[arg-type]


def test_search_many_matches_search(index: BM25Index) -> None:
    queries = ["bm25 ranking", "dense vectors", "fusion of rankings"]
    assert index.search_many(queries, k=3) == [index.search(q, k=3) for q in queries]


def test_deterministic_ties_by_index_order() -> None:
    index = BM25Index.from_texts(["apple pie", "apple pie", "apple pie"], ids=["c", "a", "b"])
    assert [h.id for h in index.search("apple", k=3)] == ["c", "a", "b"]
    assert [h.id for h in index.search("apple", k=2)] == ["c", "a"]


def test_repeated_query_terms_count_each_time() -> None:
    index = BM25Index.from_texts(["red apple", "green pear", "yellow banana"])
    once = index.search("apple", k=1)[0].score
    twice = index.search("apple apple", k=1)[0].score
    assert twice == pytest.approx(2 * once)


@pytest.mark.parametrize("method", ["lucene", "robertson", "okapi", "bm25+", "bm25l", "textbook", "atire"])
def test_explain_contributions_sum_to_score(index: BM25Index, method: str, passages: list[str]) -> None:
    idx = BM25Index.from_texts(passages, ids=[f"p{i}" for i in range(len(passages))], method=method)
    query = "bm25 ranking function documents"
    for hit in idx.search(query, k=5, explain=True):
        expl = idx.explain(query, hit.id)
        assert isinstance(expl, BM25Explanation)
        assert sum(t.contribution for t in expl.terms) == pytest.approx(hit.score, rel=1e-5)
        assert hit.explanation["bm25"]["score"] == pytest.approx(expl.score)
        assert expl.terms[0].doc_length == len(idx.analyzer.tokenize(hit.doc.text))
        assert "score=" in str(expl)


def test_explain_reports_idf_tf_and_length(index: BM25Index) -> None:
    expl = index.explain("okapi okapi weighting nosuchterm", "p4")
    by_term = {t.term: t for t in expl.terms}
    assert by_term["okapi"].query_count == 2 and by_term["okapi"].tf == 1 and by_term["okapi"].df == 1
    n = len(index)
    assert by_term["okapi"].idf == pytest.approx(math.log(1 + (n - 1 + 0.5) / 1.5))
    assert by_term["nosuchterm"].contribution == 0.0 and by_term["nosuchterm"].df == 0
    with pytest.raises(KeyError, match="nope"):
        index.explain("bm25", "nope")


def test_content_ids_are_deterministic_and_disambiguated() -> None:
    a = BM25Index.from_texts(["same text", "same text", "other"])
    b = BM25Index.from_texts(["same text", "same text", "other"])
    assert a.ids == b.ids and len(set(a.ids)) == 3
    assert a.ids[1] == a.ids[0] + "#2"
    added = a.add(["same text"])
    assert added == [a.ids[0] + "#3"]


def test_from_docs_keeps_ids_and_metadata() -> None:
    docs = [Doc("x", "alpha beta", {"src": "a"}), Doc("y", "beta gamma", {"src": "b"})]
    index = BM25Index.from_docs(docs)
    hit = index.search("gamma", k=1)[0]
    assert hit.doc == docs[1] and hit.doc.metadata == {"src": "b"}
    assert index.get("x") == docs[0] and "y" in index and len(index) == 2


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: BM25Index.from_texts([]), ValueError, "empty corpus"),
        (lambda: BM25Index.from_texts("abc"), TypeError, "single str"),
        (lambda: BM25Index.from_texts(["a b", 3]), TypeError, r"texts\[1\]"),
        (lambda: BM25Index.from_texts(["a", "b"], ids=["x", "x"]), ValueError, "duplicate"),
        (lambda: BM25Index.from_texts(["a", "b"], ids=["x"]), ValueError, "ids"),
        (lambda: BM25Index.from_texts(["a"], metadatas=[{}, {}]), ValueError, "metadatas"),
        (lambda: BM25Index.from_texts(["a"], method="tfidf"), ValueError, "valid methods"),
        (lambda: BM25Index.from_texts(["a"], k1=-1), ValueError, "k1"),
        (lambda: BM25Index.from_texts(["a"], b=1.5), ValueError, "b must be <= 1, got 1.5"),
        (lambda: BM25Index.from_texts(["a"], analyzer="english"), TypeError, "analyzer"),
    ],
)
def test_bad_construction_inputs(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize(
    ("query", "k", "exc", "match"),
    [
        ("", 3, ValueError, "query"),
        ("   ", 3, ValueError, "query"),
        (None, 3, TypeError, "query"),
        (42, 3, TypeError, "query"),
        ("bm25", 0, ValueError, "k must be >= 1"),
        ("bm25", -2, ValueError, "k must be >= 1"),
        ("bm25", 2.5, TypeError, "k must be a positive int"),
        ("bm25", True, TypeError, "k"),
    ],
)
def test_bad_query_inputs(index: BM25Index, query, k, exc, match) -> None:
    with pytest.raises(exc, match=match):
        index.search(query, k=k)


def test_search_many_validates_each_query(index: BM25Index) -> None:
    with pytest.raises(ValueError, match=r"queries\[1\]"):
        index.search_many(["bm25", ""])
    with pytest.raises(TypeError, match="list of str"):
        index.search_many("bm25")


def test_add_and_delete(index: BM25Index) -> None:
    before = len(index)
    ids = index.add(["Zebras graze on the savanna grass."], ids=["z"], metadatas=[{"kind": "animal"}])
    assert ids == ["z"] and len(index) == before + 1
    assert index.search("zebra", k=1)[0].id == "z"
    with pytest.raises(ValueError, match="already in the index"):
        index.add(["dup"], ids=["z"])
    with pytest.raises(KeyError, match="missing"):
        index.delete(["z", "missing"])
    assert "z" in index  # nothing deleted when one id is unknown
    index.delete(["z"])
    assert index.search("zebra", k=1) == [] and len(index) == before


def test_delete_everything_then_add() -> None:
    index = BM25Index.from_texts(["one fish", "two fish"], ids=["a", "b"])
    index.delete(["a", "b"])
    assert len(index) == 0 and index.search("fish", k=3) == []
    index.add(["red fish"], ids=["c"])
    assert [h.id for h in index.search("fish", k=3)] == ["c"]


def test_stored_documents_are_never_mutated(index: BM25Index) -> None:
    doc = index.get("p0")
    hits = index.search("bm25", k=3, explain=True)
    assert index.get("p0") == doc and dict(doc.metadata) == {"n": 0, "kind": "even"}
    assert all(isinstance(h.explanation, dict) for h in hits)


def test_analyzer_is_used_for_queries() -> None:
    plain = Analyzer(stopwords=None, stemmer=None)
    index = BM25Index.from_texts(["the ranking", "ranked lists"], analyzer=plain)
    assert [h.doc.text for h in index.search("ranking", k=5)] == ["the ranking"]
    assert index.search("the", k=5)[0].doc.text == "the ranking"


def test_nbytes_counts_arrays(index: BM25Index) -> None:
    assert index.nbytes() > 0
    assert isinstance(np.float32(index.search("bm25", k=1)[0].score), np.float32)


def test_none_ids_get_content_ids_next_to_given_ones() -> None:
    index = BM25Index.from_texts(["same", "same", "other"], ids=["a", None, None])
    assert index.ids[0] == "a" and len(set(index.ids)) == 3
    with pytest.raises(TypeError, match=r"ids\[0\] must be a str"):
        BM25Index.from_texts(["x"], ids=[3])


def test_library_settings_are_read_only() -> None:
    from hybrid_retrievers import FusionSearcher

    index = BM25Index.from_texts(["wings make lift", "cats sleep"], k1=1.4, b=0.6)
    assert (index.k1, index.b) == (1.4, 0.6)
    with pytest.raises(AttributeError, match="property 'k1' of 'BM25Index' object has no setter"):
        index.k1 = 2.0
    fused = FusionSearcher([index, index], names=["a", "b"], fetch_k=7)
    assert (fused.names, fused.fetch_k) == (("a", "b"), 7)
    with pytest.raises(AttributeError):
        fused.names = ("c", "d")
