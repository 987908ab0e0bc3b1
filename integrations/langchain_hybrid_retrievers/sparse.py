"""LangChain retriever over the core `SparseIndex` (learned sparse retrieval: SPLADE).

A thin shell like `BM25Retriever` and `DenseRetriever`: encoding, the dot-product
top-k and filtering happen in the core.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pydantic import field_validator

from hybrid_retrievers import SparseIndex
from hybrid_retrievers.types import SparseEmbedder

from ._base import IndexRetriever, fields_factory
from ._convert import Ids, Metadatas, copy_metadatas

__all__ = ["SparseRetriever"]


class SparseRetriever(IndexRetriever):
    """Learned sparse retriever (SPLADE and friends) backed by `hybrid_retrievers.SparseIndex`.

    ``sparse_embedding`` (langchain-qdrant's name for its sparse model) is a core
    `SparseEmbedder`: `hybrid_retrievers.models.SpladeEncoder` (any sentence-transformers
    sparse model, such as ``naver/splade-v3`` or the offline splade-tiny of
    `hybrid_retrievers.models.local_splade_path`), or any object with
    ``embed_documents`` / ``embed_query`` returning ``{token: weight}`` dicts and a
    ``model_id``. A document's score is the dot product of its vector with the query's;
    only documents sharing a token with the query come back. Returned documents are as
    `BM25Retriever`'s; ``k`` and ``filter`` can be overridden per call, async runs the
    model and the search in a worker thread (`SparseIndex.asearch`).

    Example:
        >>> from hybrid_retrievers.models import HashingSparseEmbedder
        >>> from langchain_hybrid_retrievers import SparseRetriever
        >>> retriever = SparseRetriever.from_texts(
        ...     ["wings generate lift", "cats sleep all day"],
        ...     HashingSparseEmbedder(),
        ...     metadatas=[{"topic": "aero"}, {"topic": "pets"}],
        ...     k=1,
        ... )
        >>> [d.metadata["topic"] for d in retriever.invoke("how do wings make lift")]
        ['aero']
    """

    index: SparseIndex
    """The core sparse index that does all scoring; shared, not copied. It must have a
    sparse embedder (text queries are encoded by it)."""

    @field_validator("index")
    @classmethod
    def _check_index(cls, value: SparseIndex) -> SparseIndex:
        if value.embedder is None:
            raise ValueError(
                "index must have a sparse embedder to answer text queries, got a SparseIndex "
                "without one (built from vectors); build it with an embedder or load it with "
                "SparseRetriever.load_local(folder, sparse_embedding=...)"
            )
        return value

    @classmethod
    @fields_factory
    def from_texts(
        cls, texts: Iterable[str], sparse_embedding: SparseEmbedder,
        metadatas: Metadatas = None, ids: Ids = None, *, batch_size: int = 32,
        show_progress: bool = False, backend: str = "auto", **kwargs: Any,
    ) -> SparseRetriever:
        """Encode and index raw texts (see `SparseIndex.from_texts`; ``sparse_embedding`` is
        its embedder) and return a retriever; ``**kwargs`` are retriever fields."""
        index = SparseIndex.from_texts(
            texts, ids=ids, metadatas=copy_metadatas(metadatas), embedder=sparse_embedding,
            batch_size=batch_size, show_progress=show_progress, backend=backend,
        )
        return cls(index=index, **kwargs)

    @classmethod
    @fields_factory
    def load_local(
        cls, folder_path: str | os.PathLike[str], sparse_embedding: SparseEmbedder, *,
        mmap: bool = False, **kwargs: Any,
    ) -> SparseRetriever:
        """Load a retriever saved with `save_local` (or any saved `SparseIndex`) with the
        model it was built with (its ``model_id`` must be the saved one, see
        `SparseIndex.load`); ``**kwargs`` are retriever fields."""
        if sparse_embedding is None:
            raise TypeError(
                "sparse_embedding must be the sparse model the index was built with (a "
                "SparseEmbedder such as hybrid_retrievers.models.SpladeEncoder), got None"
            )
        return cls(index=SparseIndex.load(folder_path, sparse_embedding, mmap=mmap), **kwargs)
