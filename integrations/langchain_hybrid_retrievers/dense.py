"""LangChain retriever over the core `VectorIndex` (dense, bi-encoder retrieval).

The retriever is a thin shell like `BM25Retriever`: it holds a
`hybrid_retrievers.VectorIndex`, converts `Document` <-> `Doc`/`Hit`, maps LangChain's
``k`` onto the core's ``k`` and keeps model inference and search off the event loop.
Similarity, filtering and top-k all happen in the core.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import ConfigDict, field_validator

from hybrid_retrievers.validation import check_k, check_query
from hybrid_retrievers.embedding_cache import DEFAULT_CHUNK, EmbeddingCache
from hybrid_retrievers.vector import VectorIndex

from ._base import StrictRetriever
from ._convert import check_score_key, copy_metadatas, documents_to_columns, hit_to_document
from ._editing import IndexEditingMixin
from .embeddings import as_embedder
from .retrievers import Filter

__all__ = ["DenseRetriever"]


class DenseRetriever(IndexEditingMixin, StrictRetriever):
    """Dense (embedding) retriever backed by `hybrid_retrievers.VectorIndex`.

    ``embedding`` may be any LangChain `Embeddings` (wrapped in
    `LangChainEmbedder`) or a core `Embedder` such as
    `hybrid_retrievers.models.SentenceTransformerEmbedder`. Documents are embedded
    with ``embed_documents``, queries with ``embed_query``.

    Each returned `Document` is a new object with ``id`` set to the indexed id and
    metadata = the stored metadata plus the similarity under ``score_key`` (default
    ``"score"``; cosine similarity for ``metric="cosine"``, inner product for
    ``"dot"``) and the 1-based rank under ``"rank"``. Unlike BM25, every document
    has a similarity, so ``k`` documents come back whenever the (filtered) index has
    that many.

    ``k`` and ``filter`` can be overridden per call: ``retriever.invoke(q, k=3)``,
    ``retriever.invoke(q, filter={"source": "wiki"})``, and the same for
    ``ainvoke``. A per-call value of ``None`` means "use the retriever's field".

    Async: ``ainvoke`` awaits the embedder's ``aembed_query`` when it has one (a
    `LangChainEmbedder` forwards to the LangChain model's ``aembed_query``, so
    natively async API clients are awaited, and LangChain's default runs the model in
    an executor thread), then searches in a worker thread. Other embedders are called
    in the worker thread together with the search. The event loop never runs the
    model or the matrix product.

    Example:
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from langchain_hybrid_retrievers import DenseRetriever
        >>> retriever = DenseRetriever.from_texts(
        ...     ["wings generate lift", "cats sleep all day"],
        ...     embedding=HashingEmbedder(dimension=64),
        ...     metadatas=[{"topic": "aero"}, {"topic": "pets"}],
        ...     k=1,
        ... )
        >>> [d.metadata["topic"] for d in retriever.invoke("how do wings make lift")]
        ['aero']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    index: VectorIndex
    """The core vector index that does all scoring; shared, not copied. It must have
    an embedder (text queries are embedded by it)."""

    k: int = 4
    """Default number of documents to return (>= 1); override per call with ``k=``."""

    filter: Filter | None = None
    """Default filter applied before top-k: a mapping (every key must equal the
    document's metadata value) or a callable receiving a `hybrid_retrievers.Doc`
    and returning ``True`` to keep it. Override per call with ``filter=``."""

    score_key: str = "score"
    """Metadata key under which each returned `Document` carries its similarity."""

    @field_validator("index")
    @classmethod
    def _check_index(cls, value: VectorIndex) -> VectorIndex:
        if value.embedder is None:
            raise ValueError(
                "index must have an embedder to answer text queries, got a VectorIndex "
                "without one; build it with an embedder or load it with "
                "DenseRetriever.load_local(folder, embedding=...)"
            )
        return value

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> int:
        return check_k(value, name="k")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        return check_score_key(value)

    # ------------------------------------------------------------------ build

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        embedding: Embeddings | Any,
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Iterable[str | None] | None = None,
        *,
        k: int = 4,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_CHUNK,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> DenseRetriever:
        """Embed and index raw texts and return a retriever over them.

        Args:
            texts: The document texts.
            embedding: A LangChain `Embeddings` or a core `Embedder`.
            metadatas: One metadata mapping per text (the core copies them), or ``None``.
            ids: One id per text, or ``None`` for deterministic content ids.
            k: Default number of documents per query.
            metric: ``"cosine"`` (vectors normalised) or ``"dot"`` (inner product).
            cache: An `EmbeddingCache`: texts already in it are not embedded again
                (needs a model identity, see `LangChainEmbedder`).
            batch_size: Texts per ``embed_documents`` call.
            show_progress: Show a progress bar while embedding (the ``progress`` extra).
            **kwargs: Other retriever fields (``filter``, ``score_key``, ``tags``...).
        """
        index = VectorIndex.from_texts(
            texts,
            ids=ids,
            metadatas=copy_metadatas(metadatas),
            embedder=as_embedder(embedding),
            metric=metric,
            batch_size=batch_size,
            show_progress=show_progress,
            cache=cache,
        )
        return cls(index=index, k=k, **kwargs)

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        embedding: Embeddings | Any,
        *,
        k: int = 4,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_CHUNK,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> DenseRetriever:
        """Embed and index LangChain documents, keeping ``Document.id`` and metadata.

        Documents whose ``id`` is ``None`` get deterministic content ids (see
        `hybrid_retrievers.content_id`). Arguments are as for `from_texts`.
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return cls.from_texts(
            texts, embedding, metadatas, ids, k=k, metric=metric, cache=cache,
            batch_size=batch_size, show_progress=show_progress, **kwargs,
        )

    # ----------------------------------------------------------------- search

    def _resolve(self, k: int | None, filter: Filter | None) -> tuple[int, Filter | None]:
        return (
            check_k(self.k if k is None else k, name="k"),
            self.filter if filter is None else filter,
        )

    def _search(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        top, where = self._resolve(k, filter)
        hits = self.index.search(query, k=top, filter=where)
        return [hit_to_document(hit, self.score_key) for hit in hits]

    def _search_vector(self, vector: Any, k: int, filter: Filter | None) -> list[Document]:
        hits = self.index.search_vector(vector, k=k, filter=filter)
        return [hit_to_document(hit, self.score_key) for hit in hits]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Return up to ``k`` documents for ``query``, most similar first."""
        return self._search(query, k, filter)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents` (see the class docstring for threads)."""
        aembed = getattr(self.index.embedder, "aembed_query", None)
        if aembed is None or not inspect.iscoroutinefunction(aembed):
            return await asyncio.to_thread(self._search, query, k, filter)
        # Validate before paying for a model call.
        check_query(query)
        top, where = self._resolve(k, filter)
        vector = await aembed(query)
        return await asyncio.to_thread(self._search_vector, vector, top, where)

    # ------------------------------------------------------------ persistence

    def save_local(self, folder_path: str | os.PathLike[str]) -> None:
        """Save the index (vectors, ids, texts, metadata, metric, model identity).

        The format is the core's (JSON + ``.npy``, no pickle). The embedding model is
        not saved, only its identity and dimension: pass the model to `load_local`.
        Query-time settings (``k``, ``filter``, ``score_key``) are not saved either.
        """
        self.index.save(folder_path)

    @classmethod
    def load_local(
        cls,
        folder_path: str | os.PathLike[str],
        embedding: Embeddings | Any,
        *,
        k: int = 4,
        mmap: bool = False,
        cache: EmbeddingCache | None = None,
        **kwargs: Any,
    ) -> DenseRetriever:
        """Load a retriever saved with `save_local` (or any saved `VectorIndex`).

        Args:
            folder_path: The folder written by `save_local` / `VectorIndex.save`.
            embedding: The model the index was built with (LangChain `Embeddings` or
                core `Embedder`); a different model identity than the saved one warns.
            k: Default number of documents per query.
            mmap: Memory-map the vectors instead of reading them into memory.
            cache: An `EmbeddingCache` for later additions.
            **kwargs: Other retriever fields (``filter``, ``score_key``, ``tags``...).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign folder.
            ValueError: if the model's known dimension differs from the saved vectors'.
        """
        index = VectorIndex.load(folder_path, as_embedder(embedding), mmap=mmap, cache=cache)
        return cls(index=index, k=k, **kwargs)
