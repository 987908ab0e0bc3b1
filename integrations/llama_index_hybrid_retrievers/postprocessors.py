"""LlamaIndex rerankers: node postprocessors over the core `Reranker` / `LLMReranker`.

* `CrossEncoderRerank` — a cross-encoder (or any `PairScorer`) as a ``BaseNodePostprocessor``.
* `LLMRerank` — listwise reranking with any LlamaIndex LLM (or a callable), failing safe.

Both work in ``RetrieverQueryEngine.from_args(retriever, node_postprocessors=[...])`` and
in its async ``aquery``. Like their LlamaIndex namesakes, `CrossEncoderRerank` scores a
node's ``MetadataMode.EMBED`` text (``SentenceTransformerRerank``) and `LLMRerank` shows
the LLM its ``MetadataMode.LLM`` text (``LLMRerank``); ``metadata_mode=`` changes it.
Each call emits LlamaIndex's ``ReRankStartEvent`` / ``ReRankEndEvent`` instrumentation
events (in a span) and the callback manager's ``RERANKING`` event. The adapters are thin: scoring, sorting, thresholds, ties and
the parsing of the LLM's answer all happen in `hybrid_retrievers.rerank`, so LangChain
users get the same order.

Returned nodes: new `NodeWithScore` objects whose ``score`` is the rerank score
(cross-encoder: the model's score; LLM: ``1 / rank``) and whose node is a **copy** of the
input node (same ``node_id``, text and relationships) with these metadata keys added —
the caller's `NodeWithScore` and node objects are never modified:

=====================  =================================================================
key                    value
=====================  =================================================================
``retrieval_score``    the input ``NodeWithScore.score`` (``None`` if it had none)
``retrieval_rank``     the node's 1-based position in the input list
``rerank_status``      LLM only: ``"ok"``, ``"repaired"`` or ``"fallback"``
``rerank_detail``      LLM only: what was repaired, or why the input order was kept
=====================  =================================================================

The added keys are excluded from the node's LLM and embedding text, so they never leak
into prompts or into a later reranker's input.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.timeout import DEFAULT_LLM_TIMEOUT
from hybrid_retrievers.validation import check_k
from hybrid_retrievers.models.cross_encoder import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import DEFAULT_LLM_RERANK_PROMPT, RERANK_KEY
from hybrid_retrievers.rerank import LLMReranker as CoreLLMReranker
from hybrid_retrievers.rerank import Reranker as CoreReranker

__all__ = ["CrossEncoderRerank", "LLMRerank"]

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


class _RerankPostprocessor(BaseNodePostprocessor):
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
            node = original.node
            new_keys = list(added)
            copy = node.model_copy(update={
                "metadata": {**node.metadata, **added},
                "excluded_llm_metadata_keys": _merge(node.excluded_llm_metadata_keys, new_keys),
                "excluded_embed_metadata_keys": _merge(node.excluded_embed_metadata_keys,
                                                       new_keys),
            })
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

    @dispatcher.span
    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        query, nodes = self._prepare(nodes, query_bundle)
        if not nodes:
            return []
        payload = self._event_payload(nodes, query, self._model_label())
        self._start_event(nodes, query_bundle)
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            hits = self._reranker.rerank(query, self._to_core(nodes), top_n=self.top_n,
                                         **self._rerank_options())
            out = self._to_nodes(hits, nodes)
            event.on_end(payload={EventPayload.NODES: out})
        dispatcher.event(ReRankEndEvent(nodes=out))
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
        payload = self._event_payload(nodes, query, self._model_label())
        self._start_event(nodes, query_bundle)
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            hits = await self._reranker.arerank(query, self._to_core(nodes), top_n=self.top_n,
                                                **self._rerank_options())
            out = self._to_nodes(hits, nodes)
            event.on_end(payload={EventPayload.NODES: out})
        dispatcher.event(ReRankEndEvent(nodes=out))
        return out


def _merge(existing: list[str] | None, new: list[str]) -> list[str]:
    existing = list(existing or [])
    return existing + [k for k in new if k not in existing]


# --------------------------------------------------------------- cross-encoder


class CrossEncoderRerank(_RerankPostprocessor):
    """Rerank nodes with a cross-encoder, as a LlamaIndex node postprocessor.

    Unlike LlamaIndex's ``SentenceTransformerRerank`` it defaults to a real reranking
    model (``cross-encoder/ms-marco-MiniLM-L-6-v2``, loaded on first use), has a
    ``score_threshold`` and a batch size, handles two-logit models, never mutates the
    caller's nodes, and runs the model in a worker thread for ``apostprocess_nodes``.

    See the module docstring for the returned nodes.

    Example:
        >>> from llama_index.core.schema import NodeWithScore, TextNode
        >>> from llama_index_hybrid_retrievers import CrossEncoderRerank
        >>> class Overlap:  # any object with score(pairs) -> scores works as the model
        ...     def score(self, pairs):
        ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
        >>> nodes = [NodeWithScore(node=TextNode(text="cats sleep"), score=2.0),
        ...          NodeWithScore(node=TextNode(text="wing lift and drag"), score=1.0)]
        >>> best = CrossEncoderRerank(model=Overlap(), top_n=1).postprocess_nodes(
        ...     nodes, query_str="wing lift")[0]
        >>> best.node.text, best.score, best.node.metadata["retrieval_score"]
        ('wing lift and drag', 2.0, 1.0)
    """

    model: Any = Field(
        default=DEFAULT_CROSS_ENCODER,
        description="A model name or local path (loaded on first use), a loaded "
        "sentence_transformers CrossEncoder, or any object with score(pairs).",
    )
    score_threshold: float | None = Field(
        default=None,
        description="Drop nodes scoring below this (in the model's units: a probability "
        "for the default sigmoid), before top_n; None keeps every score.",
    )
    batch_size: int = Field(default=32, description="Pairs per forward pass.")
    max_length: int | None = Field(
        default=None, description="Longest input in tokens, when loading by name or path.")
    device: str | None = Field(
        default=None, description="Device for a model loaded by name or path.")

    _reranker: CoreReranker = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        model = self.model
        if isinstance(model, str) or callable(getattr(model, "predict", None)) and not callable(
            getattr(model, "score", None)
        ):
            from hybrid_retrievers.models import CrossEncoderScorer

            scorer: Any = CrossEncoderScorer(model, batch_size=self.batch_size,
                                             max_length=self.max_length, device=self.device)
        elif callable(getattr(model, "score", None)):
            scorer = model
        else:
            raise TypeError(
                "model must be a model name, a local path, a sentence_transformers "
                f"CrossEncoder or an object with score(pairs), got {type(model).__name__}"
            )
        self._reranker = CoreReranker(scorer, top_n=self.top_n,
                                      score_threshold=self.score_threshold)

    @classmethod
    def class_name(cls) -> str:
        return "HybridRetrieversCrossEncoderRerank"

    @property
    def reranker(self) -> CoreReranker:
        """The core `hybrid_retrievers.rerank.Reranker` doing the work."""
        return self._reranker

    def _rerank_options(self) -> dict[str, Any]:
        return {"score_threshold": self.score_threshold}

    def _model_label(self) -> str:
        return self._reranker.model_id


# ------------------------------------------------------------------------- LLM


def _llm_name(llm: Any) -> str:
    metadata = getattr(llm, "metadata", None)
    name = getattr(metadata, "model_name", None)
    if isinstance(name, str) and name.strip() and name != "unknown":
        return name
    if hasattr(llm, "class_name") and callable(llm.class_name):
        return str(llm.class_name())
    return getattr(llm, "__name__", None) or type(llm).__name__


class LLMRerank(_RerankPostprocessor):
    """Listwise reranking by a LlamaIndex LLM, failing safe, as a node postprocessor.

    The LLM is prompted (``llm.complete``; ``acomplete`` for ``apostprocess_nodes``) with
    the query and the numbered nodes and asked for their order. Its answer is parsed
    leniently; when it is unusable or the LLM raises, the input order is kept and the
    nodes' ``rerank_status`` / ``rerank_detail`` metadata say why (a warning is logged):
    the query never fails because of the reranker.

    Example:
        >>> from llama_index.core.schema import NodeWithScore, TextNode
        >>> from llama_index_hybrid_retrievers import LLMRerank
        >>> nodes = [NodeWithScore(node=TextNode(text="cats sleep"), score=2.0),
        ...          NodeWithScore(node=TextNode(text="wing lift and drag"), score=1.0)]
        >>> rerank = LLMRerank(llm=lambda prompt: "[2] > [1]", top_n=1)
        >>> rerank.postprocess_nodes(nodes, query_str="wing lift")[0].node.text
        'wing lift and drag'
    """

    llm: Any = Field(description="A LlamaIndex LLM (anything with complete()), or a "
                     "callable str -> str.")
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.LLM,
        description="Which text of a node the LLM reads: LLM (its text with the metadata "
        "not excluded from LLM prompts, as LlamaIndex's LLMRerank), EMBED, ALL or NONE.",
    )
    window: int | None = Field(
        default=None, description="Most nodes per prompt (RankGPT sliding window); None: all.")
    step: int | None = Field(default=None, description="Sliding-window step (None: half).")
    prompt: str = Field(default=DEFAULT_LLM_RERANK_PROMPT,
                        description="Template with {query}, {passages} and optionally {n}.")
    max_passage_chars: int | None = Field(
        default=1000, description="Longer node texts are cut in the prompt (None: whole).")
    timeout: float | None = Field(
        default=DEFAULT_LLM_TIMEOUT, description="Seconds to wait for each LLM answer "
        "before keeping the input order (None: no limit).")

    _reranker: CoreLLMReranker = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        llm = self.llm
        if not callable(getattr(llm, "complete", None)) and not callable(llm):
            raise TypeError(
                "llm must be a LlamaIndex LLM (with complete()) or a callable str -> str, "
                f"got {type(llm).__name__}: {llm!r:.80}"
            )
        if callable(getattr(llm, "complete", None)):
            def generate(prompt: str) -> Any:
                return llm.complete(prompt).text

            agenerate: Any = None
            if callable(getattr(llm, "acomplete", None)):
                async def agenerate(prompt: str) -> Any:
                    return (await llm.acomplete(prompt)).text
        else:
            generate, agenerate = llm, None
        self._reranker = CoreLLMReranker(
            generate, agenerate=agenerate, top_n=self.top_n, window=self.window,
            step=self.step, prompt=self.prompt, max_passage_chars=self.max_passage_chars,
            name=_llm_name(llm), timeout=self.timeout,
        )

    @classmethod
    def class_name(cls) -> str:
        return "HybridRetrieversLLMRerank"

    @property
    def reranker(self) -> CoreLLMReranker:
        """The core `hybrid_retrievers.rerank.LLMReranker` doing the work."""
        return self._reranker

    def _model_label(self) -> str:
        return self._reranker.name
