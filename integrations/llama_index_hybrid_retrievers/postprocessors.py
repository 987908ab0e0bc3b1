"""LlamaIndex rerankers: node postprocessors over the core rerankers.

* `CrossEncoderRerank` — a cross-encoder (or any `PairScorer`) as a ``BaseNodePostprocessor``.
* `SentenceTransformerRerank` — the same with LlamaIndex's ``SentenceTransformerRerank``
  arguments and defaults.
* `LLMRerank` — LlamaIndex's ``LLMRerank`` (choice select in batches, relevance scores,
  images shown to a chat model) over the core `ChoiceSelectReranker`, failing safe.
* `LLMListwiseRerank` — listwise (RankGPT) reranking over the core `LLMReranker`.

All work in ``RetrieverQueryEngine`` (and its async ``aquery``) and refuse unknown keywords
(a `TypeError` naming the nearest valid name). Like their LlamaIndex namesakes, the
cross-encoders score a node's ``MetadataMode.EMBED`` text and the LLM rerankers show the
LLM its ``MetadataMode.LLM`` text (``metadata_mode=`` changes it).
Each call emits LlamaIndex's rerank events and the ``RERANKING`` callback event. The
reranking itself is `hybrid_retrievers.rerank`'s, so LangChain users get the same order.

Returned nodes: new `NodeWithScore` objects whose ``score`` is the rerank score
(cross-encoder: the model's score; `LLMRerank`: the LLM's relevance, 0.0 for a node kept
after a failure; `LLMListwiseRerank`: ``1 / rank``) and whose node is a **copy** of the
input node (same ``node_id``, text and relationships) with these metadata keys added —
the caller's `NodeWithScore` and node objects are never modified:

=====================  =================================================================
key                    value
=====================  =================================================================
``retrieval_score``    the input ``NodeWithScore.score`` (``None`` if it had none), unless
                       ``keep_retrieval_score=False``
``retrieval_rank``     the node's 1-based position in the input list
``rerank_status``      LLM only: ``"ok"``, ``"repaired"`` or ``"fallback"``
``rerank_detail``      LLM only: what was repaired, or why the input order was kept
=====================  =================================================================

The added keys are excluded from the node's LLM and embedding text, so they never leak
into prompts or into a later reranker's input. The shared plumbing is in ``_rerank``.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import (
    Field,
    PrivateAttr,
    SerializeAsAny,
    field_validator,
    model_validator,
)
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, SelectorPromptTemplate
from llama_index.core.prompts.chat_prompts import CHAT_CONTENT_CHOICE_SELECT_PROMPT
from llama_index.core.prompts.default_prompts import DEFAULT_CHOICE_SELECT_PROMPT
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import BaseNode, ImageNode, MetadataMode, NodeWithScore, QueryBundle

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.integration import (
    DEFAULT_LLM_TIMEOUT,
    check_k,
    input_position,
    pair_reranker,
    positional_docs,
)
from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import (
    DEFAULT_LLM_RERANK_PROMPT,
    RERANK_KEY,
    ChoiceSelectReranker,
    LLMReranker,
    Reranker,
    format_choice_batch,
    parse_choice_select_answer,
)
from hybrid_retrievers.rerank import LLMReranker as CoreLLMReranker

from ._base import refuse_arguments
from ._convert import node_with_added_metadata, type_error
from ._llm import as_text_generator, llm_name

__all__ = ["CrossEncoderRerank", "LLMListwiseRerank", "LLMRerank", "SentenceTransformerRerank"]

logger = logging.getLogger("hybrid_retrievers.rerank")


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

    argument_hints: ClassVar[Mapping[str, str]] = {}
    """Constructor keywords refused with a hint (what to pass instead)."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, values: Any) -> Any:
        """`TypeError` for a keyword that is no field, naming it and the nearest field
        (pydantic would ignore it: a misspelt ``top_k`` must not pass silently)."""
        if isinstance(values, Mapping):
            known = set(cls.model_fields) | {"class_name"}  # class_name: from_dict's key
            refuse_arguments(cls.__name__, {k: v for k, v in values.items() if k not in known},
                             cls.argument_hints, accepted=cls.model_fields)
        return values

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

    def _arerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
        """Extra keyword arguments for the core reranker's ``arerank``."""
        return self._rerank_options(nodes)

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

    def _steps(self, nodes: Any, query_bundle: QueryBundle | None, rerank: Callable[..., Any],
               asynchronous: bool = False) -> Generator[Any, list[Hit], list[NodeWithScore]]:
        """The one reranking path: checks, events, conversions. It yields what
        ``rerank(query, docs, top_n=..., ...)`` returned inside the events (the hits, or
        a coroutine for the async path) and is sent the hits back."""
        query, nodes = _query(query_bundle, type(self).__name__), _check_nodes(nodes)
        if not nodes:
            return []
        with self._events(nodes, query_bundle, query) as out:
            hits = yield rerank(query, self._to_core(nodes), top_n=self.top_n,
                                **(self._arerank_options(nodes) if asynchronous
                                   else self._rerank_options(nodes)))
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
        steps = self._steps(nodes, query_bundle, self._reranker.arerank, asynchronous=True)
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

    argument_hints: ClassVar[Mapping[str, str]] = {
        "trust_remote_code": "SentenceTransformerRerank takes it; for CrossEncoderRerank "
                             "pass a loaded model: model=CrossEncoder(name, "
                             "trust_remote_code=True)",
        "cross_encoder_kwargs": "SentenceTransformerRerank takes it; for CrossEncoderRerank "
                                "pass a loaded model: model=CrossEncoder(name, ...)",
        "top_k": "the number of nodes to keep is top_n",
    }

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._reranker = pair_reranker(
            self.model, top_n=self.top_n, score_threshold=self.score_threshold,
            batch_size=self.batch_size, device=self.device, **self._loading_options())

    def _loading_options(self) -> dict[str, Any]:
        """Options for loading a model given by name or path (`pair_reranker`)."""
        return {"max_length": self.max_length}

    def _rerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
        return {"score_threshold": self.score_threshold}


