"""LlamaIndex `MultimodalRetriever` over the core `MultimodalSearcher`: text and image queries.

LlamaIndex already has the query type: a `QueryBundle` carries ``query_str`` and
``image_path``, so ``retrieve(QueryBundle(query_str="...", image_path="x.png"))`` is a
text + image query, and a plain string a text query. The retriever implements LlamaIndex's
own multimodal interface (`llama_index.core.base.base_multi_modal_retriever.
MultiModalRetriever`: ``text_retrieve``, ``text_to_image_retrieve``,
``image_to_image_retrieve`` and their async forms), so it stands where a
``MultiModalVectorIndexRetriever`` does. Image results come back as `ImageNode`s
(``image_path`` set, the description as text), which
``RetrieverQueryEngine.from_args(..., multimodal=True)`` hands to a vision LLM as images;
text results as the caller's nodes or `TextNode`s.

Routing, fusion by visual intent and provenance are the core's; this module converts
nodes, picks the routes each interface method means, and adapts a LlamaIndex multimodal
LLM into a describer.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.base.base_multi_modal_retriever import MultiModalRetriever
from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.callbacks import CallbackManager
from llama_index.core.image_retriever import BaseImageRetriever
from llama_index.core.multi_modal_llms.base import MultiModalLLM
from llama_index.core.schema import BaseNode, ImageNode, NodeWithScore, QueryBundle, QueryType

from hybrid_retrievers.fusion import MULTIMODAL_ROUTES, ImageQuery, MultimodalSearcher
from hybrid_retrievers.integration import keyword_names
from hybrid_retrievers.types import Doc, Hit

from ._base import Filter, SearcherState, checks_keywords
from ._convert import FUSION_KEY, QueryChecked, check_query_type, node_with_added_metadata
from .images import MultiModalLLMDescriber

__all__ = ["MULTIMODAL_KEY", "TEXT_ROUTES", "TEXT_TO_IMAGE_ROUTES", "IMAGE_TO_IMAGE_ROUTES",
           "MultimodalRetriever", "as_describer", "as_searcher", "doc_to_image_node"]

MULTIMODAL_KEY = "multimodal"
"""Metadata key of a returned node: the routes asked, their weights, the query's visual
words and the query image's name and description (see `MultimodalSearcher`)."""

TEXT_ROUTES = ("text",)
"""The routes of ``text_retrieve``: the text chunks."""
TEXT_TO_IMAGE_ROUTES = ("descriptions", "images")
"""The routes of ``text_to_image_retrieve``: image descriptions and CLIP text→image."""
IMAGE_TO_IMAGE_ROUTES = ("image",)
"""The route of ``image_to_image_retrieve``: CLIP image→image."""


# The factories hand their other keywords to the core searcher.
searcher_factory = checks_keywords(
    lambda cls: keyword_names(MultimodalSearcher.__init__, MultimodalSearcher.from_index))


def as_describer(describer: Any) -> Any:
    """``describer`` as the core's describer ``(image, prompt) -> str``: a LlamaIndex LLM
    or multimodal LLM is wrapped in `MultiModalLLMDescriber`, a plain callable is used as
    it is, ``None`` stays ``None``; `TypeError` for anything else."""
    if describer is None:
        return None
    if isinstance(describer, (BaseLLM, MultiModalLLM)):
        return MultiModalLLMDescriber(describer)
    if callable(describer):
        return describer
    raise TypeError("describer must be a LlamaIndex (multimodal) LLM or a callable "
                    f"(image, prompt) -> str, got {type(describer).__name__}: {describer!r:.80}")


def as_searcher(value: Any) -> Any:
    """A component of a `MultimodalSearcher`: one of this package's retrievers gives its
    core searcher or index (shared); anything else passes to the searcher, which checks it."""
    return value.searcher if isinstance(value, SearcherState) else value


def doc_to_image_node(doc: Doc) -> ImageNode:
    """An `ImageNode` for an image document: id, the description as text, a copy of the
    metadata, and ``image_path`` when the document's ``"image"`` is a file path (not a
    ``"<bytes>"``-style placeholder for an image that came without one)."""
    source = doc.metadata.get("image")
    path = source if isinstance(source, str) and source and not source.startswith("<") else None
    return ImageNode(id_=doc.id, text=doc.text, metadata=dict(doc.metadata), image_path=path)


