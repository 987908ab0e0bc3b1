"""LangChain diversity compressors over the core `MMRReranker` and `SourceCap`.

Both are ``BaseDocumentCompressor``\\ s: drop them into ``ContextualCompressionRetriever``
or use them as `RerankingRetriever`'s reranker. The diversification itself is
`hybrid_retrievers.rerank`'s, so LlamaIndex users get the same order.

* `MMRCompressor` — maximal marginal relevance (Carbonell & Goldstein 1998): documents
  are taken in their input order as relevance (a retriever's ranking), and their
  similarity comes from ``embedding`` (a LangChain ``Embeddings`` or a core
  ``Embedder``) or, without one, from their analysed terms (Jaccard). Returned documents
  carry the MMR value under ``score_key``, ``rank`` and ``previous_rank``.
* `SourceCapCompressor` — at most ``max_per_source`` documents per value of
  ``metadata[key]`` (``"source"`` by default: LangChain loaders' file or URL), in the
  input order; returned documents carry ``rank`` and ``previous_rank``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import Callbacks

from hybrid_retrievers.rerank import MMRReranker, SourceCap

from .compressors import RerankCompressor
from .embeddings import as_embedder

__all__ = ["MMRCompressor", "SourceCapCompressor"]


class MMRCompressor(RerankCompressor):
    """Reorder documents by maximal marginal relevance (a document compressor).

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_hybrid_retrievers import MMRCompressor
        >>> docs = [Document("wing lift at low speed"), Document("wing lift at low speed!"),
        ...         Document("drag of a flat plate")]
        >>> [d.page_content for d in MMRCompressor(top_n=2).compress_documents(docs, "lift")]
        ['wing lift at low speed', 'drag of a flat plate']
    """

    top_n: int = 4
    """How many documents to keep (>= 1); LangChain's MMR search returns 4 by default."""

    score_key: str = "mmr_score"
    """Metadata key of the MMR value on returned documents."""

    lambda_mult: float = 0.5
    """λ in [0, 1]: 1 keeps the input order, 0 picks only for novelty."""

    embedding: Any = None
    """A LangChain ``Embeddings`` or core ``Embedder`` for document similarity; ``None``
    compares the documents' analysed terms (Jaccard) instead."""

    def model_post_init(self, context: Any, /) -> None:
        embedder = None if self.embedding is None else as_embedder(self.embedding)
        self._reranker = MMRReranker(lambda_mult=self.lambda_mult, top_n=self.top_n,
                                     embedder=embedder)

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        rerank = self._reranker.arerank if asynchronous else self._reranker.rerank
        return rerank, {"lambda_mult": self.lambda_mult}


class SourceCapCompressor(RerankCompressor):
    """Keep at most ``max_per_source`` documents per source (a document compressor).

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_hybrid_retrievers import SourceCapCompressor
        >>> docs = [Document("a", metadata={"source": "x.md"}),
        ...         Document("b", metadata={"source": "x.md"}), Document("c")]
        >>> [d.page_content for d in SourceCapCompressor().compress_documents(docs, "q")]
        ['a', 'c']
    """

    top_n: int = 1000
    """Most documents to keep in all (>= 1); the cap is what usually removes documents."""

    key: str = "source"
    """Metadata key naming a document's source (``"parent_id"`` for this package's
    chunks); a document without it is its own source."""

    max_per_source: int = 1
    """How many documents one source may keep (>= 1)."""

    def model_post_init(self, context: Any, /) -> None:
        self._reranker = SourceCap(self.key, max_per_source=self.max_per_source,
                                   top_n=self.top_n)

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        rerank = self._reranker.arerank if asynchronous else self._reranker.rerank
        return rerank, {"max_per_source": self.max_per_source}

    def _written_score_key(self) -> str | None:
        return None  # the input order is kept: no score of its own
