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

from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import MetadataMode

from hybrid_retrievers.integration import DEFAULT_LLM_TIMEOUT, pair_reranker
from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import DEFAULT_LLM_RERANK_PROMPT
from hybrid_retrievers.rerank import LLMReranker as CoreLLMReranker

from ._llm import as_text_generator, llm_name
from ._rerank import RerankPostprocessor

__all__ = ["CrossEncoderRerank", "LLMRerank"]


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

    def _rerank_options(self) -> dict[str, Any]:
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
