"""Text chunks and drawn images shared by the adapters' multimodal tests (tests/ is on
pythonpath).

`draw_images` draws three real images with PIL (a flow diagram of boxes and arrows, a bar
chart, a photo-like gradient) into a folder. `build_corpus` indexes text chunks and the
images' descriptions in one `BM25Index` (descriptions carry ``type="image"``, the image
path and hash, with the image's content id, as every image route gives them), and
`CaptionImageIndex` stands in for a CLIP `VectorIndex`: text search over the same
descriptions, image search by content hash. It checks routing, fusion and conversion in
the adapters, not a model; the real tiny CLIP runs where it is used (tests/tiny_clip.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_retrievers import BM25Index, Doc, Hit
from hybrid_retrievers.images import image_id, image_metadata, load_image

__all__ = ["DESCRIPTIONS", "TEXTS", "CaptionImageIndex", "ImageCorpus", "build_corpus", "clip_gallery",
           "describer_for", "draw_images"]

TEXTS: list[tuple[str, str, dict[str, Any]]] = [
    ("t-queue", "The order service and the billing service connect through a message "
     "queue; each service publishes events and never calls the other directly.",
     {"type": "text", "source": "architecture.md"}),
    ("t-retry", "The queue retries a failed message three times with a growing delay "
     "before it moves the message to the dead letter queue.",
     {"type": "text", "source": "architecture.md"}),
    ("t-sales", "Sales grew in the second quarter after the new pricing, and the third "
     "quarter kept the same level.", {"type": "text", "source": "sales.md"}),
    ("t-team", "The platform team owns the deployment pipeline and the on-call rota.",
     {"type": "text", "source": "team.md"}),
]
"""(id, text, metadata) of the text chunks."""

DESCRIPTIONS: dict[str, str] = {
    "architecture.png": "A diagram of boxes and arrows: the order service and the billing "
                        "service connect to a message queue between them.",
    "sales_chart.png": "A bar chart of sales per quarter; the second quarter bar is the "
                       "tallest.",
    "sunset.jpg": "A photo of an orange sunset over the sea.",
}
"""What a vision model would say about each drawn image (by file name)."""


def draw_images(folder: Path) -> dict[str, Path]:
    """Draw the three images of `DESCRIPTIONS` into ``folder``; their paths by file name."""
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    diagram = Image.new("RGB", (96, 64), (250, 250, 250))
    draw = ImageDraw.Draw(diagram)
    for left in (4, 66):
        draw.rectangle([left, 20, left + 24, 44], outline=(20, 20, 120), width=2)
    draw.rectangle([38, 26, 58, 38], fill=(200, 120, 20))
    draw.line([28, 32, 38, 32], fill=(0, 0, 0), width=2)
    draw.line([58, 32, 66, 32], fill=(0, 0, 0), width=2)
    chart = Image.new("RGB", (80, 60), (255, 255, 255))
    draw = ImageDraw.Draw(chart)
    for i, height in enumerate((20, 50, 35, 36)):
        draw.rectangle([8 + 18 * i, 58 - height, 20 + 18 * i, 58], fill=(30, 90, 200))
    sunset = Image.new("RGB", (64, 48))
    sunset.putdata([(255, 140 - y * 2, 40 + y) for y in range(48) for _ in range(64)])
    paths = {}
    for name, image in (("architecture.png", diagram), ("sales_chart.png", chart),
                        ("sunset.jpg", sunset)):
        paths[name] = folder / name
        image.save(paths[name])
    return paths


def describer_for(paths: dict[str, Path]) -> Any:
    """A plain-callable describer ``(image, prompt) -> str`` that knows the drawn images
    by content hash (and calls any other image "an unknown picture")."""
    by_hash = {load_image(p).sha256: DESCRIPTIONS[name] for name, p in paths.items()}

    def describer(image: Any, prompt: str) -> str:
        return by_hash.get(image.sha256, "an unknown picture")

    return describer


@dataclass
class ImageCorpus:
    """One index of text chunks and image descriptions, and the drawn images."""

    index: BM25Index
    paths: dict[str, Path]
    ids: dict[str, str]  # image id by file name


def build_corpus(folder: Path) -> ImageCorpus:
    """Draw the images into ``folder`` and index the texts and the descriptions."""
    paths = draw_images(folder)
    ids, texts, metadatas = [], [], []
    for doc_id, text, metadata in TEXTS:
        ids.append(doc_id)
        texts.append(text)
        metadatas.append(metadata)
    image_ids = {}
    for name, path in paths.items():
        loaded = load_image(path)
        image_ids[name] = image_id(loaded)
        ids.append(image_ids[name])
        texts.append(DESCRIPTIONS[name])
        metadatas.append({**image_metadata(loaded), "source": name})
    return ImageCorpus(BM25Index.from_texts(texts, ids=ids, metadatas=metadatas), paths,
                       image_ids)


class CaptionImageIndex:
    """A stand-in CLIP index over the corpus's images: ``search`` (text→image) is BM25
    over their descriptions; ``search_image`` ranks the image with the query's content
    hash first, the others after it in id order."""

    def __init__(self, corpus: ImageCorpus) -> None:
        docs = [d for d in corpus.index.docs if d.metadata.get("type") == "image"]
        self.index = BM25Index.from_docs(docs)
        self.docs: list[Doc] = docs
        self.image_queries: list[str] = []

    def search(self, query: str, k: int = 10, *, filter: Any = None) -> list[Hit]:
        return self.index.search(query, k, filter=filter)

    def search_image(self, image: Any, k: int = 10, *, filter: Any = None) -> list[Hit]:
        loaded = load_image(image)
        self.image_queries.append(loaded.sha256)
        docs = [d for d in self.docs if _keep(d, filter)]
        docs.sort(key=lambda d: (d.metadata["image_sha256"] != loaded.sha256, d.id))
        return [Hit(d, 1.0 / (i + 1), i + 1) for i, d in enumerate(docs[:k])]


def _keep(doc: Doc, filter: Any) -> bool:
    if filter is None:
        return True
    if callable(filter):
        return bool(filter(doc))
    return all(doc.metadata.get(key) == value for key, value in filter.items())


def clip_gallery(model_path: str, folder: Path) -> Any:
    """A `VectorIndex` of CLIP vectors (`ClipEmbedder` of the tiny model at ``model_path``,
    tests/tiny_clip.py) of a red, a blue and a green square drawn into ``folder``; each
    image's metadata names its ``colour``."""
    from hybrid_retrievers import VectorIndex
    from hybrid_retrievers.models import ClipEmbedder
    from tiny_clip import draw_squares

    paths = draw_squares(folder)
    return VectorIndex.from_images([str(p) for p in paths], embedder=ClipEmbedder(model_path),
                                   metadatas=[{"colour": p.stem} for p in paths])
