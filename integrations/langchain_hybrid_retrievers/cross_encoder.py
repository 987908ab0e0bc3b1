"""`CrossEncoderReranker`: a cross-encoder (or any `PairScorer`) as a document compressor.

The model is resolved by the core's `hybrid_retrievers.rerank.as_pair_scorer` and the
work done by its `Reranker`; see `langchain_hybrid_retrievers.compressors` for the
metadata of returned documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from pydantic import PrivateAttr

from hybrid_retrievers.models import DEFAULT_CROSS_ENCODER
from hybrid_retrievers.rerank import Reranker as CoreReranker
from hybrid_retrievers.rerank import as_pair_scorer

from ._rerank import RerankCompressor, check_documents, to_core, to_documents

__all__ = ["CrossEncoderReranker"]


class CrossEncoderReranker(RerankCompressor):
    """Rerank documents with a cross-encoder, keeping scores (a document compressor).

    Unlike ``langchain_classic``'s ``CrossEncoderReranker`` it keeps the score on every
    document, has a threshold and a batch size, sorts pairs by length before batching,
    handles two-logit models, and runs the model in a worker thread under
    ``acompress_documents``. The model is loaded on first use.

    See the module docstring for the metadata of returned documents.

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

        With a real model, inside LangChain's ``ContextualCompressionRetriever``::

            from langchain_classic.retrievers import ContextualCompressionRetriever
            compressor = CrossEncoderReranker(model="cross-encoder/ms-marco-MiniLM-L-6-v2",
                                              top_n=5)
            retriever = ContextualCompressionRetriever(base_compressor=compressor,
                                                       base_retriever=bm25_retriever)
    """

    model: Any = DEFAULT_CROSS_ENCODER
    """A model name or local path (loaded on first use), a loaded
    ``sentence_transformers.CrossEncoder``, or any scorer with ``score(pairs)`` (a
    `hybrid_retrievers.PairScorer`, or LangChain's ``HuggingFaceCrossEncoder``)."""

    score_threshold: float | None = None
    """Drop documents scoring below this (in the model's units: a probability for the
    default sigmoid), before ``top_n``; ``None`` keeps every score."""

    batch_size: int = 32
    """Pairs per forward pass (for a name, path or ``CrossEncoder`` model)."""

    max_length: int | None = None
    """Longest input in tokens, when loading a model by name or path."""

    device: str | None = None
    """Device for a model loaded by name or path (``None``: sentence-transformers chooses)."""

    _reranker: CoreReranker = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        scorer = as_pair_scorer(self.model, batch_size=self.batch_size,
                                max_length=self.max_length, device=self.device)
        # Validates score_threshold; top_n and the threshold are read per call from the
        # fields, so assigning them later takes effect.
        self._reranker = CoreReranker(scorer, top_n=self.top_n,
                                      score_threshold=self.score_threshold)

    @property
    def reranker(self) -> CoreReranker:
        """The core `hybrid_retrievers.rerank.Reranker` doing the work."""
        return self._reranker

    def _args(self, documents: Sequence[Document], top_n: int | None) -> tuple[Any, ...]:
        docs = check_documents(documents)
        return docs, to_core(docs), {
            "top_n": self.top_n if top_n is None else top_n,
            "score_threshold": self.score_threshold,
        }

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs, core, kwargs = self._args(documents, top_n)
        if not docs:
            return []
        hits = self._reranker.rerank(query, core, **kwargs)
        return to_documents(hits, docs, self.score_key)

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs, core, kwargs = self._args(documents, top_n)
        if not docs:
            return []
        hits = await self._reranker.arerank(query, core, **kwargs)
        return to_documents(hits, docs, self.score_key)