class MultimodalRetriever(SearcherState[MultimodalSearcher], QueryChecked, MultiModalRetriever):
    """Text chunks, image descriptions and CLIP image vectors, searched with text and
    images, fused by visual intent.

    ``retrieve`` runs every route the query can use: ``query_str`` by the text,
    description and CLIP text→image routes, ``image_path`` (a file path or a data URI)
    by the CLIP image→image and described-image routes; visual words in the query
    ("diagram", "foto", "gráfico"...) shift weight toward the image routes. The
    multimodal interface methods run one part: ``text_retrieve`` (text chunks),
    ``text_to_image_retrieve`` (descriptions and CLIP text→image) and
    ``image_to_image_retrieve`` (CLIP image→image; a plain string is the image path, as
    in LlamaIndex). Each node is a copy with the route provenance under
    ``metadata["fusion"]`` and the query's under ``metadata["multimodal"]`` (both kept
    out of its LLM and embedding text); image results are `ImageNode`s
    (`doc_to_image_node`) unless the caller's own node for that id is given.

    The constructor takes the `MultimodalSearcher` and the `SearcherOptions`
    (``similarity_top_k``, ``filters``, ``nodes``, ``callback_manager``, ``verbose``).

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> from llama_index_hybrid_retrievers import MultimodalRetriever
        >>> index = BM25Index.from_texts(
        ...     ["the services connect through a message queue",
        ...      "a diagram of the services and the queue between them"],
        ...     ids=["t1", "image-1"],
        ...     metadatas=[{"type": "text"}, {"type": "image", "image": "arch.png"}])
        >>> retriever = MultimodalRetriever.from_index(index, similarity_top_k=2)
        >>> [type(n.node).__name__ for n in retriever.retrieve("how do the services connect")]
        ['TextNode', 'ImageNode']
        >>> top = retriever.retrieve("diagram of how the services connect")[0].node
        >>> top.node_id, top.image_path, top.metadata["multimodal"]["visual_words"]
        ('image-1', 'arch.png', ['diagram'])
    """

    searcher_type = MultimodalSearcher
    build_hint = "MultimodalRetriever.from_index(index, ...) or .from_components(...)"

    @classmethod
    @searcher_factory
    def from_components(
        cls, text: Any = None, *, images: Any = None, descriptions: Any = None,
        describer: Any = None, similarity_top_k: int = 4, filters: Filter = None,
        nodes: Iterable[BaseNode] | None = None, callback_manager: CallbackManager | None = None,
        verbose: bool = False, **searcher_kwargs: Any,
    ) -> MultimodalRetriever:
        """A retriever over a new `MultimodalSearcher` of these components.

        Args:
            text: the searcher of the text chunks: a core searcher or index, or one of
                this package's retrievers (`HybridRetriever`, `BM25Retriever`...: its core
                searcher is used).
            images: a CLIP `VectorIndex` of images (`VectorIndex.from_images`).
            descriptions: the searcher of the image descriptions (as ``text``).
            describer: describes a query image: a LlamaIndex multimodal LLM (wrapped in
                `MultiModalLLMDescriber`) or a callable ``(image, prompt) -> str``.
            similarity_top_k, filters, nodes, callback_manager, verbose: the
                constructor's (``nodes``: the caller's nodes, handed back for hits).
            **searcher_kwargs: `MultimodalSearcher` arguments (``weights``, ``mode``,
                ``k_rrf``, ``fetch_k``, ``prompt``, ``timeout``, ``cache``,
                ``max_workers``).
        """
        searcher = MultimodalSearcher(
            as_searcher(text), images=as_searcher(images),
            descriptions=as_searcher(descriptions),
            describer=as_describer(describer), **searcher_kwargs)
        return cls(searcher, similarity_top_k=similarity_top_k, filters=filters, nodes=nodes,
                   callback_manager=callback_manager, verbose=verbose)

    @classmethod
    @searcher_factory
    def from_index(
        cls, index: Any, *, images: Any = None, describer: Any = None,
        similarity_top_k: int = 4, filters: Filter = None,
        nodes: Iterable[BaseNode] | None = None, callback_manager: CallbackManager | None = None,
        verbose: bool = False, **searcher_kwargs: Any,
    ) -> MultimodalRetriever:
        """A retriever over one index holding text chunks and image descriptions
        (``metadata["type"] == "image"``), split into the text and description routes
        (`MultimodalSearcher.from_index`); ``index`` may be one of this package's
        retrievers. Other arguments as `from_components` (plus ``type_key`` /
        ``image_type`` in ``searcher_kwargs``)."""
        searcher = MultimodalSearcher.from_index(
            as_searcher(index), images=as_searcher(images),
            describer=as_describer(describer), **searcher_kwargs)
        return cls(searcher, similarity_top_k=similarity_top_k, filters=filters, nodes=nodes,
                   callback_manager=callback_manager, verbose=verbose)

    # ----------------------------------------------------------------- retrieve

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._run(self._searcher, query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._run, self._searcher, query_bundle)

    def _run(self, searcher: MultimodalSearcher, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = _image_query(query_bundle)
        return self._wrap(searcher.search(query, self._similarity_top_k,
                                          **self._search_options()))

    def _wrap(self, hits: Iterable[Hit]) -> list[NodeWithScore]:
        out = []
        for hit in hits:
            node = self._nodes.node_for(hit.doc)
            if node is not self._nodes.get(hit.doc.id) and hit.doc.metadata.get("type") == "image":
                node = doc_to_image_node(hit.doc)
            added = {FUSION_KEY: hit.explanation[FUSION_KEY],
                     MULTIMODAL_KEY: hit.explanation[MULTIMODAL_KEY]}
            out.append(NodeWithScore(node=node_with_added_metadata(node, added),
                                     score=float(hit.score)))
        return out

    # ------------------------------------------- LlamaIndex's multimodal interface

    def text_retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """The text chunks for a text query (the ``text`` route only)."""
        return self._run(self._only(TEXT_ROUTES, "text_retrieve"),
                         _text_bundle(str_or_query_bundle))

    def _text_to_image_retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Images for a text query: descriptions and CLIP text→image, fused."""
        return self._run(self._only(TEXT_TO_IMAGE_ROUTES, "text_to_image_retrieve"),
                         _text_bundle(query_bundle))

    def _image_to_image_retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Images for an image query (``image_path``): CLIP image→image."""
        if query_bundle.image_path is None:
            raise ValueError("image_to_image_retrieve needs an image: pass the image path (or "
                             "a QueryBundle with image_path=)")
        bundle = QueryBundle(query_str="", image_path=query_bundle.image_path)
        return self._run(self._only(IMAGE_TO_IMAGE_ROUTES, "image_to_image_retrieve"), bundle)

    async def atext_retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """Async `text_retrieve` (the search runs in a worker thread)."""
        return await asyncio.to_thread(self.text_retrieve, str_or_query_bundle)

    async def _atext_to_image_retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._text_to_image_retrieve, query_bundle)

    async def _aimage_to_image_retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._image_to_image_retrieve, query_bundle)

    def text_to_image_retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """Images for a text query (see `_text_to_image_retrieve`)."""
        check_query_type(str_or_query_bundle)
        return BaseImageRetriever.text_to_image_retrieve(self, str_or_query_bundle)

    def image_to_image_retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """Images for an image query; a string is the image's path or data URI."""
        check_query_type(str_or_query_bundle)
        return BaseImageRetriever.image_to_image_retrieve(self, str_or_query_bundle)

    async def atext_to_image_retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """Async `text_to_image_retrieve`."""
        check_query_type(str_or_query_bundle)
        return await BaseImageRetriever.atext_to_image_retrieve(self, str_or_query_bundle)

    async def aimage_to_image_retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """Async `image_to_image_retrieve`."""
        check_query_type(str_or_query_bundle)
        return await BaseImageRetriever.aimage_to_image_retrieve(self, str_or_query_bundle)

    def _only(self, routes: Sequence[str], method: str) -> MultimodalSearcher:
        """The searcher with every route but ``routes`` switched off (weight 0): a shallow
        copy sharing the indexes, which the searcher allows (it keeps no per-search
        state)."""
        missing = {"text": "a text searcher", "descriptions": "a descriptions searcher",
                   "images": "a CLIP image index (images=)", "image": "a CLIP image index "
                   "(images=)"}
        present = {"text": self._searcher.text, "descriptions": self._searcher.descriptions,
                   "images": self._searcher.images, "image": self._searcher.images}
        if all(present[r] is None for r in routes):
            raise ValueError(f"{method} needs {' or '.join(dict.fromkeys(missing[r] for r in routes))}; "
                             "this retriever's MultimodalSearcher has none")
        only = copy.copy(self._searcher)
        only.weights = _RouteSubset(self._searcher.weights, routes)
        return only


