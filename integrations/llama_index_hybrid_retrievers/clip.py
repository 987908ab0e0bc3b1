"""Our CLIP model as a LlamaIndex `MultiModalEmbedding` (image and text in one space).

LlamaIndex's multimodal index (``MultiModalVectorStoreIndex``) embeds ``ImageNode``s /
``ImageDocument``s with its ``image_embed_model``, a `MultiModalEmbedding`, and stores
the vectors in any of its vector stores (the in-memory ``SimpleVectorStore``, Chroma,
Qdrant...); its retriever answers text to image (``text_to_image_retrieve``) and image to
image (``image_to_image_retrieve``) with the same model. `ClipEmbedding` is that model
over the core `hybrid_retrievers.models.ClipEmbedder`, so any sentence-transformers CLIP
checkpoint (``clip-ViT-B-32``, or a local folder) serves there, offline, with no
``clip`` / ``open_clip`` package (what ``llama-index-embeddings-clip`` needs).

Every method delegates to the core embedder (its batching, bounded image decoding, the
`ImageError` naming a bad file, text always embedded as text); this module converts
LlamaIndex's image values (a path, or a ``BytesIO`` for an in-node image) and arrays to
lists, and runs the model in a worker thread for the async methods.

Two things of LlamaIndex's own to know: ``SimpleDirectoryReader`` reads a PNG or JPEG as
an ``ImageDocument`` only with ``llama-index-readers-file`` installed (without it, as
text); and the index skips a node whose text and metadata are both empty ("Some nodes are
missing content"), so give an ``ImageNode`` built by hand some metadata (its file name).
Image documents go through ``MultiModalVectorStoreIndex.from_documents``, whose node
parser turns them into ``ImageNode``s; the constructor takes ``ImageNode``s.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import MultiModalEmbedding
from llama_index.core.schema import ImageType

from hybrid_retrievers.models import DEFAULT_CLIP_MODEL, ClipEmbedder

from ._base import checks_keywords, constructor_keywords

__all__ = ["ClipEmbedding"]

Embedding = list[float]


class ClipEmbedding(MultiModalEmbedding):
    """A CLIP model as LlamaIndex's ``image_embed_model`` (and text ``embed_model``).

    Texts and queries run CLIP's text tower, images its image tower; all vectors are
    L2-normalised, so text finds images and images find images by cosine similarity.

    Args:
        model: a `ClipEmbedder`, or the name or local path of a sentence-transformers
            CLIP checkpoint (default ``"clip-ViT-B-32"``; loaded on first use).
        device, batch_size, max_pixels, model_id: `ClipEmbedder` options, only when
            ``model`` is a name or path (``batch_size`` also sets LlamaIndex's
            ``embed_batch_size`` unless that is given).
        **kwargs: `BaseEmbedding` fields (``callback_manager``, ``embed_batch_size``...).

    ``model_name`` is the core embedder's ``model_id`` (the model's identity, which
    `LlamaIndexEmbedder` and caches use); `clip` is the core embedder itself.

    Raises:
        TypeError: an option given with a `ClipEmbedder` (set it on that instead), or
            ``model`` of no accepted kind.

    Example:
        >>> from llama_index.core.indices import MultiModalVectorStoreIndex
        >>> clip = ClipEmbedding("clip-ViT-B-32", device="cpu")
        >>> clip.model_name
        'clip-ViT-B-32'
        >>> from llama_index.core import SimpleDirectoryReader  # doctest: +SKIP
        >>> docs = SimpleDirectoryReader("photos/").load_data()  # doctest: +SKIP
        >>> index = MultiModalVectorStoreIndex.from_documents(
        ...     docs, embed_model=clip, image_embed_model=clip)  # doctest: +SKIP
        >>> index.as_retriever().text_to_image_retrieve("a cat")  # doctest: +SKIP
    """

    _clip: ClipEmbedder = PrivateAttr()

    @checks_keywords(constructor_keywords)  # **kwargs: the BaseEmbedding fields
    def __init__(
        self,
        model: ClipEmbedder | str | os.PathLike[str] = DEFAULT_CLIP_MODEL,
        *,
        device: str | None = None,
        batch_size: int | None = None,
        max_pixels: int | None = None,
        model_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        options = {name: value for name, value in (
            ("device", device), ("batch_size", batch_size), ("max_pixels", max_pixels),
            ("model_id", model_id)) if value is not None}
        if isinstance(model, ClipEmbedder):
            if options:
                raise TypeError(
                    f"options {sorted(options)} apply when ClipEmbedding loads the model "
                    "from a name or path; set them on the ClipEmbedder given instead"
                )
            clip = model
        elif isinstance(model, (str, os.PathLike)):
            clip = ClipEmbedder(os.fspath(model), **options)
        else:
            raise TypeError(
                "model must be a ClipEmbedder or the name or local path of a "
                f"sentence-transformers CLIP model, got {type(model).__name__}: {model!r:.80}"
            )
        kwargs.setdefault("embed_batch_size", clip.batch_size)
        super().__init__(model_name=clip.model_id, **kwargs)
        self._clip = clip

    @classmethod
    def class_name(cls) -> str:
        return "ClipEmbedding"

    @property
    def clip(self) -> ClipEmbedder:
        """The core embedder every call goes to (share it with a `VectorIndex`)."""
        return self._clip

    # ------------------------------------------------------------------ text tower

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._clip.embed_query(query).tolist()  # type: ignore[no-any-return]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._clip.embed_documents(texts).tolist()  # type: ignore[no-any-return]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)

    # ------------------------------------------------------------------ image tower

    def _get_image_embedding(self, img_file_path: ImageType) -> Embedding:
        return self._get_image_embeddings([img_file_path])[0]

    def _get_image_embeddings(self, img_file_paths: list[ImageType]) -> list[Embedding]:
        # An ImageNode resolves to its path, or to a BytesIO of its in-node image.
        images = [item.getvalue() if hasattr(item, "getvalue") else item
                  for item in img_file_paths]
        return self._clip.embed_images(images).tolist()  # type: ignore[no-any-return]

    async def _aget_image_embedding(self, img_file_path: ImageType) -> Embedding:
        return await asyncio.to_thread(self._get_image_embedding, img_file_path)

    async def _aget_image_embeddings(self, img_file_paths: list[ImageType]) -> list[Embedding]:
        return await asyncio.to_thread(self._get_image_embeddings, img_file_paths)
