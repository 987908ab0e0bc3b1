"""Shared plumbing of the LangChain rerankers (see `langchain_hybrid_retrievers.compressors`).

`RerankCompressor` checks the fields and runs a subclass's core call (`_core_call`) with a
per-call ``top_n``; `to_core` / `to_documents` convert documents to positional core docs
and back, adding provenance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, PrivateAttr, field_validator

from hybrid_retrievers import Doc, Hit
from hybrid_retrievers.integration import input_position, positional_docs
from hybrid_retrievers.rerank import RERANK_KEY, LLMReranker, Reranker

from ._arguments import count_validator, refuse_unknown
from ._convert import RANK_KEY, with_metadata

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
    """The documents as positional core docs (`positional_docs`)."""
    return positional_docs((d.id, d.page_content) for d in documents)


def to_documents(hits: list[Hit], documents: list[Document], score_key: str) -> list[Document]:
    out = []
    for hit in hits:
        original = documents[input_position(hit)]
        info = hit.explanation[RERANK_KEY]
        updates: dict[str, Any] = {}
        if score_key in original.metadata:
            updates[f"previous_{score_key}"] = original.metadata[score_key]
        updates.update({score_key: float(hit.score), RANK_KEY: hit.rank,
                        PREVIOUS_RANK_KEY: info["previous_rank"]})
        if "status" in info:
            updates.update({STATUS_KEY: info["status"], DETAIL_KEY: info["detail"]})
        out.append(with_metadata(original, updates))
    return out


class RerankCompressor(BaseDocumentCompressor):
    """Shared plumbing: validation of ``top_n`` / ``score_key`` and per-call ``top_n``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True,
                              extra="forbid")

    top_n: int = 3
    """How many documents to keep (>= 1); more than the input keeps all."""

    score_key: str = "relevance_score"
    """Metadata key of the rerank score on returned documents."""

    _reranker: Any = PrivateAttr()
    _refuse_unknown = refuse_unknown()
    _check_top_n = count_validator("top_n")

    @property
    def reranker(self) -> Reranker | LLMReranker:
        """The core reranker doing the work (`hybrid_retrievers.rerank`)."""
        return self._reranker  # type: ignore[no-any-return]

    @field_validator("score_key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError(f"score_key must be a non-empty string, got {value!r}; "
                             "e.g. 'relevance_score'")
        if value in _RESERVED:
            raise ValueError(f"score_key must not be one of {_RESERVED!r} (used for "
                             f"provenance), got {value!r}; use e.g. 'relevance_score'")
        return value

    def _core_call(self, callbacks: Callbacks, *,
                   asynchronous: bool) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The core reranker's ``rerank`` (``arerank`` when async) and its keyword
        arguments besides ``top_n``, reporting model calls to ``callbacks``."""
        raise NotImplementedError

    def _rerank_documents(self, documents: Sequence[Document], query: str, *,
                          top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = check_documents(documents)
        if not docs:
            return []
        rerank, kwargs = self._core_call(callbacks, asynchronous=False)
        hits = rerank(query, to_core(docs), top_n=self._top_n(top_n), **kwargs)
        return to_documents(hits, docs, self.score_key)

    async def _arerank_documents(self, documents: Sequence[Document], query: str, *,
                                 top_n: int | None, callbacks: Callbacks) -> list[Document]:
        docs = check_documents(documents)
        if not docs:
            return []
        arerank, kwargs = self._core_call(callbacks, asynchronous=True)
        hits = await arerank(query, to_core(docs), top_n=self._top_n(top_n), **kwargs)
        return to_documents(hits, docs, self.score_key)

    def _top_n(self, top_n: int | None) -> int:
        return self.top_n if top_n is None else top_n

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; return the best ``top_n`` as new documents."""
        return self._rerank_documents(documents, query, top_n=None, callbacks=callbacks)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async `compress_documents` (the model never runs on the event loop)."""
        return await self._arerank_documents(documents, query, top_n=None, callbacks=callbacks)
