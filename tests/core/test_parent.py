"""Tests for `hybrid_retrievers.parent`: k distinct parents, provenance, auto-merge, edits, save/load."""

from __future__ import annotations

from pathlib import Path

import pytest

from index_tamper import files_of

from hybrid_retrievers import BM25Index, Doc, FusionSearcher, IndexFormatError, VectorIndex
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.parent import ParentChildSearcher, ParentStore, default_parent_fetch_k
from hybrid_retrievers.text import SentenceSplitter, split_parents

# Parent "wings" has many lift sentences, so a child-level top-k is dominated by it.
PARENTS = [
    Doc("wings", "Lift comes from the wing. The wing makes lift at speed. Lift grows with "
        "angle. More lift with flaps. Lift falls at stall. Lift and drag trade off.",
        {"topic": "aero"}),
    Doc("slats", "Slats add lift at low speed. They open at landing.", {"topic": "aero"}),
    Doc("bread", "Yeast makes bread rise. Steam gives a crust. Lift the loaf out hot.",
        {"topic": "cooking"}),
    Doc("soil", "Compost feeds the soil. Roots like loose soil.", {"topic": "garden"}),
]
SPLIT = SentenceSplitter(chunk_size=40, chunk_overlap=0)


def _searcher(**kwargs) -> ParentChildSearcher:
    return ParentChildSearcher.from_docs(PARENTS, splitter=SPLIT, **kwargs)


def test_k_counts_distinct_parents_even_when_one_parent_fills_fetch_k() -> None:
    # fetch_k=2 children would all come from "wings": the searcher must fetch more.
    s = _searcher(fetch_k=2)
    first_round = s.child_searcher.search("lift", 3)
    assert {h.doc.metadata["parent_id"] for h in first_round} == {"wings"}
    hits = s.search("lift", k=3)
    assert hits[0].id == "wings"
    assert len(hits) == 3 and len({h.id for h in hits}) == 3
    assert [h.rank for h in hits] == [1, 2, 3]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_parents_ranked_by_best_child_with_provenance() -> None:
    s = _searcher()
    children = s.child_searcher.search("lift", 100)
    best: dict[str, tuple[int, float]] = {}
    for rank, h in enumerate(children, 1):
        best.setdefault(h.doc.metadata["parent_id"], (rank, h.score))
    hits = s.search("lift", k=4)
    assert [h.id for h in hits] == list(best)
    for h in hits:
        info = h.explanation["parent"]
        assert info["merged"] is True
        assert h.score == pytest.approx(best[h.id][1]) == info["score"]
        assert info["best_rank"] == best[h.id][0]
        kids = info["children"]
        assert [c["rank"] for c in kids] == sorted(c["rank"] for c in kids)
        assert all(c["id"].startswith(h.id + ":") for c in kids)
        assert info["matched"] == len(kids) and info["n_children"] == len(s.children_of(h.id))
        assert info["fraction"] == pytest.approx(info["matched"] / info["n_children"])
        # The hit is the stored parent, text and metadata intact.
        assert h.doc == next(p for p in PARENTS if p.id == h.id)


def test_fewer_parents_when_fewer_match_and_no_zero_score_padding() -> None:
    hits = _searcher().search("compost", k=4)
    assert [h.id for h in hits] == ["soil"]
    assert _searcher().search("zzzz unknown", k=4) == []


def test_contract_k_query_and_determinism() -> None:
    s = _searcher()
    with pytest.raises(ValueError, match="k must be >= 1"):
        s.search("lift", k=0)
    with pytest.raises(ValueError, match="query"):
        s.search("  ")
    with pytest.raises(TypeError, match="query"):
        s.search(3)  # type: ignore[arg-type]
    assert s.search("lift", k=2) == s.search("lift", k=2)
    assert len(s.search("lift soil")) == 4  # default k
    assert default_parent_fetch_k(3) == 20 and default_parent_fetch_k(10) == 40


def test_filter_on_parent_metadata_applies_to_children() -> None:
    hits = _searcher().search("lift", k=4, filter={"topic": "cooking"})
    assert [h.id for h in hits] == ["bread"]


