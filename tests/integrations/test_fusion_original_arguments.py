"""Issue 35: EnsembleRetriever's and QueryFusionRetriever's arguments on our fusions."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from langchain_core.documents import Document
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import TextNode

import langchain_hybrid_retrievers as lc
import llama_index_hybrid_retrievers as li
from hybrid_retrievers.models import HashingEmbedder

TEXTS = [("a", "wing lift at low speed"), ("b", "lift of a flat plate"), ("c", "bread dough")]


def _lc_children() -> list[lc.BM25Retriever]:
    docs = [Document(id=i, page_content=t, metadata={"key": i.upper()}) for i, t in TEXTS]
    return [lc.BM25Retriever.from_documents(docs), lc.BM25Retriever.from_documents(docs[1:])]


def test_ensemble_c_is_k_rrf_and_id_key_names_the_identity() -> None:
    fused = lc.FusionRetriever(retrievers=_lc_children(), c=10, weights=[0.5, 0.5])
    assert fused.c == fused.k_rrf == 10
    docs = fused.invoke("wing lift")
    # b: ranks 2 and 1; a: rank 1 in the first list only (Σ w / (c + rank)).
    assert [d.id for d in docs] == ["b", "a"]
    assert docs[0].metadata["score"] == pytest.approx(0.5 / 12 + 0.5 / 11)
    keyed = lc.FusionRetriever(retrievers=_lc_children(), id_key="key").invoke("wing lift")
    assert [d.id for d in keyed] == ["B", "A"]
    missing = lc.FusionRetriever(retrievers=_lc_children(), id_key="nope")
    with pytest.raises(KeyError, match="id_key 'nope'"):
        missing.invoke("wing lift")
    hybrid = lc.HybridRetriever.from_texts([t for _, t in TEXTS], HashingEmbedder(dimension=32),
                                           ids=[i for i, _ in TEXTS], c=5)
    assert hybrid.searcher.plan.k_rrf == 5


def _li_children() -> list[li.BM25Retriever]:
    nodes = [TextNode(id_=i, text=t) for i, t in TEXTS]
    return [li.BM25Retriever(nodes=nodes, similarity_top_k=3),
            li.BM25Retriever(nodes=nodes[1:], similarity_top_k=3)]


def test_query_fusion_arguments() -> None:
    rrf = li.FusionRetriever(_li_children(), mode="reciprocal_rerank", similarity_top_k=2,
                             num_queries=1, use_async=True, retriever_weights=[3, 1])
    scores = {n.node.node_id: n.score for n in rrf.retrieve("wing lift")}
    # QueryFusionRetriever (llama-index-core's newest): Σ w / (60 + 0-based rank), w the
    # normalised retriever_weights (0.75, 0.25); by default 1 / n each.
    assert scores == pytest.approx({"b": 0.75 / 61 + 0.25 / 60, "a": 0.75 / 60})
    plain = li.FusionRetriever(_li_children(), mode="reciprocal_rerank", num_queries=1)
    assert {n.node.node_id: n.score for n in plain.retrieve("wing lift")} == \
        pytest.approx({"b": 0.5 / 61 + 0.5 / 60, "a": 0.5 / 60})
    relative = li.FusionRetriever(_li_children(), mode="relative_score",
                                  retriever_weights=[3, 1], similarity_top_k=3)
    assert relative.plan.weights == pytest.approx((0.75, 0.25))  # normalised, as there
    with pytest.raises(ValueError, match="num_queries must be >= 1"):
        li.FusionRetriever(_li_children(), num_queries=0)
    with pytest.raises(ValueError, match="mode='simple'"):
        li.FusionRetriever(_li_children(), mode="simple")
    with pytest.raises(ValueError, match="weights= or retriever_weights="):
        li.FusionRetriever(_li_children(), weights=[1, 1], retriever_weights=[1, 1])


def test_query_fusion_default_similarity_top_k_is_its_default(tmp_path: Path) -> None:
    theirs = inspect.signature(QueryFusionRetriever).parameters["similarity_top_k"].default
    fused = li.FusionRetriever(_li_children())
    assert fused.similarity_top_k == theirs == 2
    # Three nodes match "lift plate bread" across the children; two come back.
    assert len(fused.retrieve("lift plate bread dough")) == 2
    fused.persist(str(tmp_path / "f"))
    assert li.FusionRetriever.from_persist_dir(str(tmp_path / "f")).similarity_top_k == 2


def test_ensemble_c_and_id_key_survive_save_local(tmp_path: Path) -> None:
    fused = lc.FusionRetriever(retrievers=_lc_children(), c=10, id_key="key")
    fused.save_local(tmp_path / "keyed")
    loaded = lc.FusionRetriever.load_local(tmp_path / "keyed")
    assert (loaded.id_key, loaded.c) == ("key", 10)
    assert [(d.id, d.metadata["score"]) for d in loaded.invoke("wing lift")] == [
        (d.id, d.metadata["score"]) for d in fused.invoke("wing lift")]
    assert [d.id for d in loaded.invoke("wing lift")] == ["B", "A"]
    # LlamaIndex's FusionRetriever has no id_key: it refuses rather than fuse by node id.
    with pytest.raises(ValueError, match="id_key='key'.*load_local"):
        li.FusionRetriever.from_persist_dir(tmp_path / "keyed")
    # Without id_key the folder is shared by both frameworks, as before.
    lc.FusionRetriever(retrievers=_lc_children(), c=10).save_local(tmp_path / "plain")
    assert lc.FusionRetriever.load_local(tmp_path / "plain").id_key is None
    assert li.FusionRetriever.from_persist_dir(tmp_path / "plain").plan.k_rrf == 10
