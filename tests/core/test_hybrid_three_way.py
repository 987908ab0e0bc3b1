"""The hybrid recipe with the learned sparse leg: any subset of BM25 / dense / sparse, the
default weights (one vote per family), provenance per leg, and save/load of the sparse leg.

Models: `HashingEmbedder` (dense) and `HashingSparseEmbedder` (sparse), deterministic and
dependency-free; the real splade-tiny leg is exercised by benchmarks/sparse_quality.py and
the adapters' real-model tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corpora import CORPUS, WING_QUERY
from hybrid_retrievers import BM25Index, FusionSearcher, SparseIndex, VectorIndex
from hybrid_retrievers.fusion import fuse, hybrid_weights
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder

TEXTS = [t for _, t, _ in CORPUS]
IDS = [i for i, _, _ in CORPUS]
METAS = [m for *_, m in CORPUS]
QUERIES = [WING_QUERY, "bread crust", "boundary layer separation", "tomato plants"]


@pytest.fixture
def dense() -> HashingEmbedder:
    return HashingEmbedder(dimension=64)


@pytest.fixture
def sparse() -> HashingSparseEmbedder:
    return HashingSparseEmbedder()


def ranked(searcher: FusionSearcher, k: int = 6) -> list[list[tuple[str, float]]]:
    return [[(h.id, h.score) for h in searcher.search(q, k)] for q in QUERIES]


def test_three_legs_are_built_named_and_weighed_one_vote_per_family(dense, sparse) -> None:
    three = FusionSearcher.hybrid(TEXTS, dense, IDS, METAS, sparse=sparse)
    assert three.names == ("bm25", "dense", "sparse")
    assert [type(c) for c in three.searchers] == [BM25Index, VectorIndex, SparseIndex]
    assert three.plan.weights == (0.5, 1.0, 0.5)
    assert three.searchers[2].get("bread-1").metadata == METAS[5]
    # The fused list is RRF over the legs' own lists with those weights.
    for q in QUERIES:
        lists = [c.search(q, three.plan.fetch_for(5, None)) for c in three.searchers]
        want = fuse(lists, "rrf", weights=[0.5, 1.0, 0.5], limit=5)
        assert [(h.id, h.score) for h in three.search(q, 5)] == [(h.id, h.score) for h in want]
    # Provenance names the sparse leg, with its rank and score.
    hit = three.search(WING_QUERY, 1)[0]
    sources = {s["source"]: s for s in hit.explanation["fusion"]["sources"]}
    assert set(sources) == {"bm25", "dense", "sparse"}
    sparse_hit = three.searchers[2].search(WING_QUERY, 20)
    rank = [h.id for h in sparse_hit].index(hit.id) + 1
    assert sources["sparse"]["rank"] == rank
    # Two-way is unchanged: 1:1, i.e. the constructor's default (no weights recorded).
    two = FusionSearcher.hybrid(TEXTS, dense, IDS)
    assert two.plan.weights is None and two.names == ("bm25", "dense")


@pytest.mark.parametrize(("legs", "kwargs"), [
    (("bm25", "sparse"), {"embedder": None}),
    (("dense", "sparse"), {"bm25": False}),
    (("sparse",), {"embedder": None, "bm25": False}),
    (("bm25",), {"embedder": None}),
])
def test_any_subset_of_legs(dense, sparse, legs, kwargs) -> None:
    kwargs = {"embedder": dense, **kwargs}
    searcher = FusionSearcher.hybrid(TEXTS, ids=IDS, sparse=sparse if "sparse" in legs else None,
                                     **kwargs)
    assert searcher.names == legs
    weights = tuple(hybrid_weights(legs))
    assert searcher.plan.weights == (None if set(weights) == {1.0} else weights)
    assert searcher.search("bread crust", 1)[0].id == "bread-3"


def test_explicit_weights_modes_and_sparse_options(dense, sparse) -> None:
    equal = FusionSearcher.hybrid(TEXTS, dense, IDS, sparse={"embedder": sparse, "batch_size": 2},
                                  weights=[1, 1, 1], mode="relative_score")
    assert equal.plan.weights == (1.0, 1.0, 1.0) and equal.plan.mode.value == "relative_score"
    assert len(equal.search(WING_QUERY, 3)) == 3


def test_bad_legs_are_refused(dense, sparse) -> None:
    with pytest.raises(ValueError, match="at least one leg"):
        FusionSearcher.hybrid(TEXTS, None, IDS, bm25=False)
    with pytest.raises(ValueError, match="no embedder"):
        FusionSearcher.hybrid(TEXTS, None, IDS, dense={"metric": "cosine"})
    with pytest.raises(TypeError, match="sparse must be a sparse model"):
        FusionSearcher.hybrid(TEXTS, dense, IDS, sparse="splade")
    with pytest.raises(TypeError, match="must name the model"):
        FusionSearcher.hybrid(TEXTS, dense, IDS, sparse={"batch_size": 4})
    with pytest.raises(TypeError, match="bm25 must be a mapping"):
        FusionSearcher.hybrid(TEXTS, dense, IDS, bm25=True)
    with pytest.raises(ValueError, match="legs must be distinct names"):
        hybrid_weights(["bm25", "splade"])


def test_save_and_load_keep_the_sparse_leg(tmp_path: Path, dense, sparse) -> None:
    three = FusionSearcher.hybrid(TEXTS, dense, IDS, METAS, sparse=sparse, fetch_k=9)
    three.save(tmp_path / "three")
    loaded = FusionSearcher.load(tmp_path / "three", dense, sparse_embedder=sparse)
    assert ranked(loaded) == ranked(three)
    assert loaded.names == three.names and loaded.plan.weights == (0.5, 1.0, 0.5)
    assert isinstance(loaded.searchers[2], SparseIndex)
    assert loaded.searchers[2].model_id == sparse.model_id
    with pytest.raises(ValueError, match=r"learned sparse child: pass sparse_embedder="):
        FusionSearcher.load(tmp_path / "three", dense)
    with pytest.raises(ValueError, match=r"holds vectors of model .*prefix=4.*prefix=3"):
        FusionSearcher.load(tmp_path / "three", dense,
                            sparse_embedder=HashingSparseEmbedder(prefix=3))
    # Sparse only: no dense model needed.
    FusionSearcher.hybrid(TEXTS, None, IDS, sparse=sparse).save(tmp_path / "lexical")
    lexical = FusionSearcher.load(tmp_path / "lexical", sparse_embedder=sparse)
    assert lexical.names == ("bm25", "sparse")
