"""LlamaIndex `HybridRetriever`: BM25 + dense over the same nodes, fused, in one call.

A `FusionRetriever` over a `BM25Retriever` and a `DenseRetriever` built from the same
nodes; the plan, concurrency and fusion are the core's (see ``fusion.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore

from hybrid_retrievers import Analyzer
from hybrid_retrievers.fusion import DEFAULT_K_RRF, Dedup, FusionMode, default_fetch_k
from hybrid_retrievers.fusion.plan import Weights
from hybrid_retrievers.validation import check_k
from hybrid_retrievers.vector import DEFAULT_BATCH_SIZE, EmbeddingCache

from ._base import BuildOptions
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .fusion import FusionRetriever

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+
    from typing_extensions import Unpack

__all__ = ["HybridRetriever"]


class HybridRetriever(FusionRetriever):
    """BM25 + dense retrieval over the same nodes, fused: the 90% case in one call.

    `from_defaults` indexes the nodes in a `BM25Retriever` and a `DenseRetriever`, each
    returning ``fetch_k`` candidates, and fuses ``[bm25, dense]`` (named ``"bm25"`` and
    ``"dense"``); everything else is `FusionRetriever`'s. Setting ``similarity_top_k``
    later changes the fused cut only, not the children's depth.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from llama_index_hybrid_retrievers import HybridRetriever
        >>> nodes = [TextNode(id_=i, text=t) for i, t in [
        ...     ("a", "wings generate lift"), ("b", "cats sleep"), ("c", "lift and drag of wings")]]
        >>> retriever = HybridRetriever.from_defaults(
        ...     nodes=nodes, embed_model=HashingEmbedder(dimension=64), similarity_top_k=2)
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
        fetch_k: int | None = None,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        names: Sequence[str] | None = ("bm25", "dense"),
        dedup: Dedup | str = Dedup.ID,
        max_workers: int | None = None,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        **options: Unpack[BuildOptions],
    ) -> HybridRetriever:
        """Index nodes (or every node of a docstore: exactly one) for BM25 and dense; fuse.

        ``fetch_k`` is each child's depth (default ``max(similarity_top_k, 20)``); the
        fusion settings are `FusionRetriever`'s (``weights`` is ``[bm25, dense]``), the
        BM25 and dense ones `BM25Retriever.from_defaults`' and
        `DenseRetriever.from_defaults`'. ``options``: ``similarity_top_k`` counts fused
        nodes; the filter, callback manager and ``verbose`` go to all three.
        """
        if nodes is not None and not isinstance(nodes, BaseNode):
            nodes = list(nodes)  # both children read them
        top_k = options.pop("similarity_top_k", 4)
        depth = default_fetch_k(check_k(top_k, name="similarity_top_k")) \
            if fetch_k is None else check_k(fetch_k, name="fetch_k")
        children: dict[str, Any] = {**options, "similarity_top_k": depth}
        bm25 = BM25Retriever.from_defaults(nodes, docstore, analyzer=analyzer, k1=k1, b=b,
                                           method=method, delta=delta, **children)
        dense = DenseRetriever.from_defaults(nodes, docstore, embed_model=embed_model,
                                             metric=metric, cache=cache,
                                             batch_size=batch_size, **children)
        return cls([bm25, dense], similarity_top_k=top_k, weights=weights, mode=mode,
                   k_rrf=k_rrf, names=names, dedup=dedup, max_workers=max_workers,
                   callback_manager=options.get("callback_manager"),
                   verbose=options.get("verbose", False))
