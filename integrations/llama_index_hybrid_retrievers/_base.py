"""What every LlamaIndex retriever of this package shares: the core-adapter contract.

A retriever converts nodes and `QueryBundle`s, maps ``similarity_top_k`` onto the core's
``k``, wires callbacks and async, and delegates to the core. Here: the keyword arguments
every retriever takes
(`BuildOptions`, `SearcherOptions`, `LoadOptions`), the state, search and
persistence over one core searcher (`SearcherState`), editing (`CoreSearcherRetriever`)
and the index retrievers' constructor and ``persist`` (`CoreIndexRetriever`).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypedDict, TypeVar

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import model_validator
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, IndexNode, MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.integration import (
    check_k,
    check_keywords,
    field_names,
    keyword_checked,
    keyword_names,
)
from hybrid_retrievers.persistence import IndexFormatError
from hybrid_retrievers.types import Doc, Hit, MetadataFilter

from ._convert import QueryChecked, hit_to_node_with_score, to_core_filter
from ._editing import NodeEditing
from ._nodes import NodeCache
from ._saving import filter_from_json, filter_to_json, read_retriever, write_retriever

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

Filter = MetadataFilter | MetadataFilters | None
S = TypeVar("S")  # the type of the core searcher


class _Options(TypedDict, total=False):
    filters: Filter  # a mapping, a callable over a core Doc, or MetadataFilters
    callback_manager: CallbackManager | None
    verbose: bool


class BuildOptions(_Options, total=False):
    """Keyword arguments of every ``from_defaults`` (``**options``), for the constructor."""

    similarity_top_k: int


class SearcherOptions(BuildOptions, total=False):
    """Keyword arguments of every retriever's constructor after its core searcher."""

    nodes: Iterable[BaseNode] | NodeCache | None  # the caller's nodes, handed back for hits


class LoadOptions(_Options, total=False):
    """Keyword arguments of every ``from_persist_dir``; ``None`` keeps the saved value."""

    similarity_top_k: int | None


ARGUMENT_HINTS: Mapping[str, str] = {
    "filter": "LlamaIndex spells it filters=, as VectorIndexRetriever does",
    "index": "LlamaIndex's index= is a VectorStoreIndex; a core index is the constructor's "
             "first argument",
}
"""Keywords of LlamaIndex's (or LangChain's) classes with another spelling here, and the hint."""


def refuse_arguments(where: str, unexpected: Mapping[str, Any], hints: Mapping[str, str],
                     accepted: Iterable[str] = ()) -> None:
    """`TypeError` naming each of ``unexpected``'s keywords (with its hint: what to pass
    instead, else the nearest of ``accepted``) unless there are none; ``where`` names the
    callable refusing them (`check_keywords`, the one rule of every class here)."""
    check_keywords(where, unexpected, set(accepted) - set(unexpected), hints)


def constructor_keywords(cls: type) -> set[str]:
    """The keywords ``cls(...)`` takes: those of every ``__init__`` from ``cls`` down to
    `SearcherState` (each hands its ``**options`` to the next) and pydantic fields."""
    names = field_names(cls)
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            names |= keyword_names(vars(klass)["__init__"])
            if klass is SearcherState or not _forwards_keywords(vars(klass)["__init__"]):
                break
    if getattr(cls, "searcher_argument", "searcher") != "searcher":
        names.discard("searcher")  # SearcherState's, passed on positionally
    return names


def _forwards_keywords(function: Callable[..., Any]) -> bool:
    return any(p.kind is inspect.Parameter.VAR_KEYWORD
               for p in inspect.signature(function).parameters.values())


def checks_keywords(also: Callable[[type], Iterable[str]] | None = None) -> Any:
    """Decorator of a method (``__init__``, or a factory under ``@classmethod``): unknown
    keywords are refused before any work by `refuse_arguments`' rule (`keyword_checked`);
    ``also(cls)`` names what the method's ``**kwargs`` are handed to."""
    return keyword_checked(also, ARGUMENT_HINTS)


