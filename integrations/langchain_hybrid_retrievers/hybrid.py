"""LangChain `HybridRetriever`: BM25 + dense over the same documents, fused, in one call.

A `FusionRetriever` over a `BM25Retriever` and a `DenseRetriever` built from the same
texts and ids; the plan, concurrency and fusion are the core's (see ``fusion.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import model_validator

from hybrid_retrievers.fusion import DEFAULT_K_RRF, FusionMode
from hybrid_retrievers.fusion.plan import Weights

from ._arguments import keyword_options, pop_options
from ._convert import Ids, Metadatas, copy_metadatas, documents_to_columns
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .fusion import FusionRetriever

__all__ = ["HybridRetriever"]


class HybridRetriever(FusionRetriever):
    """BM25 + dense retrieval over the same documents, fused: the 90% case in one call.

    `from_documents` / `from_texts` index the documents in a `BM25Retriever` and a
    `DenseRetriever` (same ids) and fuse ``[bm25, dense]``, named ``"bm25"`` and
    ``"dense"`` in the provenance; everything else is `FusionRetriever`'s.

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
        cls, texts: Iterable[str], embedding: Embeddings | Any, metadatas: Metadatas = None,
        ids: Ids = None, *, k: int = 4, weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF, k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None, **kwargs: Any,
    ) -> HybridRetriever:
        """Index raw texts for BM25 and dense retrieval (same ids) and fuse the two.

        The fusion arguments are `FusionRetriever` fields (``k`` is also each child's);
        ``**kwargs`` are the keyword-only settings of `BM25Retriever.from_texts` and
        `DenseRetriever.from_texts`, and other `FusionRetriever` fields.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, got a single str; wrap it in a list")
        text_list = list(texts)
        meta_list = copy_metadatas(metadatas)
        id_list = None if ids is None else list(ids)
        bm25 = BM25Retriever.from_texts(text_list, meta_list, id_list, k=k,
                                        **pop_options(kwargs, _BM25_OPTIONS))
        dense = DenseRetriever.from_texts(text_list, embedding, meta_list, id_list, k=k,
                                          **pop_options(kwargs, _DENSE_OPTIONS))
        kwargs.setdefault("names", ["bm25", "dense"])
        return cls(retrievers=[bm25, dense], k=k, weights=weights, mode=mode, k_rrf=k_rrf,
                   fetch_k=fetch_k, **kwargs)

    @classmethod
    def from_documents(cls, documents: Iterable[Document], embedding: Embeddings | Any,
                       **kwargs: Any) -> HybridRetriever:
        """`from_texts` over LangChain documents, keeping ``Document.id`` (content ids
        otherwise) and metadata."""
        texts, ids, metadatas = documents_to_columns(documents)
        return cls.from_texts(texts, embedding, metadatas, ids, **kwargs)


_BM25_OPTIONS = keyword_options(BM25Retriever.from_texts)
_DENSE_OPTIONS = keyword_options(DenseRetriever.from_texts)
