"""`HyDEQueryTransform` in LlamaIndex's shape: the same bundles as llama-index-core's own
transform (llama-index-core has no test of it; these check ours against it), with
``TransformQueryEngine`` / ``TransformRetriever`` over our `DenseRetriever`, plus our
guarantees: the timeout and the raw-query fallback, async, spans, refused keywords."""

from __future__ import annotations

import asyncio
import doctest
import logging
import threading
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core import instrumentation as instrument
from llama_index.core.indices.query.query_transform import (
    HyDEQueryTransform as Original,
)
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.default_prompts import DEFAULT_HYDE_PROMPT
from llama_index.core.query_engine import RetrieverQueryEngine, TransformQueryEngine
from llama_index.core.retrievers import TransformRetriever
from llama_index.core.schema import QueryBundle, TextNode

from hybrid_retrievers.models import HashingEmbedder
from llama_index_hybrid_retrievers import DenseRetriever, HyDEQueryTransform
from llama_index_hybrid_retrievers import hyde as hyde_module

from corpora import CORPUS

ANSWER = "The lift of a wing depends on the angle of attack and the airspeed."
QUERY = "why do airplanes stay up?"  # no word in common with the aero documents


class FixedLLM(CustomLLM):
    """A completion LLM answering ``text``, recording its prompts."""

    text: str = ANSWER
    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.text)

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        yield CompletionResponse(text=self.text, delta=self.text)


class BrokenLLM(FixedLLM):
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise ConnectionError("LLM unreachable")


class HungLLM(FixedLLM):
    """Blocks (sync) or sleeps (async) until released."""

    release: Any = None

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.release.wait(60)
        return CompletionResponse(text=self.text)

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        await asyncio.sleep(60)
        return CompletionResponse(text=self.text)


class AsyncLLM(FixedLLM):
    """Records which path answered."""

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        self.prompts.append("async:" + prompt)
        return CompletionResponse(text=self.text)


@pytest.fixture
def release() -> Any:
    event = threading.Event()
    yield event
    event.set()


def _retriever(k: int = 1) -> DenseRetriever:
    nodes = [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]
    return DenseRetriever.from_defaults(nodes=nodes, embed_model=HashingEmbedder(256),
                                        similarity_top_k=k)


# ------------------------------------------- the same bundles as LlamaIndex's transform


@pytest.mark.parametrize("include_original", [True, False])
@pytest.mark.parametrize("query", [
    QUERY,
    QueryBundle(query_str=QUERY),
    QueryBundle(query_str=QUERY, custom_embedding_strs=["airplane", "lift"]),
])
def test_run_gives_the_bundle_of_llama_indexs_transform(include_original: bool,
                                                       query: Any) -> None:
    ours = HyDEQueryTransform(FixedLLM(), include_original=include_original).run(query)
    theirs = Original(FixedLLM(), include_original=include_original).run(query)
    assert ours.query_str == theirs.query_str
    assert ours.custom_embedding_strs == theirs.custom_embedding_strs
    assert ours.embedding is None and theirs.embedding is None


def test_default_prompt_and_settings_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = FixedLLM()
    monkeypatch.setattr(Settings, "_llm", llm)
    hyde = HyDEQueryTransform()
    assert hyde.get_prompts() == {"hyde_prompt": DEFAULT_HYDE_PROMPT}
    hyde.run("wing lift")
    assert llm.prompts == [DEFAULT_HYDE_PROMPT.format(context_str="wing lift")]


def test_update_prompts_is_used_and_checked() -> None:
    hyde = HyDEQueryTransform(MockLLM())  # MockLLM answers with the prompt it got
    hyde.update_prompts({"hyde_prompt": PromptTemplate("Passage about {context_str}")})
    assert hyde.run("lift").custom_embedding_strs == ["Passage about lift", "lift"]
    with pytest.raises(ValueError, match=r"\{context_str\} variable"):
        hyde.update_prompts({"hyde_prompt": PromptTemplate("Passage about {query_str}")})


def test_n_generations_each_become_an_embedding_string() -> None:
    llm = FixedLLM()
    bundle = HyDEQueryTransform(llm, include_original=False, n=2).run("lift")
    assert bundle.custom_embedding_strs == [ANSWER, ANSWER] and len(llm.prompts) == 2