def test_auto_merge_returns_children_below_threshold() -> None:
    s = _searcher(merge_threshold=0.5)
    hits = s.search("slats landing lift", k=10)
    by_id = {h.id: h for h in hits}
    # Both "slats" children match: the parent is returned.
    assert "slats" in by_id and by_id["slats"].explanation["parent"]["merged"] is True
    # One of three "bread" children matches: that child comes back, not the parent.
    assert "bread" not in by_id
    bread_kids = [h for h in hits if h.doc.metadata.get("parent_id") == "bread"]
    assert bread_kids and all(h.explanation["parent"]["merged"] is False for h in bread_kids)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    # Per-call override: threshold 1.0 splits even more, default None always merges.
    assert all(h.explanation["parent"]["merged"] for h in _searcher().search("lift", k=4))
    with pytest.raises(ValueError, match="merge_threshold"):
        _searcher(merge_threshold=0.0)
    with pytest.raises(TypeError, match="merge_threshold"):
        _searcher(merge_threshold="half")


def test_add_and_delete_by_parent_id_update_children() -> None:
    s = _searcher()
    n_children = len(s.child_searcher)
    s.add([Doc("ribs", "Wing ribs keep the lift profile. Spars carry load.")])
    assert s.children_of("ribs") == ["ribs:0", "ribs:1"]
    assert "ribs" in [h.id for h in s.search("ribs spars", k=1)]
    s.delete(["wings", "ribs"])
    assert len(s.child_searcher) == n_children - len(split_parents([PARENTS[0]], SPLIT))
    assert "wings" not in s.parent_store and s.children_of("wings") == []
    assert all(h.id != "wings" for h in s.search("lift", k=4))
    with pytest.raises(KeyError, match="not present"):
        s.delete(["nope"])
    with pytest.raises(ValueError, match="already present"):
        s.add([Doc("slats", "again")])
    # add_texts gives content ids.
    (pid,) = s.add_texts(["Gluten traps gas in dough."])
    assert s.search("gluten", k=1)[0].id == pid


def test_fused_child_index_gets_adds_and_deletes_on_every_leaf() -> None:
    emb = HashingEmbedder(64)
    s = _searcher(embedder=emb)
    assert isinstance(s.child_searcher, FusionSearcher)
    bm25, dense = s.child_searcher.searchers
    assert isinstance(bm25, BM25Index) and isinstance(dense, VectorIndex)
    s.add([Doc("ribs", "Wing ribs keep the profile.")])
    assert "ribs:0" in bm25 and "ribs:0" in dense
    hit = s.search("wing ribs profile", k=1)[0]
    assert hit.id == "ribs"
    assert "fusion" in hit.explanation["parent"]["children"][0]["explanation"]
    s.delete(["ribs"])
    assert "ribs:0" not in bm25 and "ribs:0" not in dense


def test_existing_child_index_and_external_store() -> None:
    children = split_parents(PARENTS, SPLIT)
    store = ParentStore(PARENTS)
    s = ParentChildSearcher(BM25Index.from_docs(children), store, k=2)
    assert s.children_of("wings") == [c.id for c in children if c.metadata["parent_id"] == "wings"]
    assert len(s.search("lift")) == 2


def test_missing_parent_id_metadata_is_a_clear_error() -> None:
    s = ParentChildSearcher(BM25Index.from_texts(["lift"], ids=["x"]))
    with pytest.raises(ValueError, match="parent_id"):
        s.search("lift")


