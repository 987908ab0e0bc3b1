"""LangChain retriever over the core `BM25Index`.

A thin shell (see `_base`): scoring, top-k selection and filtering happen in the core,
so LangChain and LlamaIndex users get identical rankings.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from hybrid_retrievers import Analyzer, BM25Index

from ._base import IndexRetriever
from ._convert import Ids, Metadatas, copy_metadatas

__all__ = ["BM25Retriever"]


class BM25Retriever(IndexRetriever):
    """BM25 keyword retriever backed by `hybrid_retrievers.BM25Index`.

    Returned documents are new objects: the indexed ``id``, the stored metadata plus the
    BM25 score under ``score_key`` and the 1-based ``"rank"``. Only documents matching a
    query term come back, so there may be fewer than ``k``. ``k`` and ``filter`` can be
    overridden per call (``invoke(q, k=3, filter={"source": "wiki"})``, and ``ainvoke``).

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
        cls, texts: Iterable[str], metadatas: Metadatas = None, ids: Ids = None, *,
        analyzer: Analyzer | None = None, k1: float = 1.5, b: float = 0.75,
        method: str = "lucene", delta: float | None = None, **kwargs: Any,
    ) -> BM25Retriever:
        """Index raw texts (see `BM25Index.from_texts`) and return a retriever over them;
        ``**kwargs`` are retriever fields (``k``, ``filter``, ``score_key``, ``tags``...)."""
        index = BM25Index.from_texts(texts, ids=ids, metadatas=copy_metadatas(metadatas),
                                     analyzer=analyzer, k1=k1, b=b, method=method, delta=delta)
        return cls(index=index, **kwargs)

    @classmethod
    def load_local(
        cls, folder_path: str | os.PathLike[str], *, mmap: bool = False, **kwargs: Any
    ) -> BM25Retriever:
        """Load a retriever saved with `save_local` (or any saved `BM25Index`, see
        `BM25Index.load`); ``**kwargs`` are retriever fields (``k``, ``filter``...)."""
        return cls(index=BM25Index.load(folder_path, mmap=mmap), **kwargs)
