"""LlamaIndex rerankers: `CrossEncoderRerank` and `LLMListwiseRerank` node postprocessors, alone
and inside ``RetrieverQueryEngine`` (sync and async) with ``MockLLM``."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.callbacks import CallbackManager, CBEventType
from llama_index.core.callbacks.base_handler import BaseCallbackHandler
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from hybrid_retrievers import Doc
from hybrid_retrievers.rerank import Reranker
from llama_index_hybrid_retrievers import BM25Retriever, CrossEncoderRerank, LLMListwiseRerank

from corpora import CORPUS

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

QUERY = "lift of a wing at low speeds"


class OverlapScorer:
    model_id = "overlap"

    def __init__(self) -> None:
        self.threads: list[int] = []

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self.threads.append(threading.get_ident())
        return np.array(
            [len(set(q.lower().split()) & set(p.lower().replace(",", " ").split()))
             for q, p in pairs], dtype=np.float32)


def _nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


def _retrieved(k: int = 8) -> list[NodeWithScore]:
    return BM25Retriever.from_defaults(nodes=_nodes(), similarity_top_k=k).retrieve(QUERY)


def _snapshot(nodes: list[NodeWithScore]) -> list[Any]:
    return [(n.node.node_id, n.score, copy.deepcopy(n.node.metadata),
             list(n.node.excluded_llm_metadata_keys)) for n in nodes]


class EventCounter(BaseCallbackHandler):
    def __init__(self) -> None:
        super().__init__(event_starts_to_ignore=[], event_ends_to_ignore=[])
        self.starts: list[CBEventType] = []
        self.ends: list[CBEventType] = []

    def on_event_start(self, event_type, payload=None, event_id="", parent_id="", **kw):  # type: ignore[no-untyped-def]
        self.starts.append(event_type)
        return event_id

    def on_event_end(self, event_type, payload=None, event_id="", **kw):  # type: ignore[no-untyped-def]
        self.ends.append(event_type)

    def start_trace(self, trace_id=None):  # type: ignore[no-untyped-def]
        pass

    def end_trace(self, trace_id=None, trace_map=None):  # type: ignore[no-untyped-def]
        pass


# ------------------------------------------------------------ cross-encoder


def test_is_a_node_postprocessor_and_matches_the_core() -> None:
    nodes = _retrieved()
    before = _snapshot(nodes)
    rerank = CrossEncoderRerank(model=OverlapScorer(), top_n=3)
    assert isinstance(rerank, BaseNodePostprocessor)
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    core = Reranker(OverlapScorer(), top_n=3).rerank(
        QUERY, [Doc(str(i), n.node.get_content()) for i, n in enumerate(nodes)])
    assert [n.node.node_id for n in out] == [nodes[int(h.id)].node.node_id for h in core]
    for result, hit in zip(out, core):
        original = nodes[int(hit.id)]
        assert result is not original and result.node is not original.node
        assert result.score == hit.score
        assert result.node.text == original.node.text
        assert result.node.metadata == {**original.node.metadata,
                                        "retrieval_score": original.score,
                                        "retrieval_rank": int(hit.id) + 1}
        # provenance never leaks into prompts or embeddings
        assert "retrieval_score" not in result.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "retrieval_rank" in result.node.excluded_embed_metadata_keys
    assert _snapshot(nodes) == before  # the caller's nodes are untouched


def test_threshold_top_n_empty_and_missing_query() -> None:
    nodes = _retrieved(12)
    rerank = CrossEncoderRerank(model=OverlapScorer(), top_n=20, score_threshold=3)
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert out and all(n.score >= 3 for n in out)
    assert len(CrossEncoderRerank(model=OverlapScorer(), top_n=50).postprocess_nodes(
        nodes, query_str=QUERY)) == len(nodes)
    assert rerank.postprocess_nodes([], query_str=QUERY) == []
    with pytest.raises(ValueError, match="needs the query"):
        rerank.postprocess_nodes(nodes)
    rerank.top_n = 1
    assert len(rerank.postprocess_nodes(nodes, QueryBundle(QUERY))) == 1


def test_metadata_mode_chooses_the_reranked_text() -> None:
    node = TextNode(text="plain text", metadata={"title": "wing lift"})
    seen: list[str] = []

    class Recorder:
        def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
            seen.extend(p for _, p in pairs)
            return [1.0] * len(pairs)

    # The default is SentenceTransformerRerank's: the EMBED text.
    CrossEncoderRerank(model=Recorder()).postprocess_nodes(
        [NodeWithScore(node=node, score=1.0)], query_str="q")
    CrossEncoderRerank(model=Recorder(), metadata_mode=MetadataMode.NONE).postprocess_nodes(
        [NodeWithScore(node=node, score=1.0)], query_str="q")
    assert seen[0] == node.get_content(metadata_mode=MetadataMode.EMBED)
    assert "wing lift" in seen[0] and seen[1] == "plain text"
    hidden = TextNode(text="plain text", metadata={"title": "wing lift"},
                      excluded_embed_metadata_keys=["title"])
    CrossEncoderRerank(model=Recorder()).postprocess_nodes(
        [NodeWithScore(node=hidden, score=1.0)], query_str="q")
    assert seen[2] == "plain text"


async def test_async_runs_the_model_in_a_worker_thread() -> None:
    scorer = OverlapScorer()
    rerank = CrossEncoderRerank(model=scorer, top_n=3)
    nodes = _retrieved()
    out = await rerank.apostprocess_nodes(nodes, query_str=QUERY)
    assert [n.node.node_id for n in out] == [
        n.node.node_id for n in rerank.postprocess_nodes(nodes, query_str=QUERY)]
    assert scorer.threads[0] != threading.get_ident()


def test_emits_reranking_events() -> None:
    counter = EventCounter()
    rerank = CrossEncoderRerank(model=OverlapScorer(), callback_manager=CallbackManager([counter]))
    rerank.postprocess_nodes(_retrieved(), query_str=QUERY)
    assert counter.starts == [CBEventType.RERANKING] == counter.ends


def test_validation() -> None:
    with pytest.raises(ValueError, match="top_n"):
        CrossEncoderRerank(model=OverlapScorer(), top_n=0)
    with pytest.raises(TypeError, match="model must be"):
        CrossEncoderRerank(model=42)
    with pytest.raises(ValueError, match="score_threshold"):
        CrossEncoderRerank(model=OverlapScorer(), score_threshold=float("inf"))
    rerank = CrossEncoderRerank(model=OverlapScorer())
    with pytest.raises(TypeError, match=r"nodes\[0\]"):
        rerank.postprocess_nodes([TextNode(text="x")], query_str=QUERY)  # type: ignore[list-item]
    default = CrossEncoderRerank()
    assert default.reranker.model_id == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert not default.reranker.scorer.is_loaded


def test_query_engine_with_the_reranker() -> None:
    retriever = BM25Retriever.from_defaults(nodes=_nodes(), similarity_top_k=8)
    rerank = CrossEncoderRerank(model=OverlapScorer(), top_n=2)
    engine = RetrieverQueryEngine.from_args(retriever, node_postprocessors=[rerank],
                                            llm=MockLLM())
    response = engine.query(QUERY)
    expected = rerank.postprocess_nodes(retriever.retrieve(QUERY), query_str=QUERY)
    assert [n.node.node_id for n in response.source_nodes] == [
        n.node.node_id for n in expected]
    assert len(response.source_nodes) == 2


async def test_async_query_engine_with_the_reranker() -> None:
    retriever = BM25Retriever.from_defaults(nodes=_nodes(), similarity_top_k=8)
    scorer = OverlapScorer()
    engine = RetrieverQueryEngine.from_args(
        retriever, node_postprocessors=[CrossEncoderRerank(model=scorer, top_n=2)], llm=MockLLM())
    response = await engine.aquery(QUERY)
    assert len(response.source_nodes) == 2
    assert response.source_nodes[0].node.metadata["retrieval_rank"] >= 1
    assert scorer.threads and scorer.threads[0] != threading.get_ident()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sentence_transformers")
    from tiny_cross_encoder import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("ce2"), num_labels=2)


def test_real_two_logit_model_by_path(tiny_dir: Path) -> None:
    from sentence_transformers import CrossEncoder

    nodes = _retrieved(12)
    rerank = CrossEncoderRerank(model=str(tiny_dir), top_n=12, batch_size=4, device="cpu")
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    probs = CrossEncoder(str(tiny_dir), device="cpu").predict(
        [(QUERY, n.node.get_content(metadata_mode=MetadataMode.EMBED)) for n in nodes],
        apply_softmax=True)[:, 1]
    order = np.argsort(-probs, kind="stable")
    assert [n.node.node_id for n in out] == [nodes[i].node.node_id for i in order]
    np.testing.assert_allclose([n.score for n in out], probs[order], atol=1e-5)


# ------------------------------------------------------------------- LLM


class ScriptedLLM(MockLLM):
    """A MockLLM that answers with a fixed text (sync and async)."""

    answer: str = ""
    calls: int = 0

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[override]
        self.calls += 1
        from llama_index.core.llms import CompletionResponse

        return CompletionResponse(text=self.answer)

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[override]
        self.calls += 100
        return self.complete(prompt)


def scripted(answer: str) -> ScriptedLLM:
    llm = ScriptedLLM()  # MockLLM's __init__ takes no extra fields: set them after
    llm.answer = answer
    return llm


def test_llm_rerank_orders_by_the_answer() -> None:
    nodes = _retrieved(4)
    before = _snapshot(nodes)
    out = LLMListwiseRerank(llm=scripted("[3] > [1] > [4] > [2]"), top_n=3).postprocess_nodes(
        nodes, query_str=QUERY)
    assert [n.node.node_id for n in out] == [nodes[i].node.node_id for i in (2, 0, 3)]
    assert [n.score for n in out] == [1.0, 0.5, pytest.approx(1 / 3)]
    meta = out[0].node.metadata
    assert meta["rerank_status"] == "ok" and meta["retrieval_rank"] == 3
    assert "rerank_status" in out[0].node.excluded_llm_metadata_keys
    assert _snapshot(nodes) == before


async def test_llm_rerank_async_uses_acomplete() -> None:
    llm = scripted("2, 1")
    nodes = _retrieved(2)
    out = await LLMListwiseRerank(llm=llm, top_n=2).apostprocess_nodes(nodes, query_str=QUERY)
    assert [n.node.node_id for n in out] == [nodes[1].node.node_id, nodes[0].node.node_id]
    assert llm.calls == 101  # acomplete (which counts 100) called complete once


@pytest.mark.parametrize("llm", [MockLLM(), MockLLM(max_tokens=5)], ids=["echo", "filler"])
def test_llm_rerank_with_mock_llm_never_fails(llm: MockLLM) -> None:
    # MockLLM echoes the prompt (every number repeated) or answers "text text ...":
    # useless answers, so the input order is kept and the status says why.
    nodes = _retrieved(4)
    out = LLMListwiseRerank(llm=llm, top_n=4).postprocess_nodes(nodes, query_str=QUERY)
    assert [n.node.node_id for n in out] == [n.node.node_id for n in nodes]
    assert out[0].node.metadata["rerank_status"] in ("repaired", "fallback")
    assert out[0].node.metadata["rerank_detail"]


async def test_raising_llm_and_plain_callables() -> None:
    def boom(prompt: str) -> str:
        raise RuntimeError("quota exceeded")

    nodes = _retrieved(3)
    rerank = LLMListwiseRerank(llm=boom, top_n=2)
    for out in (rerank.postprocess_nodes(nodes, query_str=QUERY),
                await rerank.apostprocess_nodes(nodes, query_str=QUERY)):
        assert [n.node.node_id for n in out] == [n.node.node_id for n in nodes[:2]]
        assert out[0].node.metadata["rerank_status"] == "fallback"
        assert "quota exceeded" in out[0].node.metadata["rerank_detail"]
    good = LLMListwiseRerank(llm=lambda p: "[3] > [2] > [1]", top_n=1)
    assert good.postprocess_nodes(nodes, query_str=QUERY)[0].node.node_id == nodes[2].node.node_id


def test_llm_rerank_in_query_engine() -> None:
    retriever = BM25Retriever.from_defaults(nodes=_nodes(), similarity_top_k=4)
    docs = retriever.retrieve(QUERY)
    engine = RetrieverQueryEngine.from_args(
        retriever, node_postprocessors=[LLMListwiseRerank(llm=lambda p: "[4] > [2]", top_n=2)],
        llm=MockLLM())
    response = engine.query(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == [docs[3].node.node_id,
                                                               docs[1].node.node_id]


def test_llm_rerank_validation() -> None:
    with pytest.raises(TypeError, match="llm must be"):
        LLMListwiseRerank(llm=42)
    with pytest.raises(ValueError, match="placeholders"):
        LLMListwiseRerank(llm=MockLLM(), prompt="rank")
    with pytest.raises(ValueError, match="window"):
        LLMListwiseRerank(llm=MockLLM(), window=1)
    assert LLMListwiseRerank(llm=MockLLM()).reranker.name == "MockLLM"


def test_llm_rerank_shows_the_llm_text_like_llama_index_s_llm_rerank() -> None:
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "[1]"

    node = TextNode(text="plain text", metadata={"title": "wing lift", "file": "a.txt"},
                    excluded_llm_metadata_keys=["file"])
    other = TextNode(text="other text")
    LLMListwiseRerank(llm=llm, top_n=1).postprocess_nodes(
        [NodeWithScore(node=node, score=1.0), NodeWithScore(node=other, score=0.5)],
        query_str="q")
    assert "wing lift" in prompts[0] and "a.txt" not in prompts[0]


def test_keep_retrieval_score_as_sentence_transformer_rerank() -> None:
    # Issue 35: SentenceTransformerRerank(model=..., top_n=..., keep_retrieval_score=...).
    from llama_index.core.schema import NodeWithScore as _NWS
    from llama_index.core.schema import TextNode as _TN

    from llama_index_hybrid_retrievers import CrossEncoderRerank as _Rerank
    from corpora import WordOverlap as _Overlap

    nodes = [_NWS(node=_TN(text="cats sleep"), score=2.0),
             _NWS(node=_TN(text="wing lift and drag"), score=1.0)]
    kept = _Rerank(model=_Overlap(), top_n=1, keep_retrieval_score=True).postprocess_nodes(
        nodes, query_str="wing lift")
    assert kept[0].node.metadata["retrieval_score"] == 1.0
    dropped = _Rerank(model=_Overlap(), top_n=1, keep_retrieval_score=False).postprocess_nodes(
        nodes, query_str="wing lift")
    assert "retrieval_score" not in dropped[0].node.metadata
    assert dropped[0].node.text == "wing lift and drag" and len(dropped) == 1
