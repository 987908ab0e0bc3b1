"""SparseIndex save/load: round trips, mmap, the model identity, tampering."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybrid_retrievers import IndexFormatError, SparseIndex
from hybrid_retrievers.models import HashingSparseEmbedder

from index_tamper import files_of, rehash

TEXTS = ["wings generate lift", "cats sleep all day", "a wing of the house", "thin wings drag"]
IDS = ["w1", "c1", "h1", "w2"]


def built() -> SparseIndex:
    return SparseIndex.from_texts(TEXTS, IDS, [{"n": i} for i in range(4)],
                                  embedder=HashingSparseEmbedder())


def hits(index: SparseIndex, query: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in index.search(query, k=10)]


@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip_keeps_hits_metadata_and_model(tmp_path: Path, mmap: bool) -> None:
    index = built()
    index.save(tmp_path / "idx")
    loaded = SparseIndex.load(tmp_path / "idx", HashingSparseEmbedder(), mmap=mmap, verify=mmap)
    for q in ["wings", "cats house", "drag lift"]:
        assert hits(loaded, q) == hits(index, q)
    assert loaded.get("c1").metadata == {"n": 1}
    assert loaded.model_id == index.model_id == HashingSparseEmbedder().model_id
    assert loaded.vocabulary_size == index.vocabulary_size
    loaded.add(["wings again"], ["w3"])  # an edit after a memory-mapped load
    assert "w3" in [h.id for h in loaded.search("wings")]


def test_load_without_embedder_searches_vectors_and_keeps_model_id(tmp_path: Path) -> None:
    built().save(tmp_path / "idx")
    loaded = SparseIndex.load(tmp_path / "idx")
    assert loaded.model_id == HashingSparseEmbedder().model_id
    assert loaded.search_vector({"cats": 1.0})[0].id == "c1"
    with pytest.raises(ValueError, match="search_vector"):
        loaded.search("cats")
    loaded.save(tmp_path / "again")  # the recorded model id survives another save
    assert SparseIndex.load(tmp_path / "again").model_id == HashingSparseEmbedder().model_id


def test_model_id_mismatch_names_both(tmp_path: Path) -> None:
    built().save(tmp_path / "idx")
    with pytest.raises(ValueError, match=r"prefix=4.*prefix=3"):
        SparseIndex.load(tmp_path / "idx", HashingSparseEmbedder(prefix=3))


def test_a_bm25_directory_is_refused(tmp_path: Path) -> None:
    from hybrid_retrievers import BM25Index

    BM25Index.from_texts(TEXTS).save(tmp_path / "bm25")
    with pytest.raises(IndexFormatError):
        SparseIndex.load(tmp_path / "bm25")


def test_tampered_weights_are_refused(tmp_path: Path) -> None:
    built().save(tmp_path / "idx")
    target = files_of(tmp_path / "idx") / "postings_weights.npy"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="postings_weights"):
        SparseIndex.load(tmp_path / "idx")


@pytest.mark.parametrize("forged", [-1.0, 3e38])  # negative; beyond MAX_IMPACT
def test_bad_weights_with_valid_checksums_are_refused(tmp_path: Path,
                                                            forged: float) -> None:
    built().save(tmp_path / "idx")
    target = files_of(tmp_path / "idx") / "postings_weights.npy"
    weights = np.load(target)
    weights[0] = forged
    np.save(target, weights)
    rehash(tmp_path / "idx")  # a consistent forgery: only the structural check can see it
    with pytest.raises(IndexFormatError, match="finite float32 values > 0"):
        SparseIndex.load(tmp_path / "idx")
    loaded = SparseIndex.load(tmp_path / "idx", mmap=True)  # mmap skips per-posting checks...
    assert len(loaded) == 4
    with pytest.raises(IndexFormatError, match="finite float32 values > 0"):
        SparseIndex.load(tmp_path / "idx", mmap=True, verify=True)  # ...unless verify
