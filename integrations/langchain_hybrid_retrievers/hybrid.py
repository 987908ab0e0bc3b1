"""LangChain `HybridRetriever`: BM25 + dense over the same documents, fused, in one call.

A `FusionRetriever` over a `BM25Retriever` and a `DenseRetriever` built from the same
texts and ids; the plan, concurrency and fusion are the core's (see ``fusion.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import model_validator

from hybrid_retrievers import Analyzer
from hybrid_retrievers.vector import DEFAULT_BATCH_SIZE, EmbeddingCache
from hybrid_retrievers.fusion import DEFAULT_K_RRF, FusionMode
from hybrid_retrievers.fusion.plan import Weights

from ._convert import copy_metadatas, documents_to_columns
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .fusion import FusionRetriever

__all__ = ["HybridRetriever"]


class HybridRetriever(FusionRetriever):
    """BM25 + dense retrieval over the same documents, fused: the 90% case in one call.

    `from_documents` / `from_texts` index the documents twice, in a `BM25Retriever`
    and a `DenseRetriever` (same ids), and return a `FusionRetriever` over
    ``[bm25, dense]`` named ``"bm25"`` and ``"dense"`` in the provenance. Everything
    else is `FusionRetriever`'s: per-call ``k``/``weights``/``mode``/``fetch_k``, the
    returned metadata, async, callbacks. Because the BM25 child comes first,
    ``weights=hybrid_retrievers.lexical_boost_rule()`` favours it for queries with
    codes, numbers or quoted phrases.

    Example:
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from langchain_hybrid_retrievers import HybridRetriever
        >>> retriever = HybridRetriever.from_texts(
        ...     ["wings generate lift", "cats sleep all day", "lift and drag of wings"],
        ...     embedding=HashingEmbedder(dimension=64), ids=["a", "b", "c"], k=2,
        ... )
        >>> sorted(d.id for d in retriever.invoke("wing lift"))
        ['a', 'c']
    """

    @property
    def bm25(self) -> BaseRetriever:
        """The lexical child (``retrievers[0]``)."""
        return self.retrievers[0]  # type: ignore[return-value]

    @property
    def dense(self) -> BaseRetriever:
        """The dense child (``retrievers[1]``)."""
        return self.retrievers[1]  # type: ignore[return-value]

    @model_validator(mode="after")
    def _check_children(self) -> HybridRetriever:
        if len(self.retrievers) != 2:
            raise ValueError(
                "HybridRetriever needs exactly two retrievers [lexical, dense], got "
                f"{len(self.retrievers)}; use FusionRetriever for any other set"
            )
        return self

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        embedding: Embeddings | Any,
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Iterable[str | None] | None = None,
        *,
        k: int = 4,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> HybridRetriever:
        """Index raw texts for BM25 and dense retrieval and fuse the two.

        Args:
            texts: The document texts.
            embedding: A LangChain `Embeddings` or a core `Embedder`.
            metadatas: One metadata mapping per text, or ``None``.
            ids: One id per text, or ``None`` for deterministic content ids (the two
                indexes get the same ids either way).
            k: Default number of fused documents per query.
            weights: ``[bm25, dense]`` weights, or a callable of the query.
            mode: The fusion mode (default RRF).
            k_rrf: The RRF constant.
            fetch_k: Candidates asked of each child (default ``max(k, 20)``).
            analyzer, k1, b, method, delta: BM25 settings (see `BM25Retriever.from_texts`).
            metric, cache, batch_size, show_progress: Dense settings (see
                `DenseRetriever.from_texts`).
            **kwargs: Other `FusionRetriever` fields (``names``, ``dedup``, ``score_key``,
                ``tags``...).
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, got a single str; wrap it in a list")
        text_list = list(texts)
        meta_list = copy_metadatas(metadatas)
        id_list = None if ids is None else list(ids)
        bm25 = BM25Retriever.from_texts(
            text_list, meta_list, id_list, k=k, analyzer=analyzer, k1=k1, b=b,
            method=method, delta=delta,
        )
        dense = DenseRetriever.from_texts(
            text_list, embedding, meta_list, id_list, k=k, metric=metric, cache=cache,
            batch_size=batch_size, show_progress=show_progress,
        )
        kwargs.setdefault("names", ["bm25", "dense"])
        return cls(
            retrievers=[bm25, dense], k=k, weights=weights, mode=mode, k_rrf=k_rrf,
            fetch_k=fetch_k, **kwargs,
        )

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        embedding: Embeddings | Any,
        *,
        k: int = 4,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None,
        analyzer: Analyzer | None = None,
        **kwargs: Any,
    ) -> HybridRetriever:
        """Index LangChain documents (keeping ``Document.id`` and metadata) twice and fuse.

        Documents whose ``id`` is ``None`` get deterministic content ids. Arguments are
        as for `from_texts` (``**kwargs`` takes its other BM25, dense and retriever
        settings).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return cls.from_texts(
            texts, embedding, metadatas, ids, k=k, weights=weights, mode=mode, k_rrf=k_rrf,
            fetch_k=fetch_k, analyzer=analyzer, **kwargs,
        )
