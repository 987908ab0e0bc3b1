"""LlamaIndex `HybridRetriever`: BM25 + dense over the same nodes, fused, in one call.

A `FusionRetriever` over a `BM25Retriever` and a `DenseRetriever` built from the same
nodes; the plan, concurrency and fusion are the core's (see ``fusion.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers import Analyzer
from hybrid_retrievers.vector import DEFAULT_BATCH_SIZE, EmbeddingCache
from hybrid_retrievers.fusion import DEFAULT_K_RRF, Dedup, FusionMode, default_fetch_k
from hybrid_retrievers.fusion.plan import Weights
from hybrid_retrievers.types import MetadataFilter
from hybrid_retrievers.validation import check_k

from ._base import one_filter
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .fusion import FusionRetriever

__all__ = ["HybridRetriever"]


class HybridRetriever(FusionRetriever):
    """BM25 + dense retrieval over the same nodes, fused: the 90% case in one call.

    `from_defaults` indexes the nodes twice, in a `BM25Retriever` and a
    `DenseRetriever`, each returning ``fetch_k`` candidates (default
    ``max(similarity_top_k, 20)``), and fuses ``[bm25, dense]`` (named ``"bm25"`` and
    ``"dense"`` in the provenance). Everything else is `FusionRetriever`'s. Because the
    BM25 child comes first, ``weights=hybrid_retrievers.lexical_boost_rule()`` favours
    it for queries with codes, numbers or quoted phrases. Setting
    ``similarity_top_k`` later changes the fused cut only; the children keep their
    candidate depth (``retriever.bm25.similarity_top_k``...).

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from llama_index_hybrid_retrievers import HybridRetriever
        >>> retriever = HybridRetriever.from_defaults(
        ...     nodes=[TextNode(id_="a", text="wings generate lift"),
        ...            TextNode(id_="b", text="cats sleep all day"),
        ...            TextNode(id_="c", text="lift and drag of wings")],
        ...     embed_model=HashingEmbedder(dimension=64), similarity_top_k=2,
        ... )
        >>> sorted(n.node.node_id for n in retriever.retrieve("wing lift"))
        ['a', 'c']
    """

    def __init__(self, retrievers: Sequence[BaseRetriever], **kwargs: Any) -> None:
        if isinstance(retrievers, Sequence) and len(retrievers) != 2:
            raise ValueError(
                "HybridRetriever needs exactly two retrievers [lexical, dense], got "
                f"{len(retrievers)}; use FusionRetriever for any other set"
            )
        super().__init__(retrievers, **kwargs)

    @property
    def bm25(self) -> BaseRetriever:
        """The lexical child (``retrievers[0]``)."""
        return self.retrievers[0]

    @property
    def dense(self) -> BaseRetriever:
        """The dense child (``retrievers[1]``)."""
        return self.retrievers[1]

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        embed_model: BaseEmbedding | Any,
        similarity_top_k: int = 4,
        fetch_k: int | None = None,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        names: Sequence[str] | None = ("bm25", "dense"),
        dedup: Dedup | str = Dedup.ID,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        filter: MetadataFilter | MetadataFilters | None = None,
        max_workers: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
    ) -> HybridRetriever:
        """Index nodes (or every node of a docstore) for BM25 and dense retrieval; fuse.

        Args:
            nodes: The nodes to index; ids are ``node.node_id``.
            docstore: Alternatively, a docstore whose ``docs`` are all indexed.
            embed_model: A LlamaIndex `BaseEmbedding` or a core `Embedder` (required).
            similarity_top_k: Number of fused nodes to return (>= 1).
            fetch_k: Candidates each child returns (default ``max(similarity_top_k, 20)``).
            weights, mode, k_rrf, names, dedup, max_workers: As for `FusionRetriever`
                (``weights`` is ``[bm25, dense]``).
            analyzer, k1, b, method, delta: BM25 settings (see `BM25Retriever.from_defaults`).
            metric, cache, batch_size: Dense settings (see `DenseRetriever.from_defaults`).
            filter: Applied by both children before their top-k (``filters`` is
                LlamaIndex's spelling).
            callback_manager: LlamaIndex callback manager (given to the children too).
            verbose: Also shows progress bars while indexing.

        Raises:
            ValueError: unless exactly one of ``nodes`` and ``docstore`` is given.
        """
        if nodes is not None and not isinstance(nodes, BaseNode):
            nodes = list(nodes)  # both children read them
        depth = default_fetch_k(check_k(similarity_top_k, name="similarity_top_k")) \
            if fetch_k is None else check_k(fetch_k, name="fetch_k")
        shared: dict[str, Any] = {
            "similarity_top_k": depth, "filter": one_filter(filter, filters),
            "callback_manager": callback_manager, "verbose": verbose,
        }
        bm25 = BM25Retriever.from_defaults(
            nodes, docstore, analyzer=analyzer, k1=k1, b=b, method=method, delta=delta,
            **shared,
        )
        dense = DenseRetriever.from_defaults(
            nodes, docstore, embed_model=embed_model, metric=metric, cache=cache,
            batch_size=batch_size, **shared,
        )
        return cls(
            [bm25, dense],
            similarity_top_k=similarity_top_k,
            weights=weights,
            mode=mode,
            k_rrf=k_rrf,
            names=names,
            dedup=dedup,
            max_workers=max_workers,
            callback_manager=callback_manager,
            verbose=verbose,
        )
