"""LlamaIndex retriever over any core `Searcher` (a sharded index, a custom searcher...).

`SearcherRetriever` holds anything with ``search(query, k, filter=...)``, such as
`hybrid_retrievers.distributed.ShardedSearcher`, so it drops into `FusionRetriever` /
`HybridRetriever` and ``RetrieverQueryEngine`` unchanged. ``aretrieve`` awaits the
searcher's ``asearch`` when it has one, else runs ``search`` in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.types import MetadataFilter

from ._base import CoreSearcherRetriever

__all__ = ["SearcherRetriever"]


class SearcherRetriever(CoreSearcherRetriever):
    """LlamaIndex retriever over any core searcher (``search(query, k, filter=...)``).

    Args:
        searcher: the core searcher (shared, not copied).
        similarity_top_k: Number of nodes to return (>= 1).
        filter: a mapping, a callable over `hybrid_retrievers.Doc`, or `MetadataFilters`.
        nodes: Original node objects to hand back for matching ids.
        callback_manager: LlamaIndex callback manager.
        verbose: Passed to LlamaIndex's `BaseRetriever`.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> from llama_index_hybrid_retrievers import SearcherRetriever
        >>> index = BM25Index.from_texts(["wing lift", "bread dough"], ids=["a", "b"])
        >>> [n.node.node_id for n in SearcherRetriever(index, similarity_top_k=1).retrieve("lift")]
        ['a']
    """

    def __init__(
        self,
        searcher: Any,
        *,
        similarity_top_k: int = 4,
        filter: MetadataFilter | MetadataFilters | None = None,
        nodes: Iterable[BaseNode] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not callable(getattr(searcher, "search", None)):
            raise TypeError(
                "searcher must have a search(query, k, filter=...) method, got "
                f"{type(searcher).__name__}"
            )
        self._searcher = searcher
        self._setup(similarity_top_k=similarity_top_k, filter=filter, nodes=nodes,
                    callback_manager=callback_manager, verbose=verbose)

    @property
    def searcher(self) -> Any:
        """The core searcher."""
        return self._searcher
