"""LangChain rerankers over the core `Reranker` / `LLMReranker`, and `RerankingRetriever`.

The compressors (`CrossEncoderReranker`, `LLMRerankCompressor`: drop them into
``ContextualCompressionRetriever``) live in `cross_encoder` and `listwise` and are
re-exported here; `RerankingRetriever` is "retrieve ``fetch_k``, keep the best ``k``"
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

from hybrid_retrievers.integration import check_k

from ._arguments import ARGUMENT_HINTS, count_validator
from ._base import accepts_k
from ._rerank import RerankCompressor
from ._runconfig import StrictRetriever, child_config
from .cross_encoder import CrossEncoderReranker
from .listwise import LLMRerankCompressor

__all__ = ["CrossEncoderReranker", "LLMRerankCompressor", "RerankingRetriever"]


class RerankingRetriever(StrictRetriever):
    """Retrieve ``fetch_k`` candidates, rerank them, return the best ``k``: one object.

    ``k`` is "how many documents", as on every retriever of this package (the compressors
    say ``top_n``, as LangChain's own compressors do). ``fetch_k`` is passed as
    ``k=fetch_k`` to a base retriever that takes a per-call ``k`` (`accepts_k`); others are
    called as configured. Per call, ``invoke(q, k=3)`` and ``invoke(q, fetch_k=50)``
    override both. The reranker is one of this module's compressors, or any
    ``BaseDocumentCompressor`` (cut to ``k``).

    Example:
        >>> from langchain_hybrid_retrievers import (
        ...     BM25Retriever, CrossEncoderReranker, RerankingRetriever)
        >>> class Overlap:
        ...     def score(self, pairs):
        ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
        >>> retriever = RerankingRetriever(
        ...     base_retriever=BM25Retriever.from_texts(
        ...         ["wing lift", "wing", "lift and drag of a wing", "bread"]),
        ...     reranker=CrossEncoderReranker(model=Overlap()), fetch_k=3, k=1)
        >>> [d.page_content for d in retriever.invoke("lift of a wing")]
        ['lift and drag of a wing']
    """

    base_retriever: RetrieverLike
    """The retriever that finds the candidates (any retriever or runnable from a query to
    a list of `Document`, e.g. one wrapped by ``with_config``)."""

    reranker: BaseDocumentCompressor
    """Reorders the candidates (`CrossEncoderReranker`, `LLMRerankCompressor`, or any compressor)."""

    fetch_k: int | None = 30
    """Candidates to ask the base retriever for (see the class docstring for the rule)."""

    k: int = 5
    """Documents to return (>= 1); override per call with ``invoke(q, k=3)``."""

    _check_k = count_validator("k")
    _check_fetch_k = count_validator("fetch_k", optional=True)

    def _resolve(self, run_manager: Any, k: int | None, fetch_k: int | None, top_n: Any, *,
                 asynchronous: bool) -> tuple[int, Any, dict[str, Any]]:
        """``k``, the child config for the base retriever and its keyword arguments."""
        _refuse_top_n(type(self), top_n)
        n = self.k if k is None else check_k(k, name="k")
        fetch = self.fetch_k if fetch_k is None else check_k(fetch_k, name="fetch_k")
        passes = fetch is not None and accepts_k(self.base_retriever, asynchronous=asynchronous)
        return n, child_config(run_manager), {"k": fetch} if passes else {}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None, fetch_k: int | None = None, top_n: Any = None,
    ) -> list[Document]:
        """Retrieve candidates, rerank them and return the best ``k``."""
        n, config, kwargs = self._resolve(run_manager, k, fetch_k, top_n, asynchronous=False)
        docs = self.base_retriever.invoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return self.reranker._rerank_documents(docs, query, top_n=n,
                                                   callbacks=config["callbacks"])
        out = self.reranker.compress_documents(docs, query, callbacks=config["callbacks"])
        return list(out)[:n]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, fetch_k: int | None = None, top_n: Any = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: async retrieval, reranking in a worker thread."""
        n, config, kwargs = self._resolve(run_manager, k, fetch_k, top_n, asynchronous=True)
        docs = await self.base_retriever.ainvoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return await self.reranker._arerank_documents(docs, query, top_n=n,
                                                          callbacks=config["callbacks"])
        out = await self.reranker.acompress_documents(docs, query, callbacks=config["callbacks"])
        return list(out)[:n]


def _refuse_top_n(cls: type, top_n: Any) -> None:
    """`TypeError` for a per-call ``top_n=`` (the compressors' spelling), naming ``k=``."""
    if top_n is not None:
        raise TypeError(f"{cls.__name__}.invoke got an unexpected argument 'top_n' "
                        f"({ARGUMENT_HINTS['top_n']})")
