"""A CLIP model behind the `Embedder` protocol, plus images: text and pictures in one space.

CLIP (Radford et al. 2021, "Learning Transferable Visual Models From Natural Language
Supervision") trains a text encoder and an image encoder so that a picture and a caption
of it land near each other. `ClipEmbedder` wraps a sentence-transformers CLIP checkpoint
(``clip-ViT-B-32`` by default) so a `VectorIndex` can hold image vectors
(`VectorIndex.from_images`) and answer text queries (text to image) and image queries
(`VectorIndex.search_image`, image to image) with the same embedder.

Two things it does that calling ``SentenceTransformer.encode`` yourself does not:

* **Text stays text.** sentence-transformers 6 reads a string that is an existing image
  file's path, an ``http(s)`` URL ending in an image suffix or a ``data:image/`` URI as
  an image (its ``infer_modality``). A document or query that happens to be such a
  string would silently be embedded as the picture it names. `embed_documents` and
  `embed_query` pass every text as ``{"text": t}``, which is always the text modality.
* **Images are checked first.** `embed_images` takes whatever
  `hybrid_retrievers.images.load_image` takes (paths, bytes, data URIs, PIL images,
  `LoadedImage`) and loads each through it (bounded decode, 8-bit RGB, an `ImageError`
  naming the bad file) before the model sees a decoded RGB image, ``batch_size`` images
  at a time, so a folder of photos is never all in memory at once.

The model is loaded on first use (`LazyModel`, through `SentenceTransformerEmbedder`),
and refused with a clear error when it has no image modality (a text-only model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..images.loading import DEFAULT_MAX_PIXELS, ImageInput, check_image_list, load_image
from ..progress import progress
from ..validation import check_number
from .names import DEFAULT_CLIP_MODEL
from .sentence_transformers import SentenceTransformerEmbedder

__all__ = ["DEFAULT_CLIP_MODEL", "ClipEmbedder"]


class ClipEmbedder(SentenceTransformerEmbedder):
    """A sentence-transformers CLIP model: `embed_images`, `embed_documents`, `embed_query`.

    Texts go through CLIP's text tower and images through its image tower; both land in
    one ``dimension``-d space, so text queries find images and images find images.
    Vectors are L2-normalised (``normalize=True``), as cosine similarity needs.

    Args:
        model: a model name or local path of a sentence-transformers CLIP checkpoint
            (loaded on first use; default `DEFAULT_CLIP_MODEL`), or a loaded
            ``SentenceTransformer`` with the ``text`` and ``image`` modalities.
        device: ``"cpu"``, ``"cuda"``...; ``None`` lets sentence-transformers choose.
        batch_size: texts or images per forward pass; `embed_images` also loads this
            many images at a time.
        max_pixels: the bounded-decode limit each image is loaded with (see
            `hybrid_retrievers.images.load_image`).
        normalize: L2-normalise the vectors.
        show_progress: show a progress bar over image batches (and sentence-transformers'
            bar over text batches).
        model_id: the identity recorded in caches and saved indexes (default: the name or
            path given, as for `SentenceTransformerEmbedder`).
        model_kwargs: extra keyword arguments for ``SentenceTransformer(...)``.

    Raises:
        TypeError: a ``model`` that is neither a name nor a loaded model, or options of
            the wrong kind.
        ValueError: a non-positive ``batch_size`` or ``max_pixels``; on first use, a model
            without an image modality (a text-only model).

    Example:
        >>> clip = ClipEmbedder("clip-ViT-B-32", device="cpu")
        >>> clip.model_id, clip.is_loaded  # nothing is loaded yet
        ('clip-ViT-B-32', False)
    """

    def __init__(
        self,
        model: Any = DEFAULT_CLIP_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 32,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        normalize: bool = True,
        show_progress: bool = False,
        model_id: str | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(max_pixels, bool):
            raise TypeError("max_pixels must be an int, got bool")
        self.max_pixels = int(check_number(max_pixels, "max_pixels", low=1, integer=True))
        super().__init__(model, batch_size=batch_size, device=device, normalize=normalize,
                         show_progress=show_progress, model_id=model_id,
                         model_kwargs=model_kwargs, backend="torch")
        if self._model is not None:  # a loaded instance: checked now, not on first use
            _check_image_modality(self._model, self._name)

    def _build(self) -> Any:
        """The ``SentenceTransformer``, refused when it cannot embed images."""
        model = super()._build()
        _check_image_modality(model, self._name)
        return model

    # ------------------------------------------------------------------ encoding

    def _encode(self, texts: list[str], prompt: str | None) -> NDArray[np.float32]:
        # {"text": t} is the text modality whatever t looks like (see the module doc).
        return self._encode_inputs([{"text": t} for t in texts], self.show_progress)

    def _encode_inputs(self, inputs: list[Any], show_bar: bool) -> NDArray[np.float32]:
        out = self.model.encode(
            inputs,
            batch_size=self.batch_size,
            show_progress_bar=show_bar,
            convert_to_numpy=True,
            normalize_embeddings=self.normalize,
        )
        return np.asarray(out, dtype=np.float32)

    def embed_images(self, images: Sequence[ImageInput]) -> NDArray[np.float32]:
        """Image vectors, shape ``(len(images), dimension)``, in input order.

        Args:
            images: paths, file bytes, ``data:image/`` URIs, PIL images or `LoadedImage`
                objects (anything `hybrid_retrievers.images.load_image` accepts).

        Raises:
            TypeError: ``images`` is a single image rather than a list, or an item is of
                no accepted kind.
            hybrid_retrievers.images.ImageError: an image is missing, unreadable, not an
                image, truncated or too large (the message names the file).
        """
        images = check_image_list(images)
        if not images:
            return np.zeros((0, self.dimension), dtype=np.float32)
        starts = range(0, len(images), self.batch_size)
        blocks = []
        for start in progress(starts, show=self.show_progress, desc="Embedding images",
                              unit="batch"):
            chunk = images[start:start + self.batch_size]
            # Loaded and decoded one batch at a time: only batch_size images in memory.
            loaded = [load_image(image, max_pixels=self.max_pixels) for image in chunk]
            blocks.append(self._encode_inputs([item.image for item in loaded], False))
        return np.concatenate(blocks, axis=0)

    def __repr__(self) -> str:
        return (
            f"ClipEmbedder({self._name!r}, batch_size={self.batch_size}, "
            f"device={self.device!r}, normalize={self.normalize}, loaded={self.is_loaded})"
        )


def _check_image_modality(model: Any, name: str | None) -> None:
    """Refuse a model that cannot embed images (and text), naming it and the fix."""
    modalities = getattr(model, "modalities", None)
    label = repr(name) if name is not None else type(model).__name__
    if modalities is None:
        raise ValueError(
            f"ClipEmbedder cannot tell which inputs the model {label} embeds: it needs "
            "sentence-transformers >= 6, whose models list their modalities "
            "(pip install -U 'sentence-transformers>=6')"
        )
    missing = [m for m in ("text", "image") if m not in modalities]
    if missing:
        raise ValueError(
            f"the model {label} has no {' or '.join(missing)} modality (it embeds "
            f"{sorted(map(str, modalities))}), so it cannot put text and images in one "
            f"space; ClipEmbedder needs a CLIP model such as {DEFAULT_CLIP_MODEL!r} (use "
            "SentenceTransformerEmbedder for a text-only model)"
        )