SENTENCE_TRANSFORMER_RERANK_MODEL = "cross-encoder/stsb-distilroberta-base"
"""`SentenceTransformerRerank`'s default model, as LlamaIndex's."""

SENTENCE_TRANSFORMER_MAX_LENGTH = 512
"""LlamaIndex's ``DEFAULT_SENTENCE_TRANSFORMER_MAX_LENGTH``: the token limit of a model
`SentenceTransformerRerank` loads by name or path."""

MISSING_SENTENCE_TRANSFORMERS = ("Cannot import sentence-transformers or torch package, "
                                 "please `pip install torch sentence-transformers`")


class SentenceTransformerRerank(CrossEncoderRerank):
    """LlamaIndex's ``SentenceTransformerRerank``, with its arguments and defaults.

    ``top_n=2``, ``model="cross-encoder/stsb-distilroberta-base"``, ``device``,
    ``keep_retrieval_score=False``, ``trust_remote_code=False`` and
    ``cross_encoder_kwargs`` (more ``CrossEncoder(...)`` arguments) mean what they mean
    there; a missing sentence-transformers or torch raises the same `ImportError` at
    construction (found with ``importlib.util.find_spec``: nothing is imported). Unlike
    the original, the model loads on first use, the caller's nodes are never modified
    (new nodes come back, see the module docstring), and `CrossEncoderRerank`'s extras
    (``score_threshold``, ``batch_size``, ``metadata_mode``...) are accepted.

    Example:
        >>> from llama_index_hybrid_retrievers import SentenceTransformerRerank
        >>> rerank = SentenceTransformerRerank()  # nothing is loaded yet
        >>> rerank.top_n, rerank.model, rerank.keep_retrieval_score
        (2, 'cross-encoder/stsb-distilroberta-base', False)
    """

    top_n: int = Field(default=2, description="How many nodes to keep (>= 1).")
    model: Any = Field(
        default=SENTENCE_TRANSFORMER_RERANK_MODEL,
        description="A model name or local path (loaded on first use), a loaded "
        "sentence_transformers CrossEncoder, or any object with score(pairs).")
    keep_retrieval_score: bool = Field(
        default=False, description="Keep the input score under metadata['retrieval_score'].")
    trust_remote_code: bool = Field(
        default=False, description="Let a model loaded by name run its own code.")
    cross_encoder_kwargs: dict[str, Any] | None = Field(
        default=None, description="More keyword arguments for CrossEncoder(...) when the "
        "model is loaded by name or path.")
    max_length: int | None = Field(
        default=None, description="Longest input in tokens when loading by name or path; "
        f"None: {SENTENCE_TRANSFORMER_MAX_LENGTH}, as LlamaIndex's.")

    def __init__(self, top_n: int = 2, model: Any = SENTENCE_TRANSFORMER_RERANK_MODEL,
                 device: str | None = None, keep_retrieval_score: bool = False,
                 trust_remote_code: bool = False,
                 cross_encoder_kwargs: dict[str, Any] | None = None, **options: Any) -> None:
        if isinstance(model, str) and any(importlib.util.find_spec(name) is None
                                          for name in ("sentence_transformers", "torch")):
            raise ImportError(MISSING_SENTENCE_TRANSFORMERS)
        super().__init__(top_n=top_n, model=model, device=device,
                         keep_retrieval_score=keep_retrieval_score,
                         trust_remote_code=trust_remote_code,
                         cross_encoder_kwargs=cross_encoder_kwargs, **options)

    def _loading_options(self) -> dict[str, Any]:
        if not isinstance(self.model, str):  # loaded already: configure that instance
            return {"max_length": self.max_length,
                    "model_kwargs": self.cross_encoder_kwargs or (
                        {"trust_remote_code": True} if self.trust_remote_code else None)}
        kwargs = {**(self.cross_encoder_kwargs or {})}
        if self.trust_remote_code:
            kwargs["trust_remote_code"] = True
        max_length = kwargs.pop("max_length", None) or self.max_length
        return {"max_length": max_length or SENTENCE_TRANSFORMER_MAX_LENGTH,
                "model_kwargs": kwargs or None}


