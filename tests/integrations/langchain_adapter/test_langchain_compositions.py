"""Our retrievers inside LangChain's own building blocks (one short test each, fake LLMs)."""

from __future__ import annotations

from itertools import cycle

import pytest
from langchain_classic.chains import create_retrieval_chain
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_classic.retrievers import (
    ContextualCompressionRetriever,
    EnsembleRetriever,
    MultiQueryRetriever,
)
from langchain_core.documents import Document
from langchain_core.language_models import FakeListLLM, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.tools import create_retriever_tool

from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import (
    BM25Retriever,
    CrossEncoderReranker,
    DenseRetriever,
    HybridRetriever,
    RerankingRetriever,
)

from corpora import CORPUS, WING_QUERY, WordOverlap

EMBED = HashingEmbedder(dimension=64)


@pytest.fixture
def documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


def _chat(text: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=cycle([AIMessage(content=text)]))


async def test_inside_ensemble_retriever(documents: list[Document]) -> None:
    ensemble = EnsembleRetriever(retrievers=[BM25Retriever.from_documents(documents),
                                             DenseRetriever.from_documents(documents, EMBED)])
    docs = ensemble.invoke(WING_QUERY)
    assert docs and docs[0].id.startswith("aero")
    assert [d.id for d in await ensemble.ainvoke(WING_QUERY)] == [d.id for d in docs]


async def test_inside_multi_query_retriever(documents: list[Document]) -> None:
    llm = FakeListLLM(responses=["wing lift\nbread dough\ncompost soil"] * 2)
    multi = MultiQueryRetriever.from_llm(
        retriever=HybridRetriever.from_documents(documents, EMBED, k=2), llm=llm)
    ids = {d.id for d in multi.invoke("mixed question")}
    assert {i[:4] for i in ids} >= {"aero", "brea", "gard"}
    assert {d.id for d in await multi.ainvoke("mixed question")} == ids


def test_as_contextual_compression_compressor(documents: list[Document]) -> None:
    retriever = ContextualCompressionRetriever(
        base_compressor=CrossEncoderReranker(model=WordOverlap(), top_n=2),
        base_retriever=BM25Retriever.from_documents(documents, k=6))
    docs = retriever.invoke(WING_QUERY)
    assert len(docs) == 2 and all("relevance_score" in d.metadata for d in docs)


def test_create_retriever_tool(documents: list[Document]) -> None:
    tool = create_retriever_tool(HybridRetriever.from_documents(documents, EMBED, k=2),
                                 "search_notes", "Search the notes.")
    out = tool.invoke({"query": WING_QUERY})
    assert isinstance(out, str) and "wing" in out.lower()


async def test_create_retrieval_chain(documents: list[Document]) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context:\n{context}"), ("human", "{input}")])
    retriever = RerankingRetriever(
        base_retriever=HybridRetriever.from_documents(documents, EMBED),
        reranker=CrossEncoderReranker(model=WordOverlap()), k=2)
    chain = create_retrieval_chain(retriever,
                                   create_stuff_documents_chain(_chat("It is lift."), prompt))
    result = chain.invoke({"input": WING_QUERY})
    assert result["answer"] == "It is lift." and len(result["context"]) == 2
    again = await chain.ainvoke({"input": WING_QUERY})
    assert [d.id for d in again["context"]] == [d.id for d in result["context"]]


async def test_astream_events_of_an_lcel_rag_chain(documents: list[Document]) -> None:
    retriever = HybridRetriever.from_documents(documents, EMBED, k=2)
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    chain = ({"context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
              "question": RunnablePassthrough()} | prompt | _chat("ok") | StrOutputParser())
    events = [(e["event"], e["name"]) async for e in chain.astream_events(WING_QUERY,
                                                                          version="v2")]
    starts = [name for event, name in events if event == "on_retriever_start"]
    assert starts == ["HybridRetriever"]  # one core searcher: no per-child runs
    assert ("on_chat_model_end", "GenericFakeChatModel") in events
