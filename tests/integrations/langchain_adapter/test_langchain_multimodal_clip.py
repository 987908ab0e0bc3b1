"""LangChain `MultimodalRetriever` / `ImageRetriever` with a real (tiny, locally trained)
CLIP model: `ClipEmbedder` and `VectorIndex.from_images` (tests/tiny_clip.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PIL.Image")

from hybrid_retrievers import BM25Index, VectorIndex  # noqa: E402
from langchain_hybrid_retrievers import ImageRetriever, MultimodalRetriever  # noqa: E402
from image_corpus import clip_gallery  # noqa: E402
from tiny_clip import COLOURS, square_image  # noqa: E402


@pytest.fixture(scope="module")
def gallery(tiny_clip_path: str, tmp_path_factory: pytest.TempPathFactory) -> VectorIndex:
    return clip_gallery(tiny_clip_path, tmp_path_factory.mktemp("gallery"))


def test_text_and_image_queries_reach_the_clip_vectors(gallery, tmp_path: Path) -> None:
    text = BM25Index.from_texts(["the red warning light means the queue is full"],
                                ids=["t1"], metadatas=[{"type": "text"}])
    retriever = MultimodalRetriever.from_components(text=text, images=gallery, k=3)
    plain = retriever.invoke("red")  # text leads; the CLIP route ranks the red image first
    assert plain[0].id == "t1"
    assert [d.metadata["colour"] for d in plain[1:]][:1] == ["red"]
    top = retriever.invoke("red photo")[0]  # a visual word: the image routes lead
    assert top.metadata["colour"] == "red" and top.metadata["type"] == "image"
    assert [s["source"] for s in top.metadata["fusion"]["sources"]] == ["images"]
    query = tmp_path / "query.png"  # another red square: not a copy of the indexed one
    square_image(COLOURS["red"], size=(40, 48), box=(0.6, 0.5, 0.5)).save(query)
    by_image = ImageRetriever.from_components(images=gallery, k=3).invoke(str(query))
    assert by_image[0].metadata["colour"] == "red"
    assert by_image[0].metadata["image"].endswith("red.png")
    assert retriever.invoke("", image=query)[0].id == by_image[0].id
