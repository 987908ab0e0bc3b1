"""LlamaIndex `MultimodalRetriever` with a real (tiny, locally trained) CLIP model:
`ClipEmbedder` and `VectorIndex.from_images` (tests/tiny_clip.py), through LlamaIndex's
multimodal retriever interface."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PIL.Image")

from llama_index.core.schema import ImageNode, QueryBundle  # noqa: E402

from hybrid_retrievers import VectorIndex  # noqa: E402
from llama_index_hybrid_retrievers import MultimodalRetriever  # noqa: E402
from image_corpus import clip_gallery  # noqa: E402
from tiny_clip import COLOURS, square_image  # noqa: E402


@pytest.fixture(scope="module")
def gallery(tiny_clip_path: str, tmp_path_factory: pytest.TempPathFactory) -> VectorIndex:
    return clip_gallery(tiny_clip_path, tmp_path_factory.mktemp("gallery"))


def test_clip_routes_through_the_multimodal_interface(gallery, tmp_path: Path) -> None:
    retriever = MultimodalRetriever.from_components(images=gallery, similarity_top_k=3)
    by_text = retriever.text_to_image_retrieve("blue")
    assert isinstance(by_text[0].node, ImageNode)
    assert by_text[0].node.metadata["colour"] == "blue"
    assert by_text[0].node.image_path.endswith("blue.png")
    query = tmp_path / "query.png"  # another blue square: not a copy of the indexed one
    square_image(COLOURS["blue"], size=(40, 48), box=(0.6, 0.5, 0.5)).save(query)
    similar = retriever.image_to_image_retrieve(str(query))
    assert similar[0].node.metadata["colour"] == "blue"
    fused = retriever.retrieve(QueryBundle(query_str="blue", image_path=str(query)))
    assert fused[0].node.node_id == similar[0].node.node_id
    assert [s["source"] for s in fused[0].node.metadata["fusion"]["sources"]] == ["images",
                                                                                  "image"]