constructor_factory = checks_keywords(constructor_keywords)
"""Decorator of a factory (``from_defaults``, ``from_persist_dir``; under
``@classmethod``) whose ``**options`` go to the constructor: unknown keywords are
refused before the index is built, with the factory's own parameters among the
suggestions."""


def refuse_unknown_fields() -> Any:
    """A pydantic "before" model validator refusing keywords that are not fields of its
    class (LlamaIndex's components ignore them), by `refuse_arguments`' rule."""
    def check(cls: type, values: Any) -> Any:
        if isinstance(values, Mapping):
            check_keywords(cls.__name__, values, field_names(cls), ARGUMENT_HINTS)
        return values
    return model_validator(mode="before")(classmethod(check))  # type: ignore[arg-type]


class SimilarityTopK:
    """Mixin: ``similarity_top_k``, validated on every assignment."""

    _similarity_top_k: int

    @property
    def similarity_top_k(self) -> int:
        """Number of nodes to return; validated on every assignment."""
        return self._similarity_top_k

    @similarity_top_k.setter
    def similarity_top_k(self, value: int) -> None:
        self._similarity_top_k = check_k(value, name="similarity_top_k")


class SearcherState(SimilarityTopK, Generic[S]):
    """Mixin: a retriever over one core searcher (``self._searcher``).

    Subclasses name the searcher's type, their argument for it and how to build one
    (``searcher_type``, ``searcher_argument``, ``build_hint``) for the constructor's
    TypeError. Results hand back the caller's node objects while they agree with the
    index (`NodeCache`), else `TextNode`s rebuilt from the stored documents; async uses
    the searcher's ``asearch`` when it has one, else a worker thread.
    """

    searcher_type: ClassVar[type]
    searcher_argument: ClassVar[str] = "searcher"
    build_hint: ClassVar[str]
    model_argument: ClassVar[str | None] = None
    """The ``from_persist_dir`` argument of the model a searcher must have for text
    queries (``embed_model``...); ``None``: it needs none."""
    _searcher: Any

    def __init__(
        self,
        searcher: S,
        *,
        similarity_top_k: int = 4,
        filters: Filter = None,
        nodes: Iterable[BaseNode] | NodeCache | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        objects: list[IndexNode] | None = None,
        object_map: dict[str, Any] | None = None,
        **unexpected: Any,
    ) -> None:
        refuse_arguments(type(self).__name__, unexpected, {
            **ARGUMENT_HINTS,
            "index": f"pass the core index as {self.searcher_argument}= (in LlamaIndex, "
                     "index= is a VectorStoreIndex)",
        }, constructor_keywords(type(self)))
        self._check_searcher(searcher)
        self._searcher = searcher
        self._filter = filters
        self.similarity_top_k = similarity_top_k
        self._core_filter: Any = to_core_filter(self._filter)
        self._nodes = nodes if isinstance(nodes, NodeCache) else NodeCache(nodes or ())
        # objects / object_map: LlamaIndex's recursive retrieval (an IndexNode hit is
        # replaced by what its object retrieves), handled by BaseRetriever.
        BaseRetriever.__init__(self, callback_manager=callback_manager, verbose=verbose,
                               objects=objects, object_map=object_map)

    def _check_searcher(self, searcher: Any) -> None:
        if not isinstance(searcher, self.searcher_type):
            raise TypeError(
                f"{self.searcher_argument} must be a hybrid_retrievers."
                f"{self.searcher_type.__name__}, got {type(searcher).__name__}; build one "
                f"with {self.build_hint}"
            )
        if self.model_argument is not None and searcher.embedder is None:
            name = type(self).__name__
            raise ValueError(
                f"{self.searcher_argument} must have an embedder to answer text queries, got "
                f"a {self.searcher_type.__name__} without one (built from vectors); build it "
                f"with an embedder or load it with {name}.from_persist_dir(dir, "
                f"{self.model_argument}=...)"
            )

    @property
    def searcher(self) -> S:
        """The core searcher (shared, not copied)."""
        return self._searcher

    @property
    def filters(self) -> MetadataFilter | MetadataFilters | None:
        """The filter as given at construction."""
        return self._filter

    # ------------------------------------------------------------------- search

    def _search_options(self) -> dict[str, Any]:
        """Keyword arguments of the core searcher's ``search`` besides query and k."""
        return {"filter": self._core_filter}

    def _wrap(self, hits: Iterable[Hit]) -> list[NodeWithScore]:
        return [hit_to_node_with_score(hit, self._nodes) for hit in hits]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._wrap(self._searcher.search(
            query_bundle.query_str, self._similarity_top_k, **self._search_options()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        asearch = getattr(self._searcher, "asearch", None)
        if not callable(asearch):  # CPU work: keep it off the event loop
            return await asyncio.to_thread(self._retrieve, query_bundle)
        return self._wrap(await asearch(
            query_bundle.query_str, self._similarity_top_k, **self._search_options()))

    # -------------------------------------------------------------- persistence

    @staticmethod
    def _stored_docs(searcher: Any) -> Iterable[Doc]:
        """The documents whose node fields are persisted."""
        return searcher.docs  # type: ignore[no-any-return]

    def _settings(self) -> dict[str, Any]:
        return {"similarity_top_k": self._similarity_top_k,
                "filter": filter_to_json(self._filter)}

    @classmethod
    def _saved_options(cls, settings: dict[str, Any]) -> dict[str, Any]:
        """Constructor arguments read back from the saved settings (besides the options)."""
        return {}

    def _restore(self, settings: dict[str, Any]) -> None:
        """Set what the saved ``settings`` hold beyond the constructor's arguments."""

    def _write(self, persist_dir: str | os.PathLike[str]) -> None:
        """``persist``: the searcher under ``index/``, the settings and the node fields."""
        write_retriever(persist_dir, type(self).__name__, self._settings(),
                        self._nodes.to_json(self._stored_docs(self._searcher)),
                        {"index": self._searcher.save})

    @classmethod
    def _load(cls, persist_dir: str | os.PathLike[str], load: Callable[[Any], Any],
              bare_index_kind: str | None = None, **options: Unpack[LoadOptions]) -> Any:
        """``from_persist_dir``: ``load(folder)`` reads the core searcher; options that
        are not ``None`` win over the saved settings. A folder holding a bare core index of
        kind ``bare_index_kind`` (``"bm25"``...) loads too, with the default settings."""
        filters = options.pop("filters", None)
        top_k = options.pop("similarity_top_k", None)
        settings, fields, folder = read_retriever(persist_dir, cls.__name__, bare_index_kind)
        saved_filter = filter_from_json(settings.get("filter"), str(persist_dir))
        try:
            mode = MetadataMode(settings.get("metadata_mode", MetadataMode.NONE.value))
        except ValueError:
            raise IndexFormatError(f"{persist_dir}: unknown metadata_mode "
                                   f"{settings.get('metadata_mode')!r:.40}") from None
        searcher = load(folder)
        retriever = cls(  # type: ignore[call-arg]
            searcher, nodes=NodeCache.from_json(fields, cls._stored_docs(searcher), mode),
            similarity_top_k=settings.get("similarity_top_k", 4) if top_k is None else top_k,
            filters=saved_filter if filters is None else filters,
            **options, **cls._saved_options(settings),
        )
        retriever._restore(settings)
        return retriever


class CoreSearcherRetriever(SearcherState[S], NodeEditing, QueryChecked, BaseRetriever):
    """Base of the retrievers over one core searcher: `SearcherState` plus editing
    (`insert_nodes` / `delete_nodes` / `delete_ref_doc`, the names of LlamaIndex's
    indexes) of every core index the retriever searches (`_editable_indexes`)."""


class CoreIndexRetriever(CoreSearcherRetriever[S]):
    """A `CoreSearcherRetriever` over one core index (BM25, dense)."""

    @property
    def index(self) -> S:
        """The core index (the same object as ``bm25_index`` / ``vector_index``)."""
        return self._searcher

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the retriever: index, node fields, ``similarity_top_k`` and filter.

        Written atomically as data, never pickle (the layout is in ``_saving``); a
        filter that is code is not saved (a warning says so), nor is a model.
        """
        self._write(persist_dir)
