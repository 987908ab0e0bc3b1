"""A hung LLM behind the LangChain adapters falls back within the timeout."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import HyDERetriever, LLMRerankCompressor

DOCS = [Document(id="a", page_content="cats sleep"),
        Document(id="b", page_content="wing lift and drag")]
SLACK = 10.0  # seconds allowed above the timeout on a loaded machine; the hung LLM waits 60


@pytest.fixture
def release() -> threading.Event:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture(autouse=True)
def _quiet(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)


def test_default_timeouts_are_finite() -> None:
    assert LLMRerankCompressor(llm=lambda p: "[1]").timeout == 30.0
    retriever = HyDERetriever.from_documents(DOCS, embedding=HashingEmbedder(16),
                                             llm=lambda p: "wing")
    assert retriever.searcher.hyde.timeout == 30.0


@pytest.mark.parametrize("wrap", [lambda f: f, RunnableLambda])
def test_reranker_with_a_hung_llm_falls_back(wrap, release: threading.Event) -> None:
    reranker = LLMRerankCompressor(llm=wrap(lambda p: release.wait(60) and "[2] > [1]"), timeout=0.2)
    start = time.monotonic()
    out = reranker.compress_documents(DOCS, "wing")
    assert time.monotonic() - start < 0.2 + SLACK
    assert [d.id for d in out] == ["a", "b"]
    assert out[0].metadata["rerank_status"] == "fallback"
    assert "no answer within 0.2 s" in out[0].metadata["rerank_detail"]


async def test_async_reranker_with_a_hung_plain_callable_falls_back(
        release: threading.Event) -> None:
    reranker = LLMRerankCompressor(llm=lambda p: release.wait(60) and "[2] > [1]", timeout=0.2)
    start = time.monotonic()
    out = await reranker.acompress_documents(DOCS, "wing")
    assert time.monotonic() - start < 0.2 + SLACK
    assert out[0].metadata["rerank_status"] == "fallback"


def test_hyde_retriever_with_a_hung_llm_falls_back(release: threading.Event) -> None:
    retriever = HyDERetriever.from_documents(
        DOCS, embedding=HashingEmbedder(16), timeout=0.2,
        llm=RunnableLambda(lambda p: release.wait(60) and "wing lift"))
    start = time.monotonic()
    out = retriever.invoke("wing lift", k=1)
    assert time.monotonic() - start < 0.2 + SLACK
    assert out[0].metadata["hyde"]["fallback"] is True
    with pytest.raises(ValueError, match="timeout"):
        HyDERetriever.from_documents(DOCS, embedding=HashingEmbedder(16), llm=lambda p: "x",
                                     timeout=float("nan"))