# ------------------------------------------------------------------------- LLM


class LLMListwiseRerank(RerankPostprocessor):
    """Listwise reranking by a LlamaIndex LLM, failing safe, as a node postprocessor.

    The LLM (``complete`` / ``acomplete``) is asked for the order of the numbered nodes
    (RankGPT, `hybrid_retrievers.LLMReranker`); when its answer is unusable or it raises,
    the input order is kept and ``rerank_status`` / ``rerank_detail`` say why: the query
    never fails for it. Every node is kept in the order (``score`` ``1 / rank``); for
    LlamaIndex's own ``LLMRerank`` algorithm (choice select, relevance scores) use
    `LLMRerank`.

    Example:
        >>> from llama_index.core.schema import NodeWithScore, TextNode
        >>> from llama_index_hybrid_retrievers import LLMListwiseRerank
        >>> nodes = [NodeWithScore(node=TextNode(text="cats sleep"), score=2.0),
        ...          NodeWithScore(node=TextNode(text="wing lift and drag"), score=1.0)]
        >>> rerank = LLMListwiseRerank(llm=lambda prompt: "[2] > [1]", top_n=1)
        >>> rerank.postprocess_nodes(nodes, query_str="wing lift")[0].node.text
        'wing lift and drag'
    """

    argument_hints: ClassVar[Mapping[str, str]] = {
        name: f"{name} is an argument of LLMRerank (LlamaIndex's choice-select algorithm); "
              "LLMListwiseRerank ranks the nodes in one listwise prompt (window= for a "
              "sliding window, prompt= for the template)"
        for name in ("choice_batch_size", "choice_select_prompt", "format_node_batch_fn",
                     "parse_choice_select_answer_fn")}

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


# --------------------------------------------------------- LLM (choice select)

_LLM_RERANK_ARGUMENTS = ("llm", "choice_select_prompt", "choice_batch_size",
                         "format_node_batch_fn", "parse_choice_select_answer_fn", "top_n",
                         "metadata_mode", "keep_retrieval_score", "timeout",
                         "callback_manager")

_LLM_RERANK_HINTS = {
    name: f"{name} is an argument of LLMListwiseRerank (listwise RankGPT prompts); "
          "LLMRerank is LlamaIndex's choice-select algorithm (choice_batch_size=, "
          "choice_select_prompt=)"
    for name in ("window", "step", "prompt", "max_passage_chars")}


def _predicts(llm: Any) -> bool:
    """Whether ``llm`` is a LlamaIndex LLM (``predict(prompt, **args)``)."""
    return callable(getattr(llm, "predict", None))


def _is_chat_model(llm: Any) -> bool:
    return getattr(getattr(llm, "metadata", None), "is_chat_model", False) is True


