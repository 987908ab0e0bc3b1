"""LlamaIndex HyDE retriever over the core `HyDESearcher`.

Any LlamaIndex `LLM` (``complete`` / ``acomplete``) writes the hypothetical passages;
a plain callable ``prompt -> str`` works too. Averaging, search, the query-expansion
side and the fall-back to the raw query when the LLM fails are the core's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.hyde import HyDEResult, HyDESearcher
from hybrid_retrievers.types import MetadataFilter
from hybrid_retrievers.vector import VectorIndex

from ._base import CoreSearcherRetriever
from ._convert import as_node_list, nodes_to_docs, one_source
from ._llm import LlamaIndexGenerator, as_text_generator
from .embeddings import as_embedder

__all__ = ["HyDERetriever", "LlamaIndexGenerator", "as_text_generator"]


class HyDERetriever(CoreSearcherRetriever[HyDESearcher]):
    """HyDE retrieval (Gao et al. 2022) for LlamaIndex, backed by `HyDESearcher`.

    Results are as for `BM25Retriever`. The passages of a query are not stored on the
    retriever (it may serve several threads): call `generate`, or read the core hits'
    ``explanation["hyde"]``. The constructor takes the searcher and `SearcherOptions`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from llama_index_hybrid_retrievers import HyDERetriever
        >>> retriever = HyDERetriever.from_defaults(
        ...     nodes=[TextNode(id_="w", text="an aircraft wing generates lift"),
        ...            TextNode(id_="b", text="bread rises with yeast")],
        ...     embed_model=HashingEmbedder(64), llm=lambda prompt: "A wing generates lift.",
        ...     similarity_top_k=1)
        >>> [n.node.node_id for n in retriever.retrieve("how do planes fly?")]
        ['w']
    """

    searcher_type = HyDESearcher
    build_hint = "HyDERetriever.from_defaults(...)"

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        *,
        embed_model: Any,
        llm: Any,
        index: VectorIndex | None = None,
        similarity_top_k: int = 4,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
        **options: Any,
    ) -> HyDERetriever:
        """Index ``nodes`` (or use an existing ``index``, e.g. a `DenseRetriever`'s) with HyDE.

        Exactly one of ``nodes`` and ``index``; ``embed_model`` is a `BaseEmbedding` or
        core `Embedder`, ``llm`` a LlamaIndex `LLM` or a callable ``prompt -> str``;
        ``options`` are the core recipe's (`HyDESearcher.from_index`: ``n``,
        ``expand_with_bm25``...), the rest the constructor's.
        """
        one_source(nodes=nodes, index=index)
        embedder = as_embedder(embed_model)
        generate = as_text_generator(llm)
        node_list: list[BaseNode] = []
        if index is None:
            node_list = as_node_list(nodes)  # type: ignore[arg-type]
            searcher = HyDESearcher.from_docs(nodes_to_docs(node_list), embedder=embedder,
                                              generate=generate, **options)
        elif not isinstance(index, VectorIndex):
            raise TypeError(f"index must be a hybrid_retrievers VectorIndex, got {type(index).__name__}")
        else:
            searcher = HyDESearcher.from_index(index, generate=generate, embedder=embedder,
                                               **options)
        return cls(searcher, similarity_top_k=similarity_top_k, filters=filters,
                   nodes=node_list, callback_manager=callback_manager, verbose=verbose)

    def _editable_indexes(self) -> list[Any]:
        return [i for i in (self._searcher.index, self._searcher.expansion_searcher)
                if i is not None]

    def generate(self, query: str) -> HyDEResult:
        """The hypothetical passages for ``query`` (for debugging; never raises for the LLM)."""
        return self._searcher.hyde.generate(query)
