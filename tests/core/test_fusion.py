"""Fusion: hand-computed RRF and score-fusion values, provenance, dedup, validation, and
FusionSearcher (concurrency, filters, fetch_k, weights rules)."""

from __future__ import annotations

import doctest
import math
import threading
from typing import Any

import pytest

from concurrency import Meeting
from corpora import CORPUS, WING_QUERY
from hybrid_retrievers import BM25Index, Doc, Hit
from hybrid_retrievers.fusion import (
    Combination,
    Dedup,
    FilteredSource,
    FusionMode,
    FusionSearcher,
    LexicalBoostRule,
    Normalization,
    combine_filters,
    default_fetch_k,
    dist_based_normalize,
    fuse,
    lexical_boost_rule,
    min_max_normalize,
    normalize_scores,
    reciprocal_rank_fusion,
    score_fusion,
    z_score_normalize,
)
from hybrid_retrievers.text import Analyzer


def ranking(*items: Any) -> list[Hit]:
    """``ranking("a", "b")`` (scores n..1) or ``ranking(("a", 2.0), ("b", 1.0))``."""
    out = []
    for r, item in enumerate(items, 1):
        doc_id, score = item if isinstance(item, tuple) else (item, float(len(items) - r + 1))
        out.append(Hit(Doc(doc_id, f"text of {doc_id}"), score, r))
    return out


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


def scores(hits: list[Hit]) -> dict[str, float]:
    return {h.id: h.score for h in hits}


# ---------------------------------------------------------------------- RRF


def test_rrf_hand_computed_tie():
    # a: ranks 1 and 3; b: ranks 3 and 1; c: ranks 2 and 2.
    fused = reciprocal_rank_fusion([ranking("a", "c", "b"), ranking("b", "c", "a")])
    tie = 1 / 61 + 1 / 63
    assert tie == pytest.approx(0.0322664, abs=1e-7)
    assert ids(fused) == ["a", "b", "c"]  # tie -> better best rank (both 1) -> first seen
    assert fused[0].score == fused[1].score == pytest.approx(tie, rel=1e-15)
    assert fused[2].score == pytest.approx(2 / 62)
    assert [h.rank for h in fused] == [1, 2, 3]


def test_rrf_tie_goes_to_better_best_rank_before_first_appearance():
    fused = reciprocal_rank_fusion([ranking("p", "x"), ranking("q", "y")])
    # p, q tie at 1/61 (best rank 1); x, y at 1/62: first appearance decides in each pair.
    assert ids(fused) == ["p", "q", "x", "y"]
    # An exact tie with different best ranks (k=2): z is 2nd twice, 1/4 + 1/4 = 0.5; w is
    # 1st once with weight 1.5, 1.5 / 3 = 0.5. z appears first, but w's best rank wins.
    fused = reciprocal_rank_fusion(
        [ranking("z0", "z"), ranking("z1", "z"), ranking("w")], k_rrf=2, weights=[1, 1, 1.5]
    )
    by_id = scores(fused)
    assert by_id["z"] == by_id["w"] == 0.5
    assert ids(fused) == ["w", "z", "z0", "z1"]


def test_rrf_weights_and_k_hand_computed():
    fused = reciprocal_rank_fusion(
        [ranking("a", "b"), ranking("b", "c")], k_rrf=10, weights=[2.0, 0.5]
    )
    expected = {"a": 2 / 11, "b": 2 / 12 + 0.5 / 11, "c": 0.5 / 12}
    assert scores(fused) == pytest.approx(expected)
    assert ids(fused) == ["b", "a", "c"]


def test_rrf_uses_list_position_not_hit_rank_and_ignores_scores():
    lying = [Hit(Doc("a", ""), -5.0, 7), Hit(Doc("b", ""), 100.0, 1)]
    fused = reciprocal_rank_fusion([lying])
    assert ids(fused) == ["a", "b"]
    assert fused[0].explanation["fusion"]["sources"][0]["rank"] == 1
    assert fused[0].score == pytest.approx(1 / 61)


def test_duplicates_inside_one_ranking_count_once_at_best_rank():
    fused = reciprocal_rank_fusion([ranking("a", "b", "a", "c")])
    assert ids(fused) == ["a", "b", "c"]
    assert scores(fused) == pytest.approx({"a": 1 / 61, "b": 1 / 62, "c": 1 / 64})
    assert [s["rank"] for s in fused[2].explanation["fusion"]["sources"]] == [4]


def test_zero_weight_switches_a_list_off():
    fused = reciprocal_rank_fusion([ranking("a", "b"), ranking("z", "a")], weights=[1, 0])
    assert ids(fused) == ["a", "b"]
    assert [s["index"] for s in fused[0].explanation["fusion"]["sources"]] == [0]


def test_limit_and_empty_lists():
    assert reciprocal_rank_fusion([[], []]) == []
    fused = reciprocal_rank_fusion([ranking("a", "b", "c"), []], limit=2)
    assert ids(fused) == ["a", "b"]


# ---------------------------------------------------------------------- provenance


