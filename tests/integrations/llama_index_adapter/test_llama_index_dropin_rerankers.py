"""LlamaIndex's ``LLMRerank`` and ``SentenceTransformerRerank`` contracts on ours, and the
rerankers' refusal of unknown keywords.

`LLMRerank` is checked against llama-index-core's own class on the same scripted
answers (same nodes, same scores, same order), through the completion and the chat
(multimodal) paths; `SentenceTransformerRerank` against its defaults and a real (tiny,
locally built) cross-encoder.
"""

from __future__ import annotations

import inspect
import logging
import os
import random
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import Settings
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    ImageBlock,
    TextBlock,
)
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.llm_rerank import LLMRerank as OriginalLLMRerank
from llama_index.core.postprocessor.sbert_rerank import (
    SentenceTransformerRerank as OriginalSentenceTransformerRerank,
)
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import ImageNode, MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index_hybrid_retrievers import (
    CrossEncoderRerank,
    LLMListwiseRerank,
    LLMRerank,
    MMRPostprocessor,
    SentenceTransformerRerank,
    SourceCapPostprocessor,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

PNG_1PX = (b"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
           b"AAAABJRU5ErkJggg==")
DOCUMENT = re.compile(r"Document (\d+):\n(\S+)")


class RelevanceLLM(MockLLM):
    """A completion model that answers ``Doc: N, Relevance: S`` for each document whose
    text is in ``relevance`` (per-call counters for the async path)."""

    relevance: dict[str, int] = Field(default_factory=dict)
    prompts: list[str] = Field(default_factory=list)

    def _answer(self, text: str) -> str:
        self.prompts.append(text)
        return "\n".join(f"Doc: {n}, Relevance: {self.relevance[t]}"
                         for n, t in DOCUMENT.findall(text) if t in self.relevance)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[override]
        return CompletionResponse(text=self._answer(prompt))


def relevance_llm(relevance: dict[str, int]) -> RelevanceLLM:
    llm = RelevanceLLM()
    llm.relevance = relevance
    return llm


def texts(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def scored(*values: str) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=t, text=t), score=1.0 / (i + 1))
            for i, t in enumerate(values)]


# ------------------------------------------------------------ LLMRerank


def test_arguments_and_defaults_are_the_originals() -> None:
    ours = inspect.signature(LLMRerank.__init__).parameters
    theirs = inspect.signature(OriginalLLMRerank.__init__).parameters
    assert list(ours)[:len(theirs)] == list(theirs)
    assert all(ours[name].default == theirs[name].default for name in theirs)
    rerank = LLMRerank(llm=MockLLM())
    assert (rerank.top_n, rerank.choice_batch_size) == (10, 10)
    assert rerank._get_prompts().keys() == {"choice_select_prompt"}  # as the original


def test_llm_defaults_to_settings_llm() -> None:
    llm = relevance_llm({"b": 3})
    previous = Settings._llm
    Settings.llm = llm
    try:
        rerank = LLMRerank()
    finally:
        Settings._llm = previous
    assert rerank.llm is llm
    assert texts(rerank.postprocess_nodes(scored("a", "b"), query_str="q")) == ["b"]


