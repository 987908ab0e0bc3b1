"""LangChain retriever over the core `BM25Index`.

The retriever is a thin shell: it holds a `hybrid_retrievers.BM25Index`, converts
`Document` <-> `Doc`/`Hit`, maps LangChain's ``k`` onto the core's ``k`` and runs
async calls in a worker thread. Scoring, top-k selection and filtering all happen in
the core, so LangChain and LlamaIndex users get identical rankings.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from pydantic import ConfigDict, field_validator

from hybrid_retrievers import Analyzer, BM25Index, Doc
from hybrid_retrievers.validation import check_k

from ._base import StrictRetriever
from ._convert import check_score_key, copy_metadatas, documents_to_columns, hit_to_document
from ._editing import IndexEditingMixin

__all__ = ["BM25Retriever"]

Filter = Mapping[str, Any] | Callable[[Doc], bool]


class BM25Retriever(IndexEditingMixin, StrictRetriever):
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

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    index: BM25Index
    """The core BM25 index that does all scoring; shared, not copied."""

    k: int = 4
    """Default number of documents to return (>= 1); override per call with ``k=``."""

    filter: Filter | None = None
    """Default filter applied before top-k: a mapping (every key must equal the
    document's metadata value) or a callable receiving a `hybrid_retrievers.Doc`
    and returning ``True`` to keep it. Override per call with ``filter=``."""

    score_key: str = "score"
    """Metadata key under which each returned `Document` carries its BM25 score."""

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
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Iterable[str | None] | None = None,
        *,
        k: int = 4,
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
            k: Default number of documents per query.
            analyzer: Tokenizer settings; ``None`` uses the core default (English).
            k1, b, method, delta: BM25 parameters, passed to `BM25Index.from_texts`.
            **kwargs: Other retriever fields (``filter``, ``score_key``, ``tags``...).
        """
        index = BM25Index.from_texts(
            texts,
            ids=ids,
            metadatas=copy_metadatas(metadatas),
            analyzer=analyzer,
            k1=k1,
            b=b,
            method=method,
            delta=delta,
        )
        return cls(index=index, k=k, **kwargs)

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        k: int = 4,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        **kwargs: Any,
    ) -> BM25Retriever:
        """Index LangChain documents, keeping ``Document.id`` and metadata.

        Documents whose ``id`` is ``None`` get deterministic content ids (see
        `hybrid_retrievers.content_id`).
        Arguments are as for `from_texts`.
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return cls.from_texts(
            texts, metadatas, ids, k=k, analyzer=analyzer, k1=k1, b=b, method=method,
            delta=delta, **kwargs,
        )

    # ----------------------------------------------------------------- search

    def _search(self, query: str, k: int | None, filter: Filter | None) -> list[Document]:
        hits = self.index.search(
            query,
            k=self.k if k is None else k,
            filter=self.filter if filter is None else filter,
        )
        return [hit_to_document(hit, self.score_key) for hit in hits]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Return up to ``k`` documents for ``query``, best first."""
        return self._search(query, k, filter)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Filter | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: the search runs in a worker thread."""
        return await asyncio.to_thread(self._search, query, k, filter)

    # ------------------------------------------------------------ persistence

    def save_local(self, folder_path: str | os.PathLike[str]) -> None:
        """Save the index (texts, ids, metadata, analyzer, BM25 parameters) to a folder.

        The format is the core's (JSON + ``.npy``, no pickle). Query-time settings
        (``k``, ``filter``, ``score_key``) are not saved: pass them to `load_local`.
        """
        self.index.save(folder_path)

    @classmethod
    def load_local(
        cls,
        folder_path: str | os.PathLike[str],
        *,
        k: int = 4,
        mmap: bool = False,
        **kwargs: Any,
    ) -> BM25Retriever:
        """Load a retriever saved with `save_local` (or any saved `BM25Index`).

        Args:
            folder_path: The folder written by `save_local` / `BM25Index.save`.
            k: Default number of documents per query.
            mmap: Memory-map the arrays instead of reading them into memory.
            **kwargs: Other retriever fields (``filter``, ``score_key``, ``tags``...).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: for a missing, corrupt
                or foreign folder.
        """
        return cls(index=BM25Index.load(folder_path, mmap=mmap), k=k, **kwargs)
