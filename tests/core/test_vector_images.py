"""`VectorIndex.from_images` / `add_images` / `search_image` with a numpy image embedder.

The embedder here (`ThumbnailEmbedder`) makes an image's vector from its 4x4 thumbnail, so
these tests check the index's image logic (ids, metadata, texts, batching, filters,
errors, persistence) exactly and fast, with Pillow and numpy only. The real CLIP route
(tiny trained CLIP, text to image) is in ``tests/models/test_clip.py``.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

pytest.importorskip("PIL")

from image_series import bar_chart, flow_diagram, gradient  # noqa: E402

from hybrid_retrievers import VectorIndex  # noqa: E402
from hybrid_retrievers.images import ImageError, image_id, load_image  # noqa: E402
from hybrid_retrievers.models import HashingEmbedder  # noqa: E402
from hybrid_retrievers.vector import images as vector_images  # noqa: E402


class ThumbnailEmbedder(HashingEmbedder):
    """Texts: hashed words (48-d); images: their 4x4 RGB thumbnail, centred (48-d)."""

    def __init__(self) -> None:
        super().__init__(dimension=48)
        self.image_calls: list[int] = []
        self.max_pixels = 10_000_000

    def embed_images(self, images: Any) -> np.ndarray:
        images = list(images)
        self.image_calls.append(len(images))
        out = []
        for image in images:
            pixels = np.asarray(load_image(image).image.resize((4, 4)), dtype=np.float32)
            out.append(pixels.ravel() / 255.0 - 0.5)
        return np.asarray(out, dtype=np.float32)


@pytest.fixture()
def pictures(tmp_path: Any) -> dict[str, str]:
    drawn = {"chart.png": bar_chart(), "flow.png": flow_diagram(),
             "dark.png": gradient((0, 0, 0), (80, 80, 80)),
             "warm.jpg": gradient((255, 0, 0), (255, 200, 0))}
    paths = {}
    for name, image in drawn.items():
        image.save(tmp_path / name)
        paths[name] = str(tmp_path / name)
    return paths


def test_image_documents_ids_metadata_and_texts(pictures: dict[str, str]) -> None:
    paths = list(pictures.values())
    metas = [{"kind": "chart", "type": "photo"}, {"caption": " a pipeline "}, None,
             {"title": "sunset colours", "image": "override"}]
    index = VectorIndex.from_images(paths, metadatas=metas, texts=[None, None, "night", None],
                                    embedder=ThumbnailEmbedder())
    docs = index.docs
    assert [d.id for d in docs] == [image_id(load_image(p)) for p in paths]
    assert [d.text for d in docs] == ["chart.png", "a pipeline", "night", "sunset colours"]
    chart = docs[0].metadata
    assert chart["type"] == "image" and chart["kind"] == "chart"  # type is not overridable
    assert chart["image"] == paths[0] and chart["image_format"] == "PNG"
    assert chart["image_size"] == [160, 120] and len(chart["image_sha256"]) == 64
    assert docs[3].metadata["image"] == "override" and docs[3].metadata["image_format"] == "JPEG"


def test_search_image_finds_the_same_and_the_nearest_image(pictures: dict[str, str]) -> None:
    index = VectorIndex.from_images(list(pictures.values()), embedder=ThumbnailEmbedder())
    for path in pictures.values():
        hit = index.search_image(path, k=1)[0]
        assert hit.id == image_id(load_image(path)) and hit.score == pytest.approx(1.0, abs=1e-5)
    # A bigger chart of other values is still nearest the chart.
    hits = index.search_image(bar_chart((4, 6, 6, 8, 3), size=(320, 240)), k=4)
    assert hits[0].doc.text == "chart.png"
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_every_image_input_kind_gives_the_same_hit(pictures: dict[str, str]) -> None:
    path = pictures["flow.png"]
    index = VectorIndex.from_images(list(pictures.values()), embedder=ThumbnailEmbedder())
    with open(path, "rb") as handle:
        data = handle.read()
    loaded = load_image(path)
    for source in (path, data, loaded.data_uri(), loaded, loaded.image):
        assert index.search_image(source, k=1)[0].doc.text == "flow.png"


def test_search_image_filter_and_text_search(pictures: dict[str, str]) -> None:
    metas = [{"kind": "chart"}, {"kind": "diagram"}, {"kind": "photo"}, {"kind": "photo"}]
    index = VectorIndex.from_images(list(pictures.values()), metadatas=metas,
                                    texts=["bar chart of sales", "flow diagram of steps",
                                           "dark gradient", "warm gradient"],
                                    embedder=ThumbnailEmbedder())
    hits = index.search_image(pictures["chart.png"], k=10, filter={"kind": "photo"})
    assert {h.doc.text for h in hits} == {"dark gradient", "warm gradient"}
    assert index.search_image(pictures["chart.png"], k=10, filter={"kind": "none"}) == []
    with pytest.raises(ValueError, match="k"):
        index.search_image(pictures["chart.png"], k=0)
    # Text queries go through embed_query as always (here: hashed words vs thumbnails).
    assert len(index.search("chart", k=2)) == 2


def test_images_are_loaded_and_embedded_in_batches(tmp_path: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_images, "IMAGE_BATCH", 3)
    embedder = ThumbnailEmbedder()
    images = [gradient((i * 30, 0, 0), (0, 0, i * 30)) for i in range(8)]
    index = VectorIndex.from_images(images, embedder=embedder)
    assert embedder.image_calls == [3, 3, 2] and len(index) == 8
    assert index.search_image(images[5], k=1)[0].id == index.ids[5]


def test_the_same_image_twice_gets_suffixed_ids(pictures: dict[str, str]) -> None:
    path = pictures["chart.png"]
    base = image_id(load_image(path))
    index = VectorIndex.from_images([path, path], embedder=ThumbnailEmbedder())
    assert index.ids == [base, base + "#2"]
    assert index.add_images([path]) == [base + "#3"]
    with pytest.raises(ValueError, match="already in the index"):
        index.add_images([path], ids=[base])
    with pytest.raises(ValueError, match="duplicate id 'x'"):
        index.add_images([path, path], ids=["x", "x"])


def test_a_bad_image_is_named_and_leaves_the_index_unchanged(pictures: dict[str, str],
                                                             tmp_path: Any) -> None:
    index = VectorIndex.from_images([pictures["chart.png"]], embedder=ThumbnailEmbedder())
    bad = tmp_path / "notes.png"
    bad.write_bytes(b"this is not a picture")
    with pytest.raises(ImageError, match="notes.png"):
        index.add_images([pictures["flow.png"], str(bad)])
    with pytest.raises(ImageError, match="missing.png"):
        index.add_images([str(tmp_path / "missing.png")])
    buffer = io.BytesIO()
    bar_chart().save(buffer, format="PNG")
    with pytest.raises(ImageError, match="<bytes>"):
        index.add_images([buffer.getvalue()[:200]])  # truncated
    assert len(index) == 1


def test_argument_errors(pictures: dict[str, str]) -> None:
    path = pictures["chart.png"]
    emb = ThumbnailEmbedder()
    with pytest.raises(TypeError, match="wrap it in a list"):
        VectorIndex.from_images(path, embedder=emb)
    with pytest.raises(ValueError, match="empty"):
        VectorIndex.from_images([], embedder=emb)
    with pytest.raises(ValueError, match="1 images but 2 texts"):
        VectorIndex.from_images([path], texts=["a", "b"], embedder=emb)
    with pytest.raises(TypeError, match="texts\\[0\\]"):
        VectorIndex.from_images([path], texts=[3], embedder=emb)
    with pytest.raises(TypeError, match="mapping"):
        VectorIndex.from_images([path], metadatas=["kind"], embedder=emb)
    index = VectorIndex.from_images([path], embedder=emb)
    with pytest.raises(TypeError, match="one image"):
        index.search_image([path])


def test_text_only_embedders_and_missing_embedders_are_refused(pictures: dict[str, str],
                                                                 tmp_path: Any) -> None:
    path = pictures["chart.png"]
    with pytest.raises(TypeError, match="embed_images"):
        VectorIndex.from_images([path], embedder=HashingEmbedder(dimension=48))
    text_index = VectorIndex.from_texts(["a chart"], embedder=HashingEmbedder(dimension=48))
    with pytest.raises(TypeError, match="HashingEmbedder embeds text only"):
        text_index.search_image(path)
    with pytest.raises(TypeError, match="HashingEmbedder embeds text only"):
        text_index.add_images([path])
    index = VectorIndex.from_images([path], embedder=ThumbnailEmbedder())
    index.save(tmp_path / "index")
    bare = VectorIndex.load(tmp_path / "index")
    with pytest.raises(TypeError, match="has none; pass embedder="):
        bare.search_image(path)


def test_dimension_mismatch_is_refused(pictures: dict[str, str]) -> None:
    index = VectorIndex.from_texts(["a chart"], embedder=HashingEmbedder(dimension=32))
    index._embedder = ThumbnailEmbedder()  # a 48-d image embedder on a 32-d index
    with pytest.raises(ValueError, match="48-d vectors but this index holds 32-d"):
        index.add_images([pictures["chart.png"]])
    with pytest.raises(ValueError, match="dimension 48 but this index holds 32-d"):
        index.search_image(pictures["chart.png"])
    assert len(index) == 1


def test_save_and_load_round_trip(pictures: dict[str, str], tmp_path: Any) -> None:
    paths = list(pictures.values())
    index = VectorIndex.from_images(paths, metadatas=[{"n": i} for i in range(4)],
                                    embedder=ThumbnailEmbedder())
    index.save(tmp_path / "index")
    loaded = VectorIndex.load(tmp_path / "index", embedder=ThumbnailEmbedder())
    assert loaded.docs == index.docs and loaded.model_id == index.model_id
    for path in paths:
        assert ([(h.id, h.score) for h in loaded.search_image(path, k=4)]
                == [(h.id, h.score) for h in index.search_image(path, k=4)])
    assert loaded.add_images([gradient((9, 9, 9), (99, 99, 99))])[0].startswith("image-")


def test_progress_bar_and_the_image_embedder_check(pictures: dict[str, str]) -> None:
    index = VectorIndex.from_images(list(pictures.values()), embedder=ThumbnailEmbedder(),
                                    show_progress=True)
    assert len(index) == 4
    assert vector_images.image_embedder(index.embedder, "x") is index.embedder