def _is_media(node: BaseNode) -> bool:
    return isinstance(node, ImageNode) or any(
        getattr(node, f"{kind}_resource", None) is not None
        for kind in ("image", "audio", "video"))


class LLMRerank(RerankPostprocessor):
    """LlamaIndex's ``LLMRerank``: the LLM picks and scores the relevant nodes per batch.

    The algorithm, arguments and defaults of llama-index-core's ``LLMRerank``
    (`hybrid_retrievers.rerank.ChoiceSelectReranker`): nodes go to the LLM in batches of
    ``choice_batch_size`` as ``"Document 1:\n..."``; it answers ``"Doc: N, Relevance: S"``
    lines; chosen nodes are sorted by relevance (their new ``score``) across batches,
    ties in batch then answer order, unchosen nodes are dropped, the best ``top_n`` are
    returned. ``llm`` defaults to ``Settings.llm``. A chat model gets each node as a chat
    message of its content blocks (``CHAT_CONTENT_CHOICE_SELECT_PROMPT``), so **images,
    audio and video nodes are shown to a multimodal chat model**; a completion model
    sees text only (a warning names the media nodes it cannot see).

    Kept from this package: each LLM call waits at most ``timeout`` seconds; a batch
    whose call fails, times out or whose answer names no node keeps its input order
    after every chosen node (score ``0.0``, ``rerank_status="fallback"``, the reason in
    ``rerank_detail`` and a warning), where the original drops the batch or raises; the
    caller's nodes are never modified; ``ReRankStartEvent`` / ``ReRankEndEvent`` are
    emitted. ``llm`` may also be a plain callable ``prompt -> str``.

    Example:
        >>> from llama_index.core.schema import NodeWithScore, TextNode
        >>> from llama_index_hybrid_retrievers import LLMRerank
        >>> nodes = [NodeWithScore(node=TextNode(text="cats sleep"), score=2.0),
        ...          NodeWithScore(node=TextNode(text="wing lift and drag"), score=1.0)]
        >>> rerank = LLMRerank(llm=lambda prompt: "Doc: 2, Relevance: 8")
        >>> [(n.node.text, n.score) for n in rerank.postprocess_nodes(nodes, query_str="lift")]
        [('wing lift and drag', 8.0)]
    """

    llm: Any = Field(description="A LlamaIndex LLM (Settings.llm by default), or a "
                     "callable prompt -> str.")
    choice_select_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        description="Choice select prompt ({context_str} or {context_messages}, {query_str}).")
    choice_batch_size: int = Field(default=10, description="Nodes per LLM call (>= 1).")
    top_n: int = Field(default=10, description="Most nodes to return (>= 1).")
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.LLM, description="Which text (and metadata) of a node the "
        "default batch format shows the LLM: LLM, as LlamaIndex's LLMRerank.")
    timeout: float | None = Field(
        default=DEFAULT_LLM_TIMEOUT, description="Seconds to wait for each LLM answer "
        "before keeping that batch's input order (None: no limit).")

    _format_node_batch_fn: Callable[[list[BaseNode]], Any] | None = PrivateAttr(default=None)
    _parse_choice_select_answer_fn: Callable[..., Any] = PrivateAttr()
    _default_prompt: bool = PrivateAttr(default=False)

    def __init__(
        self,
        llm: Any = None,
        choice_select_prompt: BasePromptTemplate | None = None,
        choice_batch_size: int = 10,
        format_node_batch_fn: Callable[[list[BaseNode]], Any] | None = None,
        parse_choice_select_answer_fn: Callable[..., Any] | None = None,
        top_n: int = 10,
        **options: Any,
    ) -> None:
        refuse_arguments(type(self).__name__,
                         {k: v for k, v in options.items() if k not in _LLM_RERANK_ARGUMENTS},
                         _LLM_RERANK_HINTS, accepted=_LLM_RERANK_ARGUMENTS)
        for name, fn in (("format_node_batch_fn", format_node_batch_fn),
                         ("parse_choice_select_answer_fn", parse_choice_select_answer_fn)):
            if fn is not None and not callable(fn):
                raise type_error(f"{name} must be a callable or None", fn)
        if llm is None:
            from llama_index.core.settings import Settings

            llm = Settings.llm
        if not (_predicts(llm) or callable(llm)):
            legacy = (" (a legacy MultiModalLLM is not one: LLMRerank shows images to a "
                      "multimodal chat LLM as image blocks, as LlamaIndex's does)"
                      if callable(getattr(llm, "complete", None)) else "")
            raise type_error("llm must be a llama_index LLM (with predict()) or a callable "
                             f"prompt -> str{legacy}", llm)
        default_prompt = choice_select_prompt is None
        if choice_select_prompt is None:
            choice_select_prompt = SelectorPromptTemplate(
                default_template=DEFAULT_CHOICE_SELECT_PROMPT,
                conditionals=[(_is_chat_model, CHAT_CONTENT_CHOICE_SELECT_PROMPT)])
        super().__init__(llm=llm, choice_select_prompt=choice_select_prompt,
                         choice_batch_size=choice_batch_size, top_n=top_n, **options)
        self._default_prompt = default_prompt
        self._format_node_batch_fn = format_node_batch_fn
        self._parse_choice_select_answer_fn = (parse_choice_select_answer_fn
                                               or parse_choice_select_answer)
        self._reranker = ChoiceSelectReranker(
            top_n=self.top_n, choice_batch_size=self.choice_batch_size,
            parse=self._parse_choice_select_answer_fn, name=llm_name(self.llm),
            timeout=self.timeout)

    def _get_prompts(self) -> PromptDictType:
        return {"choice_select_prompt": self.choice_select_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "choice_select_prompt" in prompts:
            self.choice_select_prompt = prompts["choice_select_prompt"]
            self._default_prompt = False

    # ------------------------------------------------------------ one batch

    def _text_batch(self, nodes: Sequence[BaseNode]) -> str:
        """The original's ``default_format_node_batch_fn`` in ``metadata_mode``."""
        media = [n.node_id for n in nodes if _is_media(n)]
        if media:
            logger.warning(
                "LLMRerank: %d image/audio/video node(s) (%s) are shown to %s as text only: "
                "it is not a chat model, so it cannot be sent media; use a multimodal chat "
                "model to rerank them by their content", len(media), ", ".join(media[:5]),
                llm_name(self.llm))
        return format_choice_batch([n.get_content(metadata_mode=self.metadata_mode)
                                    for n in nodes])

    def _chat_batch(self, nodes: Sequence[BaseNode]) -> list[ChatMessage]:
        """The original's ``default_format_node_batch_for_chat_fn``: one message of
        content blocks (text, images, audio, video) per node."""
        return [ChatMessage(blocks=n.get_content_blocks(metadata_mode=self.metadata_mode))
                for n in nodes]

    def _predict_args(self, nodes: list[NodeWithScore], query: str,
                      batch: Sequence[Any]) -> tuple[BasePromptTemplate, dict[str, Any]]:
        """The prompt and its arguments for one batch of core docs (positional ids)."""
        batch_nodes = [nodes[int(doc.id)].node for doc in batch]
        chat = _predicts(self.llm) and _is_chat_model(self.llm)
        fmt = self._format_node_batch_fn or (self._chat_batch if chat else self._text_batch)
        formatted = fmt(batch_nodes)
        prompt = self.choice_select_prompt
        if isinstance(formatted, str):
            if chat and self._default_prompt:  # a text batch fits the text template only
                prompt = DEFAULT_CHOICE_SELECT_PROMPT
            return prompt, {"query_str": query, "context_str": formatted}
        return prompt, {"query_str": query, "context_messages": formatted}

    def _ask(self, nodes: list[NodeWithScore], query: str, batch: Sequence[Any]) -> Any:
        prompt, args = self._predict_args(nodes, query, batch)
        if _predicts(self.llm):
            return self.llm.predict(prompt, **args)
        return self.llm(prompt.format(**args))

    async def _aask(self, nodes: list[NodeWithScore], query: str, batch: Sequence[Any]) -> Any:
        prompt, args = self._predict_args(nodes, query, batch)
        return await self.llm.apredict(prompt, **args)

    def _rerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
        # Read per call, as the original reads its fields (assigning them takes effect).
        return {"ask": partial(self._ask, nodes), "choice_batch_size": self.choice_batch_size}

    def _arerank_options(self, nodes: list[NodeWithScore]) -> dict[str, Any]:
        options = self._rerank_options(nodes)
        if callable(getattr(self.llm, "apredict", None)):
            options["aask"] = partial(self._aask, nodes)
        return options
