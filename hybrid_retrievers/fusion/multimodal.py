"""MultimodalSearcher: text and image queries over text chunks, image descriptions and CLIP vectors.

One query may carry text, an image, or both (`ImageQuery`). Each part reaches the index
by the routes that can read it, every route is a ranked list, and the lists are fused
(RRF by default) with weights chosen per query by `visual_intent_rule`:

====================  ==========================================  ======================
route                 what it searches, with what                 weight (default)
====================  ==========================================  ======================
``text``              ``text`` searcher, the query text           1
``descriptions``      ``descriptions`` searcher, the query text   0.5, ×4 visual words
``images``            CLIP vectors, the query text (text→image)   0.5, ×4 visual words
``image``             CLIP vectors, the query image (image→image) 1, ×4 visual words
``described_image``   ``text`` and ``descriptions`` searchers      1
                      (fused by RRF), the query image's
                      description by ``describer``
====================  ==========================================  ======================

A route runs when its part of the query and its searcher are there (an image query
without a CLIP index and without a describer is an error that says so). An image found
by its description and by its CLIP vector is one result: both routes give an image the
same id (`image_id`), fusion merges by id, and the result carries the description's
document (its text is what a RAG prompt reads; a CLIP document's text is only a caption). Every hit's explanation holds the fusion
provenance (which routes found it, at which rank, with which weight) and, under
``"multimodal"``, the routes asked, their weights, the visual words that moved them and
the query image's description.

The fusion is planned by a `FusionPlan` over the five routes, as `FusionSearcher` plans
its children's: the plan checks ``mode``, ``k_rrf`` and ``fetch_k``, resolves each
query's weights (a route that cannot answer the query gets 0 and is not run) and fuses.
The ``described_image`` route's two lists (the description searched as text and among the
image descriptions) are fused first, by RRF, by a two-list plan: one ranking per route,
so that route weighs as one route in the final fusion.

Concurrency: the routes run at once (`CallRunner`, as `FusionSearcher` children do);
each route returns what it found (the ``described_image`` route also returns the
description it searched for), and the searcher keeps no per-search state, so many
threads may search it at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..filters import check_filter
from ..images.describe import DEFAULT_DESCRIPTION_PROMPT, describe_image
from ..images.description_cache import DescriptionCache
from ..images.loading import ImageError, ImageInput, LoadedImage, load_image
from ..timeout import DEFAULT_LLM_TIMEOUT
from ..types import Doc, Hit, MetadataFilter
from ..validation import check_k, check_query, check_weights
from .concurrency import CallRunner
from .modes import FusionMode
from .plan import FusionPlan
from .rank import DEFAULT_K_RRF
from .rules import VisualIntentRule, visual_intent_rule
from .searcher import FilteredSource

__all__ = ["IMAGE_ROUTES", "MULTIMODAL_ROUTES", "ImageQuery", "MultimodalSearcher",
           "default_multimodal_rule"]

MULTIMODAL_ROUTES = ("text", "descriptions", "images", "image", "described_image")
"""The routes of `MultimodalSearcher`, in the order its weights are given."""

IMAGE_ROUTES = ("descriptions", "images", "image")
"""The routes whose results are images: the ones visual words boost."""

_BASE_WEIGHTS = (1.0, 0.5, 0.5, 1.0, 1.0)
_CLIP_ROUTES = frozenset({"images", "image"})


def default_multimodal_rule() -> VisualIntentRule:
    """The default weights of `MultimodalSearcher`: text leads (1 : 0.5 per image route)
    until a visual word multiplies the image routes by 4 (see `visual_intent_rule`)."""
    return visual_intent_rule(
        image_sources=[MULTIMODAL_ROUTES.index(r) for r in IMAGE_ROUTES], boost=4.0,
        base_weights=_BASE_WEIGHTS)


@dataclass(frozen=True)
class ImageQuery:
    """A query with text, an image, or both.

    Example:
        >>> ImageQuery(text="the architecture diagram").text
        'the architecture diagram'
    """

    text: str | None = None
    image: ImageInput | None = None

    def __post_init__(self) -> None:
        if self.text is not None and not isinstance(self.text, str):
            raise TypeError(f"ImageQuery.text must be a str or None, got {type(self.text).__name__}")
        text = self.text.strip() if self.text is not None else ""
        if not text and self.image is None:
            raise ValueError("an ImageQuery needs text, an image, or both; got neither")


class MultimodalSearcher:
    """Search text chunks, image descriptions and CLIP image vectors with text or images.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> index = BM25Index.from_texts(
        ...     ["the services connect through a message queue",
        ...      "a diagram of the services and the queue between them"],
        ...     ids=["t1", "image-1"], metadatas=[{"type": "text"}, {"type": "image"}])
        >>> searcher = MultimodalSearcher.from_index(index)
        >>> [h.id for h in searcher.search("how do the services connect", k=2)]
        ['t1', 'image-1']
        >>> [h.id for h in searcher.search("diagram of how the services connect", k=2)]
        ['image-1', 't1']
    """

    def __init__(
        self,
        text: Any = None,
        *,
        images: Any = None,
        descriptions: Any = None,
        describer: Callable[[LoadedImage, str], str] | None = None,
        weights: Any = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None,
        prompt: str | None = None,
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
        cache: DescriptionCache | None = None,
        max_workers: int | None = None,
    ) -> None:
        """Args:
            text: a `Searcher` over the text chunks (any index, fusion or hybrid searcher).
            images: a `VectorIndex` of CLIP image vectors (`VectorIndex.from_images`):
                ``search`` (text→image) and ``search_image`` (image→image).
            descriptions: a `Searcher` over the image descriptions (e.g. a
                `FilteredSource` of the text index with ``{"type": "image"}``).
            describer: describes a query image for the ``described_image`` route
                (``describer(image, prompt) -> str``; the adapters wrap chat models).
            weights: a rule ``weights(query_text) -> 5 weights`` in `MULTIMODAL_ROUTES` order, 5
                weights, or a mapping route -> weight (missing routes 0); default
                `default_multimodal_rule`.
            mode: the fusion mode (RRF by default: it fuses by rank, so short image
                descriptions are not drowned by the scores of long text chunks).
            k_rrf, fetch_k: as `FusionSearcher`.
            prompt, timeout, cache: how the query image is described (see
                `describe_image`; ``prompt=None`` is its default prompt).
            max_workers: routes run at the same time, at most (1: one after another).
        """
        if text is None and images is None and descriptions is None:
            raise ValueError("MultimodalSearcher needs a text searcher, a CLIP image index "
                             "(images=) or a descriptions searcher; got none")
        for name, value in (("text", text), ("descriptions", descriptions), ("images", images)):
            if value is not None and not callable(getattr(value, "search", None)):
                raise TypeError(f"{name} must have a search(query, k, filter=...) method, got "
                                f"{type(value).__name__}")
        if images is not None and not callable(getattr(images, "search_image", None)):
            raise TypeError("images must be a VectorIndex of image vectors (with search_image), "
                            f"got {type(images).__name__}")
        if describer is not None and not callable(describer):
            raise TypeError(f"describer must be callable(image, prompt) -> str, got "
                            f"{type(describer).__name__}")
        self.text, self.images, self.descriptions = text, images, descriptions
        self.describer = describer
        self.weights = default_multimodal_rule() if weights is None else _check_route_weights(weights)
        self.plan = FusionPlan(len(MULTIMODAL_ROUTES), mode=mode, k_rrf=k_rrf, fetch_k=fetch_k,
                               names=MULTIMODAL_ROUTES)
        self._described_plan = FusionPlan(2, k_rrf=k_rrf, names=["text", "descriptions"])
        self.prompt, self.timeout, self.cache = prompt, timeout, cache
        self._runner = CallRunner(None if max_workers is None else check_k(max_workers, "max_workers"),
                                  size=len(MULTIMODAL_ROUTES), name="MultimodalSearcher")

    @classmethod
    def from_index(
        cls, index: Any, *, type_key: str = "type", image_type: str = "image", **kwargs: Any
    ) -> MultimodalSearcher:
        """One index holding text chunks and image descriptions, split into the ``text``
        route (documents whose ``type_key`` is not ``image_type``) and the
        ``descriptions`` route (those whose it is); ``kwargs`` as the constructor."""
        text = FilteredSource(index, _NotOfType(type_key, image_type), name="text")
        described = FilteredSource(index, {type_key: image_type}, name="descriptions")
        return cls(text, descriptions=described, **kwargs)

    # ------------------------------------------------------------------ search

    def search(
        self, query: str | ImageQuery, k: int = 10, *, filter: MetadataFilter | None = None
    ) -> list[Hit]:
        """The fused top ``k`` for a text query or an `ImageQuery` (see the module doc)."""
        if isinstance(query, str):
            query = ImageQuery(text=check_query(query))
        elif not isinstance(query, ImageQuery):
            raise TypeError("query must be a str or a hybrid_retrievers.fusion.ImageQuery, got "
                            f"{type(query).__name__}")
        check_k(k)
        check_filter(filter)
        text = (query.text or "").strip()
        loaded = None if query.image is None else _load_query_image(query.image)
        runnable = self._routes(bool(text), loaded is not None)
        by_route = self._route_weights(text)
        weights = [by_route[r] if r in runnable else 0.0 for r in MULTIMODAL_ROUTES]
        if not any(weights):
            raise ValueError(self._no_route_message(bool(text), loaded is not None))
        call = self.plan.resolve(text, k, weights=weights, check=False)
        calls = [self._call(MULTIMODAL_ROUTES[i], text, loaded, call.fetch_k, filter)
                 for i in call.active]
        answers = self._runner.run(calls, lambda j: f"route {MULTIMODAL_ROUTES[call.active[j]]!r}")
        lists = [hits for hits, _ in answers]
        fused = self.plan.fuse(call, lists)
        names = [MULTIMODAL_ROUTES[i] for i in call.active]
        info: dict[str, Any] = {"routes": names, "weights": {r: call.weights[i] for r, i in
                                                             zip(names, call.active)},
                                "visual_words": self._visual_words(text)}
        if loaded is not None:
            info["query_image"] = loaded.name
        description = next((d for _, d in answers if d is not None), None)
        if description is not None:
            info["query_image_description"] = description
        # An image found by CLIP and by its description is one result; it carries the
        # description (what a RAG prompt can read), not the CLIP document's caption.
        described_docs = {hit.id: hit.doc for route, hits in zip(names, lists)
                          if route not in _CLIP_ROUTES for hit in hits}
        return [Hit(described_docs.get(h.id, h.doc), h.score, h.rank,
                    {**h.explanation, "multimodal": info}) for h in fused]

    def search_image(
        self, image: ImageInput, k: int = 10, *, text: str | None = None,
        filter: MetadataFilter | None = None,
    ) -> list[Hit]:
        """`search` with an image query (and optional text)."""
        return self.search(ImageQuery(text=text, image=image), k, filter=filter)

    async def asearch(
        self, query: str | ImageQuery, k: int = 10, *, filter: MetadataFilter | None = None
    ) -> list[Hit]:
        """`search` off the event loop (the routes and the describer block)."""
        return await asyncio.to_thread(self.search, query, k, filter=filter)

    # ------------------------------------------------------------------ routes

    def _routes(self, has_text: bool, has_image: bool) -> list[str]:
        present = {"text": self.text, "descriptions": self.descriptions, "images": self.images}
        out = [r for r in ("text", "descriptions", "images") if has_text and present[r] is not None]
        if has_image and self.images is not None:
            out.append("image")
        if has_image and self.describer is not None and self.text is not None:
            out.append("described_image")
        return out

    def _call(self, route: str, text: str, image: LoadedImage | None, fetch: int,
              filter: MetadataFilter | None) -> Callable[[], tuple[list[Hit], str | None]]:
        """Route ``route`` as a call returning its hits and, for ``described_image``, the
        description it searched for (else ``None``)."""
        if route == "text":
            return lambda: (self.text.search(text, fetch, filter=filter), None)
        if route == "descriptions":
            return lambda: (self.descriptions.search(text, fetch, filter=filter), None)
        if route == "images":
            return lambda: (self.images.search(text, fetch, filter=filter), None)
        if route == "image":
            return lambda: (self.images.search_image(image, fetch, filter=filter), None)
        return lambda: self._described_image(image, fetch, filter)

    def _described_image(self, image: LoadedImage | None, fetch: int,
                         filter: MetadataFilter | None) -> tuple[list[Hit], str]:
        """The query image's description, searched as text and (when there is a
        descriptions searcher) among the image descriptions, the two fused by RRF."""
        description = describe_image(image, self.describer,
                                     prompt=self.prompt or DEFAULT_DESCRIPTION_PROMPT,
                                     timeout=self.timeout, cache=self.cache)
        hits = self.text.search(description, fetch, filter=filter)
        if self.descriptions is None:
            return hits, description
        similar = self.descriptions.search(description, fetch, filter=filter)  # similar images
        call = self._described_plan.resolve(description, fetch, check=False)
        return self._described_plan.fuse(call, [hits, similar]), description

    def _route_weights(self, text: str) -> dict[str, float]:
        rule = self.weights
        if isinstance(rule, Mapping):
            return {r: float(rule.get(r, 0.0)) for r in MULTIMODAL_ROUTES}
        values = rule(text) if callable(rule) else rule
        checked = check_weights(list(values), len(MULTIMODAL_ROUTES), "weights(query)")
        return dict(zip(MULTIMODAL_ROUTES, checked))

    def _visual_words(self, text: str) -> list[str]:
        rule = self.weights
        return rule.matched_words(text) if isinstance(rule, VisualIntentRule) and text else []

    def _no_route_message(self, has_text: bool, has_image: bool) -> str:
        if has_image and not has_text:
            return ("an image query needs a CLIP image index (images=) or a describer and a "
                    "text searcher; this MultimodalSearcher has neither")
        return "no route of this MultimodalSearcher can answer this query with a weight > 0"

    def __repr__(self) -> str:
        parts = [f"{n}={v!r}" for n, v in (("text", self.text), ("images", self.images),
                                           ("descriptions", self.descriptions)) if v is not None]
        return f"MultimodalSearcher({', '.join(parts)})"


def _load_query_image(image: ImageInput) -> LoadedImage:
    try:
        return load_image(image)
    except ImageError as exc:
        raise ImageError(f"the query image: {exc}") from None


class _NotOfType:
    """A filter keeping documents whose ``key`` metadata is not ``value`` (a picklable,
    readable predicate rather than a lambda)."""

    def __init__(self, key: str, value: Any) -> None:
        self.key, self.value = key, value

    def __call__(self, doc: Doc) -> bool:
        return doc.metadata.get(self.key) != self.value

    def __repr__(self) -> str:
        return f"{self.key} != {self.value!r}"


def _check_route_weights(weights: Any) -> Any:
    if isinstance(weights, Mapping):
        unknown = sorted(set(weights) - set(MULTIMODAL_ROUTES))
        if unknown:
            raise ValueError(f"unknown routes {unknown} in weights; the routes are "
                             f"{list(MULTIMODAL_ROUTES)}")
        check_weights([weights.get(r, 0.0) for r in MULTIMODAL_ROUTES], len(MULTIMODAL_ROUTES),
                      "weights")
        return dict(weights)
    if callable(weights):
        return weights
    if isinstance(weights, Sequence) and not isinstance(weights, (str, bytes)):
        return check_weights(weights, len(MULTIMODAL_ROUTES), "weights")
    raise TypeError(f"weights must be a rule, 5 weights or a mapping route -> weight, got "
                    f"{type(weights).__name__}")
