"""LlamaIndex retriever over the core `SparseIndex` (learned sparse retrieval: SPLADE).

Thin by design, like `DenseRetriever`: the core encodes, scores, filters and takes the
top-k; this module converts nodes and keeps the model and the search off the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore

from hybrid_retrievers import SparseIndex
from hybrid_retrievers.types import SparseEmbedder

from ._base import (
    BuildOptions,
    CoreIndexRetriever,
    LoadOptions,
    SearcherOptions,
    constructor_factory,
)
from ._convert import nodes_to_docs, one_source, source_nodes

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["SparseRetriever"]


class SparseRetriever(CoreIndexRetriever[SparseIndex]):
    """Learned sparse retriever (SPLADE and friends) for LlamaIndex, backed by
    `hybrid_retrievers.SparseIndex`.

    ``sparse_embed_model`` is a core `SparseEmbedder`:
    `hybrid_retrievers.models.SpladeEncoder` (any sentence-transformers sparse model,
    such as ``naver/splade-v3`` or the offline splade-tiny of
    `hybrid_retrievers.models.local_splade_path`), or any object with
    ``embed_documents`` / ``embed_query`` returning ``{token: weight}`` dicts and a
    ``model_id``. Indexed text is the node's own text (``MetadataMode.NONE``), as for
    `DenseRetriever`. A node's score is the dot product of its vector with the query's
    (``query_str``'s); only nodes sharing a token with the query come back. Results,
    ``filters``, editing and persistence are as for `BM25Retriever`.

    Args:
        sparse_index: The core index (shared, not copied); it must have an embedder.
        **options: `SearcherOptions`, as for `BM25Retriever`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingSparseEmbedder
        >>> from llama_index_hybrid_retrievers import SparseRetriever
        >>> nodes = [TextNode(id_="wing", text="wings generate lift"),
        ...          TextNode(id_="cat", text="cats sleep all day")]
        >>> splade = HashingSparseEmbedder()  # or SpladeEncoder(local_splade_path())
        >>> retriever = SparseRetriever.from_defaults(nodes=nodes, sparse_embed_model=splade)
        >>> [(n.node.node_id, round(n.score, 3)) for n in retriever.retrieve("sleeping cats")]
        [('cat', 0.601)]
    """

    searcher_type = SparseIndex
    searcher_argument = "sparse_index"
    build_hint = "SparseRetriever.from_defaults(nodes=..., sparse_embed_model=...)"
    model_argument = "sparse_embed_model"

    def __init__(self, sparse_index: SparseIndex, **options: Unpack[SearcherOptions]) -> None:
        super().__init__(sparse_index, **options)

    @property
    def sparse_index(self) -> SparseIndex:
        """The core sparse index."""
        return self._searcher

    @classmethod
    @constructor_factory
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        sparse_embed_model: SparseEmbedder,
        batch_size: int = 32,
        backend: str = "auto",
        **options: Unpack[BuildOptions],
    ) -> SparseRetriever:
        """Encode nodes (or every node of a docstore: exactly one) and return a retriever.

        ``sparse_embed_model`` (a `SparseEmbedder`) is required; ``batch_size`` and
        ``backend`` are `SparseIndex.from_docs`'s; ``options`` the constructor's.
        """
        one_source(nodes=nodes, docstore=docstore)
        node_list = source_nodes(nodes, docstore)
        index = SparseIndex.from_docs(nodes_to_docs(node_list), embedder=sparse_embed_model,
                                      batch_size=batch_size, backend=backend,
                                      show_progress=options.get("verbose", False))
        return cls(index, nodes=node_list, **options)

    @classmethod
    @constructor_factory
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, sparse_embed_model: SparseEmbedder,
        mmap: bool = False, **options: Unpack[LoadOptions],
    ) -> SparseRetriever:
        """Load a retriever saved with `persist` (or a `SparseIndex.save` folder).

        ``sparse_embed_model`` is the model the index was built with (its ``model_id``
        must be the saved one); ``mmap`` is as for `SparseIndex.load`; ``options``
        default to the saved ones.
        """
        if sparse_embed_model is None:
            raise TypeError(
                "sparse_embed_model must be the sparse model the index was built with (a "
                "SparseEmbedder such as hybrid_retrievers.models.SpladeEncoder), got None"
            )
        return cls._load(  # type: ignore[no-any-return]
            persist_dir,
            lambda folder: SparseIndex.load(folder, sparse_embed_model, mmap=mmap),
            bare_index_kind="sparse", **options)
