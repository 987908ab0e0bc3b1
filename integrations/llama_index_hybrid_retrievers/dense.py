"""LlamaIndex retriever over the core `VectorIndex` (dense, bi-encoder retrieval).

Thin by design, like `BM25Retriever`: the core does similarity, filtering and top-k;
this module converts nodes to `Doc`s, maps ``similarity_top_k`` onto the core's ``k``,
turns a `QueryBundle` into a query vector the way LlamaIndex's own
``VectorIndexRetriever`` does, wraps hits in new `NodeWithScore` objects and keeps
model calls and search off the event loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.vector import DEFAULT_BATCH_SIZE, EmbeddingCache
from hybrid_retrievers.types import MetadataFilter
from hybrid_retrievers.validation import check_query
from hybrid_retrievers.vector import VectorIndex

from ._base import CoreIndexRetriever, IndexOptions, one_filter, one_source, source_nodes
from ._convert import nodes_to_docs
from ._query_vector import coroutine_method, embedding_strs, mean_vector
from .embeddings import as_embedder

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["DenseRetriever"]


class DenseRetriever(CoreIndexRetriever):
    """Dense (embedding) retriever for LlamaIndex backed by `hybrid_retrievers.VectorIndex`.

    ``embed_model`` may be any LlamaIndex `BaseEmbedding` (wrapped in
    `LlamaIndexEmbedder`) or a core `Embedder` such as
    `hybrid_retrievers.models.SentenceTransformerEmbedder`.

    Indexed text is the node's own text (``MetadataMode.NONE``), as for
    `BM25Retriever`, so metadata never changes a vector. (LlamaIndex's
    ``VectorStoreIndex`` embeds ``MetadataMode.EMBED`` text, which prepends metadata
    not listed in ``excluded_embed_metadata_keys``; the two agree for nodes whose
    metadata is excluded from embedding or empty.)

    The query vector comes from the `QueryBundle`, as in LlamaIndex's
    ``VectorIndexRetriever``:

    1. ``bundle.embedding`` when set: searched as given, the model is not called;
    2. else ``bundle.custom_embedding_strs`` when set: each string is embedded as a
       query and the vectors are averaged (LlamaIndex's ``mean_agg``), so query
       transforms such as ``HyDEQueryTransform`` work unchanged;
    3. else ``bundle.query_str`` is embedded.

    The caller's bundle is never modified. Returned nodes: each result is a new
    `NodeWithScore` carrying the similarity (cosine for ``metric="cosine"``, inner
    product for ``"dot"``); its node is chosen as for `BM25Retriever` (the caller's
    node, or after `from_persist_dir` the node rebuilt from its saved fields, while it
    agrees with the index; else a `TextNode` of the stored document).
    `insert_nodes` / `delete_nodes` edit the index (new nodes are embedded).

    Async: ``aretrieve`` awaits the embedder's ``aembed_query`` / ``aembed_queries``
    when it has them (a `LlamaIndexEmbedder` forwards to the model's
    ``aget_query_embedding``), then searches in a worker thread; other embedders run
    in the worker thread together with the search.

    Args:
        vector_index: The core index that does all scoring (shared, not copied); it
            must have an embedder. ``index=`` is its deprecated name.
        similarity_top_k: Number of nodes to return (>= 1).
        filter: Applied before top-k: a mapping (metadata equality on every key), a
            callable receiving a `hybrid_retrievers.Doc`, or a LlamaIndex
            `MetadataFilters`.
        nodes: Original node objects to hand back for matching ids.
        callback_manager: LlamaIndex callback manager.
        verbose: Passed to LlamaIndex's `BaseRetriever`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from llama_index_hybrid_retrievers import DenseRetriever
        >>> retriever = DenseRetriever.from_defaults(
        ...     nodes=[TextNode(id_="a", text="wings generate lift"),
        ...            TextNode(id_="b", text="cats sleep all day")],
        ...     embed_model=HashingEmbedder(dimension=64),
        ...     similarity_top_k=1,
        ... )
        >>> [n.node.node_id for n in retriever.retrieve("how do wings make lift")]
        ['a']
    """

    index_type = VectorIndex
    index_argument = "vector_index"
    build_hint = "DenseRetriever.from_defaults(nodes=..., embed_model=...)"
    legacy_kind = "vector"

    def __init__(self, vector_index: VectorIndex | None = None,
                 **options: Unpack[IndexOptions]) -> None:
        super().__init__(vector_index, **options)
        if self._searcher.embedder is None:
            raise ValueError(
                "vector_index must have an embedder to answer text queries, got a VectorIndex "
                "without one; build it with an embedder or load it with "
                "DenseRetriever.from_persist_dir(dir, embed_model=...)"
            )

    @property
    def vector_index(self) -> VectorIndex:
        """The core vector index."""
        return self._searcher  # type: ignore[no-any-return]

    # ----------------------------------------------------------------- build

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        embed_model: BaseEmbedding | Any,
        similarity_top_k: int = 4,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        filter: MetadataFilter | MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
    ) -> DenseRetriever:
        """Embed nodes (or every node of a docstore) and return a retriever.

        Args:
            nodes: The nodes to index; ids are ``node.node_id``.
            docstore: Alternatively, a docstore whose ``docs`` are all indexed.
            embed_model: A LlamaIndex `BaseEmbedding` or a core `Embedder` (required:
                ``Settings.embed_model`` is not consulted, so nothing is downloaded or
                called behind your back).
            similarity_top_k: Number of nodes to return (>= 1).
            metric: ``"cosine"`` (vectors normalised) or ``"dot"`` (inner product).
            cache: An `EmbeddingCache`: texts already in it are not embedded again
                (needs a model identity, see `LlamaIndexEmbedder`).
            batch_size: Texts per ``embed_documents`` call.
            filter: See the class docstring.
            callback_manager: LlamaIndex callback manager.
            verbose: Also shows a progress bar while embedding.

        Raises:
            ValueError: unless exactly one of ``nodes`` and ``docstore`` is given, or
                for an empty corpus.
        """
        one_source(nodes=nodes, docstore=docstore)
        node_list = source_nodes(nodes, docstore)
        index = VectorIndex.from_docs(nodes_to_docs(node_list), embedder=as_embedder(embed_model),
                                      metric=metric, batch_size=batch_size,
                                      show_progress=verbose, cache=cache)
        return cls(index, similarity_top_k=similarity_top_k, filter=one_filter(filter, filters),
                   nodes=node_list, callback_manager=callback_manager, verbose=verbose)

    # ---------------------------------------------------------------- search

    def _search_vector(self, vector: Any) -> list[NodeWithScore]:
        return self._wrap(self._searcher.search_vector(
            vector, k=self._similarity_top_k, filter=self._core_filter))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if query_bundle.embedding is not None:
            return self._search_vector(query_bundle.embedding)
        strs = embedding_strs(query_bundle)
        if strs is None:
            return super()._retrieve(query_bundle)
        embedder = self._searcher.embedder
        batch = getattr(embedder, "embed_queries", None)
        vectors = batch(strs) if callable(batch) else [embedder.embed_query(t) for t in strs]
        return self._search_vector(mean_vector(vectors))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedder = self._searcher.embedder
        aembed_query = coroutine_method(embedder, "aembed_query")
        if query_bundle.embedding is not None or aembed_query is None:
            # Nothing to await: model (if any) and search run in one worker thread.
            return await asyncio.to_thread(self._retrieve, query_bundle)
        strs = embedding_strs(query_bundle)
        if strs is None:
            vector = await aembed_query(check_query(query_bundle.query_str))
        else:
            aembed_queries = coroutine_method(embedder, "aembed_queries")
            if aembed_queries is not None:
                matrix = await aembed_queries(strs)
            else:
                matrix = [await aembed_query(s) for s in strs]
            vector = mean_vector(matrix)
        return await asyncio.to_thread(self._search_vector, vector)

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | os.PathLike[str],
        *,
        embed_model: BaseEmbedding | Any,
        similarity_top_k: int | None = None,
        filter: MetadataFilter | MetadataFilters | None = None,
        filters: MetadataFilters | MetadataFilter | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        mmap: bool = False,
        cache: EmbeddingCache | None = None,
    ) -> DenseRetriever:
        """Load a retriever saved with `persist`: same results, same node fields.

        Args:
            persist_dir: The directory written by `persist` (or by `VectorIndex.save`:
                then nodes come back as `TextNode`s).
            embed_model: The model the index was built with; a different model
                identity than the saved one warns.
            similarity_top_k, filter: Default to the saved ones.
            mmap: Memory-map the vectors instead of reading them into memory.
            cache: An `EmbeddingCache` for later additions to ``index``.
            callback_manager, verbose: As for the constructor.

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign directory.
            ValueError: if the model's known dimension differs from the saved vectors'.
        """
        return cls._load(  # type: ignore[no-any-return]
            persist_dir,
            lambda folder: VectorIndex.load(folder, as_embedder(embed_model), mmap=mmap,
                                            cache=cache),
            similarity_top_k=similarity_top_k, filter=filter, filters=filters,
            callback_manager=callback_manager, verbose=verbose)