def test_same_result_as_llama_index_llm_rerank() -> None:
    rng = random.Random(7)
    for trial in range(25):
        names = [f"t{i}" for i in range(rng.randint(1, 13))]
        relevance = {t: rng.randint(1, 10) for t in names if rng.random() < 0.6}
        batch, top_n = rng.randint(1, 5), rng.randint(1, 8)
        nodes = scored(*names)
        theirs = OriginalLLMRerank(llm=relevance_llm(relevance), choice_batch_size=batch,
                                   top_n=top_n).postprocess_nodes(nodes, QueryBundle("q"))
        llm = relevance_llm(relevance)
        ours = LLMRerank(llm=llm, choice_batch_size=batch, top_n=top_n).postprocess_nodes(
            scored(*names), QueryBundle("q"))
        chosen_anywhere = all(any(t in relevance for t in names[i:i + batch])
                              for i in range(0, len(names), batch))
        if chosen_anywhere:  # every batch answered: the original's result exactly
            assert [(n.node.node_id, n.score) for n in ours] == [
                (n.node.node_id, n.score) for n in theirs], trial
        else:  # a batch without a choice keeps its input order here, after the chosen
            assert [n.node.node_id for n in ours][:len(theirs)] == [
                n.node.node_id for n in theirs], trial
        assert len(llm.prompts) == -(-len(names) // batch)


def test_unusable_answer_keeps_input_order_and_says_why(caplog) -> None:
    nodes = scored("a", "b", "c")
    before = [(n.node.node_id, n.score, dict(n.node.metadata)) for n in nodes]
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.rerank"):
        out = LLMRerank(llm=MockLLM(max_tokens=3), top_n=2).postprocess_nodes(
            nodes, query_str="q")
    assert texts(out) == ["a", "b"] and [n.score for n in out] == [0.0, 0.0]
    assert out[0].node.metadata["rerank_status"] == "fallback"
    assert "no usable 'Doc: N, Relevance: S' line" in out[0].node.metadata["rerank_detail"]
    assert "kept the input order" in caplog.text
    assert [(n.node.node_id, n.score, dict(n.node.metadata)) for n in nodes] == before


def test_hung_llm_is_bounded_by_the_timeout() -> None:
    release = threading.Event()

    def hang(prompt: str) -> str:
        release.wait(30)
        return "Doc: 1, Relevance: 9"

    try:
        out = LLMRerank(llm=hang, timeout=0.2).postprocess_nodes(scored("a", "b"),
                                                                 query_str="q")
    finally:
        release.set()
    assert texts(out) == ["a", "b"]
    assert "no answer within 0.2 s" in out[0].node.metadata["rerank_detail"]


def test_custom_prompt_format_and_parse_functions_are_used() -> None:
    seen: dict[str, Any] = {}

    def fmt(nodes: list) -> str:
        seen["batch"] = [n.get_content() for n in nodes]
        return " | ".join(n.get_content() for n in nodes)

    def parse(answer: str, n: int) -> tuple[list[int], list[float]]:
        seen["answer"] = (answer, n)
        return [2], [4.0]

    def llm(prompt: str) -> str:
        seen["prompt"] = prompt
        return "two"

    prompt = PromptTemplate("Q={query_str} C={context_str}")
    rerank = LLMRerank(llm=llm, choice_select_prompt=prompt, format_node_batch_fn=fmt,
                       parse_choice_select_answer_fn=parse)
    out = rerank.postprocess_nodes(scored("a", "b"), query_str="q")
    assert seen == {"batch": ["a", "b"], "prompt": "Q=q C=a | b", "answer": ("two", 2)}
    assert texts(out) == ["b"] and out[0].score == 4.0
    rerank._update_prompts({"choice_select_prompt": PromptTemplate("{query_str}/{context_str}")})
    rerank.postprocess_nodes(scored("a", "b"), query_str="q")
    assert seen["prompt"] == "q/a | b"


class ChatVisionLLM(MockLLM):
    """A chat model that records the messages and chooses every image it is shown."""

    received: list[list[ChatMessage]] = Field(default_factory=list)

    def chat(self, messages, **kwargs: Any) -> ChatResponse:  # type: ignore[override]
        self.received.append(list(messages))
        lines, number = [], 0
        for message in messages:
            for block in message.blocks:
                if isinstance(block, TextBlock):
                    found = re.findall(r"Document (\d+):", block.text)
                    number = int(found[-1]) if found else number
                elif isinstance(block, ImageBlock):
                    lines.append(f"Doc: {number}, Relevance: 9")
        return ChatResponse(message=ChatMessage(blocks=[TextBlock(text="\n".join(lines))]))


def test_a_chat_model_is_shown_the_images() -> None:
    llm = ChatVisionLLM(is_chat_model=True)
    nodes = [NodeWithScore(node=TextNode(id_="text", text="a caption"), score=1.0),
             NodeWithScore(node=ImageNode(id_="image", image=PNG_1PX), score=0.5)]
    out = LLMRerank(llm=llm).postprocess_nodes(nodes, query_str="a red pixel")
    assert [n.node.node_id for n in out] == ["image"] and out[0].score == 9.0
    blocks = [b for m in llm.received[0] for b in m.blocks]
    assert any(isinstance(b, ImageBlock) for b in blocks)
    assert any(isinstance(b, TextBlock) and "a red pixel" in b.text for b in blocks)
    theirs = OriginalLLMRerank(llm=llm).postprocess_nodes(nodes, QueryBundle("a red pixel"))
    assert [n.node.node_id for n in theirs] == ["image"]


def test_a_text_batch_format_works_with_a_chat_model() -> None:
    llm = ChatVisionLLM(is_chat_model=True)
    rerank = LLMRerank(llm=llm, format_node_batch_fn=lambda nodes: "Document 1:\nimage")
    out = rerank.postprocess_nodes(scored("a"), query_str="q")
    text = llm.received[0][-1].content
    assert "Document 1:\nimage" in text and "Question: q" in text  # the text template
    assert out[0].node.metadata["rerank_status"] == "fallback"  # no image block was sent


def test_a_completion_model_cannot_see_images_and_a_warning_says_so(caplog) -> None:
    nodes = [NodeWithScore(node=ImageNode(id_="image", image=PNG_1PX), score=1.0)]
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.rerank"):
        LLMRerank(llm=relevance_llm({})).postprocess_nodes(nodes, query_str="q")
    assert "image/audio/video node(s) (image)" in caplog.text and "chat model" in caplog.text


def test_a_legacy_multimodal_llm_is_refused_clearly() -> None:
    class LegacyMultiModal:  # MultiModalLLM's shape: complete(prompt, image_documents)
        def complete(self, prompt: str, image_documents: list) -> Any:
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="legacy MultiModalLLM is not one"):
        LLMRerank(llm=LegacyMultiModal())
    with pytest.raises(TypeError, match="llm must be a llama_index LLM"):
        LLMRerank(llm=42)


