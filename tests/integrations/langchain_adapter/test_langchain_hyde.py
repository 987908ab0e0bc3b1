"""Tests for `langchain_hybrid_retrievers.HyDERetriever` with LangChain's fake LLMs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests

from hybrid_retrievers import VectorIndex
from hybrid_retrievers.hyde import HyDE, HyDESearcher
from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import DenseRetriever, HyDERetriever
from langchain_hybrid_retrievers.hyde import LangChainGenerator, as_text_generator

from corpora import CORPUS, WING_QUERY

ANSWER = "The wing generates lift: lift depends on the angle of attack and the airspeed."


def _documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


def _retriever(llm: Any, **kwargs: Any) -> HyDERetriever:
    return HyDERetriever.from_documents(_documents(), embedding=HashingEmbedder(128), llm=llm, **kwargs)


class TestHyDERetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[HyDERetriever]:
        return HyDERetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        emb = HashingEmbedder(128)
        index = VectorIndex.from_texts([t for _, t, _ in CORPUS], ids=[i for i, _, _ in CORPUS],
                                       embedder=emb)
        hyde = HyDE(LangChainGenerator(FakeListLLM(responses=[ANSWER])), emb)
        return {"searcher": HyDESearcher(hyde, index)}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY


def test_fake_llm_passages_in_metadata_and_vector_is_the_average() -> None:
    emb = HashingEmbedder(128)
    r = HyDERetriever.from_documents(_documents(), embedding=emb, llm=FakeListLLM(responses=[ANSWER]),
                                     k=3)
    docs = r.invoke("how do planes stay up?")
    assert docs[0].metadata["hyde"] == {
        "passages": [ANSWER], "fallback": False, "error": None, "mode": "vector",
    }
    expected = np.mean([emb.embed_query("how do planes stay up?"), emb.embed_documents([ANSWER])[0]],
                       axis=0)
    core = r.searcher.index.search_vector(expected, 3)
    assert [(d.id, d.metadata["score"]) for d in docs] == [
        (h.id, pytest.approx(h.score)) for h in core
    ]
    assert docs[0].metadata["topic"] == "aero" and [d.metadata["rank"] for d in docs] == [1, 2, 3]


@pytest.mark.parametrize(
    "llm",
    [
        FakeListChatModel(responses=[ANSWER]),
        GenericFakeChatModel(messages=iter([AIMessage(content=ANSWER)] * 20)),
        RunnableLambda(lambda p: {"text": p}) | PromptTemplate.from_template("{text}")
        | FakeListLLM(responses=[ANSWER]) | StrOutputParser(),
        RunnableLambda(lambda prompt: ANSWER),
        lambda prompt: ANSWER,
    ],
    ids=["FakeListChatModel", "GenericFakeChatModel", "chain", "RunnableLambda", "callable"],
)
def test_any_llm_chat_model_runnable_or_callable(llm: Any) -> None:
    docs = _retriever(llm, k=2).invoke("how do planes stay up?")
    assert docs[0].metadata["hyde"]["passages"] == [ANSWER]
    assert docs[0].metadata["topic"] == "aero"


def test_llm_failure_falls_back_to_the_raw_query() -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("rate limited")

    r = _retriever(RunnableLambda(broken), k=2)
    docs = r.invoke(WING_QUERY)
    info = docs[0].metadata["hyde"]
    assert info["fallback"] is True and "rate limited" in info["error"] and info["passages"] == []
    dense = r.searcher.index.search(WING_QUERY, 2)
    assert [d.id for d in docs] == [h.id for h in dense]


def test_n_generations_and_prompt_template() -> None:
    seen: list[str] = []

    def record(prompt: str) -> str:
        seen.append(prompt)
        return ANSWER

    r = _retriever(record, n=3, prompt="technical", k=1)
    r.invoke("wing lift")
    assert len(seen) == 3 and "technical documentation" in seen[0] and "wing lift" in seen[0]


async def test_async_generations_and_result() -> None:
    r = _retriever(FakeListChatModel(responses=[ANSWER]), n=4, k=2)
    docs = await r.ainvoke("how do planes stay up?")
    assert docs[0].metadata["hyde"]["passages"] == [ANSWER] * 4
    assert docs == r.invoke("how do planes stay up?")


def test_from_existing_dense_retriever_and_bm25_expansion() -> None:
    dense = DenseRetriever.from_documents(_documents(), embedding=HashingEmbedder(128), k=2)
    r = HyDERetriever.from_retriever(dense, llm=FakeListLLM(responses=[ANSWER]))
    assert r.k == 2 and r.searcher.index is dense.index
    assert r.invoke("planes")[0].metadata["topic"] == "aero"
    hybrid = _retriever(FakeListLLM(responses=[ANSWER]), expand_with_bm25=True, k=2)
    docs = hybrid.invoke("planes")
    assert docs[0].metadata["hyde"]["mode"] == "hybrid" and docs[0].metadata["topic"] == "aero"
    with pytest.raises(TypeError, match="DenseRetriever"):
        HyDERetriever.from_retriever(object(), llm=lambda p: "x")


def test_filter_and_validation() -> None:
    r = _retriever(FakeListLLM(responses=[ANSWER]), k=4)
    docs = r.invoke(WING_QUERY, filter={"topic": "cooking"})
    assert docs and {d.metadata["topic"] for d in docs} == {"cooking"}
    with pytest.raises(ValueError, match="k must be >= 1"):
        r.invoke(WING_QUERY, k=0)
    with pytest.raises(TypeError, match="llm"):
        as_text_generator(42)
    with pytest.raises(ValueError, match="score_key"):
        HyDERetriever(searcher=r.searcher, score_key="hyde")