class _RouteSubset:
    """A weight rule keeping ``routes`` at the rule's weight and the others at 0."""

    def __init__(self, rule: Any, routes: Sequence[str]) -> None:
        self.rule, self.routes = rule, frozenset(routes)

    def __call__(self, text: str) -> list[float]:
        rule = self.rule
        if isinstance(rule, Mapping):
            values = [float(rule.get(r, 0.0)) for r in MULTIMODAL_ROUTES]
        else:
            values = list(rule(text) if callable(rule) else rule)
        return [w if r in self.routes else 0.0 for r, w in zip(MULTIMODAL_ROUTES, values)]


def _text_bundle(query: QueryType) -> QueryBundle:
    check_query_type(query)
    text = query if isinstance(query, str) else query.query_str
    return QueryBundle(query_str=text)


def _image_query(query_bundle: QueryBundle) -> ImageQuery:
    """The core query of a bundle: its text and its ``image_path`` (loaded by the core,
    whose errors name the file)."""
    text = query_bundle.query_str if query_bundle.query_str.strip() else None
    image = query_bundle.image_path
    if image is not None and not isinstance(image, str):
        raise TypeError(f"QueryBundle.image_path must be a str (a file path or a data "
                        f"URI), got {type(image).__name__}")
    if text is None and image is None:
        raise ValueError("the query needs text (query_str) or an image (QueryBundle."
                         "image_path), got neither")
    return ImageQuery(text=text, image=image)

