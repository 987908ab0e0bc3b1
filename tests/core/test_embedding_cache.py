"""EmbeddingCache: keys, counters, identity rules and .npy + JSON persistence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from index_tamper import files_of

from hybrid_retrievers import IndexFormatError
from hybrid_retrievers.vector import EmbeddingCache, embed_texts, embedder_identity, text_key
from hybrid_retrievers.models import HashingEmbedder


def test_text_key_is_blake2b_of_utf8() -> None:
    import hashlib

    assert text_key("héllo") == hashlib.blake2b("héllo".encode(), digest_size=16).hexdigest()
    assert text_key("a") != text_key("a ")


def test_second_embed_makes_no_model_call() -> None:
    cache, emb = EmbeddingCache(), HashingEmbedder(dimension=16)
    first = cache.embed(emb, ["a cat", "a dog", "a cat"])
    assert emb.calls == 1 and emb.texts_embedded == 2
    again = cache.embed(emb, ["a dog", "a cat"])
    assert emb.calls == 1
    np.testing.assert_array_equal(again, first[[1, 0]])
    assert (cache.hits, cache.misses) == (2, 2)
    cache.embed(emb, ["a dog", "a bird"])
    assert emb.texts_embedded == 3 and len(cache) == 3


def test_models_do_not_share_vectors() -> None:
    cache = EmbeddingCache()
    a, b = HashingEmbedder(dimension=16), HashingEmbedder(dimension=16, seed=1)
    va = cache.embed(a, ["same text"])
    vb = cache.embed(b, ["same text"])
    assert b.calls == 1 and not np.allclose(va, vb)
    assert cache.model_ids == sorted([a.model_id, b.model_id])
    cache.clear(a.model_id)
    assert cache.size(a.model_id) == 0 and cache.size(b.model_id) == 1


def test_identity_rule() -> None:
    class Anonymous:
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return np.ones((len(texts), 3), dtype=np.float32)

    assert embedder_identity(HashingEmbedder(8)) == HashingEmbedder(8).model_id
    assert embedder_identity(Anonymous()) is None
    assert embedder_identity(Anonymous(), "my-model") == "my-model"
    with pytest.raises(ValueError, match="no model_id"):
        EmbeddingCache().embed(Anonymous(), ["x"])
    cache = EmbeddingCache()
    cache.embed(Anonymous(), ["x"], model_id="my-model")
    assert cache.size("my-model") == 1


def test_dimension_clash_within_one_identity_is_an_error() -> None:
    cache = EmbeddingCache()
    cache.put_many("m", ["a"], np.ones((1, 4)))
    with pytest.raises(ValueError, match="4-d vectors in this cache"):
        cache.put_many("m", ["b"], np.ones((1, 5)))


def test_bad_embedder_output_is_rejected() -> None:
    class Short:
        model_id = "short"

        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return np.ones((len(texts) - 1, 3))

    with pytest.raises(ValueError, match="one row per text"):
        embed_texts(Short(), ["a", "b"])
    with pytest.raises(TypeError, match="embed_documents"):
        embed_texts(object(), ["a"])
    with pytest.raises(TypeError, match="texts\\[1\\] must be a str"):
        embed_texts(HashingEmbedder(8), ["a", 3])  # type: ignore[list-item]
    assert embed_texts(HashingEmbedder(8), []).shape == (0, 0)


def test_save_and_load_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cache = EmbeddingCache()
    emb, other = HashingEmbedder(dimension=16), HashingEmbedder(dimension=8)
    texts = [f"text number {i}" for i in range(100)]
    cache.embed(emb, texts)
    cache.embed(other, texts[:5])
    cache.save(tmp_path / "cache")
    files = sorted(p.name for p in files_of(tmp_path / "cache").iterdir())
    assert all(f.endswith((".npy", ".json")) for f in files)
    manifest = json.loads((files_of(tmp_path / "cache") / "manifest.json").read_text())
    assert manifest["kind"] == "embedding-cache"
    loaded = EmbeddingCache.load(tmp_path / "cache")
    fresh = HashingEmbedder(dimension=16)
    out = loaded.embed(fresh, list(reversed(texts)))
    assert fresh.calls == 0
    np.testing.assert_array_equal(out, emb.embed_documents(list(reversed(texts))))
    assert loaded.size(other.model_id) == 5


def test_load_refuses_tampered_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cache = EmbeddingCache()
    cache.embed(HashingEmbedder(dimension=8), ["a", "b"])
    cache.save(tmp_path / "cache")
    (files_of(tmp_path / "cache") / "keys_0.json").write_text('["x"]')
    with pytest.raises(IndexFormatError):
        EmbeddingCache.load(tmp_path / "cache")


def test_a_text_repeated_in_one_call_is_stored_once() -> None:
    import numpy as np

    from hybrid_retrievers.vector import EmbeddingCache

    cache = EmbeddingCache()
    vectors = np.eye(3, dtype=np.float32)
    cache.put_many("m", ["same", "other", "same"], vectors)
    assert cache.size("m") == 2
    got, found = cache.get_many("m", ["same", "other"])
    assert found.all() and np.array_equal(got, vectors[:2])
