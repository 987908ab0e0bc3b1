"""FusionPlan, CallRunner / gather_calls and the hybrid recipe: the steps every fusion shares."""

from __future__ import annotations

import asyncio
import threading

import pytest

from corpora import CORPUS, WING_QUERY
from hybrid_retrievers import BM25Index, Doc, FusionSearcher, Hit
from hybrid_retrievers.fusion import CallRunner, FusionPlan, gather_calls, run_calls
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.vector import VectorIndex


def hits(*ids: str, scored: bool = True) -> list[Hit]:
    return [Hit(Doc(i, ""), 1.0 / r if scored else None, r) for r, i in enumerate(ids, 1)]


def test_resolve_weights_fetch_depth_and_active_children():
    plan = FusionPlan(3, weights=lambda q: [1, 0, 2] if "code" in q else [1, 1, 1])
    call = plan.resolve("a code", k=5)
    assert call.active == (0, 2) and call.weights == (1.0, 0.0, 2.0) and call.fetch_k == 20
    assert plan.resolve("plain", k=30).fetch_k == 30
    call = plan.resolve("plain", k=3, weights=[0, 1, 0], fetch_k=7, mode="zscore")
    assert call.active == (1,) and call.fetch_k == 7 and call.mode.value == "zscore"
    assert FusionPlan(2, fetch_k=9).resolve("q", 3).fetch_k == 9
    with pytest.raises(ValueError, match=r"weights\(query\)"):
        FusionPlan(2, weights=lambda q: [1]).resolve("q", 3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        plan.resolve("q", 0)
    with pytest.raises(ValueError, match="query"):
        plan.resolve("  ", 3)
    assert plan.resolve("  ", 3, check=False).active == (0, 1, 2)


def test_fuse_checks_answers_and_scores_with_the_childs_description():
    plan = FusionPlan(2, names=["lex", "vec"], describe=lambda i: f"child #{i}")
    call = plan.resolve("q", 2)
    fused = plan.fuse(call, [hits("a", "b"), hits("b")])
    assert [h.id for h in fused] == ["b", "a"]
    assert [s["source"] for s in fused[0].explanation["fusion"]["sources"]] == ["lex", "vec"]
    with pytest.raises(TypeError, match="child #1 must return a list of Hit"):
        plan.fuse(call, [hits("a"), "b"])
    scored = plan.resolve("q", 2, mode="relative_score")
    with pytest.raises(ValueError, match=r"relative_score.*child #0.*mode='rrf'"):
        plan.fuse(scored, [hits("a", scored=False), hits("b")])
    assert [h.id for h in plan.fuse(call, [hits("a", scored=False), []])] == ["a"]


def test_plan_names_may_mix_names_and_indices():
    assert FusionPlan(2, names=[0, "images"]).names == (0, "images")
    with pytest.raises(ValueError, match="unique"):
        FusionPlan(2, names=["a", "a"])
    with pytest.raises(TypeError, match=r"names\[1\]"):
        FusionPlan(2, names=["a", 5])


def test_call_runner_runs_the_first_call_inline_and_notes_failures():
    runner = CallRunner(size=3, name="test-runner")
    threads: dict[int, str] = {}

    def call(v: int):
        def run() -> int:
            threads[v] = threading.current_thread().name
            return v
        return run

    assert runner.run([call(1), call(2), call(3)], str) == [1, 2, 3]
    assert threads[1] == threading.current_thread().name
    assert threads[2].startswith("test-runner") and threads[3].startswith("test-runner")
    threads.clear()
    assert runner.run([call(1), call(2)], str, max_workers=1) == [1, 2]
    assert threads == {1: threading.current_thread().name, 2: threading.current_thread().name}

    def boom() -> int:
        raise RuntimeError("offline")

    with pytest.raises(RuntimeError, match="offline") as info:
        runner.run([call(1), boom], lambda j: f"child {j}")
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:  # Python 3.11+
        assert "raised by child 1" in notes
    runner.close()
    assert not runner.started
    assert run_calls([call(4), call(5)], str) == [4, 5]


def test_gather_calls_notes_failures():
    async def ok() -> int:
        return 1

    async def bad() -> int:
        raise KeyError("gone")

    assert asyncio.run(gather_calls([ok(), ok()], str)) == [1, 1]
    with pytest.raises(KeyError) as info:
        asyncio.run(gather_calls([ok(), bad()], lambda j: f"source {j}"))
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:
        assert "raised by source 1" in notes


def test_hybrid_recipe_equals_the_hand_built_fusion():
    texts = [t for _, t, _ in CORPUS]
    ids = [i for i, _, _ in CORPUS]
    metas = [m for *_, m in CORPUS]
    emb = HashingEmbedder(dimension=128)
    recipe = FusionSearcher.hybrid(texts, emb, ids, metas, bm25={"k1": 1.2},
                                   mode="relative_score")
    by_hand = FusionSearcher(
        [BM25Index.from_texts(texts, ids, metas, k1=1.2),
         VectorIndex.from_texts(texts, ids, metas, embedder=emb)],
        names=["bm25", "dense"], mode="relative_score",
    )
    got, expected = recipe.search(WING_QUERY, k=5), by_hand.search(WING_QUERY, k=5)
    assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in expected]
    assert recipe.names == ("bm25", "dense")
    with pytest.raises(TypeError, match="single str"):
        FusionSearcher.hybrid("one text", emb)
    with pytest.raises(TypeError, match="bm25 must be a mapping"):
        FusionSearcher.hybrid(texts, emb, bm25=1.2)
