"""`ClipEmbedding` as the ``image_embed_model`` of LlamaIndex's own
``MultiModalVectorStoreIndex`` (in-memory SimpleVectorStore, and Chroma), with the tiny
locally trained CLIP (tests/tiny_clip.py)."""

from __future__ import annotations

import base64
import doctest
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("PIL.Image")

from llama_index.core import Document, StorageContext
from llama_index.core.indices import MultiModalVectorStoreIndex
from llama_index.core.schema import ImageDocument, ImageNode
from llama_index.retrievers.hybrid import ClipEmbedding as NamespaceClipEmbedding
from llama_index_hybrid_retrievers import ClipEmbedding, DenseRetriever
from llama_index_hybrid_retrievers import clip as clip_module
from llama_index_hybrid_retrievers.embeddings import LlamaIndexEmbedder

from hybrid_retrievers import VectorIndex
from hybrid_retrievers.images import ImageError


@pytest.fixture(scope="module")
def clip(tiny_clip_path: str) -> ClipEmbedding:
    return ClipEmbedding(tiny_clip_path, device="cpu")



def _documents(squares: list[Path]) -> list[Any]:
    """An ImageDocument per square, and a text Document (what a folder reader gives)."""
    images = [ImageDocument(image_path=str(p), metadata={"colour": p.stem}) for p in squares]
    return [*images, Document(text="yellow", metadata={"colour": "text"})]


def _colours(results: list[Any]) -> list[str]:
    return [r.node.metadata["colour"] for r in results]


def _index(clip: ClipEmbedding, clip_squares: list[Path], **kwargs: Any) -> Any:
    # from_documents: its node parser turns each ImageDocument into an ImageNode.
    return MultiModalVectorStoreIndex.from_documents(
        _documents(clip_squares), embed_model=clip, image_embed_model=clip, **kwargs)


def test_multimodal_index_finds_images_by_text_and_by_image(clip, clip_squares, clip_query) -> None:
    retriever = _index(clip, clip_squares).as_retriever(similarity_top_k=1, image_similarity_top_k=3)
    assert _colours(retriever.text_to_image_retrieve("red"))[0] == "red"
    assert _colours(retriever.text_to_image_retrieve("green"))[0] == "green"
    by_image = retriever.image_to_image_retrieve(clip_query)
    assert _colours(by_image)[0] == "blue" and isinstance(by_image[0].node, ImageNode)
    assert by_image[0].score > by_image[1].score
    both = retriever.retrieve("yellow")  # the text store and the image store, one model
    assert both[0].node.text == "yellow" and len(both) == 4


async def test_async_retrieval_matches(clip, clip_squares, clip_query) -> None:
    retriever = _index(clip, clip_squares, use_async=True).as_retriever(image_similarity_top_k=3)
    sync = retriever.image_to_image_retrieve(clip_query)
    async_ = await retriever.aimage_to_image_retrieve(clip_query)
    assert [(r.node.node_id, round(r.score, 5)) for r in async_] == [
        (r.node.node_id, round(r.score, 5)) for r in sync]
    assert _colours(await retriever.atext_to_image_retrieve("red"))[0] == "red"
    assert await clip.aget_query_embedding("red") == clip.get_query_embedding("red")
    assert await clip.aget_text_embedding_batch(["red", "blue"]) == \
        clip.get_text_embedding_batch(["red", "blue"])


def test_in_node_images_and_the_core_embedder_agree(clip, clip_squares) -> None:
    path = str(clip_squares[0])
    in_node = ImageNode(image=base64.b64encode(clip_squares[0].read_bytes()).decode())
    vector = clip.get_image_embedding(path)
    assert np.allclose(clip.get_image_embedding(in_node.resolve_image()), vector, atol=1e-5)
    assert np.allclose(vector, clip.clip.embed_images([path])[0], atol=1e-6)
    batch = clip.get_image_embedding_batch([str(p) for p in clip_squares])
    assert np.allclose(batch[0], vector, atol=1e-6) and len(batch) == 3
    assert not np.allclose(clip.get_query_embedding(path), vector, atol=1e-3)  # text stays text


def test_chroma_as_the_image_store(clip, clip_squares, clip_query) -> None:
    chromadb = pytest.importorskip("chromadb", reason="the [chroma] extra is not installed")
    stores = pytest.importorskip("llama_index.vector_stores.chroma")
    client = chromadb.EphemeralClient()
    name = f"clip-{uuid.uuid4().hex}"
    collection = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"})
    try:
        context = StorageContext.from_defaults(
            image_store=stores.ChromaVectorStore(chroma_collection=collection))
        retriever = _index(clip, clip_squares, storage_context=context).as_retriever(
            image_similarity_top_k=3)
        assert collection.count() == 3
        assert _colours(retriever.text_to_image_retrieve("red"))[0] == "red"
        assert _colours(retriever.image_to_image_retrieve(clip_query))[0] == "blue"
    finally:
        client.delete_collection(name)


def test_a_bad_image_is_refused_by_name(clip, clip_squares, tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png at all")
    # (ImageDocument refuses it itself; an ImageNode reaches the model.)
    nodes = [ImageNode(image_path=str(path), metadata={"name": path.name})
             for path in (clip_squares[0], broken)]
    with pytest.raises(ImageError, match="broken.png"):
        MultiModalVectorStoreIndex(nodes, embed_model=clip, image_embed_model=clip)


def test_identity_and_our_retrievers_use_the_core_embedder(
    clip, clip_squares, tiny_clip_path: str, tmp_path: Path,
) -> None:
    assert clip.model_name == tiny_clip_path == clip.clip.model_id
    assert clip.embed_batch_size == clip.clip.batch_size
    assert LlamaIndexEmbedder(clip).model_id == f"ClipEmbedding({tiny_clip_path})"
    assert NamespaceClipEmbedding is ClipEmbedding
    index = VectorIndex.from_images([str(p) for p in clip_squares], embedder=clip.clip,
                                    metadatas=[{"colour": p.stem} for p in clip_squares])
    index.save(tmp_path / "gallery")
    retriever = DenseRetriever.from_persist_dir(tmp_path / "gallery", embed_model=clip,
                                                similarity_top_k=1)
    assert _colours(retriever.retrieve("blue")) == ["blue"]


def test_construction_errors(clip, tiny_clip_path: str) -> None:
    shared = ClipEmbedding(clip.clip, embed_batch_size=4)
    assert shared.clip is clip.clip and shared.embed_batch_size == 4
    with pytest.raises(TypeError, match=r"\['batch_size'\].*ClipEmbedder given"):
        ClipEmbedding(clip.clip, batch_size=8)
    with pytest.raises(TypeError, match="model must be a ClipEmbedder"):
        ClipEmbedding(3)  # type: ignore[arg-type]
    built = ClipEmbedding(Path(tiny_clip_path), batch_size=8, model_id="tiny-clip")
    assert (built.clip.batch_size, built.embed_batch_size, built.model_name) == (8, 8, "tiny-clip")


def test_docstring_examples() -> None:
    assert doctest.testmod(clip_module).failed == 0
