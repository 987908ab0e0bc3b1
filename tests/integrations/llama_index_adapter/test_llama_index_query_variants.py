"""FusionRetriever as LlamaIndex's QueryFusionRetriever fuses: generated queries, weights.

Written from QueryFusionRetriever's behaviours (llama-index-core, newest): with
``num_queries > 1`` an LLM (``llm`` or ``Settings.llm``) writes ``num_queries - 1``
queries from ``query_gen_prompt`` (``complete`` in ``retrieve``, ``acomplete`` in
``aretrieve``), every retriever answers every query and all lists are fused; in
``"reciprocal_rerank"`` each list counts with its retriever's normalised weight
``w / (60 + 0-based rank)``. Ours adds a timeout with the original query as fallback,
recorded in the provenance.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.settings import Settings

from hybrid_retrievers.fusion import DEFAULT_QUERY_GEN_PROMPT
from llama_index_hybrid_retrievers import FusionRetriever

ANSWERS = {  # what each "retriever" returns for each query: node ids, best first
    "wing lift": ["a", "b"],
    "airfoil lift": ["c", "a"],
    "lift of a wing": ["b", "d"],
}


class QueryRetriever(BaseRetriever):
    """Answers each query from a table (scores falling with the rank); records queries."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.queries: list[str] = []
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.queries.append(query_bundle.query_str)
        ids = self.table.get(query_bundle.query_str, [])
        return [NodeWithScore(node=TextNode(id_=i, text=f"text {i}"), score=10.0 - r)
                for r, i in enumerate(ids)]


PROMPTS: list[str] = []
CALLS: list[str] = []


class ScriptedLLM(MockLLM):
    """Answers every prompt with two queries; records the prompt and the method used."""

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        PROMPTS.append(prompt)
        CALLS.append("complete")
        return CompletionResponse(text="```\nairfoil lift\nlift of a wing\nextra one\n```")

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        PROMPTS.append(prompt)
        CALLS.append("acomplete")
        return CompletionResponse(text="airfoil lift\nlift of a wing")


class FailingLLM(MockLLM):
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise ConnectionError("the model server is down")


@pytest.fixture(autouse=True)
def _clear() -> None:
    PROMPTS.clear()
    CALLS.clear()


def _ids(results: list[NodeWithScore]) -> list[str]:
    return [r.node.node_id for r in results]


def _query_fusion_rrf(lists: dict[tuple[str, int], list[str]], weights: list[float],
                      ) -> dict[str, float]:
    """QueryFusionRetriever's newest RRF, written from its definition: Σ over every
    (query, retriever) list of w_i / (60 + 0-based rank), w normalised to sum 1."""
    total = sum(weights)
    scores: dict[str, float] = {}
    for (_, i), ids in lists.items():
        for rank, node_id in enumerate(ids):
            scores[node_id] = scores.get(node_id, 0.0) + weights[i] / total / (60 + rank)
    return scores


def test_generated_queries_run_through_every_retriever_and_are_fused() -> None:
    a, b = QueryRetriever(ANSWERS), QueryRetriever({"airfoil lift": ["d"]})
    fusion = FusionRetriever([a, b], llm=ScriptedLLM(), num_queries=3,
                             mode="reciprocal_rerank", retriever_weights=[3, 1],
                             similarity_top_k=10)
    results = fusion.retrieve("wing lift")
    assert CALLS == ["complete"]
    assert "Query: wing lift" in PROMPTS[0] and "Write 2 search queries" in PROMPTS[0]
    for child in (a, b):  # the original, then the first num_queries - 1 generated ones
        assert sorted(child.queries) == ["airfoil lift", "lift of a wing", "wing lift"]
    lists = {(q, 0): ANSWERS[q] for q in ANSWERS} | {("airfoil lift", 1): ["d"]}
    expected = _query_fusion_rrf(lists, [3, 1])
    assert {r.node.node_id: r.score for r in results} == pytest.approx(expected, rel=1e-12)
    assert _ids(results) == sorted(expected, key=lambda i: -expected[i])
    fusion_info = results[0].node.metadata["fusion"]
    assert fusion_info["queries"] == {"original": "wing lift",
                                      "generated": ["airfoil lift", "lift of a wing"],
                                      "fallback": False, "error": None}
    d = next(r for r in results if r.node.node_id == "d").node.metadata["fusion"]
    assert {(s["index"], s["query"]) for s in d["sources"]} == {
        (0, "lift of a wing"), (1, "airfoil lift")}


async def test_aretrieve_generates_with_acomplete() -> None:
    child = QueryRetriever(ANSWERS)
    fusion = FusionRetriever([child], llm=ScriptedLLM(), num_queries=3, similarity_top_k=4)
    results = await fusion.aretrieve("wing lift")
    assert CALLS == ["acomplete"]
    assert sorted(child.queries) == ["airfoil lift", "lift of a wing", "wing lift"]
    assert set(_ids(results)) == {"a", "b", "c", "d"}


