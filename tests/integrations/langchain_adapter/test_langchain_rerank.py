"""LangChain rerankers: `CrossEncoderReranker`, `LLMRerankCompressor` (compressors) and
`RerankingRetriever`, including LangChain's standard retriever suite and
``ContextualCompressionRetriever``. Results are checked against the core rerankers."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.language_models import FakeListLLM
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

from hybrid_retrievers import Doc
from hybrid_retrievers.rerank import Reranker
from langchain_hybrid_retrievers import (
    BM25Retriever,
    CrossEncoderReranker,
    LLMRerankCompressor,
    RerankingRetriever,
)

from corpora import CORPUS, WING_QUERY

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class OverlapScorer:
    """Score = number of distinct query words in the passage; records calling threads."""

    model_id = "overlap"

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.sizes: list[int] = []

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self.threads.append(threading.get_ident())
        self.sizes.append(len(pairs))
        return np.array(
            [len(set(q.lower().split()) & set(p.lower().replace(",", " ").split()))
             for q, p in pairs], dtype=np.float32)


def _documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


def _bm25() -> BM25Retriever:
    return BM25Retriever.from_documents(_documents(), k=4)


QUERY = "lift of a wing at low speeds"


# ------------------------------------------------------------ cross-encoder


def test_compress_documents_matches_the_core_and_keeps_provenance() -> None:
    docs = _bm25().invoke(QUERY, k=8)
    before = [(d.id, dict(d.metadata)) for d in docs]
    reranker = CrossEncoderReranker(model=OverlapScorer(), top_n=3)
    out = reranker.compress_documents(docs, QUERY)
    core = Reranker(OverlapScorer(), top_n=3).rerank(
        QUERY, [Doc(str(i), d.page_content) for i, d in enumerate(docs)])
    assert [d.id for d in out] == [docs[int(h.id)].id for h in core]
    for rank, (doc, hit) in enumerate(zip(out, core), 1):
        original = docs[int(hit.id)]
        assert doc is not original and doc.page_content == original.page_content
        assert doc.metadata == {
            **original.metadata,
            "relevance_score": hit.score,
            "rank": rank,
            "previous_rank": int(hit.id) + 1,
        }
        assert doc.metadata["score"] == original.metadata["score"]  # the BM25 score is kept
        assert isinstance(doc.metadata["relevance_score"], float)
    assert [(d.id, dict(d.metadata)) for d in docs] == before  # inputs untouched


def test_threshold_top_n_empty_and_score_key() -> None:
    docs = _documents()
    reranker = CrossEncoderReranker(model=OverlapScorer(), top_n=20, score_threshold=2,
                                    score_key="ce_score")
    out = reranker.compress_documents(docs, QUERY)
    assert out and all(d.metadata["ce_score"] >= 2 for d in out)
    assert len(CrossEncoderReranker(model=OverlapScorer(), top_n=50).compress_documents(
        docs, QUERY)) == len(docs)
    assert reranker.compress_documents([], QUERY) == []
    # fields assigned later take effect
    reranker.top_n = 1
    assert len(reranker.compress_documents(docs, QUERY)) == 1


def test_reranking_twice_keeps_the_earlier_score() -> None:
    first = CrossEncoderReranker(model=OverlapScorer(), top_n=4).compress_documents(
        _documents(), QUERY)
    second = CrossEncoderReranker(model=OverlapScorer(), top_n=4).compress_documents(
        first, "wing")
    for doc in second:
        assert "previous_relevance_score" in doc.metadata


def test_documents_without_ids_and_with_repeated_ids() -> None:
    docs = [Document(page_content="wing lift"), Document(page_content="wing lift"),
            Document(id="x", page_content="lift"), Document(id="x", page_content="bread")]
    out = CrossEncoderReranker(model=OverlapScorer(), top_n=4).compress_documents(docs, "wing lift")
    # Documents without ids are all kept; a repeated id counts once (its first occurrence),
    # as in the core reranker.
    assert [d.page_content for d in out] == ["wing lift", "wing lift", "lift"]
    assert [d.metadata["previous_rank"] for d in out] == [1, 2, 3]
    llm_out = LLMRerankCompressor(llm=lambda prompt: "[4] > [3] > [2] > [1]",
                          top_n=4).compress_documents(docs, "wing lift")
    assert [d.page_content for d in llm_out] == ["lift", "wing lift", "wing lift"]
    assert [d.metadata["previous_rank"] for d in llm_out] == [3, 2, 1]


async def test_acompress_documents_runs_the_model_in_a_worker_thread() -> None:
    scorer = OverlapScorer()
    reranker = CrossEncoderReranker(model=scorer, top_n=3)
    out = await reranker.acompress_documents(_documents(), QUERY)
    assert [d.id for d in out] == [d.id for d in reranker.compress_documents(_documents(), QUERY)]
    assert scorer.threads[0] != threading.get_ident()


def test_validation() -> None:
    with pytest.raises(ValidationError, match="top_n"):
        CrossEncoderReranker(model=OverlapScorer(), top_n=0)
    with pytest.raises(ValidationError, match="score_key"):
        CrossEncoderReranker(model=OverlapScorer(), score_key="rank")
    with pytest.raises((TypeError, ValidationError), match="model must be"):
        CrossEncoderReranker(model=42)
    with pytest.raises((ValueError, ValidationError), match="score_threshold"):
        CrossEncoderReranker(model=OverlapScorer(), score_threshold=float("nan"))
    with pytest.raises(TypeError, match=r"unexpected argument\(s\) 'topn'.*accepted: .*top_n"):
        CrossEncoderReranker(model=OverlapScorer(), topn=3)  # typo: extra fields forbidden
    with pytest.raises(TypeError, match=r"'top_k' \(.*top_n"):
        CrossEncoderReranker(model=OverlapScorer(), top_k=3)
    reranker = CrossEncoderReranker(model=OverlapScorer())
    with pytest.raises(TypeError, match="list of Document"):
        reranker.compress_documents(Document("x"), QUERY)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"documents\[1\]"):
        reranker.compress_documents([Document("x"), "y"], QUERY)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="query"):
        reranker.compress_documents([Document("x")], " ")


def test_default_model_is_lazy() -> None:
    reranker = CrossEncoderReranker()
    assert reranker.reranker.model_id == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert not reranker.reranker.scorer.is_loaded


def _contextual_compression_retriever() -> type:
    try:
        from langchain_classic.retrievers import ContextualCompressionRetriever
    except ImportError:
        try:
            from langchain.retrievers import ContextualCompressionRetriever  # type: ignore
        except ImportError:
            pytest.skip("no ContextualCompressionRetriever in the installed LangChain")
    return ContextualCompressionRetriever


async def test_works_inside_contextual_compression_retriever() -> None:
    ccr_cls = _contextual_compression_retriever()
    compressor = CrossEncoderReranker(model=OverlapScorer(), top_n=2)
    retriever = ccr_cls(base_compressor=compressor, base_retriever=_bm25())
    out = retriever.invoke(QUERY)
    expected = compressor.compress_documents(_bm25().invoke(QUERY), QUERY)
    assert [d.id for d in out] == [d.id for d in expected] and len(out) == 2
    assert [d.id for d in await retriever.ainvoke(QUERY)] == [d.id for d in out]
    assert all("relevance_score" in d.metadata for d in out)


# ------------------------------------------------------- with a real model


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    pytest.importorskip("sentence_transformers")
    from tiny_cross_encoder import build_tiny_cross_encoder

    return {n: build_tiny_cross_encoder(tmp_path_factory.mktemp(f"ce{n}"), num_labels=n)
            for n in (1, 2)}


def test_real_model_by_path_matches_predict(tiny_dirs: dict[int, Path]) -> None:
    from sentence_transformers import CrossEncoder

    docs = _documents()
    reranker = CrossEncoderReranker(model=str(tiny_dirs[1]), top_n=12, batch_size=5,
                                    device="cpu")
    assert not reranker.reranker.scorer.is_loaded
    out = reranker.compress_documents(docs, QUERY)
    expected = CrossEncoder(str(tiny_dirs[1]), device="cpu").predict(
        [(QUERY, d.page_content) for d in docs])
    order = np.argsort(-expected, kind="stable")
    assert [d.id for d in out] == [docs[i].id for i in order]
    np.testing.assert_allclose([d.metadata["relevance_score"] for d in out], expected[order],
                               atol=1e-5)


def test_two_logit_model_and_langchain_cross_encoders(tiny_dirs: dict[int, Path]) -> None:
    from sentence_transformers import CrossEncoder

    docs = _documents()
    model = CrossEncoder(str(tiny_dirs[2]), device="cpu")
    ours = CrossEncoderReranker(model=model, top_n=12).compress_documents(docs, QUERY)
    probs = model.predict([(QUERY, d.page_content) for d in docs], apply_softmax=True)[:, 1]
    np.testing.assert_allclose(sorted((d.metadata["relevance_score"] for d in ours), reverse=True),
                               np.sort(probs)[::-1], atol=1e-5)
    # LangChain's own cross-encoder wrapper is accepted as a scorer, too
    community = pytest.importorskip("langchain_community.cross_encoders")
    hf = community.HuggingFaceCrossEncoder(model_name=str(tiny_dirs[2]),
                                           model_kwargs={"device": "cpu"})
    out = CrossEncoderReranker(model=hf, top_n=3).compress_documents(docs, QUERY)
    assert len(out) == 3 and all("relevance_score" in d.metadata for d in out)


# ------------------------------------------------------------------- LLM


class RecordingHandler(BaseCallbackHandler):
    def __init__(self) -> None:
        self.llm_starts = 0
        self.chat_starts = 0

    def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        self.llm_starts += 1

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.chat_starts += 1


def _four() -> list[Document]:
    return _documents()[:4]


@pytest.mark.parametrize(
    "llm",
    [
        FakeListLLM(responses=["[3] > [1] > [4] > [2]"]),
        FakeListChatModel(responses=["Ranking: 3 > 1 > 4 > 2"]),
        "generic_chat",
        PromptTemplate.from_template("{text}") | FakeListLLM(responses=["3, 1, 4, 2"])
        | StrOutputParser(),
        RunnableLambda(lambda prompt: "[3] > [1] > [4] > [2]"),
        lambda prompt: "1. [3]\n2. [1]\n3. [4]\n4. [2]",
    ],
    ids=["llm", "chat", "generic_chat", "chain", "runnable_lambda", "callable"],
)
async def test_llm_reranker_with_any_llm(llm: Any) -> None:
    if llm == "generic_chat":
        llm = GenericFakeChatModel(messages=iter([AIMessage("[3] > [1] > [4] > [2]")] * 2))
    reranker = LLMRerankCompressor(llm=llm, top_n=3)
    docs = _four()
    out = reranker.compress_documents(docs, QUERY)
    assert [d.id for d in out] == [docs[2].id, docs[0].id, docs[3].id]
    assert [d.metadata["relevance_score"] for d in out] == [1.0, 0.5, pytest.approx(1 / 3)]
    assert out[0].metadata["rerank_status"] == "ok" and out[0].metadata["rerank_detail"] == ""
    assert out[0].metadata["previous_rank"] == 3
    aout = await reranker.acompress_documents(docs, QUERY)
    assert [d.id for d in aout] == [d.id for d in out]


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ("I'm sorry, I cannot rank these.", "fallback"),
        ("", "fallback"),
        ("[9] > [12]", "fallback"),
        ("[2] > [2] > [7]", "repaired"),
    ],
)
def test_llm_reranker_malformed_answers(answer: str, status: str) -> None:
    docs = _four()
    out = LLMRerankCompressor(llm=FakeListLLM(responses=[answer]), top_n=4).compress_documents(docs, QUERY)
    assert out[0].metadata["rerank_status"] == status and out[0].metadata["rerank_detail"]
    expected = [1, 0, 2, 3] if status == "repaired" else [0, 1, 2, 3]
    assert [d.id for d in out] == [docs[i].id for i in expected]


async def test_raising_llm_keeps_the_input_order(caplog: pytest.LogCaptureFixture) -> None:
    def boom(prompt: str) -> str:
        raise ConnectionError("the LLM is down")

    docs = _four()
    for llm in (RunnableLambda(boom), boom):
        reranker = LLMRerankCompressor(llm=llm, top_n=2)
        out = reranker.compress_documents(docs, QUERY)
        assert [d.id for d in out] == [docs[0].id, docs[1].id]
        assert out[0].metadata["rerank_status"] == "fallback"
        assert "ConnectionError: the LLM is down" in out[0].metadata["rerank_detail"]
        aout = await reranker.acompress_documents(docs, QUERY)
        assert [d.id for d in aout] == [docs[0].id, docs[1].id]
    assert "fell back to the input order" in caplog.text


async def test_llm_calls_go_through_callbacks_and_async_uses_ainvoke() -> None:
    handler = RecordingHandler()
    chat = FakeListChatModel(responses=["[2] > [1]"])
    reranker = LLMRerankCompressor(llm=chat, top_n=2)
    reranker.compress_documents(_four()[:2], QUERY, callbacks=[handler])
    assert handler.chat_starts == 1
    calls: list[str] = []

    class AsyncOnly(RunnableLambda):  # type: ignore[misc]
        pass

    async def afunc(prompt: str) -> str:
        calls.append("async")
        return "[2] > [1]"

    def func(prompt: str) -> str:
        calls.append("sync")
        return "[2] > [1]"

    runnable = RunnableLambda(func, afunc=afunc)
    out = await LLMRerankCompressor(llm=runnable, top_n=2).acompress_documents(_four()[:2], QUERY)
    assert calls == ["async"] and out[0].id == _four()[1].id


def test_llm_reranker_window_and_validation() -> None:
    seen: list[str] = []

    def llm(prompt: str) -> str:
        seen.append(prompt)
        return "[1]"

    LLMRerankCompressor(llm=llm, window=4, top_n=2).compress_documents(_documents(), QUERY)
    assert len(seen) > 1
    with pytest.raises((TypeError, ValidationError), match="llm must be"):
        LLMRerankCompressor(llm=42)
    with pytest.raises((ValueError, ValidationError), match="placeholders"):
        LLMRerankCompressor(llm=llm, prompt="rank these")
    with pytest.raises(ValidationError, match="top_n"):
        LLMRerankCompressor(llm=llm, top_n=0)
    assert LLMRerankCompressor(llm=FakeListLLM(responses=["1"])).reranker.name


def test_llm_reranker_in_contextual_compression_retriever() -> None:
    ccr_cls = _contextual_compression_retriever()
    base = _bm25()
    docs = base.invoke(QUERY)
    retriever = ccr_cls(base_compressor=LLMRerankCompressor(llm=FakeListLLM(responses=["[4] > [3]"]),
                                                    top_n=2), base_retriever=base)
    assert [d.id for d in retriever.invoke(QUERY)] == [docs[3].id, docs[2].id]


# ------------------------------------------------------ RerankingRetriever


class TestRerankingRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard suite, with ``k`` as the number-of-results argument."""

    @property
    def retriever_constructor(self) -> type[RerankingRetriever]:
        return RerankingRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"base_retriever": _bm25(),
                "reranker": CrossEncoderReranker(model=OverlapScorer())}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY

    @property
    def num_results_arg_name(self) -> str:
        return "k"


