"""`CrossEncoderReranker`: a cross-encoder (or any `PairScorer`) as a document compressor.

The model is resolved and the work done by the core (`pair_reranker`, `Reranker`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import Callbacks

from hybrid_retrievers.integration import pair_reranker
from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER

from ._rerank import RerankCompressor

__all__ = ["CrossEncoderReranker"]


class CrossEncoderReranker(RerankCompressor):
    """Rerank documents with a cross-encoder, keeping scores (a document compressor).

    Unlike ``langchain_classic``'s ``CrossEncoderReranker`` it keeps the score on every
    document, has a threshold, and runs the model (loaded on first use) in a worker
    thread under ``acompress_documents``.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_hybrid_retrievers import CrossEncoderReranker
        >>> class Overlap:  # any object with score(pairs) -> scores works as the model
        ...     def score(self, pairs):
        ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
        >>> reranker = CrossEncoderReranker(model=Overlap(), top_n=1)
        >>> docs = [Document("cats sleep"), Document("wing lift and drag")]
        >>> best = reranker.compress_documents(docs, "wing lift")[0]
        >>> best.page_content, best.metadata["relevance_score"], best.metadata["previous_rank"]
        ('wing lift and drag', 2.0, 2)

        With a real model: ``ContextualCompressionRetriever(base_compressor=
        CrossEncoderReranker(model="cross-encoder/ms-marco-MiniLM-L-6-v2"), ...)``.
    """

    model: Any = DEFAULT_CROSS_ENCODER
    """A model name or local path (loaded on first use), a loaded
    ``sentence_transformers.CrossEncoder``, or any scorer with ``score(pairs)`` (a
    `hybrid_retrievers.PairScorer`, or LangChain's ``HuggingFaceCrossEncoder``)."""

    score_threshold: float | None = None
    """Drop documents scoring below this (in the model's units), before ``top_n``."""

    batch_size: int = 32
    """Pairs per forward pass (for a name, path or ``CrossEncoder`` model)."""

    max_length: int | None = None
    """Longest input in tokens, when loading a model by name or path."""

    device: str | None = None
    """Device for a model loaded by name or path (``None``: sentence-transformers chooses)."""

    def model_post_init(self, context: Any, /) -> None:
        # Validates score_threshold; top_n and the threshold are read per call (`_core_call`).
        self._reranker = pair_reranker(
            self.model, top_n=self.top_n, score_threshold=self.score_threshold,
            batch_size=self.batch_size, max_length=self.max_length, device=self.device)

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        rerank = self._reranker.arerank if asynchronous else self._reranker.rerank
        return rerank, {"score_threshold": self.score_threshold}
