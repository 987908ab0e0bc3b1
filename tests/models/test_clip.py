"""`ClipEmbedder` and the CLIP route of `VectorIndex` on a real (tiny, trained) CLIP model.

The model is built once per session by ``tests/tiny_clip.py`` (the `tiny_clip_path`
fixture): a seeded 16-d CLIP trained for a few seconds to match pictures of coloured
squares with the colour's name, loaded through ``sentence_transformers.SentenceTransformer``
as CLIP checkpoints are. Both directions are checked: text finds images, images find images.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("PIL")

from image_series import bar_chart, flow_diagram, gradient  # noqa: E402
from tiny_clip import COLOURS, square_image  # noqa: E402

from hybrid_retrievers import VectorIndex  # noqa: E402
from hybrid_retrievers.images import ImageError, image_id, load_image  # noqa: E402
from hybrid_retrievers.models import (  # noqa: E402
    DEFAULT_CLIP_MODEL,
    ClipEmbedder,
    SentenceTransformerEmbedder,
    local_minilm_path,
)


@pytest.fixture(scope="module")
def clip(tiny_clip_path: str) -> ClipEmbedder:
    return ClipEmbedder(tiny_clip_path, device="cpu", batch_size=4)


@pytest.fixture(scope="module")
def squares(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One PNG per colour: a square of that colour on a light background."""
    folder = tmp_path_factory.mktemp("squares")
    paths = {}
    for i, (name, rgb) in enumerate(COLOURS.items()):
        path = folder / f"square_{i}.png"
        square_image(rgb, size=(64, 48), box=(0.3, 0.4, 0.7)).save(path)
        paths[name] = str(path)
    return paths


def test_construction_is_lazy_and_the_model_is_read_on_first_use(tiny_clip_path: str) -> None:
    clip = ClipEmbedder(tiny_clip_path, device="cpu")
    assert not clip.is_loaded and clip.model_id == tiny_clip_path
    assert clip.dimension == 16 and clip.is_loaded
    assert ClipEmbedder().model_id == DEFAULT_CLIP_MODEL == "clip-ViT-B-32"
    assert "ClipEmbedder(" in repr(clip)


def test_vectors_have_the_promised_shapes(clip: ClipEmbedder, squares: dict[str, str]) -> None:
    docs = clip.embed_documents(["red", "a blue square", "x"])
    query = clip.embed_query("green")
    images = clip.embed_images(list(squares.values()))
    assert docs.shape == (3, 16) and query.shape == (16,) and images.shape == (len(squares), 16)
    for out in (docs, query, images):
        assert out.dtype == np.float32
        assert np.allclose(np.linalg.norm(np.atleast_2d(out), axis=1), 1.0, atol=1e-5)
    assert clip.embed_images([]).shape == (0, 16)
    assert clip.embed_documents([]).shape == (0, 16)
    assert np.allclose(clip.embed_queries(["green"])[0], query, atol=1e-6)


def test_a_picture_is_nearest_its_colour_name(clip: ClipEmbedder, squares: dict[str, str]) -> None:
    names = list(COLOURS)
    texts = clip.embed_documents(names)
    images = clip.embed_images([squares[n] for n in names])
    similarity = images @ texts.T
    assert list(similarity.argmax(axis=1)) == list(range(len(names)))
    red = names.index("red")
    assert similarity[red, red] > similarity[red, names.index("blue")]


def test_every_image_input_kind_gives_the_same_vector(clip: ClipEmbedder,
                                                      squares: dict[str, str]) -> None:
    path = squares["green"]
    loaded = load_image(path)
    inputs = [path, Path(path), loaded.data, loaded.data_uri(), loaded, loaded.image]
    vectors = clip.embed_images(inputs)
    assert np.allclose(vectors, vectors[0], atol=1e-5)


def test_batches_give_the_same_vectors(tiny_clip_path: str, squares: dict[str, str]) -> None:
    images = list(squares.values())
    one = ClipEmbedder(tiny_clip_path, device="cpu", batch_size=1).embed_images(images)
    many = ClipEmbedder(tiny_clip_path, device="cpu", batch_size=64).embed_images(images)
    assert np.allclose(one, many, atol=1e-5)


