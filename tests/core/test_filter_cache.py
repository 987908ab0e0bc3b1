"""Equality-filter masks are cached by value, per index version, so a repeated filter
costs no scan and an edit never serves a stale mask."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, VectorIndex
from hybrid_retrievers.filters import filter_key
from hybrid_retrievers.models import HashingEmbedder


@dataclass(frozen=True)
class Tag:
    name: str
    version: int = field(repr=False)  # equal reprs, unequal values


def _indexes(metadatas):  # type: ignore[no-untyped-def]
    texts = [f"cat v{i}" for i in range(len(metadatas))]
    ids = [f"v{i}" for i in range(len(metadatas))]
    return [
        BM25Index.from_texts(texts, ids=ids, metadatas=metadatas),
        VectorIndex.from_texts(texts, ids=ids, metadatas=metadatas, embedder=HashingEmbedder(16)),
    ]


@pytest.mark.parametrize("kind", [0, 1], ids=["bm25", "vector"])
def test_values_with_equal_reprs_get_their_own_masks(kind: int) -> None:
    index = _indexes([{"tag": Tag("t", 1)}, {"tag": Tag("t", 2)}])[kind]
    assert repr(Tag("t", 1)) == repr(Tag("t", 2))
    assert [h.id for h in index.search("cat", k=5, filter={"tag": Tag("t", 1)})] == ["v0"]
    assert [h.id for h in index.search("cat", k=5, filter={"tag": Tag("t", 2)})] == ["v1"]


@pytest.mark.parametrize("kind", [0, 1], ids=["bm25", "vector"])
def test_equal_but_differently_typed_values_and_unhashable_values(kind: int) -> None:
    index = _indexes([{"g": 1, "tags": ["a"]}, {"g": 2.5, "tags": ["b"]}, {"g": True}])[kind]
    assert sorted(h.id for h in index.search("cat", k=5, filter={"g": 1})) == ["v0", "v2"]
    assert sorted(h.id for h in index.search("cat", k=5, filter={"g": True})) == ["v0", "v2"]
    assert [h.id for h in index.search("cat", k=5, filter={"g": 2.5})] == ["v1"]
    # Unhashable values are compared per search, never cached under a lossy key.
    assert [h.id for h in index.search("cat", k=5, filter={"tags": ["b"]})] == ["v1"]
    assert [h.id for h in index.search("cat", k=5, filter={"tags": ["a"]})] == ["v0"]


@pytest.mark.parametrize("kind", [0, 1], ids=["bm25", "vector"])
def test_a_mask_never_outlives_its_index_version(kind: int) -> None:
    index = _indexes([{"g": 1}, {"g": 0}])[kind]
    assert [h.id for h in index.search("cat", k=5, filter={"g": 1})] == ["v0"]
    index.add(["cat v9"], ids=["v9"], metadatas=[{"g": 1}])
    assert sorted(h.id for h in index.search("cat", k=5, filter={"g": 1})) == ["v0", "v9"]
    index.delete(["v0"])
    assert [h.id for h in index.search("cat", k=5, filter={"g": 1})] == ["v9"]


def test_filter_key() -> None:
    assert filter_key({"a": 1, "b": "x"}) == filter_key({"b": "x", "a": 1})
    assert filter_key({"a": 1}) != filter_key({"a": 1.0}) != filter_key({"a": True})
    assert filter_key({"t": Tag("t", 1)}) != filter_key({"t": Tag("t", 2)})
    assert filter_key({"a": [1]}) is None and filter_key({"a": np.zeros(2)}) is None
