"""A hung LLM behind the LlamaIndex adapters falls back within the timeout."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from hybrid_retrievers.models import HashingEmbedder
from llama_index_hybrid_retrievers import HyDERetriever, LLMListwiseRerank

NODES = [TextNode(text="cats sleep", id_="a"), TextNode(text="wing lift and drag", id_="b")]
SLACK = 10.0  # seconds allowed above the timeout on a loaded machine; the hung LLM waits 60


@pytest.fixture
def release() -> threading.Event:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture(autouse=True)
def _quiet(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)


def test_llm_rerank_with_a_hung_llm_falls_back(release: threading.Event) -> None:
    assert LLMListwiseRerank(llm=lambda p: "[1]").timeout == 30.0
    rerank = LLMListwiseRerank(llm=lambda p: release.wait(60) and "[2] > [1]", timeout=0.2, top_n=2)
    nodes = [NodeWithScore(node=n, score=1.0) for n in NODES]
    start = time.monotonic()
    out = rerank.postprocess_nodes(nodes, query_str="wing")
    assert time.monotonic() - start < 0.2 + SLACK
    assert [n.node.node_id for n in out] == ["a", "b"]
    assert out[0].node.metadata["rerank_status"] == "fallback"


def test_llm_rerank_keeps_a_repeated_node_once() -> None:
    rerank = LLMListwiseRerank(llm=lambda p: "[2] > [1]", top_n=5)
    nodes = [NodeWithScore(node=NODES[0], score=2.0), NodeWithScore(node=NODES[1], score=1.0),
             NodeWithScore(node=NODES[0], score=0.5)]
    out = rerank.postprocess_nodes(nodes, query_str="wing")
    assert [n.node.node_id for n in out] == ["b", "a"]


async def test_hyde_retriever_with_a_hung_llm_falls_back(release: threading.Event) -> None:
    retriever = HyDERetriever.from_defaults(
        nodes=NODES, embed_model=HashingEmbedder(16), timeout=0.2,
        llm=lambda p: release.wait(60) and "wing lift")
    assert retriever.searcher.hyde.timeout == 0.2
    assert retriever.generate("wing lift").fallback
    start = time.monotonic()
    assert retriever.retrieve("wing lift")  # the raw query's own embedding is used
    assert time.monotonic() - start < 0.2 + SLACK
    start = time.monotonic()
    assert await retriever.aretrieve("wing lift")
    assert time.monotonic() - start < 0.2 + SLACK
