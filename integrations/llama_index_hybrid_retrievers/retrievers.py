"""LlamaIndex retriever over the core `BM25Index`.

Thin by design: the core does the scoring, filtering and top-k; this module converts
nodes to `Doc`s, maps ``similarity_top_k`` onto the core's ``k``, wraps hits in new
`NodeWithScore` objects and runs async retrieval in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.types import MetadataFilter

from ._base import CoreSearcherRetriever
from ._convert import hit_to_node_with_score, nodes_to_docs

__all__ = ["BM25Retriever"]


class BM25Retriever(CoreSearcherRetriever):
    """BM25 keyword retriever for LlamaIndex backed by `hybrid_retrievers.BM25Index`.

    Returned nodes: each result is a new `NodeWithScore` carrying the BM25 score.
    Its node is the caller's original node object (not modified) when the retriever
    was built from nodes in this process; otherwise (after `from_persist_dir`, or
    for documents added to ``index`` directly) it is a `TextNode` rebuilt from the
    stored id, text and metadata. Indexed text is the node's own text
    (``MetadataMode.NONE``). Only nodes matching at least one query term are
    returned, best first.

    Args:
        index: The core index that does all scoring (shared, not copied).
        similarity_top_k: Number of nodes to return (>= 1).
        filter: Applied before top-k: a mapping (metadata equality on every key), a
            callable receiving a `hybrid_retrievers.Doc`, or a LlamaIndex
            `MetadataFilters`.
        nodes: Original node objects to hand back for matching ids.
        callback_manager: LlamaIndex callback manager.
        verbose: Passed to LlamaIndex's `BaseRetriever`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index_hybrid_retrievers import BM25Retriever
        >>> retriever = BM25Retriever.from_defaults(
        ...     nodes=[TextNode(id_="a", text="BM25 ranks documents"),
        ...            TextNode(id_="b", text="Cats sleep all day")],
        ...     similarity_top_k=1,
        ... )
        >>> [n.node.node_id for n in retriever.retrieve("ranking documents")]
        ['a']
    """

    def __init__(
        self,
        index: BM25Index,
        *,
        similarity_top_k: int = 4,
        filter: MetadataFilter | MetadataFilters | None = None,
        nodes: Iterable[BaseNode] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(index, BM25Index):
            raise TypeError(
                f"index must be a hybrid_retrievers.BM25Index, got {type(index).__name__}; "
                "build one with BM25Retriever.from_defaults(nodes=...)"
            )
        self._index = index
        self._setup(similarity_top_k=similarity_top_k, filter=filter, nodes=nodes,
                    callback_manager=callback_manager, verbose=verbose)

    # ------------------------------------------------------------ properties

    @property
    def index(self) -> BM25Index:
        """The core BM25 index."""
        return self._index

    # ----------------------------------------------------------------- build

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        similarity_top_k: int = 4,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        filter: MetadataFilter | MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> BM25Retriever:
        """Index nodes (or every node of a docstore) and return a retriever.

        Args:
            nodes: The nodes to index; ids are ``node.node_id``.
            docstore: Alternatively, a docstore whose ``docs`` are all indexed.
            similarity_top_k: Number of nodes to return (>= 1).
            analyzer: Tokenizer settings; ``None`` uses the core default (English).
            k1, b, method, delta: BM25 parameters, passed to `BM25Index.from_docs`.
            filter: See the class docstring.
            callback_manager: LlamaIndex callback manager.
            verbose: Also shows a progress bar while indexing.

        Raises:
            ValueError: unless exactly one of ``nodes`` and ``docstore`` is given.
        """
        if (nodes is None) == (docstore is None):
            raise ValueError(
                "pass exactly one of nodes= or docstore=, got "
                f"{'both' if nodes is not None else 'neither'}"
            )
        if docstore is not None:
            if not isinstance(docstore, BaseDocumentStore):
                raise TypeError(
                    "docstore must be a llama_index BaseDocumentStore, got "
                    f"{type(docstore).__name__}"
                )
            node_list = list(docstore.docs.values())
        else:
            if isinstance(nodes, BaseNode):
                raise TypeError("nodes must be a list of nodes, got a single node; wrap it in a list")
            node_list = list(nodes)  # type: ignore[arg-type]
        index = BM25Index.from_docs(
            nodes_to_docs(node_list),
            analyzer=analyzer,
            k1=k1,
            b=b,
            method=method,
            delta=delta,
            show_progress=verbose,
        )
        return cls(
            index,
            similarity_top_k=similarity_top_k,
            filter=filter,
            nodes=node_list,
            callback_manager=callback_manager,
            verbose=verbose,
        )

    # ---------------------------------------------------------------- search

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._index.search(
            query_bundle.query_str, k=self._similarity_top_k, filter=self._core_filter
        )
        return [hit_to_node_with_score(hit, self._nodes) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # BM25 scoring is CPU work: keep it off the event loop.
        return await asyncio.to_thread(self._retrieve, query_bundle)

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save the index (ids, texts, metadata, analyzer, BM25 parameters).

        The format is the core's (JSON + ``.npy``, no pickle); ``BM25Index.load``
        reads it too. Query-time settings (``similarity_top_k``, ``filter``) are
        not saved: pass them to `from_persist_dir`.
        """
        self._index.save(persist_dir)

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | os.PathLike[str],
        *,
        similarity_top_k: int = 4,
        filter: MetadataFilter | MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        mmap: bool = False,
    ) -> BM25Retriever:
        """Load a retriever saved with `persist` (nodes come back as `TextNode`s).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign directory.
        """
        return cls(
            BM25Index.load(persist_dir, mmap=mmap),
            similarity_top_k=similarity_top_k,
            filter=filter,
            callback_manager=callback_manager,
            verbose=verbose,
        )
