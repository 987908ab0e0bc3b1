"""Our CLIP model as a LangChain `Embeddings` that LangChain's multimodal vector stores use.

LangChain has no image-embedding interface of its own: a vector store that holds images
(``langchain_chroma.Chroma.add_images(uris)``, ``Chroma.similarity_search_by_image(uri)``)
checks that its embedding function has an ``embed_image(uris=...)`` method and calls it,
as ``langchain_experimental``'s ``OpenCLIPEmbeddings`` defines it. `ClipEmbeddings` is
that duck-typed interface over the core `hybrid_retrievers.models.ClipEmbedder`, so any
sentence-transformers CLIP checkpoint (``clip-ViT-B-32``, or a local folder) fills one
store with text and images in one space: text finds images, images find images.

Every method delegates to the core embedder (its batching, bounded image decoding, the
`ImageError` that names a bad file, and its rule that a text is always embedded as text,
even one that looks like an image path); this module only converts arrays to lists.

Two things of Chroma's own to know: ``add_images`` stores each image's base64 file bytes
as the document's ``page_content`` (put a caption or the path in ``metadatas``), and
in langchain-chroma 1.1 ``similarity_search_by_image_with_relevance_score`` passes the
list ``embed_image`` returns where one vector belongs, which Chroma refuses
(langchain-ai/langchain#33851); until that is fixed, call
``store.similarity_search_by_vector_with_relevance_scores(clip.embed_image([uri])[0])``
(its scores are Chroma's distances: lower is nearer).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from hybrid_retrievers.images import ImageInput
from hybrid_retrievers.integration import keyword_names
from hybrid_retrievers.models import DEFAULT_CLIP_MODEL, ClipEmbedder

from ._base import checks_keywords

__all__ = ["ClipEmbeddings"]


class ClipEmbeddings(Embeddings):
    """A CLIP model as LangChain `Embeddings` plus ``embed_image`` (multimodal stores).

    ``embed_documents`` and ``embed_query`` run CLIP's text tower, ``embed_image`` its
    image tower; all vectors are L2-normalised, so cosine (and Chroma's default L2)
    ranks text and images in one space.

    Args:
        model: a `ClipEmbedder`, or the name or local path of a sentence-transformers
            CLIP checkpoint (default ``"clip-ViT-B-32"``; loaded on first use).
        **options: `ClipEmbedder` options (``device``, ``batch_size``, ``max_pixels``,
            ``model_id``...), only when ``model`` is a name or path.

    Attributes:
        clip: the core embedder every call goes to (share it with a `VectorIndex`).
        model_name: the model's identity, the embedder's ``model_id`` (what
            `LangChainEmbedder` and caches name this model by).

    Raises:
        TypeError: ``options`` given with a `ClipEmbedder` (set them on it instead), or
            ``model`` of no accepted kind.

    Example:
        >>> from langchain_chroma import Chroma
        >>> clip = ClipEmbeddings("clip-ViT-B-32", device="cpu")
        >>> clip.model_name
        'clip-ViT-B-32'
        >>> store = Chroma("photos", embedding_function=clip)  # doctest: +SKIP
        >>> store.add_images(["cat.png", "chart.png"])  # doctest: +SKIP
        >>> store.similarity_search("a cat", k=1)  # text to image  # doctest: +SKIP
        >>> store.similarity_search_by_image("other_cat.jpg", k=1)  # doctest: +SKIP
    """

    @checks_keywords(lambda cls: keyword_names(ClipEmbedder.__init__))
    def __init__(self, model: ClipEmbedder | str | os.PathLike[str] = DEFAULT_CLIP_MODEL,
                 **options: Any) -> None:
        if isinstance(model, ClipEmbedder):
            if options:
                raise TypeError(
                    f"options {sorted(options)} apply when ClipEmbeddings loads the model "
                    "from a name or path; set them on the ClipEmbedder given instead"
                )
            self.clip = model
        elif isinstance(model, (str, os.PathLike)):
            self.clip = ClipEmbedder(os.fspath(model), **options)
        else:
            raise TypeError(
                "model must be a ClipEmbedder or the name or local path of a "
                f"sentence-transformers CLIP model, got {type(model).__name__}: {model!r:.80}"
            )
        self.model_name: str = self.clip.model_id

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Text vectors (CLIP's text tower), one per text, in order."""
        return self.clip.embed_documents(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """One text query's vector (CLIP's text tower): finds text and images."""
        return self.clip.embed_query(text).tolist()  # type: ignore[no-any-return]

    def embed_image(self, uris: Sequence[ImageInput]) -> list[list[float]]:
        """Image vectors (CLIP's image tower), one per image, in order.

        The method LangChain's multimodal stores call (``Chroma.add_images``,
        ``similarity_search_by_image``) with file paths; data URIs, bytes and PIL images
        work too.

        Raises:
            TypeError: ``uris`` is a single image instead of a list.
            hybrid_retrievers.images.ImageError: a missing, unreadable, truncated or too
                large image (the message names the file).
        """
        return self.clip.embed_images(uris).tolist()  # type: ignore[no-any-return]

    async def aembed_image(self, uris: Sequence[ImageInput]) -> list[list[float]]:
        """Async `embed_image`, in a worker thread (the model never blocks the loop)."""
        return await run_in_executor(None, self.embed_image, uris)

    def __repr__(self) -> str:
        return f"ClipEmbeddings({self.clip!r})"