def test_bad_child_searcher_and_store() -> None:
    class SearchOnly:
        def search(self, query, k=10, *, filter=None):
            return []

    with pytest.raises(TypeError, match="add_docs"):
        ParentChildSearcher(SearchOnly())
    with pytest.raises(TypeError, match="search"):
        ParentChildSearcher(object())
    with pytest.raises(TypeError, match="parent_store"):
        ParentChildSearcher(BM25Index(), parent_store=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        ParentChildSearcher.from_docs([])


def test_parent_store_save_load_round_trip(tmp_path: Path) -> None:
    store = ParentStore(PARENTS)
    store.save(tmp_path / "store")
    loaded = ParentStore.load(tmp_path / "store")
    assert list(loaded) == list(store) and loaded.ids == [p.id for p in PARENTS]
    (files_of(tmp_path / "store") / "parents.jsonl").write_text("garbage\n")
    with pytest.raises(IndexFormatError):
        ParentStore.load(tmp_path / "store")
    with pytest.raises(IndexFormatError):
        ParentStore.load(tmp_path / "missing")


def test_searcher_save_load_round_trip(tmp_path: Path) -> None:
    s = _searcher(k=3)
    s.save(tmp_path / "pc")
    loaded = ParentChildSearcher.load(tmp_path / "pc", k=3)
    assert loaded.search("lift") == s.search("lift")
    assert loaded.children_of("wings") == s.children_of("wings")
    # Saving again over an earlier save works (atomic replace).
    s.delete(["wings"])
    s.save(tmp_path / "pc")
    assert "wings" not in [h.id for h in ParentChildSearcher.load(tmp_path / "pc").search("lift")]
    with pytest.raises(TypeError, match="BM25Index or VectorIndex"):
        _searcher(embedder=HashingEmbedder(16)).save(tmp_path / "fused")


def test_from_docs_into_an_existing_child_index_and_with_a_parent_splitter() -> None:
    # child_searcher=: the children go into the given (empty) index, as by add().
    index = BM25Index()
    s = ParentChildSearcher.from_docs(PARENTS, splitter=SPLIT, child_searcher=index, k=2)
    assert s.child_searcher is index and len(index) == len(split_parents(PARENTS, SPLIT))
    assert s.search("compost")[0].id == "soil"
    with pytest.raises(ValueError, match="not both"):
        ParentChildSearcher.from_docs(PARENTS, child_searcher=BM25Index(),
                                      child_index=BM25Index.from_docs)
    # parent_splitter=: documents are cut into parents "<doc id>:p<i>" with source_id.
    cut = ParentChildSearcher.from_docs(PARENTS, parent_splitter=SPLIT,
                                        splitter=SentenceSplitter(20, 0))
    hit = cut.search("compost", k=1)[0]
    assert hit.id == "soil:p0" and hit.doc.metadata == {"topic": "garden", "source_id": "soil"}


def test_result_items_are_small_dataclasses() -> None:
    from hybrid_retrievers.parent import ParentGroup, UnmergedChild
    from hybrid_retrievers.parent.grouping import group_hits

    s = _searcher()
    hits = s.child_searcher.search("lift", 100)
    items = group_hits(hits, None, {p.id: s.children_of(p.id) for p in PARENTS})
    assert all(isinstance(i, ParentGroup) for i in items)
    assert [i.best_rank for i in items] == sorted(i.best_rank for i in items)
    unmerged = group_hits(hits, 1.0, {"wings": ("a",) * 100})
    assert any(isinstance(i, UnmergedChild) and i.group.parent_id == "wings" for i in unmerged)


def test_one_round_when_refetch_is_false() -> None:
    # LangChain's rule: the parents of the top fetch_k children, however few they are.
    s = _searcher()
    first_round = s.child_searcher.search("lift", 3)
    named = list(dict.fromkeys(h.doc.metadata["parent_id"] for h in first_round))
    hits = s.search("lift", k=3, fetch_k=3, refetch=False)
    assert [h.id for h in hits] == named and len(named) < 3
    assert len(s.search("lift", k=3, fetch_k=3)) == 3  # refetching fills k


def test_add_with_precut_children_and_without_storing_parents() -> None:
    s = _searcher()
    parent = Doc("ribs", "Ribs shape the wing. Spars carry the load.")
    children = [Doc("ribs:a", "Ribs shape the wing.", {"parent_id": "ribs", "kind": "mine"}),
                Doc("ribs:b", "Spars carry the load.", {"parent_id": "ribs"})]
    with pytest.raises(ValueError, match="names parent 'other'"):
        s.add([parent], children=[Doc("x", "spars", {"parent_id": "other"})])
    assert "ribs" not in s.parent_store
    s.add([parent], children=children)
    assert s.children_of("ribs") == ["ribs:a", "ribs:b"]
    hit = s.search("spars load", k=1)[0]
    assert hit.id == "ribs" and hit.explanation["parent"]["children"][0]["id"] == "ribs:b"
    assert s.child_searcher.search("ribs shape", 1)[0].doc.metadata["kind"] == "mine"
    # Parents already stored (LangChain's add_to_docstore=False): only children indexed.
    store = ParentStore([Doc("keel", "The keel keeps the boat upright.")])
    t = ParentChildSearcher(BM25Index(), store, splitter=SPLIT)
    with pytest.raises(ValueError, match="already present"):
        t.add([Doc("keel", "The keel keeps the boat upright.")])
    t.add([Doc("keel", "The keel keeps the boat upright.")], store_parents=False)
    assert t.search("keel upright", k=1)[0].id == "keel" and len(store) == 1
    # Its children are known now: a second add is refused, the stored parent kept.
    with pytest.raises(ValueError, match="already present"):
        t.add([Doc("keel", "again")], store_parents=False)
    assert store.get("keel").text == "The keel keeps the boat upright."
