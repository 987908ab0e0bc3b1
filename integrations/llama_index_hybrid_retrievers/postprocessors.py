"""LlamaIndex rerankers: node postprocessors over the core `Reranker` / `LLMReranker`.

* `CrossEncoderRerank` — a cross-encoder (or any `PairScorer`) as a ``BaseNodePostprocessor``.
* `LLMRerank` — listwise reranking with any LlamaIndex LLM (or a callable), failing safe.

Both work in ``RetrieverQueryEngine`` (and its async ``aquery``). Like their LlamaIndex
namesakes, `CrossEncoderRerank` scores a node's ``MetadataMode.EMBED`` text and
`LLMRerank` shows the LLM its ``MetadataMode.LLM`` text (``metadata_mode=`` changes it).
Each call emits LlamaIndex's rerank events and the ``RERANKING`` callback event. The
reranking itself is `hybrid_retrievers.rerank`'s, so LangChain users get the same order.

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
into prompts or into a later reranker's input. The shared plumbing is in ``_rerank``.
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
from hybrid_retrievers.integration import (
    DEFAULT_LLM_TIMEOUT,
    check_k,
    input_position,
    pair_reranker,
    positional_docs,
)
from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import DEFAULT_LLM_RERANK_PROMPT, RERANK_KEY, LLMReranker, Reranker
from hybrid_retrievers.rerank import LLMReranker as CoreLLMReranker

from ._convert import node_with_added_metadata
from ._llm import as_text_generator, llm_name

__all__ = ["CrossEncoderRerank", "LLMRerank"]


# ------------------------------------------- the postprocessors' shared base

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

    keep_retrieval_score: bool = Field(
        default=True,
        description="Keep the input score under metadata['retrieval_score'] "
        "(SentenceTransformerRerank's keep_retrieval_score; it defaults to False there).",
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

    def _to_core(self, nodes: list[NodeWithScore]) -> list[Doc] | list[Hit]:
        """The nodes' ``metadata_mode`` texts (and metadata) as positional core docs
        (`positional_docs`)."""
        mode = self.metadata_mode
        return positional_docs((n.node.node_id, n.node.get_content(metadata_mode=mode),
                                n.node.metadata) for n in nodes)

    def _to_nodes(self, hits: list[Hit], nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        out = []
        for hit in hits:
            position = input_position(hit)
            original = nodes[position]
            info = hit.explanation[RERANK_KEY]
            added: dict[str, Any] = {RETRIEVAL_RANK_KEY: position + 1}
            if self.keep_retrieval_score:
                added[RETRIEVAL_SCORE_KEY] = original.score
            if "status" in info:
                added[STATUS_KEY] = info["status"]
                added[DETAIL_KEY] = info["detail"]
            copy = node_with_added_metadata(original.node, added)
            out.append(NodeWithScore(node=copy, score=float(hit.score)))
        return out

    def _rerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
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
                                **self._rerank_options(nodes))
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


# --------------------------------------------------------------- cross-encoder


class CrossEncoderRerank(RerankPostprocessor):
    """Rerank nodes with a cross-encoder, as a LlamaIndex node postprocessor.

    Unlike LlamaIndex's ``SentenceTransformerRerank`` it defaults to a real reranking
    model (loaded on first use), has a ``score_threshold``, never mutates the caller's
    nodes, and runs the model in a worker thread for ``apostprocess_nodes``.

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

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._reranker = pair_reranker(
            self.model, top_n=self.top_n, score_threshold=self.score_threshold,
            batch_size=self.batch_size, max_length=self.max_length, device=self.device)

    def _rerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
        return {"score_threshold": self.score_threshold}


# ------------------------------------------------------------------------- LLM


class LLMRerank(RerankPostprocessor):
    """Listwise reranking by a LlamaIndex LLM, failing safe, as a node postprocessor.

    The LLM (``complete`` / ``acomplete``) is asked for the order of the numbered nodes;
    when its answer is unusable or it raises, the input order is kept and
    ``rerank_status`` / ``rerank_detail`` say why: the query never fails for it.

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

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        generate = as_text_generator(self.llm)
        self._reranker = CoreLLMReranker(
            generate, agenerate=getattr(generate, "agenerate", None), top_n=self.top_n,
            window=self.window, step=self.step, prompt=self.prompt,
            max_passage_chars=self.max_passage_chars, name=llm_name(self.llm),
            timeout=self.timeout,
        )
