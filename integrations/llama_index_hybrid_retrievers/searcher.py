"""LlamaIndex retriever over any core `Searcher` (a sharded index, a custom searcher...).

`SearcherRetriever` holds anything with ``search(query, k, filter=...)``, such as
`hybrid_retrievers.distributed.ShardedSearcher`, so it drops into `FusionRetriever` /
`HybridRetriever` and ``RetrieverQueryEngine`` unchanged. ``aretrieve`` awaits the
searcher's ``asearch`` when it has one, else runs ``search`` in a worker thread.
"""

from __future__ import annotations

from typing import Any

from ._base import CoreSearcherRetriever

__all__ = ["SearcherRetriever"]


class SearcherRetriever(CoreSearcherRetriever[Any]):
    """LlamaIndex retriever over any core searcher (``search(query, k, filter=...)``).

    The constructor takes the searcher (shared, not copied) and the `SearcherOptions`.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> from llama_index_hybrid_retrievers import SearcherRetriever
        >>> index = BM25Index.from_texts(["wing lift", "bread dough"], ids=["a", "b"])
        >>> [n.node.node_id for n in SearcherRetriever(index, similarity_top_k=1).retrieve("lift")]
        ['a']
    """

    def _check_searcher(self, searcher: Any) -> None:
        if not callable(getattr(searcher, "search", None)):
            raise TypeError(
                "searcher must have a search(query, k, filter=...) method, got "
                f"{type(searcher).__name__}"
            )
