"""LangChain retriever over the core `VectorIndex` (dense, bi-encoder retrieval).

A thin shell like `BM25Retriever` (see `_base`): similarity, filtering and top-k happen
in the core; model inference and search stay off the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.embeddings import Embeddings
from pydantic import field_validator

from hybrid_retrievers.vector import DEFAULT_BATCH_SIZE, EmbeddingCache
from hybrid_retrievers.validation import check_query
from hybrid_retrievers.vector import VectorIndex

from ._base import Filter, IndexRetriever
from ._convert import copy_metadatas
from .embeddings import as_embedder

__all__ = ["DenseRetriever"]


class DenseRetriever(IndexRetriever):
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

    index: VectorIndex
    """The core vector index that does all scoring; shared, not copied. It must have
    an embedder (text queries are embedded by it)."""

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

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        embedding: Embeddings | Any,
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Iterable[str | None] | None = None,
        *,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> DenseRetriever:
        """Embed and index raw texts and return a retriever over them.

        Args:
            texts: The document texts.
            embedding: A LangChain `Embeddings` or a core `Embedder`.
            metadatas: One metadata mapping per text (the core copies them), or ``None``.
            ids: One id per text, or ``None`` for deterministic content ids.
            metric: ``"cosine"`` (vectors normalised) or ``"dot"`` (inner product).
            cache: An `EmbeddingCache`: texts already in it are not embedded again
                (needs a model identity, see `LangChainEmbedder`).
            batch_size: Texts per ``embed_documents`` call.
            show_progress: Show a progress bar while embedding (the ``progress`` extra).
            **kwargs: Retriever fields (``k``, ``filter``, ``score_key``, ``tags``...).
        """
        index = VectorIndex.from_texts(
            texts, ids=ids, metadatas=copy_metadatas(metadatas), embedder=as_embedder(embedding),
            metric=metric, batch_size=batch_size, show_progress=show_progress, cache=cache,
        )
        return cls(index=index, **kwargs)

    async def _asearch(self, query: str, k: int | None, filter: Filter | None) -> list[Any]:
        aembed = getattr(self.index.embedder, "aembed_query", None)
        if aembed is None or not inspect.iscoroutinefunction(aembed):
            return await super()._asearch(query, k, filter)
        check_query(query)  # before paying for a model call
        top, where = self._resolve(k, filter)
        vector = await aembed(query)
        hits = await asyncio.to_thread(self.index.search_vector, vector, top, filter=where)
        return self._documents(hits)

    @classmethod
    def load_local(
        cls,
        folder_path: str | os.PathLike[str],
        embedding: Embeddings | Any,
        *,
        mmap: bool = False,
        cache: EmbeddingCache | None = None,
        **kwargs: Any,
    ) -> DenseRetriever:
        """Load a retriever saved with `save_local` (or any saved `VectorIndex`).

        Args:
            folder_path: The folder written by `save_local` / `VectorIndex.save`.
            embedding: The model the index was built with (LangChain `Embeddings` or
                core `Embedder`); a different model identity than the saved one warns.
            mmap: Memory-map the vectors instead of reading them into memory.
            cache: An `EmbeddingCache` for later additions.
            **kwargs: Retriever fields (``k``, ``filter``, ``score_key``, ``tags``...).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign folder.
            ValueError: if the model's known dimension differs from the saved vectors'.
        """
        index = VectorIndex.load(folder_path, as_embedder(embedding), mmap=mmap, cache=cache)
        return cls(index=index, **kwargs)
