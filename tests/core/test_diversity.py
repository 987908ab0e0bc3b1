"""Diversity stages: `MMRReranker` (Carbonell & Goldstein 1998) and `SourceCap`."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, Doc, Hit
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.rerank import MMRReranker, RerankingSearcher, SourceCap
from hybrid_retrievers.rerank.mmr import jaccard_matrix, mmr_order
from hybrid_retrievers.text import split_parents
from hybrid_retrievers.vector import EmbeddingCache, VectorIndex

DUPES = [Hit(Doc("a", "wing lift at low speed"), 3.0, 1),
         Hit(Doc("b", "wing lift at low speed!"), 2.9, 2),
         Hit(Doc("c", "drag of a flat plate in a wind tunnel"), 1.0, 3)]


def test_mmr_order_by_hand() -> None:
    # rel = (1, .8, 0); sim(0,1) = .9, sim(0,2) = 0, sim(1,2) = .1; λ = .5.
    rel = np.array([1.0, 0.8, 0.0])
    sim = np.array([[1, .9, 0], [.9, 1, .1], [0, .1, 1]])
    # step 1: values .5, .4, 0 -> 0 (.5). step 2: 1: .4 - .45 = -.05; 2: 0 - 0 = 0 -> 2.
    # step 3: 1: .4 - .5 * max(.9, .1) = -.05.
    assert [(i, round(v, 6), round(r, 6)) for i, v, r in mmr_order(rel, sim, 0.5, 3)] == [
        (0, 0.5, 0.0), (2, 0.0, 0.0), (1, -0.05, 0.9)]


def test_lambda_one_keeps_the_input_order_and_zero_picks_novelty() -> None:
    assert [h.id for h in MMRReranker(lambda_mult=1.0).rerank("q", DUPES)] == ["a", "b", "c"]
    assert [h.id for h in MMRReranker(lambda_mult=0.5).rerank("q", DUPES)] == ["a", "c", "b"]


def test_results_carry_scores_that_never_increase_and_their_provenance() -> None:
    hits = MMRReranker(lambda_mult=0.7).rerank("wing lift", DUPES)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    info = hits[0].explanation["rerank"]
    assert info["method"] == "mmr" and info["similarity"] == "lexical"
    assert info["previous_rank"] == 1 and info["previous_score"] == 3.0
    assert info["relevance"] == 1.0 and info["redundancy"] == 0.0
    # λ = .7 still takes the near-copy second: .7 * .95 - .3 * 1 > .7 * 0 - .3 * 0.
    assert hits[1].id == "b" and hits[1].explanation["rerank"]["redundancy"] == 1.0


def test_lexical_similarity_is_jaccard_of_term_sets() -> None:
    m = jaccard_matrix([{"a", "b"}, {"b", "c"}, set()])
    assert m[0, 1] == pytest.approx(1 / 3) and m[2, 2] == 0.0 and m[0, 0] == 1.0


def test_similarity_from_the_index_vectors() -> None:
    docs = [h.doc for h in DUPES]
    index = VectorIndex.from_docs(docs, embedder=HashingEmbedder(64))
    hits = MMRReranker(vectors=index, lambda_mult=0.5).rerank("q", DUPES)
    assert hits[0].explanation["rerank"]["similarity"] == "vectors"
    # Candidates the index lacks are embedded by its embedder instead.
    other = [*DUPES, Hit(Doc("z", "not indexed"), 0.5, 4)]
    assert MMRReranker(vectors=index).rerank("q", other)[0].explanation["rerank"][
        "similarity"] == "embedder"


def test_similarity_from_an_embedder_through_its_cache() -> None:
    embedder, cache = HashingEmbedder(32), EmbeddingCache()
    mmr = MMRReranker(embedder=embedder, cache=cache)
    mmr.rerank("q", DUPES)
    mmr.rerank("q", DUPES)
    assert embedder.calls == 1 and cache.hits == 3


def test_doc_vectors_per_call_and_their_checks() -> None:
    vecs = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    hits = MMRReranker(lambda_mult=0.5).rerank("q", DUPES, doc_vectors=vecs)
    assert [h.id for h in hits] == ["a", "c", "b"]
    with pytest.raises(ValueError, match="doc_vectors must be an"):
        MMRReranker().rerank("q", DUPES, doc_vectors=vecs[:2])
    with pytest.raises(ValueError, match="NaN"):
        MMRReranker().rerank("q", DUPES, doc_vectors=vecs * np.nan)


def test_docs_without_scores_use_their_positions() -> None:
    docs = [h.doc for h in DUPES]
    hits = MMRReranker(lambda_mult=0.5, top_n=2).rerank("q", docs)
    assert [h.id for h in hits] == ["a", "c"]
    assert hits[1].explanation["rerank"]["relevance"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lambda_mult": 1.5}, ValueError, "lambda_mult must be <= 1"),
    ({"lambda_mult": "x"}, TypeError, "lambda_mult must be a number"),
    ({"top_n": 0}, ValueError, "top_n must be >= 1"),
    ({"vectors": object()}, TypeError, "vectors must be a VectorIndex"),
    ({"embedder": "minilm"}, TypeError, "embedder must have embed_documents"),
])
def test_mmr_refuses_bad_settings(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        MMRReranker(**kwargs)


def test_empty_input_and_bad_query() -> None:
    assert MMRReranker().rerank("q", []) == []
    with pytest.raises(ValueError, match="query"):
        MMRReranker().rerank(" ", DUPES)


# ------------------------------------------------------------------ SourceCap

CHUNKS = [Hit(Doc("a:0", "x", {"parent_id": "a"}), 5.0, 1),
          Hit(Doc("a:1", "x", {"parent_id": "a"}), 4.0, 2),
          Hit(Doc("n", "x"), 3.5, 3),
          Hit(Doc("a:2", "x", {"parent_id": "a"}), 3.0, 4),
          Hit(Doc("b:0", "x", {"parent_id": "b"}), 2.0, 5),
          Hit(Doc("m", "x"), 1.0, 6)]


def test_source_cap_keeps_order_scores_and_at_most_n_per_source() -> None:
    hits = SourceCap().rerank("q", CHUNKS)
    assert [(h.id, h.score, h.rank) for h in hits] == [
        ("a:0", 5.0, 1), ("n", 3.5, 2), ("b:0", 2.0, 3), ("m", 1.0, 4)]
    assert hits[2].explanation["rerank"] == {
        "method": "source_cap", "model": "source_cap(parent_id<=1)", "source": "b",
        "score": 2.0, "previous_rank": 5, "previous_score": 2.0}
    two = SourceCap(max_per_source=2).rerank("q", CHUNKS, top_n=3)
    assert [h.id for h in two] == ["a:0", "a:1", "n"]
    assert [h.id for h in SourceCap().rerank("q", CHUNKS, max_per_source=3)] == [
        "a:0", "a:1", "n", "a:2", "b:0", "m"]


def test_source_cap_on_docs_and_bad_input() -> None:
    hits = SourceCap("topic").rerank("q", [Doc("1", "x", {"topic": "t"}),
                                           Doc("2", "y", {"topic": "t"}), Doc("3", "z")])
    assert [(h.id, h.score) for h in hits] == [("1", 1.0), ("3", 0.5)]
    with pytest.raises(TypeError, match=r"metadata\['topic'\] of document '1' must be hashable"):
        SourceCap("topic").rerank("q", [Doc("1", "x", {"topic": ["t"]})])
    with pytest.raises(TypeError, match="key must be a non-empty"):
        SourceCap("")
    with pytest.raises(ValueError, match="max_per_source must be >= 1"):
        SourceCap(max_per_source=0)


def test_stages_compose_over_chunked_documents() -> None:
    parents = [Doc("p1", "Wing lift. Wing lift grows with speed. Wing lift and stall."),
               Doc("p2", "Lift of a flat plate wing."), Doc("p3", "Bread rises.")]
    chunks = split_parents(parents, lambda t: t.split(". "))
    index = BM25Index.from_docs(chunks)
    plain = index.search("wing lift", k=3)
    assert {h.doc.metadata["parent_id"] for h in plain} == {"p1"}
    capped = RerankingSearcher(index, SourceCap(), fetch_k=10).search("wing lift", k=3)
    assert [h.doc.metadata["parent_id"] for h in capped] == ["p1", "p2"]
    both = RerankingSearcher(RerankingSearcher(index, MMRReranker(lambda_mult=0.3), fetch_k=10),
                             SourceCap(max_per_source=2), fetch_k=10).search("wing lift", k=3)
    assert len({h.id for h in both}) == len(both) == 3
