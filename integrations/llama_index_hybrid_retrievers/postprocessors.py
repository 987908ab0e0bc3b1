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

Layout: the conversions and events shared by both live in ``_rerank``, the LLM wrapper
in ``_llm`` (shared with `HyDERetriever`); the model is resolved by the core's
`hybrid_retrievers.rerank.as_pair_scorer`.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import MetadataMode

from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import DEFAULT_LLM_RERANK_PROMPT, as_pair_scorer
from hybrid_retrievers.rerank import LLMReranker as CoreLLMReranker
from hybrid_retrievers.rerank import Reranker as CoreReranker
from hybrid_retrievers.timeout import DEFAULT_LLM_TIMEOUT

from ._llm import as_text_generator, llm_name
from ._rerank import RerankPostprocessor

__all__ = ["CrossEncoderRerank", "LLMRerank"]


# --------------------------------------------------------------- cross-encoder


class CrossEncoderRerank(RerankPostprocessor):
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
        scorer = as_pair_scorer(self.model, batch_size=self.batch_size,
                                max_length=self.max_length, device=self.device)
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


class LLMRerank(RerankPostprocessor):
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
        generate = as_text_generator(self.llm)
        self._reranker = CoreLLMReranker(
            generate, agenerate=getattr(generate, "agenerate", None), top_n=self.top_n,
            window=self.window, step=self.step, prompt=self.prompt,
            max_passage_chars=self.max_passage_chars, name=llm_name(self.llm),
            timeout=self.timeout,
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
