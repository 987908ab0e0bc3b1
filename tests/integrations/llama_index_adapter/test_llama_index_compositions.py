"""Our retrievers and rerankers inside LlamaIndex's own building blocks (MockLLM, no network)."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.base.base_selector import BaseSelector, SelectorResult, SingleSelection
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever, RouterRetriever
from llama_index.core.schema import TextNode
from llama_index.core.tools import RetrieverTool

from hybrid_retrievers.models import HashingEmbedder
from llama_index_hybrid_retrievers import (
    BM25Retriever,
    CrossEncoderRerank,
    DenseRetriever,
    FusionRetriever,
    HybridRetriever,
    LLMListwiseRerank,
)

from corpora import CORPUS, WING_QUERY, WordOverlap

EMBED = HashingEmbedder(dimension=64)


@pytest.fixture
def nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


async def test_retriever_query_engine_with_our_reranker(nodes: list[TextNode]) -> None:
    engine = RetrieverQueryEngine.from_args(
        HybridRetriever.from_defaults(nodes=nodes, embed_model=EMBED, similarity_top_k=5),
        llm=MockLLM(), node_postprocessors=[CrossEncoderRerank(model=WordOverlap(), top_n=2)])
    response = engine.query(WING_QUERY)
    assert len(response.source_nodes) == 2
    assert all(s.node.node_id.startswith("aero") for s in response.source_nodes)
    again = await engine.aquery(WING_QUERY)
    assert [s.node.node_id for s in again.source_nodes] == [
        s.node.node_id for s in response.source_nodes]


async def test_inside_query_fusion_retriever(nodes: list[TextNode]) -> None:
    children = [BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=4),
                DenseRetriever.from_defaults(nodes=nodes, embed_model=EMBED,
                                             similarity_top_k=4)]
    theirs = QueryFusionRetriever(children, num_queries=1, mode="reciprocal_rerank",
                                  similarity_top_k=4, use_async=False, llm=MockLLM())
    ours = FusionRetriever(children, similarity_top_k=4)
    assert [n.node.node_id for n in theirs.retrieve(WING_QUERY)] == [
        n.node.node_id for n in ours.retrieve(WING_QUERY)]
    assert [n.node.node_id for n in await theirs.aretrieve(WING_QUERY)] == [
        n.node.node_id for n in ours.retrieve(WING_QUERY)]


class _First(BaseSelector):
    """Always picks the first choice (a selector without an LLM)."""

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: Any) -> None:
        pass

    def _select(self, choices: Any, query: Any) -> SelectorResult:
        return SelectorResult(selections=[SingleSelection(index=0, reason="first")])

    async def _aselect(self, choices: Any, query: Any) -> SelectorResult:
        return self._select(choices, query)


async def test_inside_router_retriever(nodes: list[TextNode]) -> None:
    tools = [RetrieverTool.from_defaults(retriever=BM25Retriever.from_defaults(
        nodes=nodes, similarity_top_k=2), description="keyword search")]
    router = RouterRetriever(selector=_First(), retriever_tools=tools, llm=MockLLM())
    ids = [n.node.node_id for n in router.retrieve(WING_QUERY)]
    assert len(ids) == 2 and all(i.startswith("aero") for i in ids)
    assert [n.node.node_id for n in await router.aretrieve(WING_QUERY)] == ids


def test_nodes_from_an_ingestion_pipeline() -> None:
    documents = [Document(id_="docA", text="Wings make lift. Flaps add lift at low speed.",
                          metadata={"file": "a.txt"}),
                 Document(id_="docB", text="Yeast makes bread rise.", metadata={"file": "b.txt"})]
    pipeline_nodes = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=16, chunk_overlap=0)]).run(
        documents=documents)
    retriever = BM25Retriever.from_defaults(nodes=pipeline_nodes, similarity_top_k=1)
    (hit,) = retriever.retrieve("flaps lift")
    assert hit.node.ref_doc_id == "docA" and hit.node.metadata["file"] == "a.txt"


class _Events(BaseEventHandler):
    names: list[str] = []

    @classmethod
    def class_name(cls) -> str:
        return "_Events"

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.names.append(type(event).__name__)


async def test_instrumentation_events_for_retrieval_and_rerank(nodes: list[TextNode]) -> None:
    handler = _Events(names=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=4)
        results = retriever.retrieve(WING_QUERY)
        CrossEncoderRerank(model=WordOverlap(), top_n=2).postprocess_nodes(results,
                                                                       query_str=WING_QUERY)
        await LLMListwiseRerank(llm=MockLLM(), top_n=2).apostprocess_nodes(results,
                                                                   query_str=WING_QUERY)
    finally:
        root.event_handlers.remove(handler)
    assert handler.names[:2] == ["RetrievalStartEvent", "RetrievalEndEvent"]
    assert handler.names.count("ReRankStartEvent") == 2
    assert handler.names.count("ReRankEndEvent") == 2