class TestLLMRerankingRetrieverStandard(TestRerankingRetrieverStandard):
    """The suite over an LLM reranker (a fake LLM that keeps the input order)."""

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"base_retriever": _bm25(),
                "reranker": LLMRerankCompressor(llm=FakeListLLM(responses=["[1] > [2] > [3]"] * 20))}


def test_top_n_is_refused_with_a_hint_naming_k() -> None:
    # k is "how many documents" on every retriever; top_n is the compressors' spelling.
    with pytest.raises(TypeError, match=r"'top_n' \(a retriever's number of documents to return is k"):
        RerankingRetriever(base_retriever=_bm25(), reranker=CrossEncoderReranker(
            model=OverlapScorer()), top_n=3)
    retriever = RerankingRetriever(base_retriever=_bm25(), reranker=CrossEncoderReranker(
        model=OverlapScorer()), k=2)
    assert retriever.k == 2
    with pytest.raises(TypeError, match=r"invoke got an unexpected argument 'top_n' \(.*is k"):
        retriever.invoke(QUERY, top_n=2)


class SpyRetriever(BaseRetriever):
    """Records what each call received; takes a per-call k like our retrievers."""

    inner: BaseRetriever
    seen: list[Any] = []

    def _get_relevant_documents(self, query: str, *, run_manager: Any, k: int | None = None
                                ) -> list[Document]:
        self.seen.append(k)
        return self.inner.invoke(query, k=k)

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any,
                                       k: int | None = None) -> list[Document]:
        self.seen.append(k)
        return await self.inner.ainvoke(query, k=k)