def test_provenance_keys_and_values():
    child_expl = {"bm25": {"score": 3.0}}
    a = [Hit(Doc("x", "x text"), 3.0, 1, child_expl), Hit(Doc("y", "y"), 1.0, 2)]
    b = [Hit(Doc("y", "y"), 0.9, 1)]
    fused = reciprocal_rank_fusion([a, b], names=["bm25", "dense"], weights=[1.0, 2.0])
    y = fused[0]
    assert y.id == "y"
    info = y.explanation["fusion"]
    assert set(info) == {"mode", "score", "best_rank", "k_rrf", "sources"}
    assert info["mode"] == "rrf" and info["k_rrf"] == 60 and info["best_rank"] == 1
    assert info["score"] == y.score
    assert info["sources"] == [
        {"source": "bm25", "index": 0, "id": "y", "rank": 2, "score": 1.0, "weight": 1.0,
         "contribution": pytest.approx(1 / 62)},
        {"source": "dense", "index": 1, "id": "y", "rank": 1, "score": 0.9, "weight": 2.0,
         "contribution": pytest.approx(2 / 61)},
    ]
    x = fused[1]
    assert x.explanation["fusion"]["sources"][0]["explanation"] == child_expl
    assert x.doc is a[0].doc  # the document itself is shared, the Hit is new


def test_score_mode_provenance_has_normalized():
    fused = fuse([ranking(("a", 4.0), ("b", 2.0))], "relative_score", names=["s"])
    info = fused[1].explanation["fusion"]
    assert info["mode"] == "relative_score"
    assert info["normalization"] == "minmax" and info["combination"] == "sum"
    assert info["sources"][0]["normalized"] == 0.0
    assert "k_rrf" not in info
    direct = score_fusion([ranking("a")], normalization="zscore", combination="mnz")
    assert direct[0].explanation["fusion"]["mode"] == "zscore+mnz"


def test_inputs_are_not_mutated():
    a = ranking("a", "b", "c")
    b = ranking("c", "a")
    snapshot = [list(a), list(b)], [(h.doc, h.score, h.rank, h.explanation) for h in a + b]
    for mode in FusionMode:
        fused = fuse([a, b], mode)
        assert all(h not in a + b for h in fused)
    assert ([list(a), list(b)], [(h.doc, h.score, h.rank, h.explanation) for h in a + b]) \
        == snapshot


# ---------------------------------------------------------------------- score fusion


def test_normalizers_hand_computed():
    assert min_max_normalize([4.0, 3.0, 2.0]) == [1.0, 0.5, 0.0]
    assert min_max_normalize([2.0, 2.0]) == [1.0, 1.0]  # LlamaIndex: all equal & > 0 -> 1
    assert min_max_normalize([0.0]) == [0.0]
    assert min_max_normalize([-1.0, -1.0]) == [0.0, 0.0]
    assert min_max_normalize([]) == []
    std = math.sqrt(2 / 3)
    lo, hi = 2 - 3 * std, 2 + 3 * std
    assert dist_based_normalize([3.0, 2.0, 1.0]) == pytest.approx(
        [(3 - lo) / (hi - lo), 0.5, (1 - lo) / (hi - lo)]
    )
    assert dist_based_normalize([5.0]) == [1.0]
    assert z_score_normalize([3.0, 2.0, 1.0]) == pytest.approx([1 / std, 0.0, -1 / std])
    assert z_score_normalize([7.0, 7.0]) == [0.0, 0.0]
    assert normalize_scores([2.0, 1.0], "none") == [2.0, 1.0]
    with pytest.raises(ValueError, match=r"normalization must be one of \['minmax', 'dist'"):
        normalize_scores([1.0], "softmax")


LISTS = [
    [("a", 9.0), ("b", 5.0), ("c", 1.0)],  # minmax: a 1, b .5, c 0
    [("b", 0.8), ("d", 0.6), ("a", 0.2)],  # minmax: b 1, d 2/3, a 0
]


def fused_scores(mode: str, weights=None) -> dict[str, float]:
    return scores(fuse([ranking(*LISTS[0]), ranking(*LISTS[1])], mode, weights=weights))


def test_relative_score_and_combsum_hand_computed():
    expected = {"a": 1.0, "b": 1.5, "c": 0.0, "d": 2 / 3}
    assert fused_scores("relative_score") == pytest.approx(expected)
    assert fused_scores("combsum") == pytest.approx(expected)
    weighted = {"a": 2.0, "b": 1.0 + 0.5, "c": 0.0, "d": 0.5 * 2 / 3}
    assert fused_scores("relative_score", weights=[2, 0.5]) == pytest.approx(weighted)


def test_llama_index_relative_score_formula():
    # LlamaIndex: minmax per list, times the retriever weight, summed (one query).
    lists = [[5.0, 3.0, 2.0], [0.9, 0.1]]
    weights = [0.7, 0.3]
    expected = {}
    for lst, w, prefix in zip(lists, weights, "pq"):
        lo, hi = min(lst), max(lst)
        for j, s in enumerate(lst):
            expected[f"{prefix}{j}"] = (s - lo) / (hi - lo) * w
    expected["shared"] = 0.0
    rankings = [ranking(*[(f"{p}{j}", s) for j, s in enumerate(lst)]) for p, lst in
                zip("pq", lists)]
    fused = fuse(rankings, "relative_score", weights=weights)
    assert scores(fused) == pytest.approx({k: v for k, v in expected.items() if k != "shared"})


def test_dist_based_hand_computed():
    def dist(values):
        m = sum(values) / len(values)
        s = math.sqrt(sum((v - m) ** 2 for v in values) / len(values))
        return [(v - (m - 3 * s)) / (6 * s) for v in values]

    d0, d1 = dist([9.0, 5.0, 1.0]), dist([0.8, 0.6, 0.2])
    expected = {"a": d0[0] + d1[2], "b": d0[1] + d1[0], "c": d0[2], "d": d1[1]}
    assert fused_scores("dist_based_score") == pytest.approx(expected)


