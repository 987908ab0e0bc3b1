"""LangChain retriever over the core `VectorIndex` (dense, bi-encoder retrieval).

A thin shell like `BM25Retriever`: similarity, filtering and top-k happen in the core.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, ClassVar

from langchain_core.embeddings import Embeddings
from pydantic import field_validator

from hybrid_retrievers.vector import DEFAULT_BATCH_SIZE, EmbeddingCache, VectorIndex

from ._base import IndexRetriever, fields_factory
from ._convert import Ids, Metadatas, copy_metadatas
from .embeddings import as_embedder

__all__ = ["DenseRetriever"]


class DenseRetriever(IndexRetriever):
    """Dense (embedding) retriever backed by `hybrid_retrievers.VectorIndex`.

    ``embedding`` is a LangChain `Embeddings` or a core `Embedder`. Returned documents are
    as `BM25Retriever`'s, scored by similarity (async: `VectorIndex.asearch`).

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

    child_runs: ClassVar[bool] = True  # an embedding's LLM call (HyDE) is a child run

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
    @fields_factory
    def from_texts(
        cls, texts: Iterable[str], embedding: Embeddings | Any, metadatas: Metadatas = None,
        ids: Ids = None, *, metric: str = "cosine", cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE, show_progress: bool = False, **kwargs: Any,
    ) -> DenseRetriever:
        """Embed and index raw texts (see `VectorIndex.from_texts`; ``embedding`` is its
        embedder) and return a retriever; ``**kwargs`` are retriever fields."""
        index = VectorIndex.from_texts(
            texts, ids=ids, metadatas=copy_metadatas(metadatas), embedder=as_embedder(embedding),
            metric=metric, batch_size=batch_size, show_progress=show_progress, cache=cache,
        )
        return cls(index=index, **kwargs)

    @classmethod
    @fields_factory
    def load_local(
        cls,
        folder_path: str | os.PathLike[str],
        embedding: Embeddings | Any,
        *,
        mmap: bool = False,
        cache: EmbeddingCache | None = None,
        **kwargs: Any,
    ) -> DenseRetriever:
        """Load a retriever saved with `save_local` (or any saved `VectorIndex`) with the
        model it was built with (see `VectorIndex.load`); ``**kwargs`` are retriever fields."""
        index = VectorIndex.load(folder_path, as_embedder(embedding), mmap=mmap, cache=cache)
        return cls(index=index, **kwargs)
