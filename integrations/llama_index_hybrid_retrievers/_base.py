"""What every LlamaIndex retriever of this package shares: the core-adapter contract.

The adapters import only public core names (``hybrid_retrievers``, its public modules
and ``hybrid_retrievers.validation`` for the argument checks; tests/test_architecture.py
keeps it so). A retriever converts nodes and `QueryBundle`s, maps parameter names
(``similarity_top_k`` is the core's ``k``), wires callbacks and async, and delegates;
ranking, filtering and validation of values live in the core. Written once, here:

* `SimilarityTopK`: the validated ``similarity_top_k`` property;
* `SearcherState`: the filter (as given and in its core form), the caller's nodes
  (`NodeCache`), one path from core hits to new `NodeWithScore` objects and the
  persisted settings;
* `CoreSearcherRetriever`: a `SearcherState` with search, async (the searcher's
  ``asearch`` when it has one, else a worker thread) and editing (`NodeEditing`, in
  `_editing`);
* `CoreIndexRetriever`: a `CoreSearcherRetriever` over one core index, with its
  constructor (`IndexOptions`: the keyword arguments every subclass takes),
  ``persist`` and the ``index=`` -> ``bm25_index=`` / ``vector_index=`` deprecation;
* re-exported from `_sources`: `one_source` / `source_nodes`, the "exactly one of
  nodes= / docstore= / ..." rule of ``from_defaults``; `one_filter`: ``filter=`` or
  LlamaIndex's spelling ``filters=``.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.types import Hit, MetadataFilter
from hybrid_retrievers.validation import check_k

from ._convert import hit_to_node_with_score, to_core_filter
from ._editing import NodeEditing
from ._nodes import NodeCache
from ._persist import filter_from_json, filter_to_json, read_retriever, write_retriever
from ._query import QueryChecked
from ._sources import one_filter, one_source, source_nodes

__all__ = ["CoreIndexRetriever", "CoreSearcherRetriever", "IndexOptions", "SearcherState",
           "SimilarityTopK", "one_filter", "one_source", "source_nodes"]


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


class SearcherState(SimilarityTopK):
    """Mixin: the state every retriever over a core searcher (``self._searcher``) holds.

    ``similarity_top_k`` (validated on every assignment), the filter as given and its
    core form, and the caller's nodes (`NodeCache`), so results can hand back the
    caller's node objects while they agree with the index; one path from core hits to
    new `NodeWithScore` objects (`_wrap`) and the persisted settings (`_settings`,
    `_write`, `_read`). Used directly by `ParentDocumentRetriever`.
    """

    def _setup(
        self,
        *,
        similarity_top_k: int,
        filter: MetadataFilter | MetadataFilters | None,
        nodes: Iterable[BaseNode] | NodeCache | None,
        callback_manager: CallbackManager | None,
        verbose: bool,
    ) -> None:
        self.similarity_top_k = similarity_top_k
        self._filter = filter
        self._core_filter: Any = to_core_filter(filter)
        self._nodes = nodes if isinstance(nodes, NodeCache) else NodeCache(nodes or ())
        BaseRetriever.__init__(self, callback_manager=callback_manager, verbose=verbose)

    def _hold(self, searcher: Any, kind: type, hint: str = "") -> None:
        """Keep ``searcher`` as ``self._searcher``; a TypeError naming ``kind`` unless it is one."""
        if not isinstance(searcher, kind):
            raise TypeError(f"searcher must be a hybrid_retrievers {kind.__name__}, got "
                            f"{type(searcher).__name__}{hint}")
        self._searcher = searcher

    @property
    def filter(self) -> MetadataFilter | MetadataFilters | None:
        """The filter as given at construction."""
        return self._filter

    filters = filter  # LlamaIndex's spelling

    # ------------------------------------------------------------------- search

    _searcher: Any

    def _wrap(self, hits: Iterable[Hit]) -> list[NodeWithScore]:
        return [hit_to_node_with_score(hit, self._nodes) for hit in hits]

    # -------------------------------------------------------------- persistence

    def _settings(self) -> dict[str, Any]:
        return {"similarity_top_k": self._similarity_top_k,
                "filter": filter_to_json(self._filter)}

    def _write(self, persist_dir: str | os.PathLike[str], docs: Iterable[Any],
               indexes: dict[str, Callable[[Path], None]]) -> None:
        write_retriever(persist_dir, type(self).__name__, self._settings(),
                        self._nodes.to_json(docs), indexes)

    @classmethod
    def _read(
        cls,
        persist_dir: str | os.PathLike[str],
        legacy_kinds: tuple[str, ...],
        similarity_top_k: int | None,
        filter: Any,
    ) -> tuple[Path, dict[str, Any], dict[str, Any], dict[str, Any]]:
        """``(index folder, node fields, retriever kwargs, all saved settings)``.

        Per-call arguments that are not ``None`` win over the saved settings.
        """
        settings, nodes, folder = read_retriever(persist_dir, cls.__name__, legacy_kinds)
        saved_filter = filter_from_json(settings.get("filter"), str(persist_dir))
        kwargs = {
            "similarity_top_k": settings.get("similarity_top_k", 4)
            if similarity_top_k is None else similarity_top_k,
            "filter": saved_filter if filter is None else filter,
        }
        return folder, nodes, kwargs, settings


class CoreSearcherRetriever(SearcherState, NodeEditing, QueryChecked, BaseRetriever):
    """Base of the retrievers over one core searcher (``self._searcher``).

    `SearcherState` plus search and editing: `_retrieve` is the searcher's ``search``
    with ``similarity_top_k`` and the core filter, async uses the searcher's
    ``asearch`` when it has one, else a worker thread; editing (`insert_nodes` /
    `delete_nodes` / `delete_ref_doc`, the names of LlamaIndex's indexes) goes to every
    core index the retriever searches (`_editable_indexes`).
    """

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._wrap(self._searcher.search(
            query_bundle.query_str, self._similarity_top_k, filter=self._core_filter))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        asearch = getattr(self._searcher, "asearch", None)
        if not callable(asearch):  # CPU work: keep it off the event loop
            return await asyncio.to_thread(self._retrieve, query_bundle)
        return self._wrap(await asearch(
            query_bundle.query_str, self._similarity_top_k, filter=self._core_filter))


class IndexOptions(TypedDict, total=False):
    """The keyword arguments of every `CoreIndexRetriever` constructor (subclasses take
    them as ``**options: Unpack[IndexOptions]`` after their own index argument)."""

    similarity_top_k: int
    filter: MetadataFilter | MetadataFilters | None
    nodes: Iterable[BaseNode] | NodeCache | None
    callback_manager: CallbackManager | None
    verbose: bool
    filters: MetadataFilter | MetadataFilters | None
    index: Any


class CoreIndexRetriever(CoreSearcherRetriever):
    """A `CoreSearcherRetriever` over one core index (BM25, dense).

    Subclasses name the index type and the constructor argument (``index_type``,
    ``index_argument``) and pass it on with the `IndexOptions`; ``index=`` still works
    for that argument, with a `DeprecationWarning` (in LlamaIndex ``index=`` means a
    ``VectorStoreIndex``).
    """

    index_type: ClassVar[type]
    index_argument: ClassVar[str]
    build_hint: ClassVar[str]
    legacy_kind: ClassVar[str]

    def __init__(
        self,
        core_index: Any = None,
        *,
        similarity_top_k: int = 4,
        filter: MetadataFilter | MetadataFilters | None = None,
        nodes: Iterable[BaseNode] | NodeCache | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilter | MetadataFilters | None = None,
        index: Any = None,
    ) -> None:
        if index is not None:
            if core_index is not None:
                raise TypeError(f"pass {self.index_argument}= (index= is its old name), not both")
            warnings.warn(f"{type(self).__name__}(index=...) is deprecated; pass "
                          f"{self.index_argument}=...", DeprecationWarning, stacklevel=3)
            core_index = index
        if not isinstance(core_index, self.index_type):
            raise TypeError(
                f"{self.index_argument} must be a hybrid_retrievers.{self.index_type.__name__}, "
                f"got {type(core_index).__name__}; build one with {self.build_hint}"
            )
        self._searcher = core_index
        self._setup(similarity_top_k=similarity_top_k, filter=one_filter(filter, filters),
                    nodes=nodes, callback_manager=callback_manager, verbose=verbose)

    @property
    def index(self) -> Any:
        """The core index (the same object as ``bm25_index`` / ``vector_index``)."""
        return self._searcher

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the retriever: index, node fields, ``similarity_top_k`` and filter.

        Written atomically as data (JSON + ``.npy``, never pickle): the core index under
        ``index/`` in the core's format (its ``load`` reads it), and each node's
        LlamaIndex fields (type, relationships / ``ref_doc_id``, excluded metadata keys,
        templates) as JSON. A filter that is code (a callable) is not saved (a warning
        says so). A dense index saves its model's identity and dimension, not the model.
        """
        self._write(persist_dir, self._searcher.docs, {"index": self._searcher.save})

    @classmethod
    def _load(
        cls, persist_dir: str | os.PathLike[str], load: Callable[[Path], Any], *,
        similarity_top_k: int | None, filter: Any, filters: Any,
        callback_manager: CallbackManager | None, verbose: bool,
    ) -> Any:
        """A retriever from `persist`'s directory; ``load(folder)`` reads the core index."""
        folder, fields, kwargs, _ = cls._read(persist_dir, (cls.legacy_kind,), similarity_top_k,
                                              one_filter(filter, filters))
        index = load(folder)
        return cls(index, nodes=NodeCache.from_json(fields, index.docs),
                   callback_manager=callback_manager, verbose=verbose, **kwargs)
