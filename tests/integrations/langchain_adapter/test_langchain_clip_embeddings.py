"""`ClipEmbeddings` in LangChain's own multimodal vector store (langchain_chroma, in
memory) and in our retrievers, with the tiny locally trained CLIP (tests/tiny_clip.py)."""

from __future__ import annotations

import base64
import doctest
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("PIL.Image")

from langchain_hybrid_retrievers import ClipEmbeddings, DenseRetriever
from langchain_hybrid_retrievers import clip as clip_module
from langchain_hybrid_retrievers.embeddings import LangChainEmbedder

from hybrid_retrievers import VectorIndex
from hybrid_retrievers.images import ImageError
from hybrid_retrievers.models import ClipEmbedder


@pytest.fixture(scope="module")
def embeddings(tiny_clip_path: str) -> ClipEmbeddings:
    return ClipEmbeddings(tiny_clip_path, device="cpu")



@pytest.fixture()
def store(embeddings: ClipEmbeddings) -> Any:
    chroma = pytest.importorskip("langchain_chroma", reason="the [chroma] extra is not installed")
    store = chroma.Chroma(f"clip-{uuid.uuid4().hex}", embedding_function=embeddings)
    yield store
    store.delete_collection()


def test_chroma_holds_text_and_images_in_one_space(store, clip_squares, clip_query) -> None:
    ids = store.add_images([str(p) for p in clip_squares],
                           metadatas=[{"colour": p.stem, "type": "image"} for p in clip_squares])
    store.add_texts(["yellow", "purple"], metadatas=[{"type": "text"}] * 2)
    assert len(store.get()["ids"]) == 5

    top = store.similarity_search("red", k=1)[0]  # text to image
    assert top.metadata == {"colour": "red", "type": "image"}
    assert top.page_content == base64.b64encode(clip_squares[0].read_bytes()).decode()
    assert next(d.metadata["colour"] for d in store.similarity_search("green", k=3)
                if d.metadata["type"] == "image") == "green"
    by_image = store.similarity_search_by_image(clip_query, k=2)  # image to image
    assert by_image[0].metadata["colour"] == "blue" and by_image[0].id == ids[1]
    # the documented stand-in for similarity_search_by_image_with_relevance_score
    vector = store.embeddings.embed_image([clip_query])[0]
    (nearest, distance), = store.similarity_search_by_vector_with_relevance_scores(vector, k=1)
    assert nearest.id == ids[1] and distance < 0.5
    assert store.similarity_search("purple", k=1)[0].page_content == "purple"  # text to text


def test_embed_image_is_the_core_embedder(embeddings, clip_squares) -> None:
    uris = [str(p) for p in clip_squares]
    vectors = embeddings.embed_image(uris=uris)
    assert isinstance(vectors, list) and all(isinstance(v, float) for v in vectors[0])
    assert np.allclose(vectors, embeddings.clip.embed_images(uris), atol=1e-6)
    # data URIs and bytes are images too; a path given as a text query stays text
    data_uri = "data:image/png;base64," + base64.b64encode(clip_squares[0].read_bytes()).decode()
    assert np.allclose(embeddings.embed_image([data_uri, clip_squares[0].read_bytes()]),
                       [vectors[0], vectors[0]], atol=1e-5)
    assert not np.allclose(embeddings.embed_query(uris[0]), vectors[0], atol=1e-3)
    assert np.allclose(embeddings.embed_documents(["red"])[0], embeddings.embed_query("red"))


async def test_async_methods_match(embeddings, clip_squares) -> None:
    uris = [str(p) for p in clip_squares]
    assert await embeddings.aembed_image(uris) == embeddings.embed_image(uris)
    assert await embeddings.aembed_query("red") == embeddings.embed_query("red")
    assert await embeddings.aembed_documents(["red"]) == embeddings.embed_documents(["red"])


def test_a_bad_image_is_refused_by_name_and_the_store_is_unchanged(
    store, clip_squares, tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png at all")
    with pytest.raises(ImageError, match="broken.png"):
        store.add_images([str(clip_squares[0]), str(broken)])
    assert store.get()["ids"] == []
    with pytest.raises(TypeError, match="one image|list"):
        store.embeddings.embed_image(str(clip_squares[0]))


def test_identity_and_our_retrievers_use_the_core_embedder(
    embeddings, clip_squares, tiny_clip_path: str, tmp_path: Path,
) -> None:
    assert embeddings.model_name == tiny_clip_path == embeddings.clip.model_id
    assert LangChainEmbedder(embeddings).model_id == f"ClipEmbeddings({tiny_clip_path})"
    # Our retrievers unwrap it: a saved CLIP index loads with it (the same identity).
    index = VectorIndex.from_images([str(p) for p in clip_squares], embedder=embeddings.clip,
                                    metadatas=[{"colour": p.stem} for p in clip_squares])
    index.save(tmp_path / "gallery")
    retriever = DenseRetriever.load_local(tmp_path / "gallery", embeddings, k=1)
    assert retriever.invoke("blue")[0].metadata["colour"] == "blue"


def test_construction_errors(embeddings, tiny_clip_path: str) -> None:
    shared = ClipEmbeddings(embeddings.clip)
    assert shared.clip is embeddings.clip
    with pytest.raises(TypeError, match=r"\['device'\].*ClipEmbedder given"):
        ClipEmbeddings(embeddings.clip, device="cpu")
    with pytest.raises(TypeError, match="model must be a ClipEmbedder"):
        ClipEmbeddings(3)  # type: ignore[arg-type]
    assert isinstance(ClipEmbeddings(Path(tiny_clip_path)).clip, ClipEmbedder)
    assert "ClipEmbeddings(ClipEmbedder(" in repr(shared)


def test_docstring_examples() -> None:
    assert doctest.testmod(clip_module).failed == 0
