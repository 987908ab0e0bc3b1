"""LlamaIndex parent-document retriever over the core `ParentChildSearcher`.

Unlike LlamaIndex's ``AutoMergingRetriever`` it needs no configured docstore: parents
live in the core's in-memory `ParentStore` (with save/load) unless another store is
given. Splitting, grouping, the "fetch more children until k parents" loop, the
auto-merge rule and the ``from_defaults`` recipe (`ParentChildSearcher.from_docs`) are
the core's; this module converts nodes and keeps search off the event loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.parent import ParentChildSearcher, ParentStore, ParentStoreLike
from hybrid_retrievers.types import MetadataFilter
from hybrid_retrievers.validation import check_k, check_merge_threshold

from ._base import SearcherState, one_filter
from ._convert import as_node_list, nodes_to_docs
from ._nodes import NodeCache
from ._query import QueryChecked
from .embeddings import as_embedder

__all__ = ["ParentDocumentRetriever"]


class ParentDocumentRetriever(SearcherState, QueryChecked, BaseRetriever):
    """Match small child chunks, return their parent nodes (backed by `ParentChildSearcher`).

    Each result is a new `NodeWithScore` whose score is the parent's best child's
    score; its node is the caller's original parent node (not modified) when the
    retriever was built from nodes in this process, else a `TextNode` rebuilt from the
    store. ``similarity_top_k`` counts parents: that many come back whenever that many
    match. With ``merge_threshold``, a parent with too small a fraction of matched
    children is replaced by those children (``parent_id`` in their metadata). The
    matched children of each parent (ids, ranks, scores) are in the core hits:
    ``retriever.searcher.search(query)[i].explanation["parent"]``.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index_hybrid_retrievers import ParentDocumentRetriever
        >>> retriever = ParentDocumentRetriever.from_defaults(
        ...     nodes=[TextNode(id_="wings", text="Wings make lift. Flaps add lift."),
        ...            TextNode(id_="bread", text="Yeast makes bread rise.")],
        ...     similarity_top_k=1, chunk_size=20, chunk_overlap=0,
        ... )
        >>> [n.node.node_id for n in retriever.retrieve("flaps")]
        ['wings']
    """

    def __init__(
        self,
        searcher: ParentChildSearcher,
        *,
        similarity_top_k: int = 4,
        fetch_k: int | None = None,
        merge_threshold: float | None = None,
        filter: MetadataFilter | MetadataFilters | None = None,
        nodes: Iterable[BaseNode] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
    ) -> None:
        filter = one_filter(filter, filters)
        self._hold(searcher, ParentChildSearcher,
                   "; build one with ParentDocumentRetriever.from_defaults")
        self._fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        self._merge = check_merge_threshold(merge_threshold)  # now, not at the first query
        self._setup(similarity_top_k=similarity_top_k, filter=filter, nodes=nodes,
                    callback_manager=callback_manager, verbose=verbose)

    @property
    def searcher(self) -> ParentChildSearcher:
        """The core parent/child searcher."""
        return self._searcher

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode],
        *,
        similarity_top_k: int = 4,
        chunk_size: int = 400,
        chunk_overlap: int = 50,
        splitter: Any = None,
        embed_model: Any = None,
        parent_store: ParentStoreLike | None = None,
        fetch_k: int | None = None,
        merge_threshold: float | None = None,
        filter: MetadataFilter | MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
    ) -> ParentDocumentRetriever:
        """Split parent nodes (or Documents) into children and index them.

        Args:
            nodes: The parents; ids are ``node.node_id``, text ``MetadataMode.NONE``.
            similarity_top_k: Number of parents to return.
            chunk_size, chunk_overlap: Of the default sentence-aware splitter (characters).
            splitter: Any splitter instead: a LlamaIndex node parser with ``split_text``
                (e.g. ``SentenceSplitter``), a LangChain text splitter, or a callable.
            embed_model: When given (LlamaIndex `BaseEmbedding` or core `Embedder`),
                children are indexed hybrid (BM25 + dense, RRF); default BM25.
            parent_store: Default a new in-memory `ParentStore`.
            fetch_k, merge_threshold, filter: See `ParentChildSearcher` / the class doc.
        """
        node_list = as_node_list(nodes)
        searcher = ParentChildSearcher.from_docs(
            nodes_to_docs(node_list),
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            splitter=splitter,
            embedder=_embedder(embed_model),
            parent_store=parent_store,
            k=similarity_top_k,
        )
        return cls(searcher, similarity_top_k=similarity_top_k, fetch_k=fetch_k,
                   merge_threshold=merge_threshold, filter=one_filter(filter, filters),
                   nodes=node_list,
                   callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._searcher.search(
            query_bundle.query_str, k=self._similarity_top_k, filter=self._core_filter,
            fetch_k=self._fetch_k, merge_threshold=self._merge,
        )
        return self._wrap(hits)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def insert_nodes(self, nodes: Sequence[BaseNode]) -> list[str]:
        """Add parent nodes (split, children indexed); returns their ids."""
        node_list = list(nodes)
        ids = self._searcher.add(nodes_to_docs(node_list))
        self._nodes.update(node_list)
        return ids

    def delete(self, parent_ids: Sequence[str]) -> None:
        """Remove parents and all their children by parent id (KeyError for unknown ids)."""
        ids = [parent_ids] if isinstance(parent_ids, str) else list(parent_ids)
        self._searcher.delete(ids)
        self._nodes.discard(ids)

    delete_nodes = delete  # the name LlamaIndex's indexes use

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the parents, the child index, the parents' node fields and the settings.

        Data only (see `BM25Retriever.persist`); the core searcher is saved under
        ``index/`` (`ParentChildSearcher.save`: a BM25 or dense child index and an
        in-memory `ParentStore`; hybrid children are refused there).

        Raises:
            TypeError: for a parent store or child index the core cannot save.
        """
        self._write(persist_dir, _stored_parents(self._searcher), {"index": self._searcher.save})

    def _settings(self) -> dict[str, Any]:
        return {**super()._settings(), "fetch_k": self._fetch_k, "merge_threshold": self._merge}

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | os.PathLike[str],
        *,
        embed_model: Any = None,
        splitter: Any = None,
        similarity_top_k: int | None = None,
        filter: MetadataFilter | MetadataFilters | None = None,
        filters: MetadataFilters | MetadataFilter | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> ParentDocumentRetriever:
        """Load a retriever saved with `persist`: same results, same parent node fields.

        Args:
            embed_model: The model of a dense child index.
            splitter: Splits parents inserted later (default: the default splitter).
            similarity_top_k, filter: Default to the saved ones.

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign directory.
        """
        folder, fields, kwargs, settings = cls._read(persist_dir, (), similarity_top_k,
                                                     one_filter(filter, filters))
        searcher = ParentChildSearcher.load(
            folder,
            embedder=_embedder(embed_model),
            splitter=splitter,
        )
        nodes = NodeCache.from_json(fields, _stored_parents(searcher))
        return cls(searcher, fetch_k=settings.get("fetch_k"),
                   merge_threshold=settings.get("merge_threshold"), nodes=nodes,
                   callback_manager=callback_manager, verbose=verbose, **kwargs)


def _embedder(embed_model: Any) -> Any:
    """``embed_model`` as a core `Embedder`; ``None`` (BM25 children) stays ``None``."""
    return None if embed_model is None else as_embedder(embed_model)


def _stored_parents(searcher: ParentChildSearcher) -> list[Any]:
    """The parent docs of an in-memory `ParentStore`, whose node fields are persisted
    (another store keeps its own parents)."""
    store = searcher.parent_store
    return list(store) if isinstance(store, ParentStore) else []