def test_defaults_prompt_and_settings_llm(capsys: pytest.CaptureFixture[str]) -> None:
    child = QueryRetriever(ANSWERS)
    assert FusionRetriever([child]).num_queries == 1  # no LLM: no generation
    assert FusionRetriever([child], llm=ScriptedLLM()).num_queries == 4  # as there
    custom = FusionRetriever([child], llm=ScriptedLLM(), num_queries=2, verbose=True,
                             query_gen_prompt="Give {num_queries} rewrite(s) of: {query}")
    custom.retrieve("wing lift")
    assert PROMPTS[-1] == "Give 1 rewrite(s) of: wing lift"
    assert "Generated queries:\nairfoil lift" in capsys.readouterr().out
    assert set(custom.get_prompts()) == {"query_gen_prompt"}
    assert FusionRetriever([child]).get_prompts()["query_gen_prompt"].template == \
        DEFAULT_QUERY_GEN_PROMPT
    custom.update_prompts({"query_gen_prompt": "Other {num_queries}: {query}"})
    custom.retrieve("wing lift")
    assert PROMPTS[-1] == "Other 1: wing lift"
    previous = Settings._llm
    try:
        Settings.llm = ScriptedLLM()
        FusionRetriever([child], num_queries=3).retrieve("wing lift")
        assert CALLS[-1] == "complete"
    finally:
        Settings._llm = previous
    with pytest.raises(ValueError, match=r"query_gen_prompt must format"):
        FusionRetriever([child], llm=ScriptedLLM(), query_gen_prompt="{nope} {query}")
    with pytest.raises(ValueError, match=r"must contain \{query\}"):
        FusionRetriever([child], llm=ScriptedLLM(), query_gen_prompt="write {num_queries}")
    with pytest.raises(ValueError, match="timeout must be > 0"):
        FusionRetriever([child], llm=ScriptedLLM(), timeout=0)


def test_a_failing_llm_falls_back_to_the_original_query() -> None:
    child = QueryRetriever(ANSWERS)
    results = FusionRetriever([child], llm=FailingLLM(), num_queries=4).retrieve("wing lift")
    assert child.queries == ["wing lift"] and _ids(results) == ["a", "b"]
    queries = results[0].node.metadata["fusion"]["queries"]
    assert queries["fallback"] is True and queries["generated"] == []
    assert queries["error"] == "ConnectionError: the model server is down"


def test_a_hung_llm_is_cut_off_by_the_timeout() -> None:
    release = threading.Event()

    def hung(prompt: str) -> str:
        release.wait(30)
        return "airfoil lift"

    child = QueryRetriever(ANSWERS)
    fusion = FusionRetriever([child], llm=hung, num_queries=2, timeout=0.05)
    try:
        results = fusion.retrieve("wing lift")
    finally:
        release.set()
    assert child.queries == ["wing lift"]
    info = results[0].node.metadata["fusion"]["queries"]
    assert info["fallback"] and info["error"].startswith("LLMTimeoutError")


def test_repeated_or_blank_lines_are_not_searched_twice() -> None:
    child = QueryRetriever(ANSWERS)
    fusion = FusionRetriever([child], num_queries=4,
                             llm=lambda p: "wing lift\n\nairfoil lift\nairfoil lift")
    fusion.retrieve("wing lift")
    assert child.queries.count("wing lift") == 1 and child.queries.count("airfoil lift") == 1


def test_reciprocal_rerank_weights_and_weight_zero() -> None:
    low, high = QueryRetriever({"q": ["x"]}), QueryRetriever({"q": ["y"]})
    fused = FusionRetriever([low, high], mode="reciprocal_rerank", retriever_weights=[0.1, 0.9],
                            num_queries=1)
    results = fused.retrieve("q")
    assert _ids(results) == ["y", "x"]
    assert [r.score for r in results] == pytest.approx([0.9 / 60, 0.1 / 60])
    high.queries.clear()
    excluded = FusionRetriever([low, high], mode="reciprocal_rerank", retriever_weights=[1, 0])
    assert _ids(excluded.retrieve("q")) == ["x"] and high.queries == []  # not even asked
    # The private step, for code that calls it: lists keyed (query, retriever index).
    pairs = fused._reciprocal_rerank_fusion({
        ("q", 0): [NodeWithScore(node=TextNode(id_="x", text="x"), score=1.0)],
        ("q", 1): [NodeWithScore(node=TextNode(id_="y", text="y"), score=1.0)],
    })
    assert _ids(pairs) == ["y", "x"] and pairs[0].score > pairs[1].score