def test_zscore_hand_computed():
    z0 = z_score_normalize([9.0, 5.0, 1.0])
    z1 = z_score_normalize([0.8, 0.6, 0.2])
    expected = {"a": z0[0] + z1[2], "b": z0[1] + z1[0], "c": z0[2], "d": z1[1]}
    assert fused_scores("zscore") == pytest.approx(expected)


def test_raw_mean_combmnz_hand_computed():
    assert fused_scores("raw") == pytest.approx({"a": 9.2, "b": 5.8, "c": 1.0, "d": 0.6})
    assert fused_scores("raw", weights=[0.1, 1]) == pytest.approx(
        {"a": 0.9 + 0.2, "b": 0.5 + 0.8, "c": 0.1, "d": 0.6}
    )
    # mean over the lists the doc appears in: a (1 + 0)/2, b (.5 + 1)/2, c 0/1, d (2/3)/1
    assert fused_scores("mean") == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 2 / 3})
    # weighted mean: b (3 * .5 + 1 * 1) / 4
    assert fused_scores("mean", weights=[3, 1])["b"] == pytest.approx(2.5 / 4)
    assert fused_scores("mean", weights=[3, 1])["d"] == pytest.approx(2 / 3)
    # CombMNZ: sum times the number of lists containing the doc
    assert fused_scores("combmnz") == pytest.approx({"a": 2.0, "b": 3.0, "c": 0.0, "d": 2 / 3})


def test_score_fusion_general_form_matches_modes():
    rankings = [ranking(*LISTS[0]), ranking(*LISTS[1])]
    assert scores(score_fusion(rankings, normalization=Normalization.DIST)) == \
        pytest.approx(fused_scores("dist_based_score"))
    assert scores(score_fusion(rankings, combination=Combination.MNZ)) == \
        pytest.approx(fused_scores("combmnz"))


def test_score_fusion_rejects_non_finite_scores():
    bad = [Hit(Doc("a", ""), float("nan"), 1)]
    with pytest.raises(ValueError, match=r"rankings\[0\]\[0\]\.score must be finite"):
        fuse([bad], "relative_score")
    assert ids(fuse([bad], "rrf")) == ["a"]  # RRF reads ranks only


# ---------------------------------------------------------------------- dedup


def test_content_dedup_keeps_the_better_ranked_copy():
    a = [Hit(Doc("v1", "Wing  lift\n"), 1.0, 1), Hit(Doc("x", "other"), 0.5, 2)]
    b = [Hit(Doc("x", "other"), 0.9, 1), Hit(Doc("v2", "wing LIFT"), 0.8, 2)]
    by_id = reciprocal_rank_fusion([a, b])
    assert sorted(ids(by_id)) == ["v1", "v2", "x"]
    by_content = reciprocal_rank_fusion([a, b], dedup="content")
    assert sorted(ids(by_content)) == ["v1", "x"]
    wing = next(h for h in by_content if h.id == "v1")
    assert wing.score == pytest.approx(1 / 61 + 1 / 62)
    assert [(s["id"], s["rank"]) for s in wing.explanation["fusion"]["sources"]] == \
        [("v1", 1), ("v2", 2)]
    # the copy kept is the better-ranked one even when it appears later
    c = [Hit(Doc("v2", "wing lift"), 1.0, 1)]
    d = [Hit(Doc("q", "q"), 1.0, 1), Hit(Doc("v1", "wing lift"), 1.0, 2)]
    kept = reciprocal_rank_fusion([d, c], dedup=Dedup.CONTENT)
    assert "v2" in ids(kept) and "v1" not in ids(kept)


def test_content_dedup_within_one_list_and_blank_texts():
    a = [Hit(Doc("v1", "same"), 1.0, 1), Hit(Doc("v2", "SAME"), 0.9, 2),
         Hit(Doc("e1", ""), 0.8, 3), Hit(Doc("e2", "  "), 0.7, 4)]
    fused = reciprocal_rank_fusion([a], dedup="content")
    assert ids(fused) == ["v1", "e1", "e2"]  # blank texts are never merged
    assert fused[1].score == pytest.approx(1 / 63)  # positions are not renumbered


def test_content_dedup_never_returns_an_id_twice():
    a = [Hit(Doc("a", "one text"), 1.0, 1)]
    b = [Hit(Doc("a", "another version"), 1.0, 1), Hit(Doc("b", "another version"), 1.0, 2)]
    fused = reciprocal_rank_fusion([a, b], dedup="content")
    assert len(ids(fused)) == len(set(ids(fused)))


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"rankings": []}, ValueError, "at least one ranking"),
        ({"rankings": "abc"}, TypeError, "rankings must be a list"),
        ({"rankings": [["a"]]}, TypeError, r"rankings\[0\]\[0\] must be a Hit"),
        ({"rankings": [None]}, TypeError, r"rankings\[0\] must be a list of Hit"),
        ({"weights": [1.0]}, ValueError, "expected 2, got 1"),
        ({"weights": [1.0, -1.0]}, ValueError, r"weights\[1\] must be a finite number >= 0"),
        ({"weights": [1.0, float("nan")]}, ValueError, r"weights\[1\].*nan"),
        ({"weights": [0, 0]}, ValueError, "at least one weight > 0"),
        ({"weights": [1, "2"]}, TypeError, r"weights\[1\] must be a number"),
        ({"weights": [True, 1]}, TypeError, r"weights\[0\] must be a number"),
        ({"weights": 2.0}, TypeError, "weights must be a list of 2 numbers"),
        ({"k_rrf": -0.5}, ValueError,
         r"k_rrf \(the RRF constant\) must be a finite number >= 0, got -0.5"),
        ({"k_rrf": float("inf")}, ValueError, "got inf"),
        ({"k_rrf": -1.5}, ValueError, "got -1.5"),
        ({"k_rrf": "60"}, TypeError, r"k_rrf \(the RRF constant\) must be a number"),
        ({"names": ["a", "a"]}, ValueError, "names must be unique"),
        ({"names": ["a"]}, ValueError, "one name per source"),
        ({"dedup": "text"}, ValueError, r"dedup must be one of \['id', 'content'\], got 'text'"),
        ({"limit": 0}, ValueError, "limit must be >= 1"),
    ],
)
def test_rrf_validation(kwargs, error, pattern):
    args = {"rankings": [ranking("a"), ranking("b")], **kwargs}
    with pytest.raises(error, match=pattern):
        reciprocal_rank_fusion(args.pop("rankings"), **args)


