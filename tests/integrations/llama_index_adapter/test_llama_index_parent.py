"""Tests for `llama_index_hybrid_retrievers.ParentDocumentRetriever` (no docstore needed)."""

from __future__ import annotations

import pytest
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter as LISentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import ExactMatchFilter, MetadataFilters

from hybrid_retrievers import FusionSearcher
from hybrid_retrievers.models import HashingEmbedder
from llama_index_hybrid_retrievers import ParentDocumentRetriever

from corpora import CORPUS, WING_QUERY


def _sections() -> list[TextNode]:
    by_topic: dict[str, list[str]] = {}
    for _, text, meta in CORPUS:
        by_topic.setdefault(meta["topic"], []).append(text)
    return [TextNode(id_=f"sec-{t}", text=" ".join(v), metadata={"topic": t})
            for t, v in by_topic.items()]


@pytest.fixture
def nodes() -> list[TextNode]:
    return _sections()


@pytest.fixture
def retriever(nodes: list[TextNode]) -> ParentDocumentRetriever:
    return ParentDocumentRetriever.from_defaults(nodes, chunk_size=120, chunk_overlap=0)


def test_returns_original_parent_nodes_ranked_by_best_child(
    retriever: ParentDocumentRetriever, nodes: list[TextNode]
) -> None:
    results = retriever.retrieve(WING_QUERY)
    assert results[0].node is nodes[0]  # the caller's node, not a copy
    assert nodes[0].metadata == {"topic": "aero"}  # and not edited
    core = retriever.searcher.search(WING_QUERY, k=4)
    assert [(r.node.node_id, r.score) for r in results] == [(h.id, h.score) for h in core]


def test_k_parents_despite_small_fetch_k(nodes: list[TextNode]) -> None:
    r = ParentDocumentRetriever.from_defaults(nodes, chunk_size=60, chunk_overlap=0, fetch_k=1,
                                              similarity_top_k=2)
    assert [n.node.node_id for n in r.retrieve("wing lift drag bread")] == ["sec-aero", "sec-cooking"]


def test_llama_index_splitter_documents_and_hybrid_children() -> None:
    docs = [LIDocument(id_=n.node_id, text=n.text, metadata=n.metadata) for n in _sections()]
    r = ParentDocumentRetriever.from_defaults(
        docs, splitter=LISentenceSplitter(chunk_size=40, chunk_overlap=0),
        embed_model=HashingEmbedder(64), similarity_top_k=1,
    )
    assert isinstance(r.searcher.child_searcher, FusionSearcher)
    assert r.retrieve("sourdough yeast")[0].node.node_id == "sec-cooking"


def test_insert_delete_and_filters(retriever: ParentDocumentRetriever) -> None:
    new = TextNode(id_="sec-ribs", text="Wing ribs and spars carry the lift loads.")
    assert retriever.insert_nodes([new]) == ["sec-ribs"]
    assert retriever.retrieve("ribs spars")[0].node is new
    retriever.delete(["sec-ribs"])
    assert all(n.node.node_id != "sec-ribs" for n in retriever.retrieve("ribs spars"))
    li_filter = MetadataFilters(filters=[ExactMatchFilter(key="topic", value="cooking")])
    filtered = ParentDocumentRetriever(retriever.searcher, filters=li_filter)
    assert [n.node.node_id for n in filtered.retrieve("oven bread")] == ["sec-cooking"]


def test_auto_merge_returns_children(nodes: list[TextNode]) -> None:
    r = ParentDocumentRetriever.from_defaults(nodes, chunk_size=120, chunk_overlap=0,
                                              merge_threshold=1.0)
    first = r.retrieve("oven crust")[0]
    assert first.node.node_id.startswith("sec-cooking:")
    assert first.node.metadata["parent_id"] == "sec-cooking"


async def test_async_and_query_engine(retriever: ParentDocumentRetriever) -> None:
    sync = retriever.retrieve(WING_QUERY)
    got = await retriever.aretrieve(WING_QUERY)
    assert [(n.node.node_id, n.score) for n in got] == [(n.node.node_id, n.score) for n in sync]
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(WING_QUERY)
    assert response.source_nodes[0].node.node_id == "sec-aero"


def test_validation(nodes: list[TextNode]) -> None:
    with pytest.raises(TypeError, match="ParentChildSearcher"):
        ParentDocumentRetriever(object())  # type: ignore[arg-type]
    r = ParentDocumentRetriever.from_defaults(nodes)
    with pytest.raises(ValueError, match="similarity_top_k"):
        r.similarity_top_k = 0
    with pytest.raises(ValueError, match="merge_threshold"):
        ParentDocumentRetriever(r.searcher, merge_threshold=2.0)
    with pytest.raises(TypeError, match="single node"):
        ParentDocumentRetriever.from_defaults(nodes[0])  # type: ignore[arg-type]
