"""LlamaIndex diversity postprocessors over the core `MMRReranker` and `SourceCap`.

* `MMRPostprocessor` — maximal marginal relevance (Carbonell & Goldstein 1998). Relevance
  is each node's retrieval score (its position when a node has none); similarity is the
  cosine of the nodes' own ``embedding``\\ s when every node carries one, else of
  ``embed_model``'s embeddings when given, else the Jaccard overlap of their analysed
  terms. The returned ``score`` is the MMR value.
* `SourceCapPostprocessor` — at most ``max_per_source`` nodes per value of
  ``metadata[key]`` (``"file_path"`` by default: LlamaIndex readers' file), in the input
  order; the returned ``score`` is the node's own.

Both return new `NodeWithScore` objects over node copies with ``retrieval_score`` and
``retrieval_rank`` added, as the rerankers in `postprocessors` do; the diversification
is `hybrid_retrievers.rerank`'s, so LangChain users get the same order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import MetadataMode, NodeWithScore

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.rerank import MMRReranker, SourceCap

from ._base import refuse_unknown_fields
from .embeddings import as_embedder
from .postprocessors import RerankPostprocessor

__all__ = ["MMRPostprocessor", "SourceCapPostprocessor"]


class DiversityPostprocessor(RerankPostprocessor):
    """Shared: the nodes go to the core as hits, so their scores are the relevance;
    unknown keywords are refused (LlamaIndex's components would ignore them)."""

    _refuse_unknown = refuse_unknown_fields()

    def _to_core(self, nodes: list[NodeWithScore]) -> list[Doc] | list[Hit]:
        docs = super()._to_core(nodes)
        if any(n.score is None for n in nodes):
            return docs
        return [Hit(d, float(n.score), i) for i, (d, n) in enumerate(zip(docs, nodes), 1)]


class MMRPostprocessor(DiversityPostprocessor):
    """Reorder nodes by maximal marginal relevance, as a LlamaIndex node postprocessor.

    Example:
        >>> from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
        >>> from llama_index_hybrid_retrievers import MMRPostprocessor
        >>> nodes = [NodeWithScore(node=TextNode(text="wing lift at low speed"), score=3.0),
        ...          NodeWithScore(node=TextNode(text="wing lift at low speed!"), score=2.9),
        ...          NodeWithScore(node=TextNode(text="drag of a flat plate"), score=1.0)]
        >>> out = MMRPostprocessor(top_n=2).postprocess_nodes(nodes, query_str="lift")
        >>> [n.node.text for n in out]
        ['wing lift at low speed', 'drag of a flat plate']
    """

    metadata_mode: MetadataMode = Field(
        default=MetadataMode.NONE,
        description="Which text of a node is compared: NONE (its own text: metadata that "
        "many nodes share, such as a file path, would make every pair look alike), EMBED, "
        "LLM or ALL.")
    lambda_mult: float = Field(
        default=0.5, description="λ in [0, 1]: 1 keeps the input order, 0 picks only for "
        "novelty.")
    embed_model: Any = Field(
        default=None, description="A LlamaIndex embedding model or core Embedder for "
        "nodes without their own embedding; None compares analysed terms (Jaccard).")

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        embedder = None if self.embed_model is None else as_embedder(self.embed_model)
        self._reranker = MMRReranker(lambda_mult=self.lambda_mult, top_n=self.top_n,
                                     embedder=embedder)

    def _rerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
        options: dict[str, Any] = {"lambda_mult": self.lambda_mult}
        seen: set[str] = set()
        distinct = [n for n in nodes if not (n.node.node_id in seen or seen.add(n.node.node_id))]
        if distinct and all(n.node.embedding is not None for n in distinct):
            options["doc_vectors"] = np.asarray([n.node.embedding for n in distinct])
        return options


class SourceCapPostprocessor(DiversityPostprocessor):
    """Keep at most ``max_per_source`` nodes per source, as a node postprocessor.

    Example:
        >>> from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
        >>> from llama_index_hybrid_retrievers import SourceCapPostprocessor
        >>> nodes = [NodeWithScore(node=TextNode(text=t, metadata={"file_path": f}), score=s)
        ...          for t, f, s in [("a", "x.md", 3.0), ("b", "x.md", 2.0), ("c", "y.md", 1.0)]]
        >>> out = SourceCapPostprocessor().postprocess_nodes(nodes, query_str="q")
        >>> [(n.node.text, n.score) for n in out]
        [('a', 3.0), ('c', 1.0)]
    """

    top_n: int = Field(default=1000, description="Most nodes to keep in all (>= 1).")
    key: str = Field(default="file_path", description="Metadata key naming a node's "
                     "source ('parent_id' for this package's chunks); a node without it "
                     "is its own source.")
    max_per_source: int = Field(default=1, description="Nodes one source may keep (>= 1).")

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._reranker = SourceCap(self.key, max_per_source=self.max_per_source,
                                   top_n=self.top_n)

    def _rerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
        return {"max_per_source": self.max_per_source}
