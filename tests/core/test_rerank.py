"""Reranking logic with deterministic fakes (no torch): `Reranker`, `LLMReranker`, parsing."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.rerank import (
    DEFAULT_LLM_RERANK_PROMPT,
    RERANK_KEY,
    LLMReranker,
    Reranker,
    parse_ranking,
)


class OverlapScorer:
    """Score = number of distinct query words in the passage (deterministic, explainable)."""

    model_id = "overlap"

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []
        self.threads: list[int] = []

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self.calls.append(list(pairs))
        self.threads.append(threading.get_ident())
        return np.array(
            [len(set(q.lower().split()) & set(p.lower().split())) for q, p in pairs],
            dtype=np.float32,
        )


DOCS = [
    Doc("d1", "bread dough and yeast"),
    Doc("d2", "wing lift and drag at high speed", {"topic": "aero"}),
    Doc("d3", "lift of a wing"),
    Doc("d4", "compost for the garden"),
    Doc("d5", "wing lift drag coefficient"),
]
QUERY = "wing lift drag"


def _hits() -> list[Hit]:
    return [Hit(d, 10.0 - i, i + 1, {"bm25": {"terms": i}}) for i, d in enumerate(DOCS)]


# ------------------------------------------------------------------- pointwise


def test_rerank_orders_by_score_and_keeps_provenance() -> None:
    hits = _hits()
    out = Reranker(OverlapScorer(), top_n=3).rerank(QUERY, hits)
    assert [h.id for h in out] == ["d2", "d5", "d3"]
    assert [h.score for h in out] == [3.0, 3.0, 2.0]
    assert [h.rank for h in out] == [1, 2, 3]
    info = out[0].explanation[RERANK_KEY]
    assert info == {
        "method": "pointwise",
        "model": "overlap",
        "score": 3.0,
        "previous_rank": 2,
        "previous_score": 9.0,
        "previous_explanation": {"bm25": {"terms": 1}},
    }
    assert out[0].doc is DOCS[1] and out[0].doc.metadata == {"topic": "aero"}


def test_inputs_are_not_mutated_and_results_are_new() -> None:
    hits = _hits()
    before = [(h.id, h.score, h.rank, dict(h.explanation)) for h in hits]
    out = Reranker(OverlapScorer(), top_n=5).rerank(QUERY, hits)
    assert [(h.id, h.score, h.rank, dict(h.explanation)) for h in hits] == before
    assert all(o is not h for o in out for h in hits)


def test_ties_keep_the_input_order() -> None:
    class Constant:
        def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
            return [1.0] * len(pairs)

    docs = list(reversed(DOCS))
    out = Reranker(Constant(), top_n=5).rerank(QUERY, docs)
    assert [h.id for h in out] == [d.id for d in docs]
    # model falls back to the class name; Doc inputs get their position as previous rank
    assert out[0].explanation[RERANK_KEY]["model"] == "Constant"
    assert [h.explanation[RERANK_KEY]["previous_rank"] for h in out] == [1, 2, 3, 4, 5]
    assert out[0].explanation[RERANK_KEY]["previous_score"] is None
    assert "previous_explanation" not in out[0].explanation[RERANK_KEY]


def test_empty_input_does_not_call_the_scorer() -> None:
    scorer = OverlapScorer()
    assert Reranker(scorer).rerank(QUERY, []) == []
    assert scorer.calls == []


def test_top_n_larger_than_input_returns_all() -> None:
    out = Reranker(OverlapScorer(), top_n=50).rerank(QUERY, DOCS[:2])
    assert len(out) == 2


def test_score_threshold_and_per_call_overrides() -> None:
    reranker = Reranker(OverlapScorer(), top_n=5, score_threshold=2)
    assert [h.id for h in reranker.rerank(QUERY, DOCS)] == ["d2", "d5", "d3"]
    assert [h.id for h in reranker.rerank(QUERY, DOCS, score_threshold=3)] == ["d2", "d5"]
    assert [h.id for h in reranker.rerank(QUERY, DOCS, top_n=1)] == ["d2"]
    # 0 is a real threshold (is None, never `or`)
    zero = Reranker(OverlapScorer(), top_n=5, score_threshold=3)
    assert len(zero.rerank(QUERY, DOCS, score_threshold=0)) == 5
    assert Reranker(OverlapScorer(), score_threshold=99).rerank(QUERY, DOCS) == []


def test_duplicate_ids_count_once_at_their_first_position() -> None:
    docs = [DOCS[2], DOCS[1], Doc("d3", "lift of a wing"), DOCS[1]]
    scorer = OverlapScorer()
    out = Reranker(scorer, top_n=5).rerank(QUERY, docs)
    assert [h.id for h in out] == ["d2", "d3"]
    assert len(scorer.calls[0]) == 2


def test_nan_scores_sort_last() -> None:
    class WithNaN:
        def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
            return np.array([np.nan, 1.0, 2.0], dtype=np.float32)

    out = Reranker(WithNaN(), top_n=3).rerank(QUERY, DOCS[:3])
    assert [h.id for h in out] == ["d3", "d2", "d1"]
    assert [h.id for h in Reranker(WithNaN(), top_n=3, score_threshold=0).rerank(
        QUERY, DOCS[:3])] == ["d3", "d2"]


def test_scorer_returning_generators_and_lists_work() -> None:
    class Gen:
        def score(self, pairs: Sequence[tuple[str, str]]):  # type: ignore[no-untyped-def]
            return map(lambda p: float(len(p[1])), pairs)

    out = Reranker(Gen(), top_n=1).rerank(QUERY, DOCS)
    assert out[0].id == "d2"


@pytest.mark.parametrize("returned", [[1.0], None, np.zeros((5, 2))])
def test_scorer_with_wrong_count_is_a_clear_error(returned: object) -> None:
    class Bad:
        def score(self, pairs: Sequence[tuple[str, str]]) -> object:
            return returned

    with pytest.raises(ValueError, match="one score per pair"):
        Reranker(Bad()).rerank(QUERY, DOCS)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"top_n": 0}, ValueError, "top_n must be >= 1"),
        ({"top_n": 2.5}, TypeError, "top_n"),
        ({"top_n": True}, TypeError, "top_n"),
        ({"score_threshold": "0.5"}, TypeError, "score_threshold"),
        ({"score_threshold": float("nan")}, ValueError, "score_threshold must be finite"),
        ({"score_threshold": True}, TypeError, "score_threshold"),
    ],
)
def test_constructor_validation(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        Reranker(OverlapScorer(), **kwargs)


def test_call_validation() -> None:
    reranker = Reranker(OverlapScorer())
    with pytest.raises(TypeError, match="PairScorer"):
        Reranker("cross-encoder/ms-marco-MiniLM-L-6-v2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="query"):
        reranker.rerank("  ", DOCS)
    with pytest.raises(TypeError, match="list of Doc or Hit"):
        reranker.rerank(QUERY, DOCS[0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"docs\[1\]"):
        reranker.rerank(QUERY, [DOCS[0], "text"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="top_n"):
        reranker.rerank(QUERY, DOCS, top_n=0)
    with pytest.raises(ValueError, match="score_threshold"):
        reranker.rerank(QUERY, DOCS, score_threshold=float("inf"))


async def test_arerank_runs_the_scorer_in_a_worker_thread() -> None:
    scorer = OverlapScorer()
    reranker = Reranker(scorer, top_n=2)
    out = await reranker.arerank(QUERY, _hits())
    assert [h.id for h in out] == [h.id for h in reranker.rerank(QUERY, _hits())]
    assert scorer.threads[0] != threading.get_ident()


def test_cross_encoder_constructor_is_lazy() -> None:
    reranker = Reranker.cross_encoder("some/model", top_n=2, batch_size=4)
    assert reranker.model_id == "some/model"
    assert reranker.scorer.batch_size == 4 and not reranker.scorer.is_loaded


# --------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "order", "status"),
    [
        ("[2] > [1] > [3]", (1, 0, 2), "ok"),
        ("2, 1, 3", (1, 0, 2), "ok"),
        ("3 > 2 > 1", (2, 1, 0), "ok"),
        ("Here is my ranking of the 3 passages: [3] > [1] > [2]. Hope it helps!", (2, 0, 1),
         "ok"),
        ("Ranking of the 3 passages: 2 > 3 > 1", (1, 2, 0), "ok"),
        ("1. [3]\n2. [1]\n3. [2]", (2, 0, 1), "ok"),
        ("1. Passage 3\n2. Passage 1\n3. Passage 2", (2, 0, 1), "ok"),
        ("Passage 2 is best, then passage 3, then 1.", (1, 2, 0), "ok"),
        ("[2] > [2] > [1] > [3]", (1, 0, 2), "repaired"),
        ("[7] > [0] > [3] > [1] > [2]", (2, 0, 1), "repaired"),
        ("[2]", (1, 0, 2), "repaired"),
        ("The most relevant passage is 3.", (2, 0, 1), "repaired"),
        ("I am unable to rank these passages.", (0, 1, 2), "fallback"),
        ("", (0, 1, 2), "fallback"),
        ("[9] > [8]", (0, 1, 2), "fallback"),
    ],
)
def test_parse_ranking(text: str, order: tuple[int, ...], status: str) -> None:
    parsed = parse_ranking(text, 3)
    assert parsed.order == order
    assert parsed.status == status
    assert sorted(parsed.order) == [0, 1, 2]
    assert bool(parsed.problems) == (status != "ok")


def test_parse_ranking_explains_its_repairs() -> None:
    parsed = parse_ranking("[4] > [4] > [9] > [2]", 5)
    assert parsed.order == (3, 1, 0, 2, 4)
    assert "out-of-range numbers 9" in parsed.detail
    assert "repeated numbers 4" in parsed.detail
    assert "unranked candidates 1, 3, 5" in parsed.detail
    assert parse_ranking(None, 2).status == "fallback"


# --------------------------------------------------------------------- listwise


class ScriptedLLM:
    """Returns canned answers in turn and records every prompt."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> object:
        self.prompts.append(prompt)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_llm_reranker_orders_by_the_answer() -> None:
    llm = ScriptedLLM("[5] > [2] > [3] > [1] > [4]")
    out = LLMReranker(llm, top_n=3).rerank(QUERY, _hits())
    assert [h.id for h in out] == ["d5", "d2", "d3"]
    assert [h.score for h in out] == [1.0, 0.5, pytest.approx(1 / 3)]
    info = out[0].explanation[RERANK_KEY]
    assert info["method"] == "listwise" and info["status"] == "ok" and info["detail"] == ""
    assert info["previous_rank"] == 5 and info["previous_score"] == 6.0
    assert info["llm_calls"] == 1 and info["model"] == "ScriptedLLM"
    prompt = llm.prompts[0]
    assert "Query: wing lift drag" in prompt
    assert "[1] bread dough and yeast\n[2] wing lift and drag at high speed" in prompt
    assert "[5] wing lift drag coefficient" in prompt and "Rank the 5 passages" in prompt


