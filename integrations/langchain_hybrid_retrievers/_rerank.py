"""Shared plumbing of the LangChain rerankers (see `langchain_hybrid_retrievers.compressors`).

`RerankCompressor` validates ``top_n`` / ``score_key`` and maps ``compress_documents``
onto a per-call ``top_n``; `to_core` / `to_documents` convert documents to core docs
(by position, so every result maps back to its own input) and back, adding the
provenance keys documented in `langchain_hybrid_retrievers.compressors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, field_validator, model_validator

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.rerank import RERANK_KEY
from hybrid_retrievers.validation import check_k

from ._base import check_arguments
from ._convert import RANK_KEY, copy_metadata

__all__ = ["DETAIL_KEY", "PREVIOUS_RANK_KEY", "STATUS_KEY", "RerankCompressor",
           "check_documents", "to_core", "to_documents"]

PREVIOUS_RANK_KEY = "previous_rank"
STATUS_KEY = "rerank_status"
DETAIL_KEY = "rerank_detail"
_RESERVED = (RANK_KEY, PREVIOUS_RANK_KEY, STATUS_KEY, DETAIL_KEY)


def check_documents(documents: Any) -> list[Document]:
    if isinstance(documents, (str, Document)) or not isinstance(documents, Sequence):
        raise TypeError(
            f"documents must be a list of Document, got {type(documents).__name__}; "
            "wrap a single document in a list"
        )
    for i, d in enumerate(documents):
        if not isinstance(d, Document):
            raise TypeError(
                f"documents[{i}] must be a langchain_core Document, got {type(d).__name__}"
            )
    return list(documents)


def to_core(documents: list[Document]) -> list[Doc]:
    # Positions as ids: LangChain documents may lack ids, and every input must map back to
    # exactly its own Document. A repeated Document.id gets its first occurrence's
    # position, so the core keeps only that one, as it does for repeated Doc ids.
    first: dict[str, int] = {}
    out = []
    for i, d in enumerate(documents):
        position = i if d.id is None else first.setdefault(d.id, i)
        out.append(Doc(str(position), d.page_content))
    return out


def to_documents(hits: list[Hit], documents: list[Document], score_key: str) -> list[Document]:
    out = []
    for hit in hits:
        original = documents[int(hit.doc.id)]
        info = hit.explanation[RERANK_KEY]
        metadata = copy_metadata(original.metadata)
        if score_key in metadata:
            metadata[f"previous_{score_key}"] = metadata[score_key]
        metadata[score_key] = float(hit.score)
        metadata[RANK_KEY] = hit.rank
        metadata[PREVIOUS_RANK_KEY] = info["previous_rank"]
        if "status" in info:
            metadata[STATUS_KEY] = info["status"]
            metadata[DETAIL_KEY] = info["detail"]
        out.append(Document(id=original.id, page_content=original.page_content,
                            metadata=metadata))
    return out


def _check_score_key(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"score_key must be a non-empty string, got {value!r}; "
                         "e.g. 'relevance_score'")
    if value in _RESERVED:
        raise ValueError(f"score_key must not be one of {_RESERVED!r} (used for provenance), "
                         f"got {value!r}; use e.g. 'relevance_score'")
    return value


class RerankCompressor(BaseDocumentCompressor):
    """Shared plumbing: validation of ``top_n`` / ``score_key`` and per-call ``top_n``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid")

    top_n: int = 3
    """How many documents to keep (>= 1); more than the input keeps all."""

    score_key: str = "relevance_score"
    """Metadata key of the rerank score on returned documents."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, values: Any) -> Any:
        return check_arguments(cls, values)

    @field_validator("top_n", mode="before")
    @classmethod
    def _check_top_n(cls, value: Any) -> int:
        return check_k(value, name="top_n")

    @field_validator("score_key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        return _check_score_key(value)

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        raise NotImplementedError

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        raise NotImplementedError

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; return the best ``top_n`` as new documents."""
        return self._rerank_documents(documents, query, top_n=None, callbacks=callbacks)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async `compress_documents` (the model never runs on the event loop)."""
        return await self._arerank_documents(documents, query, top_n=None, callbacks=callbacks)
