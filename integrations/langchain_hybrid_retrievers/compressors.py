"""LangChain rerankers: document compressors over the core `Reranker` / `LLMReranker`.

* `CrossEncoderReranker` — a cross-encoder (or any `PairScorer`) as a
  ``BaseDocumentCompressor``; drop it into ``ContextualCompressionRetriever``.
* `LLMReranker` — listwise reranking with any LangChain LLM, chat model or runnable.
* `RerankingRetriever` — "retrieve ``fetch_k``, keep the best ``top_n``" as one retriever.

Layout: the compressors live in `cross_encoder` and `listwise` (their shared plumbing in
``_rerank``) and are re-exported here, so ``from langchain_hybrid_retrievers.compressors
import ...`` keeps working; `RerankingRetriever` is defined here.

The adapters are thin: scoring, sorting, thresholds, tie-breaking and the LLM's answer
parsing all happen in `hybrid_retrievers.rerank`, so LlamaIndex users get the same order.

Returned documents are new `Document` objects (the inputs are never edited) with the
original ``id``, ``page_content`` and a copy of the metadata, plus:

=========================  ============================================================
key                        value
=========================  ============================================================
``relevance_score``        the rerank score (the key is the ``score_key`` field);
                           cross-encoder: the model's score (a probability with the
                           default sigmoid); LLM: ``1 / rank``
``rank``                   the new 1-based rank (overwrites a retriever's ``rank``)
``previous_rank``          the document's 1-based position in the input list
``previous_<score_key>``   only when the input already carried ``score_key`` (reranked
                           twice): its earlier value
``rerank_status``          LLM only: ``"ok"``, ``"repaired"`` or ``"fallback"``
``rerank_detail``          LLM only: what was repaired, or why the input order was kept
=========================  ============================================================

Other metadata, such as the retriever's own ``score``, is kept unchanged.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import RetrieverLike
from pydantic import ConfigDict, field_validator, model_validator

from hybrid_retrievers.validation import check_k

from ._base import StrictRetriever, accepts_k, child_config
from ._rerank import RerankCompressor
from .cross_encoder import CrossEncoderReranker
from .listwise import LLMReranker

__all__ = ["CrossEncoderReranker", "LLMReranker", "RerankingRetriever"]


class RerankingRetriever(StrictRetriever):
    """Retrieve ``fetch_k`` candidates, rerank them, return the best ``top_n``: one object.

    How ``fetch_k`` reaches the base retriever: it is passed as ``k=fetch_k`` to
    ``base_retriever.invoke`` when the base retriever takes a per-call ``k`` (its
    ``_get_relevant_documents`` — for ``ainvoke``, its ``_aget_relevant_documents`` — has a
    ``k`` parameter, as this package's retrievers do) or
    is a ``VectorStoreRetriever`` (whose keyword arguments become search arguments).
    Otherwise the base retriever is called as configured and ``fetch_k`` is not used:
    give it a size of its own (e.g. ``search_kwargs={"k": 30}``). ``fetch_k=None`` never
    passes ``k``.

    Per call, ``invoke(q, top_n=3)`` (or ``k=3``, as for other retrievers) changes how many
    documents come back and ``invoke(q, fetch_k=50)`` how many are reranked.

    The reranker is one of this module's compressors, or any ``BaseDocumentCompressor``
    (its output is then cut to ``top_n``; it may return fewer by its own settings).

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

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

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

    @field_validator("top_n", mode="before")
    @classmethod
    def _check_top_n(cls, value: Any) -> int:
        return check_k(value, name="top_n")

    @field_validator("fetch_k", mode="before")
    @classmethod
    def _check_fetch_k(cls, value: Any) -> int | None:
        return None if value is None else check_k(value, name="fetch_k")

    def _resolve(self, top_n: int | None, k: int | None, fetch_k: int | None, *,
                 asynchronous: bool = False) -> tuple[int, dict[str, Any]]:
        size = _top_n_or_k(top_n, k)
        n = self.top_n if size is None else check_k(size, name="top_n")
        fetch = self.fetch_k if fetch_k is None else check_k(fetch_k, name="fetch_k")
        passes = fetch is not None and accepts_k(self.base_retriever, asynchronous=asynchronous)
        kwargs = {"k": fetch} if passes else {}
        return n, kwargs

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        top_n: int | None = None,
        k: int | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Retrieve candidates, rerank them and return the best ``top_n``."""
        n, kwargs = self._resolve(top_n, k, fetch_k)
        config = child_config(run_manager)
        callbacks = config["callbacks"]
        docs = self.base_retriever.invoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return self.reranker._rerank_documents(docs, query, top_n=n, callbacks=callbacks)
        return list(self.reranker.compress_documents(docs, query, callbacks=callbacks))[:n]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        top_n: int | None = None,
        k: int | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: async retrieval, reranking in a worker thread."""
        n, kwargs = self._resolve(top_n, k, fetch_k, asynchronous=True)
        config = child_config(run_manager)
        callbacks = config["callbacks"]
        docs = await self.base_retriever.ainvoke(query, config, **kwargs)
        if isinstance(self.reranker, RerankCompressor):
            return await self.reranker._arerank_documents(docs, query, top_n=n,
                                                          callbacks=callbacks)
        out = await self.reranker.acompress_documents(docs, query, callbacks=callbacks)
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