class SyncOnlyKRetriever(SpyRetriever):
    """Takes k in sync only: LangChain's default async path accepts no k."""

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        self.seen.append("async-no-k")
        return await self.inner.ainvoke(query)


class NoKRetriever(BaseRetriever):
    docs: list[Document]
    seen: list[dict[str, Any]] = []

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        self.seen.append({})
        return list(self.docs)


async def test_fetch_k_is_passed_as_k_when_accepted() -> None:
    spy = SpyRetriever(inner=_bm25(), seen=[])
    retriever = RerankingRetriever(base_retriever=spy, fetch_k=8, k=2,
                                   reranker=CrossEncoderReranker(model=OverlapScorer()))
    out = retriever.invoke(QUERY)
    assert spy.seen == [8] and len(out) == 2
    retriever.invoke(QUERY, fetch_k=5, k=3)
    assert spy.seen[-1] == 5
    assert len(await retriever.ainvoke(QUERY, k=1)) == 1
    assert spy.seen[-1] == 8
    none = RerankingRetriever(base_retriever=spy, fetch_k=None,
                              reranker=CrossEncoderReranker(model=OverlapScorer()))
    none.invoke(QUERY)
    assert spy.seen[-1] is None
    sync_only = SyncOnlyKRetriever(inner=_bm25(), seen=[])
    retriever = RerankingRetriever(base_retriever=sync_only, fetch_k=6, k=2,
                                   reranker=CrossEncoderReranker(model=OverlapScorer()))
    retriever.invoke(QUERY)
    assert len(await retriever.ainvoke(QUERY)) == 2
    assert sync_only.seen == [6, "async-no-k"]


