"""Shared plumbing of the LlamaIndex rerankers (see `llama_index_hybrid_retrievers.postprocessors`).

`RerankPostprocessor` converts nodes to core docs (by position, so every result maps
back to its own input node) and back (a copy of each node with the provenance keys
added), validates ``top_n`` and emits LlamaIndex's rerank events around the core call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.rerank import RERANK_KEY
from hybrid_retrievers.validation import check_k

from ._convert import node_with_added_metadata

__all__ = ["DETAIL_KEY", "RETRIEVAL_RANK_KEY", "RETRIEVAL_SCORE_KEY", "STATUS_KEY",
           "RerankPostprocessor"]

dispatcher = get_dispatcher(__name__)

RETRIEVAL_SCORE_KEY = "retrieval_score"
RETRIEVAL_RANK_KEY = "retrieval_rank"
STATUS_KEY = "rerank_status"
DETAIL_KEY = "rerank_detail"


def _query(query_bundle: QueryBundle | None, cls: str) -> str:
    if query_bundle is None:
        raise ValueError(
            f"{cls} needs the query: call postprocess_nodes(nodes, query_str=...) or pass "
            "query_bundle=QueryBundle(...)"
        )
    return query_bundle.query_str


def _check_nodes(nodes: Any) -> list[NodeWithScore]:
    if isinstance(nodes, NodeWithScore) or not isinstance(nodes, (list, tuple)):
        raise TypeError(
            f"nodes must be a list of NodeWithScore, got {type(nodes).__name__}; "
            "wrap a single node in a list"
        )
    for i, n in enumerate(nodes):
        if not isinstance(n, NodeWithScore):
            raise TypeError(f"nodes[{i}] must be a NodeWithScore, got {type(n).__name__}")
    return list(nodes)


class RerankPostprocessor(BaseNodePostprocessor):
    """Shared plumbing: conversion to core docs and back, callback events, validation."""

    top_n: int = Field(default=3, description="How many nodes to keep (>= 1).")
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.EMBED,
        description="Which text of a node is reranked: EMBED (its text with the metadata "
        "not excluded from embedding, as LlamaIndex's SentenceTransformerRerank), LLM, ALL, "
        "or NONE (its own text, as indexed by this package's retrievers).",
    )

    @field_validator("top_n", mode="before")
    @classmethod
    def _check_top_n(cls, value: Any) -> int:
        return check_k(value, name="top_n")

    def _to_core(self, nodes: list[NodeWithScore]) -> list[Doc]:
        # Positions as ids, so every result maps back to exactly its own input node. A
        # repeated node_id gets its first occurrence's position, so the core keeps only
        # that one (as it does for repeated Doc ids, and as the LangChain adapters do).
        first: dict[str, int] = {}
        return [Doc(str(first.setdefault(n.node.node_id, i)),
                    n.node.get_content(metadata_mode=self.metadata_mode))
                for i, n in enumerate(nodes)]

    @staticmethod
    def _to_nodes(hits: list[Hit], nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        out = []
        for hit in hits:
            original = nodes[int(hit.doc.id)]
            info = hit.explanation[RERANK_KEY]
            added: dict[str, Any] = {RETRIEVAL_SCORE_KEY: original.score,
                                     RETRIEVAL_RANK_KEY: int(hit.doc.id) + 1}
            if "status" in info:
                added[STATUS_KEY] = info["status"]
                added[DETAIL_KEY] = info["detail"]
            copy = node_with_added_metadata(original.node, added)
            out.append(NodeWithScore(node=copy, score=float(hit.score)))
        return out

    def _event_payload(self, nodes: list[NodeWithScore], query: str, model: str
                       ) -> dict[str, Any]:
        return {EventPayload.NODES: nodes, EventPayload.MODEL_NAME: model,
                EventPayload.QUERY_STR: query, EventPayload.TOP_K: self.top_n}

    def _rerank_options(self) -> dict[str, Any]:
        """Extra keyword arguments for the core reranker's ``rerank``."""
        return {}

    def _model_label(self) -> str:
        raise NotImplementedError

    def _prepare(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
    ) -> tuple[str, list[NodeWithScore]]:
        return _query(query_bundle, type(self).__name__), _check_nodes(nodes)

    def _start_event(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> None:
        dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n,
                                          model_name=self._model_label()))

    @contextmanager
    def _events(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None,
                query: str) -> Iterator[list[NodeWithScore]]:
        """Emit the rerank start events; the block fills the yielded list with the
        output, whose end events follow (none when the block raises)."""
        payload = self._event_payload(nodes, query, self._model_label())
        self._start_event(nodes, query_bundle)
        out: list[NodeWithScore] = []
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            yield out
            event.on_end(payload={EventPayload.NODES: out})
        dispatcher.event(ReRankEndEvent(nodes=out))

    @dispatcher.span
    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        query, nodes = self._prepare(nodes, query_bundle)
        if not nodes:
            return []
        with self._events(nodes, query_bundle, query) as out:
            hits = self._reranker.rerank(query, self._to_core(nodes), top_n=self.top_n,
                                         **self._rerank_options())
            out.extend(self._to_nodes(hits, nodes))
        return out

    @dispatcher.span
    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        query, nodes = self._prepare(nodes, query_bundle)
        if not nodes:
            return []
        with self._events(nodes, query_bundle, query) as out:
            hits = await self._reranker.arerank(query, self._to_core(nodes), top_n=self.top_n,
                                                **self._rerank_options())
            out.extend(self._to_nodes(hits, nodes))
        return out
