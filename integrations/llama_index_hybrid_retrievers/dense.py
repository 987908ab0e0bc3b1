"""LlamaIndex retriever over the core `VectorIndex` (dense, bi-encoder retrieval).

Thin by design, like `BM25Retriever`: the core does similarity, filtering and top-k;
this module converts nodes, turns a `QueryBundle` into a query vector the way
LlamaIndex's own ``VectorIndexRetriever`` does, and keeps model calls and search off
the event loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore

from hybrid_retrievers.integration import (
    aembed_queries,
    check_query,
    coroutine_method,
    embed_queries,
    mean_vector,
)
from hybrid_retrievers.vector import DEFAULT_BATCH_SIZE, EmbeddingCache, VectorIndex

from ._base import (
    BuildOptions,
    CoreIndexRetriever,
    LoadOptions,
    SearcherOptions,
    constructor_factory,
)
from ._convert import nodes_to_docs, one_source, source_nodes
from .embeddings import as_embedder

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["DenseRetriever"]


class DenseRetriever(CoreIndexRetriever[VectorIndex]):
    """Dense (embedding) retriever for LlamaIndex backed by `hybrid_retrievers.VectorIndex`.

    ``embed_model`` is a LlamaIndex `BaseEmbedding` or a core `Embedder`. Indexed text is
    the node's own text (``MetadataMode.NONE``), so metadata never changes a vector.
    The query vector comes from the `QueryBundle`, as in ``VectorIndexRetriever``:
    ``bundle.embedding``, else the mean of the vectors of ``custom_embedding_strs`` (so
    ``HyDEQueryTransform`` works), else ``query_str``'s (async: see
    `hybrid_retrievers.vector.queries`). Results are as for `BM25Retriever`.

    Args:
        vector_index: The core index (shared, not copied); it must have an embedder.
        **options: `SearcherOptions`, as for `BM25Retriever`.

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

    searcher_type = VectorIndex
    searcher_argument = "vector_index"
    build_hint = "DenseRetriever.from_defaults(nodes=..., embed_model=...)"
    model_argument = "embed_model"

    def __init__(self, vector_index: VectorIndex, **options: Unpack[SearcherOptions]) -> None:
        super().__init__(vector_index, **options)

    @property
    def vector_index(self) -> VectorIndex:
        """The core vector index."""
        return self._searcher

    @classmethod
    @constructor_factory
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        embed_model: BaseEmbedding | Any,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        **options: Unpack[BuildOptions],
    ) -> DenseRetriever:
        """Embed nodes (or every node of a docstore: exactly one) and return a retriever.

        ``embed_model`` (a `BaseEmbedding` or core `Embedder`) is required:
        ``Settings.embed_model`` is not consulted. ``metric``, ``cache`` and
        ``batch_size`` are `VectorIndex.from_docs`'s; ``options`` the constructor's.
        """
        one_source(nodes=nodes, docstore=docstore)
        node_list = source_nodes(nodes, docstore)
        index = VectorIndex.from_docs(nodes_to_docs(node_list), embedder=as_embedder(embed_model),
                                      metric=metric, batch_size=batch_size,
                                      show_progress=options.get("verbose", False), cache=cache)
        return cls(index, nodes=node_list, **options)

    @classmethod
    @constructor_factory
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, embed_model: BaseEmbedding | Any,
        mmap: bool = False, cache: EmbeddingCache | None = None, **options: Unpack[LoadOptions],
    ) -> DenseRetriever:
        """Load a retriever saved with `persist` (or a `VectorIndex.save` folder).

        ``embed_model`` is the model the index was built with; ``mmap`` and ``cache`` are
        as for `VectorIndex.load`; ``options`` default to the saved ones.
        """
        return cls._load(  # type: ignore[no-any-return]
            persist_dir,
            lambda folder: VectorIndex.load(folder, as_embedder(embed_model), mmap=mmap,
                                            cache=cache),
            bare_index_kind="vector", **options)

    # ---------------------------------------------------------------- search

    def _search_vector(self, vector: Any) -> list[NodeWithScore]:
        return self._wrap(self._searcher.search_vector(
            vector, k=self._similarity_top_k, filter=self._core_filter))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if query_bundle.embedding is not None:
            return self._search_vector(query_bundle.embedding)
        strs = _embedding_strs(query_bundle)
        if strs is None:
            return super()._retrieve(query_bundle)
        return self._search_vector(mean_vector(embed_queries(self._searcher.embedder, strs)))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedder = self._searcher.embedder
        if query_bundle.embedding is not None or coroutine_method(embedder, "aembed_query") is None:
            # Nothing to await: model (if any) and search run in one worker thread.
            return await asyncio.to_thread(self._retrieve, query_bundle)
        strs = _embedding_strs(query_bundle)
        if strs is None:
            return self._wrap(await self._searcher.asearch(
                query_bundle.query_str, self._similarity_top_k, filter=self._core_filter))
        vector = mean_vector(await aembed_queries(embedder, strs))
        return await asyncio.to_thread(self._search_vector, vector)


def _embedding_strs(query_bundle: QueryBundle) -> list[str] | None:
    """The bundle's custom embedding strings, validated; ``None`` when it has none."""
    strs = query_bundle.custom_embedding_strs
    if strs is None:
        return None
    if isinstance(strs, str):
        raise TypeError(
            "QueryBundle.custom_embedding_strs must be a list of str, got a single str; "
            "wrap it in a list"
        )
    strs = list(strs)
    if not strs:
        raise ValueError(
            "QueryBundle.custom_embedding_strs must hold at least one string, got []; "
            "leave it None to embed query_str"
        )
    return [check_query(s, name=f"custom_embedding_strs[{i}]") for i, s in enumerate(strs)]
