"""Query variants (``fusion.variants``) and multi-query fusion (`FusionPlan.fuse_queries`)."""

from __future__ import annotations

import logging
import math
import threading

import pytest

from hybrid_retrievers.fusion import (
    FusionPlan,
    QueryVariants,
    agenerate_query_variants,
    check_query_prompt,
    generate_query_variants,
    parse_query_variants,
)
from hybrid_retrievers.types import Doc, Hit


def _ranking(*ids: str) -> list[Hit]:
    return [Hit(Doc(i, ""), 1.0 / r, r) for r, i in enumerate(ids, 1)]


def test_parse_reads_lines_as_query_fusion_retriever_does() -> None:
    text = "```\n  wing lift \n\nairfoil\nwing lift\nq\nlast\n```"
    # First three non-blank lines, then repeats (of the query too) dropped.
    assert parse_query_variants(text, "q", 3) == ("wing lift", "airfoil")
    assert parse_query_variants(text, "q", 10) == ("wing lift", "airfoil", "last")
    with pytest.raises(TypeError, match="returned int"):
        parse_query_variants(3, "q", 1)


def test_generate_renders_the_prompt_and_keeps_count() -> None:
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "a\nb\nc"

    variants = generate_query_variants(llm, "wing lift", 2, prompt="{num_queries}|{query}")
    assert prompts == ["2|wing lift"]
    assert variants == QueryVariants("wing lift", ("a", "b"))
    assert variants.queries == ("wing lift", "a", "b")
    assert variants.as_dict() == {"original": "wing lift", "generated": ["a", "b"],
                                  "fallback": False, "error": None}


@pytest.mark.parametrize("llm, error", [
    (lambda p: (_ for _ in ()).throw(RuntimeError("boom")), "RuntimeError: boom"),
    (lambda p: "\n  \n```", "ValueError: the LLM wrote no new query"),
    (lambda p: "wing lift", "ValueError: the LLM wrote no new query"),
    (lambda p: None, "TypeError: the LLM returned NoneType, not str"),
])
def test_a_failed_generation_is_the_original_query_alone(llm, error, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.fusion"):
        variants = generate_query_variants(llm, "wing lift", 3)
    assert variants == QueryVariants("wing lift", (), fallback=True, error=error)
    assert "searching the original query alone" in caplog.text


def test_a_hung_generation_times_out() -> None:
    release = threading.Event()
    try:
        variants = generate_query_variants(lambda p: release.wait(30) and "x", "q", 1,
                                           timeout=0.05)
    finally:
        release.set()
    assert variants.fallback and variants.error.startswith("LLMTimeoutError")


async def test_async_awaits_agenerate_and_threads_a_plain_callable() -> None:
    class Model:
        def __call__(self, prompt: str) -> str:
            raise AssertionError("the sync path must not run")

        async def agenerate(self, prompt: str) -> str:
            return "async one"

    assert (await agenerate_query_variants(Model(), "q", 1)).generated == ("async one",)
    assert (await agenerate_query_variants(lambda p: "sync one", "q", 1)).generated == (
        "sync one",)

    async def failing(prompt: str) -> str:
        raise ConnectionError("down")

    failed = await agenerate_query_variants(failing, "q", 1)
    assert failed.fallback and failed.error == "ConnectionError: down"


def test_bad_arguments_are_errors_not_fallbacks() -> None:
    with pytest.raises(ValueError, match="must contain {query}"):
        check_query_prompt("write {num_queries}")
    with pytest.raises(ValueError, match="must format with only"):
        check_query_prompt("{query} {other}")
    with pytest.raises(TypeError, match="must be a str"):
        check_query_prompt(None)
    with pytest.raises(ValueError, match="count must be >= 1"):
        generate_query_variants(lambda p: "x", "q", 0)
    with pytest.raises(TypeError, match="callable prompt -> str"):
        generate_query_variants("not callable", "q", 1)  # type: ignore[arg-type]


def test_fuse_queries_fuses_every_query_and_child_list() -> None:
    plan = FusionPlan(2, names=["bm25", "dense"], weights=[2.0, 1.0], k_rrf=60)
    call = plan.resolve("q", k=10)
    answers = [[_ranking("a", "b"), _ranking("b")],  # the original query
               [_ranking("c", "a"), []]]  # a generated one
    hits = plan.fuse_queries(call, answers, ["q", "q2"])
    scores = {h.id: h.score for h in hits}
    assert scores["a"] == pytest.approx(math.fsum([2 / 61, 2 / 62]))
    assert scores["b"] == pytest.approx(2 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(2 / 61)
    a = next(h for h in hits if h.id == "a").explanation["fusion"]["sources"]
    assert [(s["source"], s["index"], s["query"], s["query_index"], s["rank"]) for s in a] == [
        ("bm25", 0, "q", 0, 1), ("bm25", 0, "q2", 1, 2)]
    with pytest.raises(ValueError, match="one answer set per query"):
        plan.fuse_queries(call, answers, ["q"])