async def test_async_uses_apredict_for_every_batch() -> None:
    llm = relevance_llm({"b": 2, "d": 7})
    out = await LLMRerank(llm=llm, choice_batch_size=2).apostprocess_nodes(
        scored("a", "b", "c", "d"), query_str="q")
    assert texts(out) == ["d", "b"] and len(llm.prompts) == 2


def test_fields_assigned_later_take_effect() -> None:
    llm = relevance_llm({"b": 2, "d": 7, "c": 1})
    rerank = LLMRerank(llm=llm)
    rerank.choice_batch_size, rerank.top_n = 1, 2
    assert texts(rerank.postprocess_nodes(scored("a", "b", "c", "d"), query_str="q")) == [
        "d", "b"]
    assert len(llm.prompts) == 4


def test_rerank_events_are_emitted() -> None:
    class Events(BaseEventHandler):
        seen: list[str] = Field(default_factory=list)

        def handle(self, event: Any, **kwargs: Any) -> None:
            if isinstance(event, (ReRankStartEvent, ReRankEndEvent)):
                self.seen.append(type(event).__name__)

    handler = Events()
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        LLMRerank(llm=relevance_llm({"a": 1})).postprocess_nodes(scored("a"), query_str="q")
    finally:
        root.event_handlers.remove(handler)
    assert handler.seen == ["ReRankStartEvent", "ReRankEndEvent"]


def test_the_listwise_reranker_keeps_its_own_name() -> None:
    out = LLMListwiseRerank(llm=lambda p: "[2] > [1]", top_n=2).postprocess_nodes(
        scored("a", "b"), query_str="q")
    assert texts(out) == ["b", "a"] and out[0].score == 1.0


# ----------------------------------------------------- SentenceTransformerRerank


def test_sentence_transformer_rerank_arguments_and_defaults() -> None:
    ours = inspect.signature(SentenceTransformerRerank.__init__).parameters
    theirs = inspect.signature(OriginalSentenceTransformerRerank.__init__).parameters
    assert list(ours)[:len(theirs)] == list(theirs)
    assert all(ours[name].default == theirs[name].default for name in theirs
               if name != "trust_remote_code")  # True in some releases, False in later ones
    rerank = SentenceTransformerRerank()
    assert (rerank.top_n, rerank.model, rerank.keep_retrieval_score, rerank.trust_remote_code
            ) == (2, "cross-encoder/stsb-distilroberta-base", False, False)
    assert not rerank.reranker.scorer.is_loaded  # loaded on first use


