"""LangChain rerankers over the core `Reranker` / `LLMReranker`, and `RerankingRetriever`.

The compressors (`CrossEncoderReranker`, `LLMReranker`: drop them into
``ContextualCompressionRetriever``) live in `cross_encoder` and `listwise` and are
re-exported here; `RerankingRetriever` is "retrieve ``fetch_k``, keep the best ``top_n``"
as one retriever. Scoring, sorting, thresholds and the LLM's answer parsing happen in
`hybrid_retrievers.rerank`, so LlamaIndex users get the same order.

Returned documents are new: the original ``id``, text and a copy of the metadata, plus
the rerank score under ``score_key`` (an earlier value is kept as
``previous_<score_key>``), the new ``rank``, ``previous_rank`` and, for the LLM,
``rerank_status`` / ``rerank_detail`` (`hybrid_retrievers.rerank`'s provenance).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import RetrieverLike
from pydantic import model_validator

from hybrid_retrievers.validation import check_k

from ._arguments import count_validator
from ._base import StrictRetriever, accepts_k, child_config
from ._rerank import RerankCompressor
from .cross_encoder import CrossEncoderReranker
from .listwise import LLMReranker

__all__ = ["CrossEncoderReranker", "LLMReranker", "RerankingRetriever"]


class RerankingRetriever(StrictRetriever):
    """Retrieve ``fetch_k`` candidates, rerank them, return the best ``top_n``: one object.

    ``fetch_k`` is passed as ``k=fetch_k`` to a base retriever that takes a per-call ``k``
    (`accepts_k`); others are called as configured. Per call, ``invoke(q, top_n=3)`` (or
    ``k=3``) and ``invoke(q, fetch_k=50)`` override both. The reranker is one of this
    module's compressors, or any ``BaseDocumentCompressor`` (cut to ``top_n``).

    Example:
        >>> from langchain_hybrid_retrievers import (
        ...     BM25Retriever, CrossEncoderReranker, RerankingRetriever)
        >>> class Overlap:
        ...     def score(self, pairs):
        ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
        >>> retriever = RerankingRetriever(
        ...     base_retriever=BM25Retriever.from_texts(
        ...         ["wing lift", "wing", "lift and drag of a wing", "bread"]),
        ...     reranker=CrossEncoderReranker(model=Overlap()), fetch_k=3, top_n=1)
        >>> [d.page_content for d in retriever.invoke("lift of a wing")]
        ['lift and drag of a wing']
    """

    base_retriever: RetrieverLike
    """The retriever that finds the candidates (any retriever or runnable from a query to
    a list of `Document`, e.g. one wrapped by ``with_config``)."""

    reranker: BaseDocumentCompressor
    """Reorders the candidates (`CrossEncoderReranker`, `LLMReranker`, or any compressor)."""

    fetch_k: int | None = 30
    """Candidates to ask the base retriever for (see the class docstring for the rule)."""

    top_n: int = 5
    """Documents to return (>= 1); ``k=`` is accepted as another name for it, in the
    constructor (``RerankingRetriever(..., k=3)``) and per call (``invoke(q, k=3)``)."""

    @model_validator(mode="before")
    @classmethod
    def _k_is_top_n(cls, values: Any) -> Any:
        if isinstance(values, dict) and "k" in values:
            values = dict(values)
            top_n = _top_n_or_k(values.get("top_n"), values.pop("k"))
            if top_n is not None:
                values["top_n"] = top_n
        return values

    _check_top_n = count_validator("top_n")
    _check_fetch_k = count_validator("fetch_k", optional=True)

    def _resolve(self, run_manager: Any, top_n: int | None, k: int | None,
                 fetch_k: int | None, *, asynchronous: bool) -> tuple[int, Any, dict[str, Any]]:
        """``top_n``, the child config for the base retriever and its keyword arguments."""
        size = _top_n_or_k(top_n, k)
        n = self.top_n if size is None else check_k(size, name="top_n")
        fetch = self.fetch_k if fetch_k is None else check_k(fetch_k, name="fetch_k")
        passes = fetch is not None and accepts_k(self.base_retriever, asynchronous=asynchronous)
        return n, child_config(run_manager), {"k": fetch} if passes else {}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        top_n: int | None = None, k: int | None = None, fetch_k: int | None = None,
    ) -> list[Document]:
        """Retrieve candidates, rerank them and return the best ``top_n``."""
        n, config, kwargs = self._resolve(run_manager, top_n, k, fetch_k, asynchronous=False)
        docs = self.base_retriever.invoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return self.reranker._rerank_documents(docs, query, top_n=n,
                                                   callbacks=config["callbacks"])
        out = self.reranker.compress_documents(docs, query, callbacks=config["callbacks"])
        return list(out)[:n]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        top_n: int | None = None, k: int | None = None, fetch_k: int | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: async retrieval, reranking in a worker thread."""
        n, config, kwargs = self._resolve(run_manager, top_n, k, fetch_k, asynchronous=True)
        docs = await self.base_retriever.ainvoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return await self.reranker._arerank_documents(docs, query, top_n=n,
                                                          callbacks=config["callbacks"])
        out = await self.reranker.acompress_documents(docs, query, callbacks=config["callbacks"])
        return list(out)[:n]


def _top_n_or_k(top_n: Any, k: Any) -> Any:
    """``top_n``, or ``k`` (its other name) when ``top_n`` is ``None``.

    Raises:
        ValueError: when both are given and differ.
    """
    if top_n is not None and k is not None and top_n != k:
        raise ValueError(f"pass top_n or k (they mean the same), not both: got "
                         f"top_n={top_n!r}, k={k!r}")
    return k if top_n is None else top_n