def test_transform_query_engine_and_transform_retriever_over_dense_retriever() -> None:
    retriever = _retriever()
    assert retriever.retrieve(QUERY)[0].node.node_id != "aero-1"  # the raw query misses
    hyde = HyDEQueryTransform(FixedLLM(), include_original=False)
    engine = TransformQueryEngine(RetrieverQueryEngine.from_args(retriever, llm=MockLLM()),
                                  query_transform=hyde)
    assert engine.query(QUERY).source_nodes[0].node.node_id == "aero-1"
    assert asyncio.run(engine.aquery(QUERY)).source_nodes[0].node.node_id == "aero-1"
    found = TransformRetriever(retriever, query_transform=hyde).retrieve(QUERY)
    assert found[0].node.node_id == "aero-1"
    # With the query kept (the default), the mean still leans to the hypothetical answer.
    kept = HyDEQueryTransform(FixedLLM())
    assert TransformRetriever(retriever, query_transform=kept).retrieve(QUERY)[
        0].node.node_id == "aero-1"


# ------------------------------------------------------------ our guarantees


def test_failed_llm_keeps_the_raw_query_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    hyde = HyDEQueryTransform(BrokenLLM(), include_original=False)
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.hyde"):
        bundle, result = hyde.run_with_result(QUERY)
    assert bundle.custom_embedding_strs == [QUERY]
    assert result.fallback and "ConnectionError: LLM unreachable" in str(result.error)
    assert "falling back to the raw query" in caplog.text
    assert _retriever().retrieve(bundle)[0].node.node_id == _retriever().retrieve(QUERY)[
        0].node.node_id


def test_hung_llm_times_out_to_the_raw_query(release: threading.Event) -> None:
    hyde = HyDEQueryTransform(HungLLM(release=release), timeout=0.2)
    bundle, result = hyde.run_with_result("wing lift")
    assert result.fallback and "no answer within 0.2 s" in str(result.error)
    assert bundle.custom_embedding_strs == ["wing lift"]


async def test_async_hung_llm_times_out_to_the_raw_query(release: threading.Event) -> None:
    hyde = HyDEQueryTransform(HungLLM(release=release), timeout=0.2)
    bundle, result = await hyde.arun_with_result("wing lift")
    assert result.fallback and bundle.custom_embedding_strs == ["wing lift"]


async def test_arun_awaits_the_llm() -> None:
    llm = AsyncLLM()
    bundle = await HyDEQueryTransform(llm).arun(QueryBundle(query_str="lift"))
    assert bundle.custom_embedding_strs == [ANSWER, "lift"]
    assert llm.prompts == ["async:" + DEFAULT_HYDE_PROMPT.format(context_str="lift")]


def test_the_llm_call_is_a_span_inside_the_transforms_span() -> None:
    handler = SimpleSpanHandler()
    dispatcher = instrument.get_dispatcher()
    dispatcher.add_span_handler(handler)
    try:
        HyDEQueryTransform(FixedLLM()).run("lift")
    finally:
        dispatcher.span_handlers.remove(handler)
    spans = {s.id_: s for s in handler.completed_spans}
    run = next(i for i in spans if i.startswith("HyDEQueryTransform._run"))
    predict = next(s for i, s in spans.items() if i.startswith("FixedLLM.predict-"))
    assert predict.parent_id == run


def test_bad_arguments_name_the_fix() -> None:
    with pytest.raises(TypeError, match="'include_orignal' .did you mean include_original=.*"):
        HyDEQueryTransform(FixedLLM(), include_orignal=False)
    with pytest.raises(TypeError, match="llm_predictor is llm="):
        HyDEQueryTransform(llm_predictor=FixedLLM())
    with pytest.raises(TypeError, match="llm must be a llama_index LLM"):
        HyDEQueryTransform(lambda prompt: "x")
    with pytest.raises(TypeError, match="include_original must be a bool"):
        HyDEQueryTransform(FixedLLM(), include_original="yes")
    with pytest.raises(TypeError, match="hyde_prompt must be a llama_index prompt"):
        HyDEQueryTransform(FixedLLM(), "Write about {context_str}")
    with pytest.raises(ValueError, match="timeout must be > 0"):
        HyDEQueryTransform(FixedLLM(), timeout=0)
    with pytest.raises(ValueError, match="n must be between 1 and 8"):
        HyDEQueryTransform(FixedLLM(), n=9)
    with pytest.raises(ValueError, match="empty or blank"):
        HyDEQueryTransform(FixedLLM()).run(" ")
    with pytest.raises(TypeError, match="a str or a QueryBundle"):
        HyDEQueryTransform(FixedLLM()).run_with_result(3)
    assert HyDEQueryTransform(FixedLLM()).hyde.timeout == 30.0


def test_docstring_examples_run() -> None:
    assert doctest.testmod(hyde_module).failed == 0