def test_missing_sentence_transformers_raises_at_construction(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers" else real(name, *a))
    with pytest.raises(ImportError) as caught:
        SentenceTransformerRerank()
    assert str(caught.value) == ("Cannot import sentence-transformers or torch package, "
                                 "please `pip install torch sentence-transformers`")
    assert len(caught.value.args) == 1


def test_construction_imports_no_torch() -> None:
    code = textwrap.dedent("""
        import sys
        from llama_index_hybrid_retrievers import SentenceTransformerRerank
        SentenceTransformerRerank()
        print("torch" in sys.modules, "sentence_transformers" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=os.environ)
    assert done.stdout.split() == ["False", "False"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sentence_transformers")
    from tiny_cross_encoder import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("ce1"))


def test_sentence_transformer_rerank_scores_like_the_model(tiny_dir: Path) -> None:
    from sentence_transformers import CrossEncoder

    words = ["wing lift and drag", "bread rises", "lift of a wing", "shock waves near mach one"]
    nodes = [NodeWithScore(node=TextNode(id_=w, text=w, metadata={"k": "v"}), score=0.5)
             for w in words]
    rerank = SentenceTransformerRerank(top_n=2, model=str(tiny_dir), device="cpu",
                                       cross_encoder_kwargs={"max_length": 64},
                                       trust_remote_code=True)
    out = rerank.postprocess_nodes(nodes, query_str="lift of a wing")
    model = CrossEncoder(str(tiny_dir), device="cpu", max_length=64)
    scores = model.predict([("lift of a wing", n.node.get_content(MetadataMode.EMBED))
                            for n in nodes])
    order = np.argsort(-scores, kind="stable")[:2]
    assert [n.node.node_id for n in out] == [words[i] for i in order]
    np.testing.assert_allclose([n.score for n in out], scores[order], atol=1e-5)
    assert "retrieval_score" not in out[0].node.metadata  # keep_retrieval_score=False
    assert rerank.reranker.scorer.model.max_seq_length == 64
    assert rerank.reranker.scorer._model_kwargs == {"trust_remote_code": True}
    kept = SentenceTransformerRerank(model=str(tiny_dir), keep_retrieval_score=True)
    assert kept.postprocess_nodes(nodes, query_str="lift")[0].node.metadata[
        "retrieval_score"] == 0.5


# ------------------------------------------------------------ unknown keywords


@pytest.mark.parametrize(("make", "name", "nearest"), [
    (lambda: LLMRerank(llm=MockLLM(), bogus_arg=1), "bogus_arg", "accepted: "),
    (lambda: LLMRerank(llm=MockLLM(), choice_batchsize=3), "choice_batchsize",
     "did you mean choice_batch_size=?"),
    (lambda: LLMRerank(llm=MockLLM(), window=3), "window", "LLMListwiseRerank"),
    (lambda: CrossEncoderRerank(model="x", trust_remote_code=True), "trust_remote_code",
     "SentenceTransformerRerank takes it"),
    (lambda: CrossEncoderRerank(model="x", topn=2), "topn", "did you mean top_n=?"),
    (lambda: SentenceTransformerRerank(keep_retrieval_scores=True), "keep_retrieval_scores",
     "did you mean keep_retrieval_score=?"),
    (lambda: LLMListwiseRerank(llm=MockLLM(), choice_batch_size=3), "choice_batch_size",
     "LLMRerank"),
    (lambda: MMRPostprocessor(lambda_mul=0.5), "lambda_mul", "did you mean lambda_mult=?"),
    (lambda: SourceCapPostprocessor(max_per_sources=2), "max_per_sources", "did you mean max_per_source=?"),
])
def test_unknown_keywords_are_refused_with_the_nearest_name(make, name, nearest) -> None:
    with pytest.raises(TypeError, match=re.escape(repr(name))) as caught:
        make()
    assert nearest in str(caught.value)
