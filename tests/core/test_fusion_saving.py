"""`FusionSearcher.save` / `FusionSearcher.load`: same hits after a round trip, clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpora import CORPUS, WING_QUERY
from hybrid_retrievers import BM25Index, FusionSearcher
from hybrid_retrievers.fusion import FilteredSource, lexical_boost_rule
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.persistence import IndexFormatError, current_files

TEXTS = [t for _, t, _ in CORPUS]
IDS = [i for i, _, _ in CORPUS]
METAS = [m for *_, m in CORPUS]
QUERIES = [WING_QUERY, "bread", "boundary layer transition", "cats"]


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(dimension=64)


def scored(searcher: FusionSearcher, k: int = 6) -> list[list[tuple[str, float | None]]]:
    return [[(h.id, h.score) for h in searcher.search(q, k)] for q in QUERIES]


def test_round_trip_gives_the_same_hits_scores_and_settings(tmp_path: Path, embedder) -> None:
    hybrid = FusionSearcher.hybrid(TEXTS, embedder, IDS, METAS, bm25={"k1": 1.2},
                                   mode="relative_score", weights=[2, 1], fetch_k=9,
                                   max_workers=1)
    hybrid.save(tmp_path / "hybrid")
    loaded = FusionSearcher.load(tmp_path / "hybrid", embedder)
    assert scored(loaded) == scored(hybrid)
    assert loaded.names == ("bm25", "dense") and loaded.fetch_k == 9
    assert loaded.plan.weights == (2.0, 1.0) and loaded.plan.mode.value == "relative_score"
    assert loaded.searchers[0].k1 == 1.2
    hit, again = hybrid.search(WING_QUERY, 1)[0], loaded.search(WING_QUERY, 1)[0]
    assert again.explanation == hit.explanation and again.doc == hit.doc
    # Constructor arguments given to load replace the saved ones.
    assert FusionSearcher.load(tmp_path / "hybrid", embedder, mode="rrf").plan.mode.value == "rrf"
    hybrid.save(tmp_path / "hybrid")  # saving again over the folder is fine


def test_nested_and_unnamed_fusions_round_trip(tmp_path: Path, embedder) -> None:
    inner = FusionSearcher.hybrid(TEXTS, embedder, IDS)
    outer = FusionSearcher([inner, BM25Index.from_texts(TEXTS[:5], IDS[:5])], k_rrf=30)
    outer.save(tmp_path / "nested")
    loaded = FusionSearcher.load(tmp_path / "nested", embedder)
    assert scored(loaded) == scored(outer)
    assert loaded.names == (0, 1) and isinstance(loaded.searchers[0], FusionSearcher)


def test_bm25_only_needs_no_embedder_and_a_dense_child_does(tmp_path: Path, embedder) -> None:
    lexical = FusionSearcher([BM25Index.from_texts(TEXTS, IDS), BM25Index.from_texts(TEXTS, IDS)])
    lexical.save(tmp_path / "lexical")
    assert scored(FusionSearcher.load(tmp_path / "lexical")) == scored(lexical)
    FusionSearcher.hybrid(TEXTS, embedder, IDS).save(tmp_path / "hybrid")
    with pytest.raises(ValueError, match=r"pass embedder= .*FusionSearcher.load"):
        FusionSearcher.load(tmp_path / "hybrid")


def test_a_callable_weights_rule_must_be_given_back(tmp_path: Path, embedder) -> None:
    rule = lexical_boost_rule()
    hybrid = FusionSearcher.hybrid(TEXTS, embedder, IDS, weights=rule)
    hybrid.save(tmp_path / "rule")
    with pytest.raises(ValueError, match="callable weights rule.*weights="):
        FusionSearcher.load(tmp_path / "rule", embedder)
    loaded = FusionSearcher.load(tmp_path / "rule", embedder, weights=rule)
    assert scored(loaded) == scored(hybrid)


def test_a_child_that_cannot_be_saved_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    index = BM25Index.from_texts(TEXTS, IDS, METAS)
    fused = FusionSearcher([index, FilteredSource(index, {"topic": "aero"})])
    with pytest.raises(TypeError, match=r"cannot save child 1 \(FilteredSource\)"):
        fused.save(tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_foreign_corrupt_and_swapped_folders_are_refused(tmp_path: Path, embedder) -> None:
    with pytest.raises(IndexFormatError, match="no index directory"):
        FusionSearcher.load(tmp_path / "nothing", embedder)
    BM25Index.from_texts(TEXTS, IDS).save(tmp_path / "bm25")
    with pytest.raises(IndexFormatError, match="holds a 'bm25' index, not 'fusion'"):
        FusionSearcher.load(tmp_path / "bm25", embedder)

    FusionSearcher.hybrid(TEXTS, embedder, IDS).save(tmp_path / "hybrid")
    version = current_files(tmp_path / "hybrid")
    # A child swapped for another valid saved index.
    BM25Index.from_texts(TEXTS[:3], IDS[:3]).save(version / "child_0")
    with pytest.raises(IndexFormatError, match="child_0.*not the child saved with this fusion"):
        FusionSearcher.load(tmp_path / "hybrid", embedder)

    FusionSearcher.hybrid(TEXTS, embedder, IDS).save(tmp_path / "edited")
    manifest = current_files(tmp_path / "edited") / "manifest.json"
    data = json.loads(manifest.read_text())
    data["settings"]["k_rrf"] = 1.0
    manifest.write_text(json.dumps(data))
    with pytest.raises(IndexFormatError, match="corrupt or was edited"):
        FusionSearcher.load(tmp_path / "edited", embedder)
