"""Images in a `VectorIndex`: image documents and their vectors from an image embedder.

`VectorIndex.from_images`, `VectorIndex.add_images` and `VectorIndex.search_image` are
thin: the work is here. An image becomes one `Doc`:

* **id**: the caller's, else `hybrid_retrievers.images.image_id` (``"image-"`` + 16 hex
  digits of the file's SHA-256), the id every route gives the image, so fusing this
  index with a description index merges one image found both ways. The same image twice
  (in one call, or already in the index) gets ``#2``, ``#3``... suffixes, as identical
  texts do in `hybrid_retrievers.documents.make_docs`;
* **metadata**: `hybrid_retrievers.images.image_metadata` (``type="image"``, the source,
  its hash, format and size) with the caller's mapping merged in;
* **text**: what a hit shows and a text index could rank: the caller's ``texts[i]``
  (a caption or a description), else the metadata's caption (the first non-blank of
  `CAPTION_KEYS`: ``"caption"``, ``"alt"``, ``"alt_text"``, ``"title"``), else the
  image's file name.

Images are loaded (`hybrid_retrievers.images.load_image`, with the embedder's
``max_pixels`` when it has one) and embedded `IMAGE_BATCH` at a time, so only that many
decoded images are ever in memory; the documents and vectors are published in one edit
at the end, so a bad image anywhere leaves the index unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..documents import check_new_ids, make_docs
from ..images.loading import (
    DEFAULT_MAX_PIXELS,
    LoadedImage,
    check_image_list,
    image_caption,
    image_id,
    image_metadata,
    load_image,
    per_image,
)
from ..progress import progress
from ..types import Doc
from .embedding import check_matrix

__all__ = ["IMAGE_BATCH", "embed_query_image",
           "image_embedder", "image_documents"]

IMAGE_BATCH = 64
"""Images loaded and embedded per ``embed_images`` call (bounds decoded images in memory)."""


def image_embedder(embedder: Any, caller: str) -> Any:
    """``embedder`` when it can embed images (``embed_images``), else a TypeError naming
    ``caller`` and the fix."""
    if embedder is None:
        raise TypeError(
            f"{caller} needs an embedder that embeds images, but this index has none; pass "
            "embedder=ClipEmbedder(...) when creating or loading it"
        )
    if not callable(getattr(embedder, "embed_images", None)):
        raise TypeError(
            f"{caller} needs an embedder with embed_images(images) (a CLIP model such as "
            f"hybrid_retrievers.models.ClipEmbedder), but {type(embedder).__name__} embeds "
            "text only; text queries still work with search()"
        )
    return embedder


def embed_query_image(embedder: Any, image: Any) -> Any:
    """The raw vector of one query image (``embed_images([image])``), or a TypeError when
    a list of images was given where one image is expected."""
    if isinstance(image, (list, tuple)):
        raise TypeError(
            f"image must be one image (a path, bytes, a data URI, a PIL image or a "
            f"LoadedImage), got a {type(image).__name__}; search each image separately"
        )
    return embedder.embed_images([image])


def image_documents(
    embedder: Any,
    images: Iterable[Any],
    ids: Iterable[str | None] | None,
    metadatas: Iterable[Mapping[str, Any] | None] | None,
    texts: Iterable[str | None] | None,
    *,
    taken: Mapping[str, Any],
    dimension: int | None,
    show_progress: bool,
) -> tuple[list[Doc], NDArray[np.float32]]:
    """The documents of ``images`` and their vectors (rows in input order), nothing published.

    Args:
        embedder: has ``embed_images`` (checked by the caller with `image_embedder`).
        images: what `hybrid_retrievers.images.load_image` accepts, one per document.
        ids, metadatas, texts: one each per image (``None`` items: the defaults).
        taken: the ids the index holds (given ids must be new; default ids are suffixed).
        dimension: the index's dimension, when it has one (vectors must match it).
        show_progress: a progress bar over images.

    Raises:
        TypeError: a single image where a list is expected, or arguments of wrong kinds.
        ValueError: an empty list, lengths that differ, duplicate or taken given ids.
        hybrid_retrievers.images.ImageError: an image that cannot be loaded (named).
    """
    sources = check_image_list(images)
    if not sources:
        raise ValueError("images is empty; pass at least one image")
    given_ids = per_image(ids, len(sources), "ids", "str (None for the default id)")
    metas = per_image(metadatas, len(sources), "metadatas", "mappings (or None)")
    captions = per_image(texts, len(sources), "texts", "str (None for the caption)")
    _check_given_ids(given_ids, taken)
    used = set(taken) | {i for i in given_ids if i is not None}
    max_pixels = getattr(embedder, "max_pixels", DEFAULT_MAX_PIXELS)
    out_ids: list[str | None] = []
    out_metas: list[dict[str, Any]] = []
    out_texts: list[str] = []
    blocks: list[NDArray[np.float32]] = []
    bar = progress(None, show=show_progress, desc="Indexing images", unit="image",
                   total=len(sources))
    try:
        for start in range(0, len(sources), IMAGE_BATCH):
            stop = min(start + IMAGE_BATCH, len(sources))
            loaded = [load_image(s, max_pixels=max_pixels) for s in sources[start:stop]]
            for j, item in enumerate(loaded, start):
                meta = image_metadata(item, metas[j])
                out_metas.append(meta)
                out_texts.append(_document_text(item, meta, captions[j], j))
                out_ids.append(given_ids[j])
            raw = embedder.embed_images(loaded)
            blocks.append(check_matrix(raw, len(loaded), "embed_images()", offset=start))
            if dimension is None:
                dimension = blocks[-1].shape[1]
            elif blocks[-1].shape[1] != dimension:
                raise ValueError(
                    f"embed_images() returned {blocks[-1].shape[1]}-d vectors but this index "
                    f"holds {dimension}-d vectors; use the embedder the index was built with"
                )
            _default_ids(out_ids, loaded, start, used)
            bar.update(len(loaded))
    finally:
        bar.close()
    docs = make_docs(out_texts, out_ids, out_metas, taken=taken)
    return docs, np.concatenate(blocks, axis=0)


def _check_given_ids(ids: list[Any], taken: Mapping[str, Any]) -> None:
    """Given ids are str, unique and new (checked before any image is loaded)."""
    seen: set[str] = set()
    for i, doc_id in enumerate(ids):
        if doc_id is None:
            continue
        if not isinstance(doc_id, str):
            raise TypeError(f"ids[{i}] must be a str or None, got {type(doc_id).__name__}")
        if doc_id in seen:
            raise ValueError(f"duplicate id {doc_id!r} in ids; ids must be unique")
        seen.add(doc_id)
    check_new_ids([Doc(i, "") for i in seen], taken,
                  "use ids not in the index, or omit them to get image ids")


def _default_ids(out_ids: list[str | None], loaded: list[LoadedImage], start: int,
                 used: set[str]) -> None:
    """Fill ``out_ids[start:]``'s ``None`` items with image ids, ``#n``-suffixed when the
    same image came before (in this call, or already in the index); ``used`` (every id
    taken so far) grows with them."""
    for j, item in enumerate(loaded, start):
        if out_ids[j] is not None:
            continue
        base = candidate = image_id(item)
        n = 1
        while candidate in used:
            n += 1
            candidate = f"{base}#{n}"
        used.add(candidate)
        out_ids[j] = candidate


def _document_text(image: LoadedImage, metadata: Mapping[str, Any], text: Any, i: int) -> str:
    if text is not None:
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a str or None, got {type(text).__name__}")
        return text
    return image_caption(metadata) or image.name
