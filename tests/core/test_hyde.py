"""Tests for `hybrid_retrievers.hyde`: the averaged vector, fallback, cache, concurrency, searcher."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import numpy as np
import pytest

from concurrency import Meeting
from hybrid_retrievers import BM25Index, VectorIndex
from hybrid_retrievers.hyde import HYDE_PROMPTS, HyDE, HyDESearcher, render_prompt
from hybrid_retrievers.models import HashingEmbedder

TEXTS = {
    "w": "an aircraft wing generates lift from airflow",
    "b": "sourdough bread rises with wild yeast",
    "s": "compost improves garden soil",
}


class Cycle:
    """A generator returning its answers in turn (thread-safe), counting calls."""

    def __init__(self, *answers: str) -> None:
        self.answers = answers
        self.calls = 0
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            answer = self.answers[self.calls % len(self.answers)]
            self.calls += 1
        return answer


def boom(prompt: str) -> str:
    raise RuntimeError("LLM down")


@pytest.fixture
def emb() -> HashingEmbedder:
    return HashingEmbedder(64)


def test_averaged_vector_matches_reference_formula(emb: HashingEmbedder) -> None:
    gen = Cycle("wings make lift", "lift from a wing", "airflow over wings")
    hyde = HyDE(gen, emb, n=3)
    vector, result = hyde.embed("how do planes fly?")
    expected = np.mean(
        [emb.embed_query("how do planes fly?"), *emb.embed_documents(list(result.passages))], axis=0
    )
    np.testing.assert_allclose(vector, expected, rtol=1e-6)
    assert sorted(result.passages) == sorted(gen.answers) and not result.fallback
    assert vector.dtype == np.float32
    # Without the query: the mean of the passages only.
    v2, r2 = HyDE(Cycle("wings make lift", "lift from a wing"), emb, n=2, include_query=False).embed("q")
    np.testing.assert_allclose(v2, emb.embed_documents(list(r2.passages)).mean(axis=0), rtol=1e-6)


def test_prompt_templates_and_custom_prompts(emb: HashingEmbedder) -> None:
    gen = Cycle("x")
    HyDE(gen, emb, prompt="scientific").generate("what is lift?")
    assert gen.prompts[-1] == HYDE_PROMPTS["scientific"].replace("{query}", "what is lift?")
    for name in ("web", "scientific", "legal", "technical", "financial"):
        assert "{query}" in HYDE_PROMPTS[name]
    HyDE(gen, emb, prompt="Q={query} {json}").generate("lift")
    assert gen.prompts[-1] == "Q=lift {json}"
    HyDE(gen, emb, prompt=lambda q: q.upper()).generate("lift")
    assert gen.prompts[-1] == "LIFT"
    assert render_prompt("web", "a") == HYDE_PROMPTS["web"].replace("{query}", "a")
    with pytest.raises(ValueError, match="\\{query\\}"):
        HyDE(gen, emb, prompt="no placeholder")
    with pytest.raises(TypeError, match="prompt"):
        HyDE(gen, emb, prompt=3)  # type: ignore[arg-type]


def test_generation_only_with_the_generators_own_prompt() -> None:
    # What the framework-shaped transforms use: the chain formats its prompt, the
    # embedding is left to someone else.
    gen = Cycle("wings make lift")
    hyde = HyDE(gen, None, prompt=None)
    result = hyde.generate("what is lift?")
    assert gen.prompts == ["what is lift?"] and result.passages == ("wings make lift",)
    assert hyde.embedder is None and "the generator's" in repr(hyde)
    with pytest.raises(ValueError, match="no embedder"):
        hyde.vector("what is lift?", result)
    assert "the language of the question" in render_prompt("multilingual", "q")


def test_generation_failure_falls_back_to_raw_query(emb: HashingEmbedder, caplog) -> None:
    hyde = HyDE(boom, emb, n=2)
    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.hyde"):
        vector, result = hyde.embed("wing lift")
    assert result.fallback and result.passages == ()
    assert "RuntimeError: LLM down" in result.error and len(result.errors) == 2
    np.testing.assert_allclose(vector, emb.embed_query("wing lift"), rtol=1e-6)
    assert "falling back" in caplog.text
    # Even with include_query=False the raw query is used.
    v2, _ = HyDE(boom, emb, include_query=False).embed("wing lift")
    np.testing.assert_allclose(v2, emb.embed_query("wing lift"), rtol=1e-6)


def test_blank_or_non_string_output_counts_as_failure(emb: HashingEmbedder) -> None:
    assert HyDE(lambda p: "  ", emb).generate("q").fallback
    assert HyDE(lambda p: 42, emb).generate("q").fallback  # type: ignore[arg-type, return-value]


def test_partial_failure_uses_the_rest(emb: HashingEmbedder) -> None:
    state = {"n": 0}
    lock = threading.Lock()

    def flaky(prompt: str) -> str:
        with lock:
            state["n"] += 1
            n = state["n"]
        if n == 1:
            raise ValueError("first call fails")
        return "lift"

    result = HyDE(flaky, emb, n=3).generate("q")
    assert not result.fallback and result.passages == ("lift", "lift")
    assert result.errors == ("ValueError: first call fails",)


HUNG_S = 60.0  # a hung generation's wait: far beyond every timeout and bound below


def test_timeout_falls_back_on_a_hung_generation_not_on_a_prompt_one(emb: HashingEmbedder) -> None:
    release = threading.Event()  # set only after the search: until then the LLM hangs

    def hung(prompt: str) -> str:
        release.wait(HUNG_S)
        return "late"

    try:
        start = time.monotonic()
        result = HyDE(hung, emb, n=2, timeout=0.2).generate("q")
        elapsed = time.monotonic() - start
    finally:
        release.set()
    assert result.fallback and "TimeoutError" in result.error
    assert elapsed < HUNG_S / 4, elapsed  # abandoned at the timeout, not waited for

    async def ahung(prompt: str) -> str:
        await asyncio.sleep(HUNG_S)  # cancelled at the timeout
        return "late"

    start = time.monotonic()
    result = asyncio.run(HyDE(ahung, emb, timeout=0.2).agenerate("q"))
    assert result.fallback and "TimeoutError" in result.error
    assert time.monotonic() - start < HUNG_S / 4

    # A generation that answers is used, and returns without waiting for the timeout.
    start = time.monotonic()
    result = HyDE(lambda p: "lift", emb, n=2, timeout=HUNG_S).generate("q")
    assert not result.fallback and result.passages == ("lift", "lift")
    assert time.monotonic() - start < HUNG_S / 4


def test_async_generations_run_concurrently(emb: HashingEmbedder) -> None:
    running = {"now": 0, "max": 0}

    async def agen(prompt: str) -> str:
        running["now"] += 1
        running["max"] = max(running["max"], running["now"])
        await asyncio.sleep(0.05)
        running["now"] -= 1
        return "lift"

    result = asyncio.run(HyDE(agen, emb, n=4).agenerate("q"))
    assert result.passages == ("lift",) * 4 and running["max"] == 4

    class WithAgenerate:
        def __call__(self, prompt: str) -> str:
            return "sync"

        async def agenerate(self, prompt: str) -> str:
            return "async"

    assert asyncio.run(HyDE(WithAgenerate(), emb).agenerate("q")).passages == ("async",)
    assert HyDE(WithAgenerate(), emb).generate("q").passages == ("sync",)
    # An async-only callable also works on the sync path.
    assert HyDE(agen, emb).generate("q").passages == ("lift",)


def test_sync_callable_in_async_path_runs_in_threads(emb: HashingEmbedder) -> None:
    meeting = Meeting(4)  # each call answers only while all four are running
    threads = set()

    def blocking(prompt: str) -> str:
        threads.add(threading.get_ident())
        meeting.wait()  # a failure here is a failed generation: not four passages
        return "lift"

    result = asyncio.run(HyDE(blocking, emb, n=4).agenerate("q"))
    assert result.passages == ("lift",) * 4, result.errors
    assert len(threads) == 4 and threading.get_ident() not in threads


def test_cache_by_prompt_and_query(emb: HashingEmbedder) -> None:
    gen = Cycle("lift")
    hyde = HyDE(gen, emb, n=2, cache=True)
    first = hyde.generate("q")
    second = hyde.generate("q")
    assert gen.calls == 2 and second.cached and second.passages == first.passages
    hyde.generate("other")
    assert gen.calls == 4
    hyde.clear_cache()
    hyde.generate("q")
    assert gen.calls == 6
    # Failures are not cached.
    failing = HyDE(boom, emb, cache=True)
    assert failing.generate("q").fallback and not failing.generate("q").cached
    # No cache by default.
    plain = Cycle("x")
    h = HyDE(plain, emb)
    h.generate("q"), h.generate("q")
    assert plain.calls == 2


def test_bad_arguments(emb: HashingEmbedder) -> None:
    with pytest.raises(ValueError, match="between 1 and 8"):
        HyDE(Cycle("x"), emb, n=9)
    with pytest.raises(ValueError, match="n must be >= 1"):
        HyDE(Cycle("x"), emb, n=0)
    with pytest.raises(TypeError, match="generate"):
        HyDE("not callable", emb)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="embedder"):
        HyDE(Cycle("x"), object())
    with pytest.raises(ValueError, match="timeout"):
        HyDE(Cycle("x"), emb, timeout=0)
    with pytest.raises(ValueError, match="query"):
        HyDE(Cycle("x"), emb).generate(" ")


def _vector_index(emb: HashingEmbedder) -> VectorIndex:
    return VectorIndex.from_texts(list(TEXTS.values()), ids=list(TEXTS), embedder=emb)


def test_searcher_vector_side_uses_hyde_vector(emb: HashingEmbedder) -> None:
    index = _vector_index(emb)
    hyde = HyDE(Cycle("a wing generates lift from airflow"), emb)
    hits = HyDESearcher(hyde, index).search("how do planes fly?", k=2)
    vector, _ = HyDE(Cycle("a wing generates lift from airflow"), emb).embed("how do planes fly?")
    expected = index.search_vector(vector, 2)
    assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in expected]
    info = hits[0].explanation["hyde"]
    assert info["passages"] == ["a wing generates lift from airflow"] and info["mode"] == "vector"
    assert info["fallback"] is False and hits[0].id == "w"


def test_searcher_expansion_side_bridges_vocabulary(emb: HashingEmbedder) -> None:
    bm25 = BM25Index.from_texts(list(TEXTS.values()), ids=list(TEXTS))
    assert bm25.search("how do planes fly?", k=3) == []
    searcher = HyDESearcher(HyDE(Cycle("an aircraft wing makes lift"), emb), expand=bm25)
    hits = searcher.search("how do planes fly?", k=3)
    assert hits[0].id == "w" and hits[0].explanation["hyde"]["mode"] == "expansion"
    # The expanded query is the query, then the passage.
    expanded = "how do planes fly?\nan aircraft wing makes lift"
    assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in bm25.search(expanded, 3)]


def test_searcher_hybrid_fuses_both_sides(emb: HashingEmbedder) -> None:
    bm25 = BM25Index.from_texts(list(TEXTS.values()), ids=list(TEXTS))
    searcher = HyDESearcher(HyDE(Cycle("wing lift"), emb), _vector_index(emb), expand=bm25)
    hits = searcher.search("planes", k=3)
    assert searcher.mode == "hybrid" and hits[0].id == "w"
    assert "fusion" in hits[0].explanation and "hyde" in hits[0].explanation
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_searcher_falls_back_and_never_raises_for_llm_failure(emb: HashingEmbedder) -> None:
    index = _vector_index(emb)
    hits = HyDESearcher(HyDE(boom, emb), index).search("wing lift airflow", k=1)
    assert hits[0].id == "w"
    assert hits[0].explanation["hyde"]["fallback"] is True
    assert [h.id for h in hits] == [h.id for h in index.search("wing lift airflow", k=1)]


def test_searcher_async_and_filter(emb: HashingEmbedder) -> None:
    index = VectorIndex.from_texts(
        list(TEXTS.values()), ids=list(TEXTS), embedder=emb,
        metadatas=[{"t": "aero"}, {"t": "food"}, {"t": "garden"}],
    )
    searcher = HyDESearcher(HyDE(Cycle("wing lift"), emb), index)
    hits = asyncio.run(searcher.asearch("planes", k=3, filter={"t": "food"}))
    assert [h.id for h in hits] == ["b"]
    assert searcher.search("planes", k=3) == asyncio.run(searcher.asearch("planes", k=3))


def test_searcher_bad_arguments(emb: HashingEmbedder) -> None:
    hyde = HyDE(Cycle("x"), emb)
    with pytest.raises(ValueError, match="neither"):
        HyDESearcher(hyde)
    with pytest.raises(TypeError, match="search_vector"):
        HyDESearcher(hyde, BM25Index.from_texts(["a"]))
    with pytest.raises(TypeError, match="HyDE"):
        HyDESearcher(object(), _vector_index(emb))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be >= 1"):
        HyDESearcher(hyde, _vector_index(emb)).search("q", k=0)