def test_a_text_that_is_an_image_path_is_embedded_as_text(clip: ClipEmbedder,
                                                          tmp_path: Path) -> None:
    # sentence-transformers 6 reads an existing image file's path as that image; a
    # document or query must stay text whatever it looks like.
    path = tmp_path / "photo.png"
    as_text = clip.embed_documents([str(path)])[0]  # no such file yet: plainly text
    square_image(COLOURS["red"]).save(path)
    assert np.allclose(clip.embed_documents([str(path)])[0], as_text, atol=1e-6)
    assert np.allclose(clip.embed_query(str(path)), as_text, atol=1e-6)
    uri = load_image(path).data_uri()
    assert not np.allclose(clip.embed_query(uri), clip.embed_images([uri])[0], atol=1e-3)
    assert not np.allclose(as_text, clip.embed_images([str(path)])[0], atol=1e-3)


def test_bad_images_are_refused_naming_the_file(clip: ClipEmbedder, tmp_path: Path) -> None:
    bad = tmp_path / "scan.jpg"
    bad.write_bytes(b"\xff\xd8\xff not really a jpeg")
    with pytest.raises(ImageError, match="scan.jpg"):
        clip.embed_images([square_image(COLOURS["red"]), str(bad)])
    with pytest.raises(ImageError, match="nowhere.png"):
        clip.embed_images([str(tmp_path / "nowhere.png")])
    with pytest.raises(TypeError, match="wrap it in a list"):
        clip.embed_images(str(bad))
    with pytest.raises(TypeError, match="an image must be"):
        clip.embed_images([3.5])


def test_max_pixels_bounds_the_decode(tiny_clip_path: str, tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    gradient(size=(200, 100)).save(path)
    small = ClipEmbedder(tiny_clip_path, device="cpu", max_pixels=10_000)
    with pytest.raises(ImageError, match="big.png.*exceeds max_pixels=10,000"):
        small.embed_images([str(path)])
    with pytest.raises(ValueError, match="max_pixels"):
        ClipEmbedder(tiny_clip_path, max_pixels=0)


def test_a_text_only_model_is_refused(tiny_clip_path: str) -> None:
    minilm = ClipEmbedder(local_minilm_path(), device="cpu")  # lazy: refused on first use
    with pytest.raises(ValueError, match="no image modality.*SentenceTransformerEmbedder"):
        minilm.embed_query("a chart")
    from sentence_transformers import SentenceTransformer

    loaded = SentenceTransformerEmbedder(local_minilm_path(), device="cpu").model
    with pytest.raises(ValueError, match="no image modality"):
        ClipEmbedder(loaded)
    ready = ClipEmbedder(SentenceTransformer(tiny_clip_path, device="cpu"))
    assert ready.is_loaded and ready.dimension == 16
    with pytest.raises(TypeError, match="model must be"):
        ClipEmbedder(42)


# ---------------------------------------------------------------------- VectorIndex


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory, squares: dict[str, str]) -> list[str]:
    """The coloured squares plus a bar chart, a flow diagram and a gradient, as files."""
    folder = tmp_path_factory.mktemp("gallery")
    drawn = {"chart.png": bar_chart(), "flow.png": flow_diagram(), "fade.jpg": gradient()}
    for name, image in drawn.items():
        image.save(folder / name)
    return list(squares.values()) + [str(folder / name) for name in drawn]


def test_text_finds_images_and_images_find_images(clip: ClipEmbedder, gallery: list[str],
                                                  squares: dict[str, str]) -> None:
    index = VectorIndex.from_images(gallery, embedder=clip)
    assert index.dimension == 16 and index.model_id == clip.model_id
    ids = {name: image_id(load_image(path)) for name, path in squares.items()}
    # text -> image: CLIP's text tower (embed_query) against the image vectors
    for colour in ("red", "blue", "green"):
        assert index.search(colour, k=1)[0].id == ids[colour]
    # image -> image: the file itself, then another picture of a red square
    for path in gallery:
        top = index.search_image(path, k=1)[0]
        assert top.id == image_id(load_image(path)) and top.score == pytest.approx(1.0, abs=1e-5)
    other_red = square_image((200, 40, 35), size=(90, 90), box=(0.8, 0.1, 0.4))
    assert index.search_image(other_red, k=1)[0].id == ids["red"]


