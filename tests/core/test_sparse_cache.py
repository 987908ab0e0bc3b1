"""`SparseEmbeddingCache`: each distinct text encoded once per model identity, saved safely.

It keys texts as the dense `EmbeddingCache` does (the same `text_key` and model identity
rule), so these tests pin the sparse side's own behaviour: copies out, checked weights in,
a round trip that keeps every float32 weight, and loads that refuse damaged files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from index_tamper import files_of, rehash

from hybrid_retrievers import IndexFormatError
from hybrid_retrievers.sparse import SparseEmbeddingCache
from hybrid_retrievers.vector import EmbeddingCache, text_key


class BagOfWords:
    """A sparse embedder that counts the texts it encodes."""

    model_id = "bag-of-words"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[dict[str, float]]:
        self.texts.extend(texts)
        out = []
        for t in texts:
            v: dict[str, float] = {}
            for w in t.lower().split():
                v[w] = v.get(w, 0.0) + 0.5
            out.append(v)
        return out


def test_each_distinct_text_is_encoded_once_per_identity() -> None:
    cache, emb = SparseEmbeddingCache(), BagOfWords()
    first = cache.embed(emb, ["a cat", "a dog", "a cat"])
    assert emb.texts == ["a cat", "a dog"]
    assert first == [{"a": 0.5, "cat": 0.5}, {"a": 0.5, "dog": 0.5}, {"a": 0.5, "cat": 0.5}]
    assert cache.embed(emb, ["a dog", "an owl"])[0] == first[1]
    assert emb.texts == ["a cat", "a dog", "an owl"]
    assert (cache.hits, cache.misses, len(cache)) == (1, 3, 3)
    cache.embed(emb, ["a cat"], model_id="another")
    assert emb.texts[-1] == "a cat" and cache.model_ids == ["another", "bag-of-words"]
    cache.clear("another")
    assert cache.model_ids == ["bag-of-words"]


def test_returned_vectors_are_copies() -> None:
    cache = SparseEmbeddingCache()
    out = cache.embed(BagOfWords(), ["a cat", "a cat"])
    out[0]["cat"] = 7.0
    assert out[1]["cat"] == 0.5  # a repeated text gets its own dict
    assert cache.get_many("bag-of-words", ["a cat"]) == [{"a": 0.5, "cat": 0.5}]


def test_zero_weights_are_dropped_and_bad_ones_refused() -> None:
    cache = SparseEmbeddingCache()
    assert cache.encode("m", ["x"], lambda ts: [{"x": 1, "y": 0.0}]) == [{"x": 1.0}]
    for bad, error in (({"x": -1.0}, ValueError), ({"x": float("nan")}, ValueError),
                       ({"x": float("inf")}, ValueError), ({"": 1.0}, TypeError),
                       ({"x": "1"}, TypeError), (["x"], TypeError)):
        with pytest.raises(error, match=r"encoded vector 0 \(text 'y'\)"):
            cache.encode("m", ["y"], lambda ts, bad=bad: [bad])
    with pytest.raises(ValueError, match="returned 0 sparse vectors for 1 texts"):
        cache.encode("m", ["z"], lambda ts: [])
    assert cache.size("m") == 1  # nothing bad was kept


def test_bad_arguments_are_refused() -> None:
    cache = SparseEmbeddingCache()
    with pytest.raises(TypeError, match="wrap it in a list"):
        cache.embed(BagOfWords(), "a cat")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        cache.embed(BagOfWords(), ["a", 3])
    with pytest.raises(TypeError, match="embed_documents"):
        cache.embed(object(), ["a"])

    class Anonymous:
        def embed_documents(self, texts: list[str]) -> list[dict[str, float]]:
            return [{} for _ in texts]

    with pytest.raises(ValueError, match="model_id"):
        cache.embed(Anonymous(), ["a"])
    with pytest.raises(ValueError, match="one {token: weight} mapping per text"):
        cache.put_many("m", ["a", "b"], [{"a": 1.0}])


def test_save_and_load_keep_every_weight(tmp_path: Path) -> None:
    cache = SparseEmbeddingCache()
    cache.put_many("m1", ["a b", "", "c"], [{"a": 0.1, "b": 2.5}, {}, {"c": 1e-7}])
    cache.put_many("m2", ["a b"], [{"##ing": float(np.float32(0.3))}])
    cache.save(tmp_path / "c")
    loaded = SparseEmbeddingCache.load(tmp_path / "c")
    assert loaded.model_ids == ["m1", "m2"] and len(loaded) == 4
    got = loaded.get_many("m1", ["a b", "", "c"])
    assert got[1] == {} and got[2] == {"c": float(np.float32(1e-7))}
    assert got[0] == {"a": float(np.float32(0.1)), "b": 2.5}
    assert loaded.get_many("m2", ["a b"]) == [{"##ing": float(np.float32(0.3))}]
    # The dense cache's loader refuses it (and the other way round): another kind.
    with pytest.raises(IndexFormatError):
        EmbeddingCache.load(tmp_path / "c")


def _saved(tmp_path: Path) -> Path:
    cache = SparseEmbeddingCache()
    cache.put_many("m", ["a", "b"], [{"x": 1.0}, {"y": 2.0, "x": 0.5}])
    cache.save(tmp_path / "c")
    return tmp_path / "c"


def test_load_refuses_damaged_files(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    weights = files_of(path) / "weights_0.npy"
    raw = bytearray(weights.read_bytes())
    raw[-1] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(IndexFormatError, match="weights_0.npy"):
        SparseEmbeddingCache.load(path)
    with pytest.raises(IndexFormatError):
        SparseEmbeddingCache.load(tmp_path / "missing")


@pytest.mark.parametrize(("name", "value", "match"), [
    ("weights_0", np.array([1.0, -2.0, 0.5], np.float32), "finite and > 0"),
    ("tokens_0", np.array([0, 1, 7], np.int32), "outside the vocabulary"),
    ("tokens_0", np.array([0, 1, 1], np.int32), "repeats a token"),
    ("indptr_0", np.array([0, 2, 1], np.int64), "expected 1 rows|never decrease"),
    ("vocabulary_0", ["x", "x"], "distinct"),
])
def test_load_refuses_consistent_forgeries(tmp_path: Path, name: str, value: object,
                                           match: str) -> None:
    path = _saved(tmp_path)
    folder = files_of(path)
    if isinstance(value, np.ndarray):
        np.save(folder / f"{name}.npy", value, allow_pickle=False)
    else:
        (folder / f"{name}.json").write_text(json.dumps(value))
    rehash(path)  # checksums agree: only the structural checks can catch it
    with pytest.raises(IndexFormatError, match=match):
        SparseEmbeddingCache.load(path)


def test_keys_are_the_dense_caches_keys() -> None:
    cache = SparseEmbeddingCache()
    cache.put_many("m", ["é"], [{"e": 1.0}])
    assert list(cache._stores["m"]) == [text_key("é")]
    assert json.dumps(text_key("é"))  # a plain 32-hex str
