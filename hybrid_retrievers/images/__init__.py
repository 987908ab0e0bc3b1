"""Images: load and check them, describe them for text search, and format them for a prompt.

Multimodal retrieval has two routes from an image to a ranked list, and this package
serves both:

* the **description route**: a vision model describes each image in a sentence or two
  and the description is indexed as a document (``type="image"``) that BM25, dense and
  sparse retrieval rank like any text;
* the **embedding route**: a CLIP model (`hybrid_retrievers.models.ClipEmbedder`) puts
  images and text in one vector space, stored in a `VectorIndex`
  (`VectorIndex.from_images`, `VectorIndex.search_image`), so text finds images and
  images find images.

Modules:

* ``loading``: `load_image` (sources, formats, bounded read and decode, modes, the
  content hash that identifies an image in every route);
* ``jpeg_scans``: JPEG scan data that stops short of its frame, found from the markers
  (`load_image` refuses such a file rather than decode it grey);
* ``describe``: `describe_images` (images to description documents through any
  `Describer`, with a timeout and a fallback per image);
* ``description_cache``: `DescriptionCache` (descriptions by describer, prompt and
  content hash, saved as checksummed JSON);
* ``context``: `format_context` (the RAG prompt's context with image results marked).

This package is a leaf below the indexes (`VectorIndex.from_images` and
`hybrid_retrievers.models.ClipEmbedder` load images through it). Searching sits above
them, in `hybrid_retrievers.fusion`: `MultimodalSearcher` (text and image queries over
every route, fused by intent), `ImageQuery` and `visual_intent_rule` (visual words in a
query shift the fusion weights toward the image sources).

Importing this package is cheap: Pillow is imported when the first image is loaded.
"""

from __future__ import annotations

from .context import format_context
from .describe import (
    DEFAULT_DESCRIPTION_PROMPT,
    DescriptionError,
    DescriptionReport,
    Describer,
    SkippedImage,
    describe_image,
    describe_images,
    describe_images_report,
    describer_name,
)
from .description_cache import DescriptionCache
from .loading import (
    CAPTION_KEYS,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    IMAGE_SUFFIXES,
    SUPPORTED_FORMATS,
    ImageError,
    ImageInput,
    LoadedImage,
    find_image_files,
    image_id,
    image_metadata,
    load_image,
    load_images,
)

__all__ = [
    "CAPTION_KEYS",
    "DEFAULT_DESCRIPTION_PROMPT",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PIXELS",
    "IMAGE_SUFFIXES",
    "SUPPORTED_FORMATS",
    "DescriptionCache",
    "DescriptionError",
    "DescriptionReport",
    "Describer",
    "ImageError",
    "ImageInput",
    "LoadedImage",
    "SkippedImage",
    "describe_image",
    "describe_images",
    "describe_images_report",
    "describer_name",
    "find_image_files",
    "format_context",
    "image_id",
    "image_metadata",
    "load_image",
    "load_images",
]
