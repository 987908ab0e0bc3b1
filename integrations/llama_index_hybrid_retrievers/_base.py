"""State shared by the retrievers that wrap one core searcher: top-k, filter, nodes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers._validation import check_k
from hybrid_retrievers.types import MetadataFilter

from ._convert import to_core_filter
from ._query import QueryChecked

__all__ = ["CoreSearcherRetriever"]


class CoreSearcherRetriever(QueryChecked, BaseRetriever):
    """Base of the BM25, dense and HyDE retrievers.

    Holds ``similarity_top_k`` (validated on every assignment), the filter as given
    and its core form, and the caller's original nodes by id, so results can wrap
    them instead of rebuilt copies.
    """

    def _setup(
        self,
        *,
        similarity_top_k: int,
        filter: MetadataFilter | MetadataFilters | None,
        nodes: Iterable[BaseNode] | None,
        callback_manager: CallbackManager | None,
        verbose: bool,
    ) -> None:
        self.similarity_top_k = similarity_top_k
        self._filter = filter
        self._core_filter: Any = to_core_filter(filter)
        self._nodes: dict[str, BaseNode] = {n.node_id: n for n in nodes or ()}
        BaseRetriever.__init__(self, callback_manager=callback_manager, verbose=verbose)

    @property
    def similarity_top_k(self) -> int:
        """Number of nodes to return; validated on every assignment."""
        return self._similarity_top_k

    @similarity_top_k.setter
    def similarity_top_k(self, value: int) -> None:
        self._similarity_top_k = check_k(value, name="similarity_top_k")

    @property
    def filter(self) -> MetadataFilter | MetadataFilters | None:
        """The filter as given at construction."""
        return self._filter
