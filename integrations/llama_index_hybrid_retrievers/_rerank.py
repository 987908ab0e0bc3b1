"""`RerankPostprocessor`, the shared plumbing of the rerankers in ``postprocessors``.

It converts nodes to positional core docs and back (a copy of each node with the
provenance keys added) and emits LlamaIndex's rerank events around the core call.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.integration import check_k, input_position, positional_docs
from hybrid_retrievers.rerank import RERANK_KEY, LLMReranker, Reranker

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
    """Base of the rerankers: subclasses build ``_reranker`` (a core reranker)."""

    top_n: int = Field(default=3, description="How many nodes to keep (>= 1).")
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.EMBED,
        description="Which text of a node is reranked: EMBED (its text with the metadata "
        "not excluded from embedding, as LlamaIndex's SentenceTransformerRerank), LLM, ALL, "
        "or NONE (its own text, as indexed by this package's retrievers).",
    )

    _reranker: Any = PrivateAttr()

    @field_validator("top_n", mode="before")
    @classmethod
    def _check_top_n(cls, value: Any) -> int:
        return check_k(value, name="top_n")

    @property
    def reranker(self) -> Reranker | LLMReranker:
        """The core reranker doing the work (`hybrid_retrievers.rerank`)."""
        return self._reranker  # type: ignore[no-any-return]

    def _to_core(self, nodes: list[NodeWithScore]) -> list[Doc]:
        """The nodes' ``metadata_mode`` texts as positional core docs (`positional_docs`)."""
        mode = self.metadata_mode
        return positional_docs((n.node.node_id, n.node.get_content(metadata_mode=mode))
                               for n in nodes)

    @staticmethod
    def _to_nodes(hits: list[Hit], nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        out = []
        for hit in hits:
            position = input_position(hit)
            original = nodes[position]
            info = hit.explanation[RERANK_KEY]
            added: dict[str, Any] = {RETRIEVAL_SCORE_KEY: original.score,
                                     RETRIEVAL_RANK_KEY: position + 1}
            if "status" in info:
                added[STATUS_KEY] = info["status"]
                added[DETAIL_KEY] = info["detail"]
            copy = node_with_added_metadata(original.node, added)
            out.append(NodeWithScore(node=copy, score=float(hit.score)))
        return out

    def _rerank_options(self) -> dict[str, Any]:
        """Extra keyword arguments for the core reranker's ``rerank``."""
        return {}

    @classmethod
    def class_name(cls) -> str:
        return f"HybridRetrievers{cls.__name__}"

    def _model_label(self) -> str:
        return self._reranker.model_id  # type: ignore[no-any-return]

    @contextmanager
    def _events(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None,
                query: str) -> Iterator[list[NodeWithScore]]:
        """Emit the rerank start events; the block fills the yielded list with the
        output, whose end events follow (none when the block raises)."""
        model = self._model_label()
        payload = {EventPayload.NODES: nodes, EventPayload.MODEL_NAME: model,
                   EventPayload.QUERY_STR: query, EventPayload.TOP_K: self.top_n}
        dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n,
                                          model_name=model))
        out: list[NodeWithScore] = []
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            yield out
            event.on_end(payload={EventPayload.NODES: out})
        dispatcher.event(ReRankEndEvent(nodes=out))

    def _steps(self, nodes: Any, query_bundle: QueryBundle | None, rerank: Callable[..., Any]
               ) -> Generator[Any, list[Hit], list[NodeWithScore]]:
        """The one reranking path: checks, events, conversions. It yields what
        ``rerank(query, docs, top_n=..., ...)`` returned inside the events (the hits, or
        a coroutine for the async path) and is sent the hits back."""
        query, nodes = _query(query_bundle, type(self).__name__), _check_nodes(nodes)
        if not nodes:
            return []
        with self._events(nodes, query_bundle, query) as out:
            hits = yield rerank(query, self._to_core(nodes), top_n=self.top_n,
                                **self._rerank_options())
            out.extend(self._to_nodes(hits, nodes))
        return out

    @dispatcher.span
    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        steps = self._steps(nodes, query_bundle, self._reranker.rerank)
        try:
            steps.send(next(steps))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        raise AssertionError("unreachable")  # pragma: no cover

    @dispatcher.span
    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        steps = self._steps(nodes, query_bundle, self._reranker.arerank)
        try:
            pending = next(steps)
            try:
                hits = await pending
            except BaseException as exc:  # inside the events, as in the sync path
                steps.throw(exc)
                raise
            steps.send(hits)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        raise AssertionError("unreachable")  # pragma: no cover
