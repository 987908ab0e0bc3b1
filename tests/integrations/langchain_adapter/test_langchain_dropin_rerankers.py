"""LangChain rerankers under their namesakes' contracts: ``LLMListwiseRerank.from_llm``'s
signature on `LLMRerankCompressor`, LlamaIndex's choice-select algorithm on
`LLMChoiceRerankCompressor`, and unknown keywords refused with the nearest name."""

from __future__ import annotations

import inspect
import re

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.prompts import ChatPromptTemplate
from langchain_hybrid_retrievers import (
    CrossEncoderReranker,
    LLMChoiceRerankCompressor,
    LLMRerankCompressor,
)

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


def test_choice_select_compressor_in_batches_with_callbacks() -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    class Prompts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.prompts: list[str] = []

        def on_llm_start(self, serialized, prompts, **kwargs):  # type: ignore[no-untyped-def]
            self.prompts.extend(prompts)

    llm = FakeListLLM(responses=["Doc: 1, Relevance: 3", "Doc: 1, Relevance: 9"])
    handler = Prompts()
    compressor = LLMChoiceRerankCompressor(llm=llm, choice_batch_size=2)
    out = compressor.compress_documents(DOCS, "yogurt", callbacks=[handler])
    assert [d.page_content for d in out] == [DOCS[2].page_content, DOCS[0].page_content]
    assert [d.metadata["relevance_score"] for d in out] == [9.0, 3.0]
    assert out[0].metadata["rerank_status"] == "ok" and out[0].metadata["previous_rank"] == 3
    assert len(handler.prompts) == 2 and "Document 1:\nI didn't always" in handler.prompts[1]


async def test_choice_select_compressor_falls_back_async() -> None:
    compressor = LLMChoiceRerankCompressor(llm=FakeListLLM(responses=["no idea"]), top_n=2)
    out = await compressor.acompress_documents(DOCS, "steve")
    assert [d.page_content for d in out] == [d.page_content for d in DOCS[:2]]
    assert out[0].metadata["rerank_status"] == "fallback"
    assert "no idea" in out[0].metadata["rerank_detail"]


@pytest.mark.parametrize(("make", "name", "says"), [
    (lambda: CrossEncoderReranker(model="x", trust_remote_code=True), "trust_remote_code",
     "HuggingFaceCrossEncoder"),
    (lambda: CrossEncoderReranker(model="x", topn=2), "topn", "did you mean top_n=?"),
    (lambda: LLMRerankCompressor(llm=lambda p: "", windw=3), "windw",
     "did you mean window=?"),
    (lambda: LLMRerankCompressor.from_llm(lambda p: "", bogus_arg=1), "bogus_arg",
     "accepted: "),
    (lambda: LLMChoiceRerankCompressor(llm=lambda p: "", choice_batch=2), "choice_batch",
     "did you mean choice_batch_size=?"),
])
def test_unknown_keywords_are_refused_with_the_nearest_name(make, name, says) -> None:
    with pytest.raises(TypeError, match=re.escape(repr(name))) as caught:
        make()
    assert says in str(caught.value)