def test_results_equal_retrieve_then_rerank() -> None:
    base = _bm25()
    compressor = CrossEncoderReranker(model=OverlapScorer())
    retriever = RerankingRetriever(base_retriever=base, reranker=compressor, fetch_k=10, k=4)
    expected = CrossEncoderReranker(model=OverlapScorer(), top_n=4).compress_documents(
        base.invoke(QUERY, k=10), QUERY)
    out = retriever.invoke(QUERY)
    assert [d.id for d in out] == [d.id for d in expected]
    assert [d.metadata for d in out] == [d.metadata for d in expected]


def test_fetch_k_is_not_passed_when_not_accepted() -> None:
    base = NoKRetriever(docs=_documents(), seen=[])
    retriever = RerankingRetriever(base_retriever=base, k=3,
                                   reranker=CrossEncoderReranker(model=OverlapScorer()))
    assert len(retriever.invoke(QUERY)) == 3 and base.seen == [{}]


def test_vector_store_retriever_gets_k() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore.from_documents(_documents(), DeterministicFakeEmbedding(size=16))
    scorer = OverlapScorer()
    retriever = RerankingRetriever(base_retriever=store.as_retriever(), fetch_k=9, k=2,
                                   reranker=CrossEncoderReranker(model=scorer))
    assert len(retriever.invoke(QUERY)) == 2 and scorer.sizes == [9]


