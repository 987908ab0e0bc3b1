"""`ChoiceSelectReranker`: LlamaIndex's ``LLMRerank`` algorithm in the core, failing safe.

Scripted generators answer per batch, so every rule of the algorithm (batches, relevance
scores, order and ties across batches, dropped candidates) and every failure path
(unparseable answer, raising or hung LLM, bad numbers) is checked deterministically.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading

import pytest

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.rerank import (
    DEFAULT_CHOICE_SELECT_PROMPT,
    RERANK_KEY,
    ChoiceSelectReranker,
    format_choice_batch,
    parse_choice_select_answer,
)

DOCS = [Doc(f"d{i}", f"text {i}") for i in range(1, 9)]


def by_batch(answers: dict[int, str]):
    """A generator answering ``answers[k]`` to the prompt whose first document is text k."""
    prompts: list[str] = []

    def generate(prompt: str) -> str:
        prompts.append(prompt)
        first = int(re.search(r"Document 1:\ntext (\d+)", prompt).group(1))
        return answers[first]

    generate.prompts = prompts  # type: ignore[attr-defined]
    return generate


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


def info(hit: Hit) -> dict:
    return hit.explanation[RERANK_KEY]


def test_prompt_and_batches_are_the_originals() -> None:
    generate = by_batch({1: "", 5: ""})
    ChoiceSelectReranker(generate, choice_batch_size=4).rerank("what is?", DOCS)
    assert len(generate.prompts) == 2
    assert generate.prompts[0] == DEFAULT_CHOICE_SELECT_PROMPT.format(
        context_str="Document 1:\ntext 1\n\nDocument 2:\ntext 2\n\nDocument 3:\ntext 3\n\n"
                    "Document 4:\ntext 4", query_str="what is?")
    assert format_choice_batch(["a"]) == "Document 1:\na"


def test_chosen_candidates_sorted_by_relevance_across_batches_unchosen_dropped() -> None:
    generate = by_batch({1: "Doc: 1, Relevance: 1\nDoc: 3, Relevance: 3",
                         5: "Doc: 1, Relevance: 5\nDoc: 3, Relevance: 7"})
    hits = ChoiceSelectReranker(generate, choice_batch_size=4, top_n=3).rerank("q", DOCS)
    assert ids(hits) == ["d7", "d5", "d3"]
    assert [h.score for h in hits] == [7.0, 5.0, 3.0]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert info(hits[0])["method"] == "choice_select" and info(hits[0])["status"] == "ok"
    assert info(hits[0])["batch"] == 2 and info(hits[0])["previous_rank"] == 7
    # Fewer than top_n: candidates the LLM left out are dropped, as in the original.
    all_hits = ChoiceSelectReranker(generate, choice_batch_size=4, top_n=10).rerank("q", DOCS)
    assert ids(all_hits) == ["d7", "d5", "d3", "d1"]


def test_ties_keep_batch_then_answer_order() -> None:
    generate = by_batch({1: "Doc: 4, Relevance: 5\nDoc: 2, Relevance: 5",
                         5: "Doc: 1, Relevance: 5"})
    hits = ChoiceSelectReranker(generate, choice_batch_size=4).rerank("q", DOCS)
    assert ids(hits) == ["d4", "d2", "d5"]


def test_numbers_without_relevances_score_one() -> None:
    hits = ChoiceSelectReranker(lambda p: "answer", parse=lambda answer, n: ([2, 1], [])
                                ).rerank("q", DOCS[:3])
    assert ids(hits) == ["d2", "d1"] and [h.score for h in hits] == [1.0, 1.0]


def test_unparseable_batch_keeps_input_order_after_the_chosen(caplog) -> None:
    generate = by_batch({1: "Doc: 2, Relevance: 6", 4: "I cannot rank these."})
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.rerank"):
        hits = ChoiceSelectReranker(generate, choice_batch_size=3).rerank("q", DOCS[:6])
    assert ids(hits) == ["d2", "d4", "d5", "d6"]
    assert [h.score for h in hits] == [6.0, 0.0, 0.0, 0.0]
    assert info(hits[0])["status"] == "ok"
    assert [info(h)["status"] for h in hits[1:]] == ["fallback"] * 3
    assert "I cannot rank these." in info(hits[1])["detail"]
    assert "kept the input order" in caplog.text and "batch 2" in caplog.text


def test_raising_llm_and_raising_parser_fall_back() -> None:
    def boom(prompt: str) -> str:
        raise RuntimeError("quota exceeded")

    hits = ChoiceSelectReranker(boom, top_n=2).rerank("q", DOCS[:3])
    assert ids(hits) == ["d1", "d2"]
    assert "RuntimeError: quota exceeded" in info(hits[0])["detail"]

    def bad_parse(answer: str, n: int):
        raise KeyError("document_id")

    hits = ChoiceSelectReranker(lambda p: "x", parse=bad_parse).rerank("q", DOCS[:2])
    assert ids(hits) == ["d1", "d2"] and "the parser raised KeyError" in info(hits[0])["detail"]


def test_bad_numbers_are_ignored_and_recorded() -> None:
    # 0 and -1 would pick the last candidate in the original (index -1, -2).
    hits = ChoiceSelectReranker(lambda p: "x", parse=lambda a, n: ([0, -1, 2, 2, 9, 1],
                                                                   [9, 9, 4, 8, 9, 3])
                                ).rerank("q", DOCS[:3])
    assert ids(hits) == ["d2", "d1"]
    assert info(hits[0])["status"] == "repaired"
    assert "repeated 2" in info(hits[0])["detail"] and "0: 9" in info(hits[0])["detail"]
    hits = ChoiceSelectReranker(lambda p: "x", parse=lambda a, n: ([2, 1], [5.0])
                                ).rerank("q", DOCS[:3])
    assert ids(hits) == ["d2"] and "2 numbers but 1 relevances" in info(hits[0])["detail"]


def test_parser_reads_the_original_format_and_skips_unreadable_lines_whole() -> None:
    answer = "Answer:\nDoc: 9, Relevance: 7\nDoc: 3, Relevance: 4.5\nDoc: 7,Relevance: 3"
    assert parse_choice_select_answer(answer, 10) == ([9, 3, 7], [7.0, 4.0, 3.0])
    assert parse_choice_select_answer(answer, 5) == ([3], [4.0])
    # The original kept 1 without a relevance, so 2's relevance went to document 1.
    assert parse_choice_select_answer("Doc: 1, Relevance: high\nDoc: 2, Relevance: 7",
                                      3) == ([2], [7.0])
    assert parse_choice_select_answer("Doc: 0, Relevance: 9\nDoc: -2, Relevance: 9", 3) == (
        [], [])


def test_timeout_falls_back_and_sends_no_further_batch() -> None:
    release = threading.Event()
    prompts: list[str] = []

    def hang(prompt: str) -> str:
        prompts.append(prompt)
        release.wait(30)
        return "Doc: 1, Relevance: 9"

    try:
        hits = ChoiceSelectReranker(hang, choice_batch_size=2, timeout=0.2).rerank("q", DOCS[:6])
    finally:
        release.set()
    assert len(prompts) == 1
    assert ids(hits) == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert all(info(h)["status"] == "fallback" for h in hits)
    assert "no answer within 0.2 s" in info(hits[0])["detail"]
    assert "not sent" in info(hits[2])["detail"]


async def test_async_asks_every_batch_at_once() -> None:
    started: list[int] = []
    all_started = asyncio.Event()

    async def aask(query: str, batch: list[Doc]) -> str:
        started.append(len(started))
        if len(started) == 3:
            all_started.set()
        await asyncio.wait_for(all_started.wait(), 5)  # deadlocks unless run concurrently
        return f"Doc: {len(batch)}, Relevance: {len(started)}"

    reranker = ChoiceSelectReranker(lambda p: "", choice_batch_size=3)
    hits = await reranker.arerank("q", DOCS, aask=aask)
    assert ids(hits) == ["d3", "d6", "d8"] and [h.score for h in hits] == [3.0, 3.0, 3.0]


async def test_async_default_path_uses_agenerate() -> None:
    async def agenerate(prompt: str) -> str:
        return "Doc: 2, Relevance: 8"

    hits = await ChoiceSelectReranker(lambda p: "", agenerate=agenerate).arerank("q", DOCS[:3])
    assert ids(hits) == ["d2"] and hits[0].score == 8.0


def test_ask_overrides_the_prompt_and_repeated_ids_count_once() -> None:
    seen: list[list[str]] = []

    def ask(query: str, batch: list[Doc]) -> str:
        seen.append([d.id for d in batch])
        return "Doc: 2, Relevance: 3"

    hits = ChoiceSelectReranker(top_n=5).rerank("q", [DOCS[0], DOCS[1], DOCS[0]], ask=ask)
    assert seen == [["d1", "d2"]] and ids(hits) == ["d2"]


def test_checks() -> None:
    with pytest.raises(ValueError, match="choice_batch_size"):
        ChoiceSelectReranker(lambda p: "", choice_batch_size=0)
    with pytest.raises(ValueError, match="context_str"):
        ChoiceSelectReranker(lambda p: "", prompt="{query_str} only")
    with pytest.raises(ValueError, match="not a valid template"):
        ChoiceSelectReranker(lambda p: "", prompt="{context_str} {query_str} {other}")
    with pytest.raises(TypeError, match="no generate"):
        ChoiceSelectReranker().rerank("q", DOCS[:2])
    assert ChoiceSelectReranker(lambda p: "").rerank("q", []) == []