def test_llm_reranker_plain_lambda_and_name() -> None:
    out = LLMReranker(lambda p: "2 1", name="my-llm").rerank(QUERY, DOCS[:2])
    assert [h.id for h in out] == ["d2", "d1"]
    assert out[0].explanation[RERANK_KEY]["model"] == "my-llm"


@pytest.mark.parametrize("answer", ["no idea", "", "[42]", 12345, None])
def test_unusable_answers_keep_the_input_order(
    answer: object, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.rerank"):
        out = LLMReranker(ScriptedLLM(answer), top_n=5).rerank(QUERY, _hits())
    assert [h.id for h in out] == [d.id for d in DOCS]
    info = out[0].explanation[RERANK_KEY]
    assert info["status"] == "fallback" and info["detail"]
    assert "fell back to the input order" in caplog.text


def test_a_raising_llm_does_not_fail_the_query(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(RuntimeError("rate limited"))
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.rerank"):
        out = LLMReranker(llm, top_n=2).rerank(QUERY, DOCS)
    assert [h.id for h in out] == ["d1", "d2"]
    info = out[0].explanation[RERANK_KEY]
    assert info["status"] == "fallback"
    assert "RuntimeError: rate limited" in info["detail"]
    assert "rate limited" in caplog.text


def test_repaired_answer_is_used_and_reported() -> None:
    out = LLMReranker(ScriptedLLM("Best: [4], then [4] again and [9]"), top_n=5).rerank(
        QUERY, DOCS)
    assert [h.id for h in out] == ["d4", "d1", "d2", "d3", "d5"]
    info = out[0].explanation[RERANK_KEY]
    assert info["status"] == "repaired"
    assert "repeated numbers 4" in info["detail"] and "out-of-range numbers 9" in info["detail"]


def test_llm_reranker_edge_cases() -> None:
    llm = ScriptedLLM("[1]")
    reranker = LLMReranker(llm)
    assert reranker.rerank(QUERY, []) == []
    one = reranker.rerank(QUERY, DOCS[:1])
    assert [h.id for h in one] == ["d1"] and one[0].explanation[RERANK_KEY]["llm_calls"] == 0
    assert llm.prompts == []  # nothing to order: the LLM is not called


def test_sliding_window_bubbles_the_best_to_the_top() -> None:
    # The LLM always prefers the candidate whose text has the largest number.
    docs = [Doc(f"d{i}", f"passage number {v}") for i, v in enumerate([3, 9, 1, 7, 5, 8, 2, 6])]

    def by_value(prompt: str) -> str:
        lines = [ln for ln in prompt.splitlines() if ln.startswith("[")]
        values = [int(ln.rsplit(" ", 1)[1]) for ln in lines]
        order = sorted(range(len(values)), key=lambda i: -values[i])
        return " > ".join(f"[{i + 1}]" for i in order)

    calls: list[str] = []

    def counting(prompt: str) -> str:
        calls.append(prompt)
        return by_value(prompt)

    out = LLMReranker(counting, top_n=3, window=4, step=2).rerank("q", docs)
    assert [h.doc.text[-1] for h in out] == ["9", "8", "7"]
    assert len(calls) == 3  # windows 5-8, 3-6, 1-4
    assert [sum(ln.startswith("[") for ln in p.splitlines()) for p in calls] == [4, 4, 4]
    assert out[0].explanation[RERANK_KEY]["llm_calls"] == 3


def test_window_fallback_is_reported_per_window() -> None:
    docs = [Doc(f"d{i}", f"text {i}") for i in range(6)]
    llm = ScriptedLLM("[2] > [1] > [3] > [4]", "nonsense")
    out = LLMReranker(llm, top_n=6, window=4, step=2).rerank("q", docs)
    info = out[0].explanation[RERANK_KEY]
    assert info["status"] == "fallback" and "candidates 1-4" in info["detail"]
    # window 3-6 swapped its first two (d3 before d2); window 1-4 fell back
    assert [h.id for h in out] == ["d0", "d1", "d3", "d2", "d4", "d5"]


def test_passages_are_truncated_in_the_prompt() -> None:
    llm = ScriptedLLM("[1]")
    LLMReranker(llm, max_passage_chars=10).rerank("q", [Doc("a", "x" * 50), Doc("b", "y")])
    assert "[1] xxxxxxx...\n[2] y" in llm.prompts[0]


def test_custom_prompt() -> None:
    llm = ScriptedLLM("[2] > [1]")
    prompt = "Q={query} ({n}) {{json}}\n{passages}"
    LLMReranker(llm, prompt=prompt).rerank("wing", DOCS[:2])
    assert llm.prompts[0].startswith("Q=wing (2) {json}\n[1] bread")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"prompt": "no placeholders"}, ValueError, "placeholders"),
        ({"prompt": "{query} {passages} {other}"}, ValueError, "valid template"),
        ({"prompt": 3}, TypeError, "prompt"),
        ({"window": 1}, ValueError, "window must be >= 2"),
        ({"step": 2}, ValueError, "step only applies"),
        ({"window": 4, "step": 5}, ValueError, "step must be <= window"),
        ({"top_n": 0}, ValueError, "top_n"),
        ({"max_passage_chars": 0}, ValueError, "max_passage_chars"),
        ({"agenerate": "x"}, TypeError, "agenerate"),
    ],
)
def test_llm_reranker_validation(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        LLMReranker(lambda p: "", **kwargs)


def test_llm_reranker_needs_a_callable() -> None:
    with pytest.raises(TypeError, match="generate must be a callable"):
        LLMReranker("gpt")  # type: ignore[arg-type]
    assert "{query}" in DEFAULT_LLM_RERANK_PROMPT and "{passages}" in DEFAULT_LLM_RERANK_PROMPT


async def test_arerank_uses_the_async_generator() -> None:
    seen: list[str] = []

    async def agen(prompt: str) -> str:
        seen.append(prompt)
        await asyncio.sleep(0)
        return "[3] > [1] > [2]"

    def sync(prompt: str) -> str:
        raise AssertionError("the sync generator must not be used")

    reranker = LLMReranker(sync, agenerate=agen, top_n=3)
    out = await reranker.arerank(QUERY, DOCS[:3])
    assert [h.id for h in out] == ["d3", "d1", "d2"] and len(seen) == 1


async def test_arerank_without_async_generator_uses_a_thread_and_fails_safe() -> None:
    threads: list[int] = []

    def sync(prompt: str) -> str:
        threads.append(threading.get_ident())
        raise TimeoutError("slow")

    out = await LLMReranker(sync, top_n=2).arerank(QUERY, DOCS[:3])
    assert [h.id for h in out] == ["d1", "d2"]
    assert out[0].explanation[RERANK_KEY]["status"] == "fallback"
    assert threads and threads[0] != threading.get_ident()


def test_per_call_generator_overrides() -> None:
    reranker = LLMReranker(lambda p: "[1] > [2]")
    out = reranker.rerank(QUERY, DOCS[:2], generate=lambda p: "[2] > [1]")
    assert [h.id for h in out] == ["d2", "d1"]


def test_reranking_searcher_fetches_then_reranks() -> None:
    from hybrid_retrievers import BM25Index, RerankingSearcher

    class Length:
        model_id = "length"

        def score(self, pairs):
            return [len(p) for _, p in pairs]

    texts = ["lift", "lift of wings", "lift and drag of swept wings", "bread"]
    index = BM25Index.from_texts(texts, ids=["a", "b", "c", "d"])
    searcher = RerankingSearcher(index, Reranker(Length()), fetch_k=3)
    hits = searcher.search("lift", k=2)
    assert [h.id for h in hits] == ["c", "b"] and [h.rank for h in hits] == [1, 2]
    assert hits[0].explanation["rerank"]["previous_rank"] == 3
    with pytest.raises(ValueError, match="fetch_k"):
        RerankingSearcher(index, Reranker(Length()), fetch_k=0)
    with pytest.raises(TypeError, match="search"):
        RerankingSearcher(object(), Reranker(Length()))