def test_rrf_constant_is_k_rrf():
    rankings = [ranking("a", "b"), ranking("b", "a")]
    fused = reciprocal_rank_fusion(rankings, k_rrf=10)
    assert fused[0].explanation["fusion"]["k_rrf"] == 10
    with pytest.raises(ValueError, match=r"k_rrf \(the RRF constant\)"):
        reciprocal_rank_fusion(rankings, k_rrf=-1)


def test_rrf_constant_zero_is_weight_over_rank():
    # LangChain's EnsembleRetriever accepts c=0: score = w / rank, well defined for
    # 1-based ranks. a: 1/1 + 1/3, b: 1/2 + 1/1 (weights 1, 1) -> b first.
    fused = reciprocal_rank_fusion([ranking("a", "b", "c"), ranking("b", "x", "a")], k_rrf=0)
    assert [(h.id, round(h.score, 6)) for h in fused][:2] == [("b", 1.5), ("a", 1.333333)]
    assert fused[0].explanation["fusion"]["k_rrf"] == 0
    weighted = reciprocal_rank_fusion([ranking("1", "2"), ranking("2", "1")], k_rrf=0,
                                      weights=[0.5, 0.4])
    assert [h.id for h in weighted] == ["1", "2"]  # 0.5 + 0.2 > 0.4 + 0.25


def test_unknown_mode_lists_the_enum_values():
    with pytest.raises(ValueError) as info:
        fuse([ranking("a")], "borda")
    message = str(info.value)
    assert "'borda'" in message and "mode must be one of" in message
    for mode in FusionMode:
        assert repr(mode.value) in message
    with pytest.raises(TypeError, match="mode must be one of"):
        fuse([ranking("a")], 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"k_rrf \(the RRF constant\)"):
        fuse([ranking("a")], k_rrf=-1)


def test_mode_values_are_case_insensitive_and_members_work():
    assert ids(fuse([ranking("a")], "RRF")) == ids(fuse([ranking("a")], FusionMode.RRF))


def test_every_mode_is_implemented():
    lists = [ranking(*LISTS[0]), ranking(*LISTS[1])]
    for mode in FusionMode:
        fused = fuse(lists, mode)
        assert sorted(ids(fused)) == ["a", "b", "c", "d"]
        assert fused[0].explanation["fusion"]["mode"] == mode.value


# ---------------------------------------------------------------------- searcher helpers


class Spy:
    """A searcher returning fixed hits; records its calls and threads; optionally waits at a
    `Meeting` (so its search returns only while the other children's run too)."""

    def __init__(self, order: list[str], meeting: Meeting | None = None,
                 name: str = "spy") -> None:
        self.order = order
        self.meeting = meeting
        self.calls: list[tuple[str, int, Any]] = []
        self.threads: list[str] = []
        self.name = name

    def search(self, query: str, k: int = 10, *, filter: Any = None) -> list[Hit]:
        self.calls.append((query, k, filter))
        self.threads.append(threading.current_thread().name)
        if self.meeting is not None:
            self.meeting.wait()
        return ranking(*self.order[:k])


class Boom:
    def search(self, query: str, k: int = 10, *, filter: Any = None) -> list[Hit]:
        raise RuntimeError("child failed")


@pytest.fixture(scope="module")
def bm25() -> BM25Index:
    return BM25Index.from_texts(
        [t for _, t, _ in CORPUS], ids=[i for i, _, _ in CORPUS], metadatas=[m for *_, m in CORPUS]
    )


@pytest.fixture(scope="module")
def bm25_plain() -> BM25Index:
    return BM25Index.from_texts(
        [t for _, t, _ in CORPUS], ids=[i for i, _, _ in CORPUS],
        metadatas=[m for *_, m in CORPUS], analyzer=Analyzer(stemmer=None), method="bm25l",
    )


@pytest.fixture(scope="module")
def dense() -> Any:
    from hybrid_retrievers.models import HashingEmbedder
    from hybrid_retrievers.vector import VectorIndex

    return VectorIndex.from_texts(
        [t for _, t, _ in CORPUS], ids=[i for i, _, _ in CORPUS],
        metadatas=[m for *_, m in CORPUS], embedder=HashingEmbedder(dimension=128),
    )


# ---------------------------------------------------------------------- searcher


