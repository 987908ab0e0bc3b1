"""LangChain retrievers over the core `MultimodalSearcher`: text and image queries.

A LangChain retriever's input is a string, and chains such as ``retriever |
format_docs`` depend on it (a structured query object would break every chain and every
tool built on ``invoke(str)``). So an image travels in one of two string-friendly ways:

* `MultimodalRetriever`: the string is the text query; an image rides along as a keyword
  argument, ``retriever.invoke("how do the services connect?", image="diagram.png")``
  (LangChain hands ``invoke``'s extra keyword arguments to ``_get_relevant_documents``;
  in a chain, bind it: ``retriever.bind(image=...)``).
* `ImageRetriever`: the string IS the image, a file path or a ``data:image/...;base64,``
  URI (a path is a string, so ``ImageRetriever | format_docs`` chains work unchanged),
  with optional ``text=``. It is never guessed from free text: a string that is not an
  image file or a data URI is an error saying so.

Routing, fusion by visual intent and provenance are the core's (see
`hybrid_retrievers.fusion.MultimodalSearcher`); this module converts documents, adapts a
LangChain chat model into a describer and wires callbacks (a describer's model call is
a child run of the retrieval) and async.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.runnables import Runnable
from pydantic import field_validator

from hybrid_retrievers.fusion import ImageQuery, MultimodalSearcher
from hybrid_retrievers.images import ImageError, ImageInput, load_image
from hybrid_retrievers.integration import keyword_names
from hybrid_retrievers.types import Hit

from ._base import CoreRetriever, Filter, checks_keywords
from ._convert import FUSION_KEY, check_score_key
from .images import ChatModelDescriber

__all__ = ["MULTIMODAL_KEY", "ImageRetriever", "MultimodalRetriever", "as_describer",
           "as_searcher"]

MULTIMODAL_KEY = "multimodal"
"""Metadata key of a returned document: the routes asked, their weights, the query's
visual words and the query image's name and description (see `MultimodalSearcher`)."""


# The factories hand their other keywords to the core searcher.
searcher_factory = checks_keywords(
    lambda cls: keyword_names(MultimodalSearcher.__init__, MultimodalSearcher.from_index))


def as_describer(describer: Any) -> Any:
    """``describer`` as the core's describer ``(image, prompt) -> str``: a LangChain chat
    model (or any `Runnable`) is wrapped in `ChatModelDescriber`, a plain callable is
    used as it is, ``None`` stays ``None``; `TypeError` for anything else."""
    if describer is None:
        return None
    if isinstance(describer, Runnable):
        return ChatModelDescriber(describer)
    if callable(describer):
        return describer
    raise TypeError("describer must be a LangChain chat model (vision-capable) or a callable "
                    f"(image, prompt) -> str, got {type(describer).__name__}: {describer!r:.80}")


def as_searcher(value: Any) -> Any:
    """A component of a `MultimodalSearcher`: one of this package's retrievers gives its
    core searcher or index (shared); anything else passes to the searcher, which checks it."""
    return value._core() if isinstance(value, CoreRetriever) else value


class _MultimodalBase(CoreRetriever):
    """A retriever over one `MultimodalSearcher` (the shared part of the two classes)."""

    searcher: MultimodalSearcher
    """The core multimodal searcher that does all the work; shared, not copied."""

    child_runs: ClassVar[bool] = True  # a describer's chat model is a child run

    @field_validator("searcher", mode="before")
    @classmethod
    def _check_searcher(cls, value: Any) -> MultimodalSearcher:
        if not isinstance(value, MultimodalSearcher):
            raise TypeError(
                "searcher must be a hybrid_retrievers.fusion.MultimodalSearcher, got "
                f"{type(value).__name__}; build one with {cls.__name__}.from_index(...) or "
                f"{cls.__name__}.from_components(...)")
        return value

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        for reserved in (FUSION_KEY, MULTIMODAL_KEY):
            check_score_key(value, reserved)
        return value

    @classmethod
    @searcher_factory
    def from_components(
        cls, text: Any = None, *, images: Any = None, descriptions: Any = None,
        describer: Any = None, k: int = 4, filter: Filter | None = None,
        score_key: str = "score", **searcher_kwargs: Any,
    ) -> Any:
        """A retriever over a new `MultimodalSearcher` of these components.

        Args:
            text: the searcher of the text chunks: a core searcher or index, or one of
                this package's retrievers (`HybridRetriever`, `BM25Retriever`...: its core
                searcher is used).
            images: a CLIP `VectorIndex` of images (`VectorIndex.from_images`).
            descriptions: the searcher of the image descriptions (as ``text``).
            describer: describes a query image: a vision-capable LangChain chat model
                (wrapped in `ChatModelDescriber`) or a callable ``(image, prompt) -> str``.
            k, filter, score_key: the retriever's fields.
            **searcher_kwargs: `MultimodalSearcher` arguments (``weights``, ``mode``,
                ``k_rrf``, ``fetch_k``, ``prompt``, ``timeout``, ``cache``,
                ``max_workers``).
        """
        searcher = MultimodalSearcher(
            as_searcher(text), images=as_searcher(images),
            descriptions=as_searcher(descriptions),
            describer=as_describer(describer), **searcher_kwargs)
        return cls(searcher=searcher, k=k, filter=filter, score_key=score_key)

    @classmethod
    @searcher_factory
    def from_index(
        cls, index: Any, *, images: Any = None, describer: Any = None, k: int = 4,
        filter: Filter | None = None, score_key: str = "score", **searcher_kwargs: Any,
    ) -> Any:
        """A retriever over one index holding text chunks and image descriptions
        (``metadata["type"] == "image"``), split into the text and description routes
        (`MultimodalSearcher.from_index`); ``index`` may be one of this package's
        retrievers. Other arguments as `from_components` (plus ``type_key`` /
        ``image_type`` in ``searcher_kwargs``)."""
        searcher = MultimodalSearcher.from_index(
            as_searcher(index), images=as_searcher(images),
            describer=as_describer(describer), **searcher_kwargs)
        return cls(searcher=searcher, k=k, filter=filter, score_key=score_key)

    def _extra(self, hit: Hit) -> Mapping[str, Any]:
        return {FUSION_KEY: hit.explanation[FUSION_KEY],
                MULTIMODAL_KEY: hit.explanation[MULTIMODAL_KEY]}

    def _run(self, run_manager: Any, query: ImageQuery, k: int | None,
             filter: Filter | None) -> list[Document]:
        with self._runs(run_manager):
            return self._search(query, k, filter)  # type: ignore[arg-type]  # the core takes it

    async def _arun(self, run_manager: Any, query: ImageQuery, k: int | None,
                    filter: Filter | None) -> list[Document]:
        with self._runs(run_manager):
            return await self._asearch(query, k, filter)  # type: ignore[arg-type]


