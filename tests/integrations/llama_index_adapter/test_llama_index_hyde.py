"""Tests for `llama_index_hybrid_retrievers.HyDERetriever` with MockLLM and a custom LLM."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.schema import TextNode

from hybrid_retrievers.models import HashingEmbedder
from llama_index_hybrid_retrievers import DenseRetriever, HyDERetriever
from llama_index_hybrid_retrievers.hyde import as_text_generator

from corpora import CORPUS, WING_QUERY

ANSWER = "The wing generates lift: lift depends on the angle of attack and the airspeed."


class FixedLLM(CustomLLM):
    """A custom LLM returning fixed text, counting calls."""

    text: str = ANSWER
    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text=self.text)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield CompletionResponse(text=self.text, delta=self.text)


class BrokenLLM(FixedLLM):
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise ConnectionError("LLM unreachable")


def _nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


def test_custom_llm_passages_and_averaged_vector() -> None:
    emb = HashingEmbedder(128)
    nodes = _nodes()
    r = HyDERetriever.from_defaults(nodes, embed_model=emb, llm=FixedLLM(), n=2, similarity_top_k=3)
    results = r.retrieve("how do planes stay up?")
    expected = np.mean([emb.embed_query("how do planes stay up?"), *emb.embed_documents([ANSWER] * 2)],
                       axis=0)
    core = r.searcher.index.search_vector(expected, 3)
    assert [(n.node.node_id, pytest.approx(n.score)) for n in results] == [(h.id, h.score) for h in core]
    assert results[0].node is next(n for n in nodes if n.node_id == results[0].node.node_id)
    assert r.generate("q").passages == (ANSWER, ANSWER)


def test_mock_llm_echoes_the_prompt() -> None:
    r = HyDERetriever.from_defaults(_nodes(), embed_model=HashingEmbedder(128), llm=MockLLM(),
                                    prompt="scientific", similarity_top_k=2)
    result = r.generate(WING_QUERY)
    assert result.passages[0].startswith("Please write a scientific paper passage")
    assert len(r.retrieve(WING_QUERY)) == 2


def test_llm_failure_falls_back() -> None:
    r = HyDERetriever.from_defaults(_nodes(), embed_model=HashingEmbedder(128), llm=BrokenLLM(),
                                    similarity_top_k=2)
    hits = r.searcher.search(WING_QUERY, 2)
    assert hits[0].explanation["hyde"]["fallback"] is True
    assert "LLM unreachable" in hits[0].explanation["hyde"]["error"]
    assert [n.node.node_id for n in r.retrieve(WING_QUERY)] == [
        h.id for h in r.searcher.index.search(WING_QUERY, 2)
    ]


async def test_async_concurrent_generations() -> None:
    llm = FixedLLM()
    r = HyDERetriever.from_defaults(_nodes(), embed_model=HashingEmbedder(128), llm=llm, n=3,
                                    similarity_top_k=2)
    got = await r.aretrieve("how do planes stay up?")
    assert llm.calls == 3  # CustomLLM.acomplete runs complete: one call per generation
    assert [n.node.node_id for n in got] == [n.node.node_id for n in r.retrieve("how do planes stay up?")]


def test_over_existing_index_callable_llm_and_expansion() -> None:
    dense = DenseRetriever.from_defaults(nodes=_nodes(), embed_model=HashingEmbedder(128))
    r = HyDERetriever.from_defaults(index=dense.index, embed_model=dense.index.embedder,
                                    llm=lambda prompt: ANSWER, similarity_top_k=1)
    assert r.retrieve("planes")[0].node.metadata["topic"] == "aero"
    h = HyDERetriever.from_defaults(_nodes(), embed_model=HashingEmbedder(128), llm=FixedLLM(),
                                    expand_with_bm25=True)
    assert h.searcher.mode == "hybrid" and h.retrieve("planes")[0].node.metadata["topic"] == "aero"


def test_validation() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        HyDERetriever.from_defaults(embed_model=HashingEmbedder(8), llm=MockLLM())
    with pytest.raises(TypeError, match="llm"):
        as_text_generator(3)
    with pytest.raises(TypeError, match="HyDESearcher"):
        HyDERetriever(object())  # type: ignore[arg-type]
