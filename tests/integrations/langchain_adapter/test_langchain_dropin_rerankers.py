"""LangChain rerankers under their namesakes' contracts: ``LLMListwiseRerank.from_llm``'s
signature on `LLMRerankCompressor`, and unknown keywords refused with the nearest name."""

from __future__ import annotations

import inspect
import re

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.prompts import ChatPromptTemplate
from langchain_hybrid_retrievers import CrossEncoderReranker, LLMRerankCompressor

DOCS = [Document("Sally is my friend from school"), Document("Steve is my friend from home"),
        Document("I didn't always like yogurt")]


def test_from_llm_takes_the_originals_arguments() -> None:
    from langchain_classic.retrievers.document_compressors import LLMListwiseRerank

    ours = inspect.signature(LLMRerankCompressor.from_llm).parameters
    theirs = inspect.signature(LLMListwiseRerank.from_llm).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind)
                                                         for p in theirs.values()]
    reranker = LLMRerankCompressor.from_llm(llm=FakeListChatModel(responses=["[2] > [1]"]),
                                            top_n=2)
    out = reranker.compress_documents(DOCS, "Who is steve")
    assert [d.page_content for d in out] == [DOCS[1].page_content, DOCS[0].page_content]
    # No with_structured_output needed: a plain LLM works too.
    plain = LLMRerankCompressor.from_llm(FakeListLLM(responses=["[3]"]), top_n=1, timeout=5)
    assert plain.timeout == 5
    assert plain.compress_documents(DOCS, "yogurt")[0].page_content == DOCS[2].page_content


def test_from_llm_prompt() -> None:
    template = "Query: {query}\n{passages}\nBest first:"
    reranker = LLMRerankCompressor.from_llm(FakeListLLM(responses=["[1]"]), prompt=template)
    assert reranker.prompt == template
    with pytest.raises(TypeError, match="LLMListwiseRerank prompt"):
        LLMRerankCompressor.from_llm(FakeListLLM(responses=["[1]"]),
                                     prompt=ChatPromptTemplate.from_messages([("human", "{query}")]))


@pytest.mark.parametrize(("make", "name", "says"), [
    (lambda: CrossEncoderReranker(model="x", trust_remote_code=True), "trust_remote_code",
     "HuggingFaceCrossEncoder"),
    (lambda: CrossEncoderReranker(model="x", topn=2), "topn", "nearest valid name: 'top_n'"),
    (lambda: LLMRerankCompressor(llm=lambda p: "", windw=3), "windw",
     "nearest valid name: 'window'"),
    (lambda: LLMRerankCompressor.from_llm(lambda p: "", bogus_arg=1), "bogus_arg",
     "nearest valid name"),
])
def test_unknown_keywords_are_refused_with_the_nearest_name(make, name, says) -> None:
    with pytest.raises(TypeError, match=re.escape(repr(name))) as caught:
        make()
    assert says in str(caught.value)