class MultimodalRetriever(_MultimodalBase):
    """Text chunks, image descriptions and CLIP image vectors, searched with text and
    (optionally) an image, fused by visual intent.

    The input string is the text query; pass an image with ``image=`` (a path, bytes, a
    PIL image or a data URI) per call. Each returned `Document` has the document's text
    as ``page_content`` (an image's description for image results, whose metadata keeps
    ``"type": "image"`` and the image path under ``"image"``), the fused score under
    ``score_key``, ``"rank"``, the route provenance under ``"fusion"`` (which route found
    it, at which rank) and the query's under ``"multimodal"``. Visual words in the query
    ("diagram", "foto", "gráfico"...) shift weight toward the image routes
    (`visual_intent_rule`); otherwise text leads. Why the image is a keyword argument
    and not part of the input: see the module docstring.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> from langchain_hybrid_retrievers import MultimodalRetriever
        >>> index = BM25Index.from_texts(
        ...     ["the services connect through a message queue",
        ...      "a diagram of the services and the queue between them"],
        ...     ids=["t1", "image-1"],
        ...     metadatas=[{"type": "text"}, {"type": "image", "image": "arch.png"}])
        >>> retriever = MultimodalRetriever.from_index(index, k=2)
        >>> [d.id for d in retriever.invoke("how do the services connect")]
        ['t1', 'image-1']
        >>> top = retriever.invoke("diagram of how the services connect")[0]
        >>> top.id, top.metadata["image"], top.metadata["multimodal"]["visual_words"]
        ('image-1', 'arch.png', ['diagram'])
    """

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None, image: ImageInput | None = None,
    ) -> list[Document]:
        """Return up to ``k`` documents for the text ``query`` and the ``image``, best first."""
        return self._run(run_manager, _text_query(query, image), k, filter)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None, image: ImageInput | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents` (the core's routes run in worker threads)."""
        return await self._arun(run_manager, _text_query(query, image), k, filter)


def _text_query(query: str, image: ImageInput | None) -> ImageQuery:
    text = query if query.strip() else None
    return ImageQuery(text=text, image=image)


class ImageRetriever(_MultimodalBase):
    """Search by image: the input string is the image, a file path or a
    ``data:image/...;base64,`` URI, with optional text per call (``text=``).

    The image goes by the CLIP route (image→image, when the searcher has a CLIP index)
    and the description route (the describer describes it; the description is searched
    in the text chunks), fused; ``text=`` adds the text routes. Returned documents are
    as for `MultimodalRetriever`. Because the input is a plain string, the retriever
    composes like any other: ``ImageRetriever | format_docs``. A string that is not an
    image file or a data URI is refused (`ImageError` naming it); it is never read as a
    text query: use `MultimodalRetriever` for that.

    Example:
        >>> import os, tempfile
        >>> from PIL import Image
        >>> from hybrid_retrievers import BM25Index
        >>> from langchain_hybrid_retrievers import ImageRetriever
        >>> path = os.path.join(tempfile.mkdtemp(), "query.png")
        >>> Image.new("RGB", (8, 8), (200, 30, 30)).save(path)
        >>> index = BM25Index.from_texts(
        ...     ["the red warning light means the queue is full", "bread dough"],
        ...     ids=["t1", "t2"], metadatas=[{"type": "text"}, {"type": "text"}])
        >>> retriever = ImageRetriever.from_index(
        ...     index, describer=lambda image, prompt: "a red warning light", k=1)
        >>> doc = retriever.invoke(path)[0]
        >>> doc.id, doc.metadata["multimodal"]["query_image_description"]
        ('t1', 'a red warning light')
    """

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None, text: str | None = None,
    ) -> list[Document]:
        """Return up to ``k`` documents for the image ``query`` (and ``text``), best first."""
        return self._run(run_manager, _image_query(query, text), k, filter)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None, text: str | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents` (the core's routes run in worker threads)."""
        return await self._arun(run_manager, _image_query(query, text), k, filter)


def _image_query(image: str, text: str | None) -> ImageQuery:
    if not isinstance(image, str):
        raise TypeError(f"ImageRetriever's input must be a str (an image file path or a data "
                        f"URI), got {type(image).__name__}")
    try:
        loaded = load_image(image)
    except ImageError as exc:
        if image.startswith("data:") or "image file not found" not in str(exc):
            raise
        raise ImageError(f"{exc}; ImageRetriever's input is the image (a file path or a "
                         "data:image/...;base64, URI); for a text query use "
                         "MultimodalRetriever") from None
    return ImageQuery(text=text, image=loaded)
