"""LangChain HyDE retriever over the core `HyDESearcher`.

Any LangChain LLM, chat model or `Runnable` writes the hypothetical passages (a plain
callable ``prompt -> str`` works too); the core averages their embeddings with the
query's, searches, fuses with a query-expanded lexical search when asked, and falls
back to the raw query when the model fails. This module adapts the model, converts
documents and wires async.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from langchain_core.documents import Document
from pydantic import ConfigDict, field_validator

from hybrid_retrievers.hyde import HYDE_OPTIONS, HyDESearcher
from hybrid_retrievers.types import Hit
from hybrid_retrievers.vector import VectorIndex

from ._base import CoreRetriever
from ._convert import RANK_KEY, check_score_key, copy_metadata, documents_to_columns
from ._llm import LangChainGenerator, as_text_generator
from .embeddings import as_embedder

__all__ = ["HYDE_KEY", "HyDERetriever", "LangChainGenerator", "as_generator"]

as_generator = as_text_generator
"""Kept for compatibility: `langchain_hybrid_retrievers._llm.as_text_generator`."""

HYDE_KEY = "hyde"
"""Metadata key of a returned document: ``{"passages", "fallback", "error", "mode"}``."""


class HyDERetriever(CoreRetriever):
    """HyDE retrieval (Gao et al. 2022) backed by `hybrid_retrievers.hyde.HyDESearcher`.

    Each returned `Document` carries the score under ``score_key`` (cosine similarity
    of the HyDE vector; the fused RRF score with ``expand_with_bm25=True``), the
    1-based ``"rank"`` and ``"hyde"``: ``{"passages", "fallback", "error", "mode"}``:
    what the model wrote for this query, and whether the raw query was used because
    it failed (a query never fails because the LLM did).

    Async: the ``n`` generations run concurrently (``ainvoke`` of the model), the
    embedding and search in worker threads.

    Tracing: each model call is a child run of the retriever's run, with the caller's
    tags, metadata and callbacks (``astream_events`` shows ``on_llm_*`` /
    ``on_chat_model_*`` inside ``on_retriever_*``).

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

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    searcher: HyDESearcher
    """The core HyDE searcher that does all the work; shared, not copied."""

    child_runs: ClassVar[bool] = True  # each LLM call is a child run of the retrieval

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        return check_score_key(value, reserved=HYDE_KEY)

    # ------------------------------------------------------------------ build

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        embedding: Any,
        llm: Any,
        k: int = 4,
        **kwargs: Any,
    ) -> HyDERetriever:
        """Embed and index ``documents`` and return a HyDE retriever over them.

        Args:
            documents: The documents (``Document.id`` kept, content ids otherwise).
            embedding: LangChain `Embeddings` or core `Embedder` (documents, query and
                hypothetical passages are all embedded by it).
            llm: LangChain LLM, chat model or `Runnable`, or a callable ``prompt -> str``.
            k: Default number of documents per query.
            **kwargs: The recipe's options (`hybrid_retrievers.hyde.HYDE_OPTIONS`, see
                `HyDESearcher.from_index`: ``n`` passages per query (1..8),
                ``include_query``, ``prompt`` (a name from ``HYDE_PROMPTS``, a template
                or a callable), ``timeout`` (default 30 s), ``cache`` and
                ``expand_with_bm25`` (also query a BM25 index of the documents with the
                expanded query, fused with RRF)); the rest are retriever fields
                (``filter``, ``score_key``, ``tags``...).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        embedder = as_embedder(embedding)
        index = VectorIndex.from_texts(texts, ids=ids, metadatas=metadatas, embedder=embedder)
        return cls._over(index, llm, embedder, dict(kwargs, k=k))

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
        return cls._over(index, llm, None, kwargs)

    @classmethod
    def _over(cls, index: VectorIndex, llm: Any, embedder: Any,
              kwargs: dict[str, Any]) -> HyDERetriever:
        """The core recipe over ``index``; ``kwargs`` split into its options and fields."""
        options = {key: kwargs.pop(key) for key in HYDE_OPTIONS if key in kwargs}
        searcher = HyDESearcher.from_index(index, generate=as_text_generator(llm),
                                           embedder=embedder, **options)
        return cls(searcher=searcher, **kwargs)

    # ----------------------------------------------------------------- search

    def _to_document(self, hit: Hit) -> Document:
        info = hit.explanation["hyde"]
        metadata = copy_metadata(hit.doc.metadata)
        metadata[self.score_key] = float(hit.score)
        metadata[RANK_KEY] = int(hit.rank)
        metadata[HYDE_KEY] = {key: info[key] for key in ("passages", "fallback", "error", "mode")}
        return Document(id=hit.doc.id, page_content=hit.doc.text, metadata=metadata)

    def _documents(self, hits: Iterable[Hit]) -> list[Document]:
        return [self._to_document(h) for h in hits]
