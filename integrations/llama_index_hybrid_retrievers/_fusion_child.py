"""A LlamaIndex retriever as a core searcher, for one `FusionRetriever` call.

A child is asked with ``retrieve`` / ``aretrieve`` on its own copy of the `QueryBundle`
(spans and callback events nest under the fusion's; a child writing
``bundle.embedding`` changes only its copy) and its nodes are read by
`node_with_score_to_hit`. Each searcher keeps the nodes it returned by id, so a fused
hit goes back to the child's node by the provenance's ``(index, id)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.schema import NodeWithScore, QueryBundle

from hybrid_retrievers.types import Hit

from ._convert import FUSION_KEY, node_with_added_metadata, node_with_score_to_hit

__all__ = ["ChildSearcher", "copy_bundle", "fused_nodes"]


def copy_bundle(query_bundle: QueryBundle) -> QueryBundle:
    """A shallow copy, so a child that sets ``bundle.embedding`` changes only its own."""
    copied = dataclasses.replace(query_bundle)
    if query_bundle.custom_embedding_strs is not None:
        copied.custom_embedding_strs = list(query_bundle.custom_embedding_strs)
    return copied


class ChildSearcher:
    """``search()`` / ``asearch()`` over one LlamaIndex child, for one fusion call.

    LlamaIndex retrievers have no per-call top-k: a child returns its own
    ``similarity_top_k`` nodes, so ``k`` is accepted and not passed on.
    """

    __slots__ = ("child", "bundle", "label", "nodes")

    def __init__(self, child: Any, query_bundle: QueryBundle, label: str) -> None:
        self.child = child
        self.bundle = copy_bundle(query_bundle)
        self.label = label
        self.nodes: dict[str, NodeWithScore] = {}  # node_id -> the first one returned

    def search(self, query: str = "", k: int | None = None) -> list[Hit]:
        return self._hits(self.child.retrieve(self.bundle))

    async def asearch(self, query: str = "", k: int | None = None) -> list[Hit]:
        return self._hits(await self.child.aretrieve(self.bundle))

    def _hits(self, nodes: Any) -> list[Hit]:
        if isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Sequence):
            raise TypeError(f"child {self.label} must return a list of NodeWithScore, got "
                            f"{type(nodes).__name__}")
        hits = [node_with_score_to_hit(nws, pos) for pos, nws in enumerate(nodes, 1)]
        for hit, nws in zip(hits, nodes):
            self.nodes.setdefault(hit.id, nws)
        return hits


def fused_nodes(hits: Sequence[Hit], children: Mapping[int, ChildSearcher]) -> list[NodeWithScore]:
    """New `NodeWithScore` objects for fused hits: a copy of the best-ranked child node
    (the first source at the hit's best rank) with the provenance under ``"fusion"``."""
    out = []
    for hit in hits:
        fusion = hit.explanation[FUSION_KEY]
        best = next(s for s in fusion["sources"] if s["rank"] == fusion["best_rank"])
        source = children[best["index"]].nodes[best["id"]].node
        node = node_with_added_metadata(source, {FUSION_KEY: fusion})
        out.append(NodeWithScore(node=node, score=float(hit.score)))
    return out
