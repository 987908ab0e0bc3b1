"""LangChain HyDE retriever over the core `HyDESearcher`.

A LangChain LLM, chat model or `Runnable` (or a callable ``prompt -> str``) writes the
hypothetical passages; embedding, search, fusion and the fallback to the raw query are
the core's. This module adapts the model, converts documents and wires async.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from langchain_core.documents import Document

from hybrid_retrievers.hyde import HYDE_OPTIONS, HyDESearcher
from hybrid_retrievers.types import Hit
from hybrid_retrievers.vector import VectorIndex

from ._base import CoreRetriever, pop_options
from ._convert import documents_to_docs
from ._llm import LangChainGenerator, as_text_generator
from .embeddings import as_embedder

__all__ = ["HYDE_KEY", "HyDERetriever", "LangChainGenerator", "as_text_generator"]

HYDE_KEY = "hyde"
"""Metadata key of a returned document: ``{"passages", "fallback", "error", "mode"}``."""


class HyDERetriever(CoreRetriever):
    """HyDE retrieval (Gao et al. 2022) backed by `hybrid_retrievers.hyde.HyDESearcher`.

    Each returned `Document` carries the score under ``score_key``, the ``"rank"`` and
    ``"hyde"``: what the model wrote and whether the raw query was used because it
    failed. Each model call is a child run of the retriever's run.

    Example:
        >>> from langchain_core.language_models import FakeListLLM
        >>> from langchain_core.documents import Document
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from langchain_hybrid_retrievers import HyDERetriever
        >>> retriever = HyDERetriever.from_documents(
        ...     [Document(id="w", page_content="an aircraft wing generates lift"),
        ...      Document(id="b", page_content="bread rises with yeast")],
        ...     embedding=HashingEmbedder(64),
        ...     llm=FakeListLLM(responses=["A wing generates lift."]),
        ...     k=1,
        ... )
        >>> doc = retriever.invoke("how do planes fly?")[0]
        >>> doc.id, doc.metadata["hyde"]["passages"]
        ('w', ['A wing generates lift.'])
    """

    searcher: HyDESearcher
    """The core HyDE searcher that does all the work; shared, not copied."""

    child_runs: ClassVar[bool] = True  # each LLM call is a child run of the retrieval
    reserved_key: ClassVar[str | None] = HYDE_KEY

    @classmethod
    def from_documents(cls, documents: Iterable[Document], *, embedding: Any, llm: Any,
                       k: int = 4, **kwargs: Any) -> HyDERetriever:
        """Embed and index ``documents`` and return a HyDE retriever over them.

        ``llm`` is a LangChain LLM, chat model or `Runnable`, or a callable ``prompt ->
        str``; ``**kwargs`` are the recipe's options (`HYDE_OPTIONS`, see
        `HyDESearcher.from_index`) and retriever fields (``filter``, ``score_key``...).
        """
        docs = documents_to_docs(documents)
        options = pop_options(kwargs, HYDE_OPTIONS)
        searcher = HyDESearcher.from_docs(docs, embedder=as_embedder(embedding),
                                          generate=as_text_generator(llm), **options)
        return cls(searcher=searcher, k=k, **kwargs)

    @classmethod
    def from_retriever(cls, retriever: Any, *, llm: Any, **kwargs: Any) -> HyDERetriever:
        """HyDE over an existing `DenseRetriever` or core `VectorIndex` (its embedder is used).

        ``k`` defaults to the dense retriever's ``k``. Other arguments as for
        `from_documents`.
        """
        index = getattr(retriever, "index", retriever)
        if not isinstance(index, VectorIndex):
            raise TypeError(
                "retriever must be a DenseRetriever or a hybrid_retrievers VectorIndex, "
                f"got {type(retriever).__name__}"
            )
        if "k" not in kwargs and isinstance(getattr(retriever, "k", None), int):
            kwargs["k"] = retriever.k
        options = pop_options(kwargs, HYDE_OPTIONS)
        searcher = HyDESearcher.from_index(index, generate=as_text_generator(llm), **options)
        return cls(searcher=searcher, **kwargs)

    def _extra(self, hit: Hit) -> Mapping[str, Any]:
        info = hit.explanation["hyde"]
        return {HYDE_KEY: {key: info[key] for key in ("passages", "fallback", "error", "mode")}}