def test_search_image_with_a_filter(clip: ClipEmbedder, gallery: list[str]) -> None:
    kinds = ["square"] * len(COLOURS) + ["chart", "diagram", "gradient"]
    index = VectorIndex.from_images(gallery, metadatas=[{"kind": k} for k in kinds],
                                    embedder=clip)
    red = square_image(COLOURS["red"])
    hits = index.search_image(red, k=5, filter={"kind": "chart"})
    assert [h.doc.text for h in hits] == ["chart.png"]
    assert hits[0].doc.metadata["type"] == "image"
    assert all(h.doc.metadata["kind"] == "square" for h in
               index.search_image(red, k=3, filter=lambda d: d.metadata["kind"] == "square"))


def test_save_and_load_with_a_clip_embedder(clip: ClipEmbedder, gallery: list[str],
                                            tiny_clip_path: str, tmp_path: Path) -> None:
    index = VectorIndex.from_images(gallery, texts=[f"picture {i}" for i in range(len(gallery))],
                                    embedder=clip)
    index.save(tmp_path / "clip-index")
    again = VectorIndex.load(tmp_path / "clip-index",
                             embedder=ClipEmbedder(tiny_clip_path, device="cpu"))
    assert again.model_id == tiny_clip_path and again.docs == index.docs
    image = gradient((0, 0, 0), (255, 255, 255), size=(128, 96))
    assert ([(h.id, h.score) for h in again.search_image(image, k=3)]
            == [(h.id, h.score) for h in index.search_image(image, k=3)])
    assert again.search("red", k=1)[0].id == index.search("red", k=1)[0].id
    bare = VectorIndex.load(tmp_path / "clip-index")
    with pytest.raises(TypeError, match="embedder"):
        bare.search_image(image)


def test_an_index_of_another_dimension_refuses_clip_vectors(clip: ClipEmbedder,
                                                            gallery: list[str]) -> None:
    index = VectorIndex.from_images(gallery[:1], embedder=clip)
    other = VectorIndex.from_vectors(np.ones((1, 8), dtype=np.float32), ids=["v"], embedder=clip)
    with pytest.raises(ValueError, match="16-d vectors but this index holds 8-d"):
        other.add_images(gallery[1:2])
    with pytest.raises(ValueError, match="dimension 16 but this index holds 8-d"):
        other.search_image(gallery[0])
    buffer = io.BytesIO()
    bar_chart().save(buffer, format="PNG")
    assert index.add_images([buffer.getvalue()])[0].startswith("image-")


def test_image_and_text_documents_share_one_index(clip: ClipEmbedder,
                                                  gallery: list[str]) -> None:
    index = VectorIndex.from_images(gallery, embedder=clip)
    index.add(["red", "a flow diagram"], ids=["caption-red", "caption-flow"])
    red = square_image(COLOURS["red"])
    everything = {h.id for h in index.search_image(red, k=len(index))}
    assert {"caption-red", "caption-flow"} <= everything
    images = index.search_image(red, k=len(index), filter={"type": "image"})
    assert len(images) == len(gallery) and not {h.id for h in images} & {"caption-red"}


def test_the_docstring_example_runs(tiny_clip_path: str) -> None:
    """The docstring example, with the tiny model standing in for ``clip-ViT-B-32``."""
    from PIL import Image

    red = Image.new("RGB", (64, 48), (220, 30, 30))
    index = VectorIndex.from_images([red], texts=["a red card"],
                                    embedder=ClipEmbedder(tiny_clip_path, device="cpu"))
    assert index.search_image(red, k=1)[0].doc.text == "a red card"


def test_docstring_examples() -> None:
    import doctest

    from hybrid_retrievers.models import clip as clip_module

    assert doctest.testmod(clip_module).failed == 0