def test_fusion_searcher_equals_pure_rrf_over_child_results(bm25, dense):
    hybrid = FusionSearcher([bm25, dense], names=["bm25", "dense"])
    got = hybrid.search(WING_QUERY, k=5)
    expected = reciprocal_rank_fusion(
        [bm25.search(WING_QUERY, 20), dense.search(WING_QUERY, 20)], names=["bm25", "dense"],
        limit=5,
    )
    assert [(h.id, h.score, h.explanation) for h in got] == \
        [(h.id, h.score, h.explanation) for h in expected]
    assert got[0].explanation["fusion"]["sources"][0]["source"] == "bm25"


@pytest.mark.parametrize("mode", list(FusionMode))
@pytest.mark.parametrize("k", [1, 3, 100])
def test_fusion_searcher_contract(bm25, dense, mode, k):
    hybrid = FusionSearcher([bm25, dense], mode=mode)
    for query in ["wing lift", "bread dough yeast", "zzz unmatched"]:
        hits = hybrid.search(query, k=k)
        assert len(hits) <= min(k, len(CORPUS))
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
        assert len({h.id for h in hits}) == len(hits)
        assert [(h.id, h.score) for h in hybrid.search(query, k=k)] == \
            [(h.id, h.score) for h in hits]
    with pytest.raises(ValueError, match="k must be >= 1"):
        hybrid.search("wing", k=0)
    with pytest.raises(TypeError, match="k must be a positive int"):
        hybrid.search("wing", k="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="query must not be empty"):
        hybrid.search("  ", k=3)
    with pytest.raises(TypeError, match="query must be a str"):
        hybrid.search(None, k=3)  # type: ignore[arg-type]


def test_fusion_of_two_bm25_configurations(bm25, bm25_plain):
    hybrid = FusionSearcher([bm25, bm25_plain], mode="relative_score")
    hits = hybrid.search("lift wings", k=3)
    assert hits and all(h.doc.metadata["topic"] == "aero" for h in hits)


def test_searcher_validation(bm25):
    with pytest.raises(ValueError, match="at least one searcher"):
        FusionSearcher([])
    with pytest.raises(TypeError, match="searchers must be a list"):
        FusionSearcher(bm25)
    with pytest.raises(TypeError, match=r"searchers\[1\] must have a search"):
        FusionSearcher([bm25, object()])
    with pytest.raises(ValueError, match="expected 2, got 3"):
        FusionSearcher([bm25, bm25], weights=[1, 1, 1])
    with pytest.raises(ValueError, match=r"weights\[0\]"):
        FusionSearcher([bm25, bm25], weights=[-1, 1])
    with pytest.raises(ValueError, match=r"weights\[1\].*nan"):
        FusionSearcher([bm25, bm25], weights=[1, math.nan])
    with pytest.raises(ValueError, match=r"k_rrf \(the RRF constant\) must be a finite number "
                                         r">= 0, got -1"):
        FusionSearcher([bm25], k_rrf=-1)
    with pytest.raises(ValueError, match=r"mode must be one of \['rrf', 'relative_score'"):
        FusionSearcher([bm25], mode="borda")
    with pytest.raises(ValueError, match="fetch_k must be >= 1"):
        FusionSearcher([bm25], fetch_k=0)
    with pytest.raises(ValueError, match="max_workers must be >= 1"):
        FusionSearcher([bm25], max_workers=0)
    with pytest.raises(ValueError, match="dedup must be one of"):
        FusionSearcher([bm25], dedup="title")
    with pytest.raises(ValueError, match="names must be unique"):
        FusionSearcher([bm25, bm25], names=["x", "x"])


def test_fetch_k_default_and_overrides():
    a, b = Spy(list("abcdefgh")), Spy(list("hgfedcba"))
    hybrid = FusionSearcher([a, b])
    assert len(hybrid.search("q", k=3)) == 3
    assert a.calls[-1][1] == default_fetch_k(3) == 20
    hybrid.search("q", k=30)
    assert a.calls[-1][1] == 30
    hybrid.search("q", k=2, fetch_k=4)
    assert a.calls[-1][1] == b.calls[-1][1] == 4
    FusionSearcher([a, b], fetch_k=7).search("q", k=2)
    assert a.calls[-1][1] == 7
    with pytest.raises(ValueError, match="fetch_k must be >= 1"):
        hybrid.search("q", k=2, fetch_k=0)


def test_fetch_k_lets_a_deep_candidate_surface():
    # 15th in both lists: 2/75 beats any document that only one list has (at most 1/61).
    a = Spy([f"x{i}" for i in range(14)] + ["star"] + [f"x{i}" for i in range(14, 40)])
    b = Spy([f"y{i}" for i in range(14)] + ["star"] + [f"y{i}" for i in range(14, 40)])
    assert "star" not in ids(FusionSearcher([a, b], fetch_k=10).search("q", k=3))
    assert ids(FusionSearcher([a, b], fetch_k=20).search("q", k=3))[0] == "star"
    assert ids(FusionSearcher([a, b]).search("q", k=3))[0] == "star"  # default max(k, 20)


def test_filter_is_passed_to_every_child(bm25, dense):
    a, b = Spy(list("ab")), Spy(list("ba"))
    FusionSearcher([a, b]).search("q", k=2, filter={"topic": "aero"})
    assert a.calls[-1][2] == b.calls[-1][2] == {"topic": "aero"}
    FusionSearcher([a, b]).search("q", k=2)
    assert a.calls[-1][2] is None
    hits = FusionSearcher([bm25, dense]).search("bread wing lift", k=10,
                                                filter={"topic": "cooking"})
    assert hits and {h.doc.metadata["topic"] for h in hits} == {"cooking"}
    hits = FusionSearcher([bm25, dense]).search(
        "wing lift", k=10, filter=lambda d: d.metadata["year"] < 1970
    )
    assert hits and all(h.doc.metadata["year"] < 1970 for h in hits)


def test_weights_sequence_callable_and_per_call_override():
    a, b = Spy(list("ab")), Spy(list("ba"))
    hybrid = FusionSearcher([a, b], weights=[3, 1])
    assert ids(hybrid.search("q", k=2)) == ["a", "b"]
    assert ids(hybrid.search("q", k=2, weights=[1, 3])) == ["b", "a"]
    rule = FusionSearcher([a, b], weights=lambda q: [1, 3] if "B" in q else [3, 1])
    assert ids(rule.search("q B", k=2)) == ["b", "a"]
    assert ids(rule.search("q", k=2)) == ["a", "b"]
    hits = rule.search("q B", k=2)
    assert [s["weight"] for s in hits[0].explanation["fusion"]["sources"]] == [1.0, 3.0]
    bad = FusionSearcher([a, b], weights=lambda q: [1.0])
    with pytest.raises(ValueError, match=r"weights\(query\) must have one weight per source"):
        bad.search("q", k=2)


def test_a_zero_weight_child_is_not_queried():
    a, b = Spy(list("ab")), Spy(list("cd"))
    hits = FusionSearcher([a, b], weights=[1, 0]).search("q", k=4)
    assert ids(hits) == ["a", "b"] and b.calls == []


def test_children_run_concurrently():
    # Each child returns only once all three are searching at the same time (a Meeting):
    # children run one by one would fail the meeting instead of merely taking longer.
    meeting = Meeting(3)
    children = [Spy(list("abc"), meeting), Spy(list("cab"), meeting), Spy(list("bca"), meeting)]
    hybrid = FusionSearcher(children)
    hybrid.search("warm", k=3)  # start the pool
    hits = hybrid.search("q", k=3)
    assert len(hits) == 3
    assert children[0].threads[-1] == threading.current_thread().name
    assert children[1].threads[-1].startswith("FusionSearcher")
    # max_workers=1: one after the other, all in the calling thread.
    alone = [Spy(list("abc")), Spy(list("cab")), Spy(list("bca"))]
    assert ids(FusionSearcher(alone, max_workers=1).search("q", k=3)) == ids(hits)
    assert [c.threads for c in alone] == [[threading.current_thread().name]] * 3
    hybrid.close()


def test_search_many_runs_children_concurrently_and_matches_search(bm25, dense):
    meeting = Meeting(2)  # both children are searching each query at the same time
    slow = [Spy(list("abc"), meeting), Spy(list("cab"), meeting)]
    hybrid = FusionSearcher(slow)
    out = hybrid.search_many(["q1", "q2"], k=2)
    assert [ids(h) for h in out] == [["a", "c"], ["a", "c"]]
    assert [len(c.calls) for c in slow] == [2, 2] and slow[0].threads != slow[1].threads
    real = FusionSearcher([bm25, dense], mode="dist_based_score")
    queries = ["wing lift", "bread dough yeast", "soil compost"]
    many = real.search_many(queries, k=4, filter={"topic": "aero"})
    one = [real.search(q, k=4, filter={"topic": "aero"}) for q in queries]
    assert [[(h.id, h.score) for h in x] for x in many] == \
        [[(h.id, pytest.approx(h.score)) for h in x] for x in one]
    assert real.search_many([], k=3) == []
    with pytest.raises(TypeError, match="queries must be a list of str"):
        real.search_many("wing", k=3)
    with pytest.raises(ValueError, match=r"queries\[1\] must not be empty"):
        real.search_many(["wing", ""], k=3)


def test_search_many_uses_query_dependent_weights():
    a, b = Spy(list("ab")), Spy(list("ba"))
    hybrid = FusionSearcher([a, b], weights=lambda q: [1, 3] if "B" in q else [3, 1])
    out = hybrid.search_many(["x", "B"], k=2)
    assert [ids(h) for h in out] == [["a", "b"], ["b", "a"]]


def test_child_errors_propagate_with_the_source_name():
    hybrid = FusionSearcher([Spy(list("ab")), Boom()], names=["ok", "broken"])
    with pytest.raises(RuntimeError, match="child failed") as info:
        hybrid.search("q", k=2)
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:  # Python 3.11+
        assert any("'broken'" in n for n in notes)
    bad = FusionSearcher([Spy(list("a"))])
    bad._children[0].search = lambda *a, **k: ["not a hit"]  # type: ignore[method-assign]
    with pytest.raises(TypeError, match="must return Hit objects"):
        bad.search("q", k=1)


def test_context_manager_closes_the_pool():
    workers: list[threading.Thread] = []

    class Second(Spy):
        def search(self, query, k=10, *, filter=None):
            workers.append(threading.current_thread())
            return super().search(query, k, filter=filter)

    with FusionSearcher([Spy(list("ab")), Second(list("ba"))]) as hybrid:
        hybrid.search("q", k=2)
        assert workers[0] is not threading.current_thread()  # a pool thread
    assert not workers[0].is_alive()  # closed: its thread was joined
    assert ids(hybrid.search("q", k=2)) == ["a", "b"]  # a new pool on demand
    assert workers[1] is not workers[0] and workers[1].is_alive()
    hybrid.close()


def test_nested_fusion_searchers(bm25, dense, bm25_plain):
    inner = FusionSearcher([bm25, bm25_plain], names=["stem", "plain"])
    outer = FusionSearcher([inner, dense], names=["lexical", "dense"])
    hits = outer.search(WING_QUERY, k=3)
    lexical = hits[0].explanation["fusion"]["sources"][0]
    assert lexical["source"] == "lexical"
    assert lexical["explanation"]["fusion"]["sources"][0]["source"] == "stem"


# ---------------------------------------------------------------------- multi-source


def test_filtered_sources_fuse_with_per_source_weights():
    docs = [
        ("t1", "wing lift at high angle of attack", {"type": "text"}),
        ("t2", "wing drag and lift polar", {"type": "text"}),
        ("i1", "photo of a wing in a wind tunnel, lift visible", {"type": "image"}),
        ("i2", "diagram of wing lift", {"type": "image"}),
        ("o1", "wing lift overview", {"type": "other"}),
    ]
    index = BM25Index.from_texts([t for _, t, _ in docs], ids=[i for i, _, _ in docs],
                                 metadatas=[m for *_, m in docs])
    texts = FilteredSource(index, {"type": "text"}, name="text")
    images = FilteredSource(index, {"type": "image"}, name="images")
    assert {h.doc.metadata["type"] for h in images.search("wing lift", 10)} == {"image"}
    hybrid = FusionSearcher([texts, images], weights=[1.0, 0.25])
    hits = hybrid.search("wing lift", k=10)
    assert "o1" not in ids(hits)  # only the two filtered lists are fused
    assert [h.doc.metadata["type"] for h in hits[:2]] == ["text", "text"]
    src = {h.id: h.explanation["fusion"]["sources"][0] for h in hits}
    assert src["i1"]["source"] == "images" and src["i1"]["weight"] == 0.25
    assert src["t1"]["source"] == "text"
    boosted = FusionSearcher([texts, images], weights=[0.25, 1.0]).search("wing lift", k=2)
    assert {h.doc.metadata["type"] for h in boosted} == {"image"}
    # from_filters builds the same thing
    same = FusionSearcher.from_filters(
        index, {"text": {"type": "text"}, "images": {"type": "image"}},
        weights={"images": 0.25},
    )
    assert [(h.id, h.score) for h in same.search("wing lift", k=10)] == \
        [(h.id, h.score) for h in hits]
    # a per-call filter narrows every source further
    narrowed = hybrid.search("wing lift", k=10, filter=lambda d: d.id.endswith("1"))
    assert sorted(ids(narrowed)) == ["i1", "t1"]
    assert images.search_many(["wing", "lift"], 5)[1][0].doc.metadata["type"] == "image"
    with pytest.raises(ValueError, match="weights names sources that filters does not define"):
        FusionSearcher.from_filters(index, {"text": {"type": "text"}}, weights={"img": 1})
    with pytest.raises(TypeError, match="filter must be a mapping"):
        FilteredSource(index, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="searcher must have a search"):
        FilteredSource(object(), {"type": "x"})


def test_combine_filters():
    doc = Doc("d", "", {"type": "image", "lang": "en"})
    assert combine_filters(None, {"a": 1}) == {"a": 1}
    assert combine_filters({"a": 1}, None) == {"a": 1}
    assert combine_filters({"type": "image"}, {"lang": "en"}) == {"type": "image", "lang": "en"}
    conflict = combine_filters({"type": "image"}, {"type": "text"})
    assert callable(conflict) and not conflict(doc)
    mixed = combine_filters({"type": "image"}, lambda d: d.metadata["lang"] == "en")
    assert callable(mixed) and mixed(doc)
    assert not mixed(Doc("e", "", {"type": "text", "lang": "en"}))
    assert not combine_filters({"missing": None}, lambda d: True)(doc)  # type: ignore[misc]


# ---------------------------------------------------------------------- weights rule


@pytest.mark.parametrize("query", [
    "which connector does part IPC-420 use", "error E1234 on boot", "the 3.5 mm jack",
    'papers about "reciprocal rank fusion"', "set max_workers to two", "call getUserName",
    "mach 2 flow", "“exact phrase” please",
])
def test_lexical_boost_rule_matches_exact_match_queries(query):
    rule = lexical_boost_rule(lexical_index=1, boost=3.0)
    assert rule.matches(query)
    assert rule(query) == (1.0, 3.0)


@pytest.mark.parametrize("query", [
    "how do wings generate lift", "what is boundary layer separation", "Flaps and slats",
    "NASA reports on drag",
])
def test_lexical_boost_rule_leaves_plain_queries_alone(query):
    assert lexical_boost_rule()(query) == (1.0, 1.0)


def test_lexical_boost_rule_in_a_searcher_and_validation(bm25):
    lexical, dense_like = Spy(["part", "x"]), Spy(["x", "part"])
    hybrid = FusionSearcher([lexical, dense_like], weights=lexical_boost_rule(0, 2.0))
    assert ids(hybrid.search("part IPC-420", k=2)) == ["part", "x"]
    assert ids(hybrid.search("a plain question", k=2)) == ["part", "x"]  # tie -> first seen
    hits = hybrid.search("part IPC-420", k=1)
    assert [s["weight"] for s in hits[0].explanation["fusion"]["sources"]] == [2.0, 1.0]
    custom = LexicalBoostRule(lexical_index=0, boost=5.0, base_weights=(1, 1, 1),
                              pattern=r"\bSKU\b")
    assert custom("find SKU 7") == (5.0, 1.0, 1.0) and custom("find 7") == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="lexical_index must point into base_weights"):
        lexical_boost_rule(lexical_index=2)
    with pytest.raises(ValueError, match="boost must be >= 0, got -1"):
        lexical_boost_rule(boost=-1)
    with pytest.raises(ValueError, match=r"base_weights\[0\] must be a finite number"):
        lexical_boost_rule(base_weights=(-1, 1))
    with pytest.raises(TypeError, match="pattern must be a regex"):
        LexicalBoostRule(pattern=3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- docs


def test_docstring_examples_run():
    import hybrid_retrievers.fusion as package
    from hybrid_retrievers.fusion import (
        candidates, concurrency, modes, plan, rank, rules, score, searcher,
    )

    failures = 0
    for module in (package, candidates, concurrency, modes, plan, rank, rules,
                   score, searcher):
        failures += doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed
    assert failures == 0


def test_protocol_names_and_numpy_weights(bm25, dense):
    import numpy as np

    from hybrid_retrievers import Searcher

    hybrid = FusionSearcher([bm25, dense], weights=np.array([2.0, 1.0]))
    assert isinstance(hybrid, Searcher)
    assert isinstance(FilteredSource(bm25, {"topic": "aero"}), Searcher)
    assert hybrid.names == (0, 1) and hybrid.plan.weights == (2.0, 1.0)
    assert hybrid.plan.mode is FusionMode.RRF and hybrid.plan.k_rrf == 60
    assert hybrid.fetch_k is None and hybrid.plan.dedup is Dedup.ID
    assert hybrid.searchers == (bm25, dense)
    named = FusionSearcher([FilteredSource(bm25, {"topic": "aero"}, name="aero"), dense])
    assert named.names == ("aero", 1)
    hits = named.search(WING_QUERY, k=2)
    assert hits[0].explanation["fusion"]["sources"][0]["source"] == "aero"
    assert "FusionSearcher([BM25Index, VectorIndex]" in repr(hybrid)


# ------------------------------------------------------------ legs by name, replace


def test_leg_finds_a_child_by_its_name_only(bm25, dense):
    named = FusionSearcher([FilteredSource(bm25, {"topic": "aero"}, name="aero"), dense])
    assert named.leg("aero") is named.searchers[0] and named.leg(1) is dense
    assert named.leg("dense") is None and named.leg(0) is None  # 0 is named "aero"
    assert FusionSearcher([bm25, dense], names=["bm25", "dense"]).leg("dense") is dense
    with pytest.raises(TypeError, match="name must be a leg's name.*got bool"):
        named.leg(True)  # True == 1, but it is not a name


def test_hybrid_without_bm25_has_no_bm25_leg():
    from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
    from hybrid_retrievers.sparse import SparseIndex
    from hybrid_retrievers.vector import VectorIndex

    legs = FusionSearcher.hybrid([t for _, t, _ in CORPUS], HashingEmbedder(64),
                                 bm25=False, sparse=HashingSparseEmbedder())
    assert legs.names == ("dense", "sparse") and legs.leg("bm25") is None
    assert isinstance(legs.leg("dense"), VectorIndex)
    assert isinstance(legs.leg("sparse"), SparseIndex)


def test_replace_changes_the_settings_given_and_keeps_the_rest(bm25, dense):
    base = FusionSearcher([bm25, dense], names=["bm25", "dense"], mode="relative_score",
                          weights=[2, 1], k_rrf=7, fetch_k=9, max_workers=1, dedup="content")
    rrf = base.replace(mode="rrf", weights=[1, 3])
    assert rrf.plan.mode is FusionMode.RRF and rrf.plan.weights == (1.0, 3.0)
    assert (rrf.plan.k_rrf, rrf.fetch_k, rrf.plan.dedup, rrf.names) == \
        (7, 9, Dedup.CONTENT, ("bm25", "dense"))
    assert rrf._max_workers == 1
    assert rrf.searchers == base.searchers and rrf.leg("bm25") is bm25  # shared, not copied
    assert base.plan.mode is FusionMode.RELATIVE_SCORE and base.plan.weights == (2.0, 1.0)
    same = base.replace()
    assert [h.id for h in same.search(WING_QUERY, 5)] == \
        [h.id for h in base.search(WING_QUERY, 5)]
    assert rrf.search(WING_QUERY, 5) == base.search(WING_QUERY, 5, mode="rrf", weights=[1, 3])
    with pytest.raises(TypeError, match=r"replace got unexpected argument\(s\) 'k_rff' "
                                        r"\(did you mean k_rrf=\?\)"):
        base.replace(k_rff=10)
    with pytest.raises(TypeError, match="searchers"):
        base.replace(searchers=[bm25])  # the children are shared: not a setting
    with pytest.raises(ValueError, match="weights"):
        base.replace(weights=[1, 2, 3])


def test_fusion_settings_are_the_constructors_arguments_besides_the_searchers():
    """`replace`, a saved fusion and the adapters' hybrid factories all read
    FUSION_SETTINGS: a new constructor argument must be added there too."""
    import inspect

    from hybrid_retrievers.fusion.searcher import FUSION_SETTINGS

    parameters = set(inspect.signature(FusionSearcher.__init__).parameters) - {"self", "searchers"}
    assert set(FUSION_SETTINGS) == parameters
