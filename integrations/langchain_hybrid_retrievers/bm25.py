"""LangChain retriever over the core `BM25Index`.

A thin shell (see `_base`): scoring, top-k selection and filtering happen in the core,
so LangChain and LlamaIndex users get identical rankings.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from hybrid_retrievers import Analyzer, BM25Index

from ._base import IndexRetriever
from ._convert import copy_metadatas

__all__ = ["BM25Retriever"]


class BM25Retriever(IndexRetriever):
    """BM25 keyword retriever backed by `hybrid_retrievers.BM25Index`.

    Each returned `Document` is a new object with ``id`` set to the indexed id and
    metadata = the stored metadata plus the BM25 score under ``score_key``
    (default ``"score"``) and the 1-based rank under ``"rank"``. Only documents
    that match at least one query term are returned, so fewer than ``k`` documents
    may come back.

    ``k`` and ``filter`` can be overridden per call: ``retriever.invoke(q, k=3)``,
    ``retriever.invoke(q, filter={"source": "wiki"})``, and the same for
    ``ainvoke``. A per-call value of ``None`` means "use the retriever's field".

    Example:
        >>> from langchain_hybrid_retrievers import BM25Retriever
        >>> retriever = BM25Retriever.from_texts(
        ...     ["BM25 ranks documents by term frequency", "Cats sleep all day"],
        ...     metadatas=[{"topic": "ir"}, {"topic": "pets"}],
        ...     k=1,
        ... )
        >>> [d.metadata["topic"] for d in retriever.invoke("how does bm25 rank documents")]
        ['ir']
    """

    index: BM25Index
    """The core BM25 index that does all scoring; shared, not copied."""

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Iterable[str | None] | None = None,
        *,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        **kwargs: Any,
    ) -> BM25Retriever:
        """Index raw texts and return a retriever over them.

        Args:
            texts: The document texts.
            metadatas: One metadata mapping per text (the core copies them), or ``None``.
            ids: One id per text, or ``None`` for deterministic content ids.
            analyzer: Tokenizer settings; ``None`` uses the core default (English).
            k1, b, method, delta: BM25 parameters, passed to `BM25Index.from_texts`.
            **kwargs: Retriever fields (``k``, ``filter``, ``score_key``, ``tags``...).
        """
        index = BM25Index.from_texts(texts, ids=ids, metadatas=copy_metadatas(metadatas),
                                     analyzer=analyzer, k1=k1, b=b, method=method, delta=delta)
        return cls(index=index, **kwargs)

    @classmethod
    def load_local(
        cls, folder_path: str | os.PathLike[str], *, mmap: bool = False, **kwargs: Any
    ) -> BM25Retriever:
        """Load a retriever saved with `save_local` (or any saved `BM25Index`).

        Args:
            folder_path: The folder written by `save_local` / `BM25Index.save`.
            mmap: Memory-map the arrays instead of reading them into memory.
            **kwargs: Retriever fields (``k``, ``filter``, ``score_key``, ``tags``...).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign folder.
        """
        return cls(index=BM25Index.load(folder_path, mmap=mmap), **kwargs)