def test_any_compressor_is_cut_to_k() -> None:
    class KeepAll(BaseDocumentCompressor):
        def compress_documents(self, documents, query, callbacks=None):  # type: ignore[no-untyped-def]
            return list(reversed(documents))

    retriever = RerankingRetriever(base_retriever=_bm25(), reranker=KeepAll(), k=2)
    assert len(retriever.invoke(QUERY)) == 2


async def test_llm_reranking_retriever_async() -> None:
    retriever = RerankingRetriever(base_retriever=_bm25(), fetch_k=4, k=2,
                                   reranker=LLMRerankCompressor(llm=FakeListLLM(responses=["[4] > [1]"])))
    docs = _bm25().invoke(QUERY, k=4)
    out = await retriever.ainvoke(QUERY)
    assert [d.id for d in out] == [docs[3].id, docs[0].id]


def test_reranking_retriever_validation() -> None:
    reranker = CrossEncoderReranker(model=OverlapScorer())
    with pytest.raises(ValidationError, match="fetch_k"):
        RerankingRetriever(base_retriever=_bm25(), reranker=reranker, fetch_k=0)
    with pytest.raises(ValidationError, match="k must be"):
        RerankingRetriever(base_retriever=_bm25(), reranker=reranker, k=0)
    retriever = RerankingRetriever(base_retriever=_bm25(), reranker=reranker)
    with pytest.raises(ValueError, match="k must be"):
        retriever.invoke(QUERY, k=0)
    assert len(retriever.invoke(QUERY, k=2)) == 2
