"""Property tests (hypothesis) for the fusion functions' invariants, in every mode."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.fusion import FusionMode, fuse, normalized_text_hash, reciprocal_rank_fusion

ALL_MODES = list(FusionMode)
SUM_MODES = [FusionMode.RRF, FusionMode.RELATIVE_SCORE, FusionMode.DIST_BASED_SCORE,
             FusionMode.ZSCORE, FusionMode.RAW, FusionMode.COMBSUM]
DOC_IDS = [f"d{i}" for i in range(12)]

settings.register_profile("fusion", max_examples=150, deadline=None)
settings.load_profile("fusion")


@st.composite
def a_ranking(draw, min_size: int = 0, ids: list[str] = DOC_IDS) -> list[Hit]:
    """Distinct ids, strictly decreasing positive scores (a well-formed ranked list)."""
    chosen = draw(st.lists(st.sampled_from(ids), min_size=min_size, max_size=8, unique=True))
    gaps = draw(st.lists(st.floats(0.01, 10.0), min_size=len(chosen), max_size=len(chosen)))
    scores, total = [], 0.0
    for g in reversed(gaps):
        total += g
        scores.append(total)
    scores.reverse()
    return [Hit(Doc(i, f"text {i}"), s, r) for r, (i, s) in enumerate(zip(chosen, scores), 1)]


rankings_st = st.lists(a_ranking(), min_size=1, max_size=4)
weights_st = st.floats(0.0, 5.0)
modes_st = st.sampled_from(ALL_MODES)


def id_scores(hits: list[Hit]) -> dict[str, float]:
    return {h.id: h.score for h in hits}


def weights_for(draw_weights: list[float], n: int) -> list[float]:
    w = (draw_weights + [1.0] * n)[:n]
    return w if any(w) else [1.0] * n


@given(rankings_st, modes_st, st.randoms(use_true_random=False))
def test_order_of_inputs_does_not_matter_with_equal_weights(rankings, mode, rnd):
    shuffled = list(rankings)
    rnd.shuffle(shuffled)
    a, b = fuse(rankings, mode), fuse(shuffled, mode)
    assert id_scores(a) == id_scores(b)  # exact: per-document sums use math.fsum
    assert [h.score for h in a] == [h.score for h in b]


@given(st.lists(a_ranking(), min_size=1, max_size=4), st.lists(weights_st, max_size=4),
       modes_st, st.sampled_from(DOC_IDS))
def test_a_doc_ranked_first_everywhere_wins(rankings, raw_weights, mode, star):
    lists = []
    for ranking in rankings:
        rest = [h for h in ranking if h.id != star]
        top = (rest[0].score + 1.0) if rest else 1.0
        lists.append([Hit(Doc(star, "star"), top, 1), *rest])
    weights = weights_for(raw_weights, len(lists))
    assert fuse(lists, mode, weights=weights)[0].id == star


@given(rankings_st, a_ranking(), st.sampled_from(SUM_MODES))
def test_adding_a_list_that_agrees_never_removes_the_top_doc(rankings, extra, mode):
    """If ``d`` is the fused top and in every list, a new list that puts ``d`` first keeps it."""
    fused = fuse(rankings, mode)
    if not fused:
        return
    top = fused[0].id
    if not all(any(h.id == top for h in r) for r in rankings):
        return
    rest = [h for h in extra if h.id != top]
    first = (rest[0].score + 1.0) if rest else 1.0
    new = [Hit(Doc(top, "top"), first, 1), *rest]
    assert fuse([*rankings, new], mode)[0].id == top


@given(rankings_st, st.lists(weights_st, max_size=4), modes_st, st.integers(1, 20))
def test_output_invariants(rankings, raw_weights, mode, limit):
    weights = weights_for(raw_weights, len(rankings))
    fused = fuse(rankings, mode, weights=weights)
    assert [h.rank for h in fused] == list(range(1, len(fused) + 1))
    assert all(a.score >= b.score for a, b in zip(fused, fused[1:]))
    assert len({h.id for h in fused}) == len(fused)
    expected_ids = {h.id for r, w in zip(rankings, weights) if w > 0 for h in r}
    assert {h.id for h in fused} == expected_ids
    for h in fused:
        info = h.explanation["fusion"]
        assert info["mode"] == mode.value and info["score"] == h.score
        assert info["best_rank"] == min(s["rank"] for s in info["sources"])
        assert all(weights[s["index"]] > 0 for s in info["sources"])
    assert fuse(rankings, mode, weights=weights, limit=limit) == fused[:limit]


@given(rankings_st, modes_st, st.sampled_from(["id", "content"]))
def test_inputs_are_never_mutated(rankings, mode, dedup):
    before = [[(h.doc, h.score, h.rank, dict(h.explanation)) for h in r] for r in rankings]
    copies = [list(r) for r in rankings]
    fused = fuse(rankings, mode, dedup=dedup)
    assert [list(r) for r in rankings] == copies
    assert [[(h.doc, h.score, h.rank, dict(h.explanation)) for h in r] for r in rankings] == before
    originals = {id(h) for r in rankings for h in r}
    assert not any(id(h) in originals for h in fused)


@given(rankings_st, st.lists(weights_st, max_size=4), st.floats(0.5, 200.0))
def test_rrf_matches_the_formula(rankings, raw_weights, k):
    weights = weights_for(raw_weights, len(rankings))
    terms: dict[str, list[float]] = defaultdict(list)
    for ranking, w in zip(rankings, weights):
        if w == 0:
            continue
        seen = set()
        for position, hit in enumerate(ranking, 1):
            if hit.id not in seen:
                seen.add(hit.id)
                terms[hit.id].append(w / (k + position))
    expected = {d: math.fsum(t) for d, t in terms.items()}
    assert id_scores(reciprocal_rank_fusion(rankings, k_rrf=k, weights=weights)) == expected


@given(rankings_st, modes_st, st.data())
def test_duplicates_appended_to_a_list_change_nothing(rankings, mode, data):
    i = data.draw(st.integers(0, len(rankings) - 1))
    if not rankings[i]:
        return
    dupes = data.draw(st.lists(st.sampled_from(rankings[i]), min_size=1, max_size=3))
    tail_score = rankings[i][-1].score
    # Appended copies score at most the list's last score, so the list stays well ordered;
    # their score is ignored: a duplicate counts once, at its best (first) position.
    padded = [Hit(h.doc, tail_score, 0) for h in dupes]
    changed = [*rankings[:i], [*rankings[i], *padded], *rankings[i + 1:]]
    assert [(h.id, h.score) for h in fuse(changed, mode)] == \
        [(h.id, h.score) for h in fuse(rankings, mode)]


texts_st = st.sampled_from(["Wing lift", "wing  LIFT", "bread", "Bread\n", "soil", ""])


@given(st.lists(st.lists(st.tuples(st.sampled_from(DOC_IDS[:6]), texts_st), max_size=6),
                min_size=1, max_size=3), modes_st)
def test_content_dedup_leaves_one_doc_per_text(raw, mode):
    text_of: dict[str, str] = {}
    rankings = []
    for lst in raw:
        hits = []
        for r, (doc_id, text) in enumerate(lst, 1):
            text = text_of.setdefault(doc_id, text)  # one text per id, like a real index
            hits.append(Hit(Doc(doc_id, text), 1.0 / r, r))
        rankings.append(hits)
    fused = fuse(rankings, mode, dedup="content")
    non_blank = [normalized_text_hash(h.doc.text) for h in fused if h.doc.text.strip()]
    assert len(non_blank) == len(set(non_blank))
    assert len({h.id for h in fused}) == len(fused)
    every_text = {normalized_text_hash(h.doc.text) for r in rankings for h in r
                  if h.doc.text.strip()}
    assert set(non_blank) == every_text
    blank_ids = {h.id for r in rankings for h in r if not h.doc.text.strip()}
    assert {h.id for h in fused if not h.doc.text.strip()} == blank_ids


@pytest.mark.parametrize("mode", ALL_MODES)
def test_single_list_keeps_its_order(mode):
    ranking = [Hit(Doc(f"d{i}", ""), 10.0 - i, i + 1) for i in range(6)]
    assert [h.id for h in fuse([ranking], mode)] == [h.id for h in ranking]
