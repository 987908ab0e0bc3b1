"""Any LangChain retriever as an `evaluate` row: `as_eval_callable`.

Example:
    >>> from hybrid_retrievers.evaluation import evaluate
    >>> from langchain_hybrid_retrievers import BM25Retriever, as_eval_callable
    >>> retriever = BM25Retriever.from_texts(["wings lift", "cats sleep"], ids=["a", "b"])
    >>> as_eval_callable(retriever)("wing lift", 1)
    [('a', 0.5545177459716797)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import Runnable

from hybrid_retrievers.evaluation import Ranking, RankingCallable

from ._base import accepts_k

__all__ = ["as_eval_callable"]


def as_eval_callable(retriever: Runnable[str, list[Document]]) -> RankingCallable:
    """``retriever`` as ``(query, k) -> [(doc_id, score), ...]`` with its ``batch`` path.

    ``k`` is passed per call (``invoke(q, k=k)``) when the retriever takes it (ours, a
    vector store's; the rule of `accepts_k`), else the retriever returns what it is
    configured for and the ranking is cut to ``k``. Ids come from ``Document.id`` (or
    ``metadata["id"]``); scores from ``metadata["score"]`` where the retriever writes one,
    else minus the rank, so the order is kept.

    Raises:
        TypeError: ``retriever`` has no ``invoke`` (it is not a LangChain runnable).
    """
    if not callable(getattr(retriever, "invoke", None)):
        raise TypeError(f"retriever must be a LangChain retriever (a Runnable with invoke), "
                        f"got {type(retriever).__name__}")
    per_call = accepts_k(retriever, asynchronous=False)

    def call(query: str, k: int) -> Ranking:
        docs = retriever.invoke(query, k=k) if per_call else retriever.invoke(query)
        return _ranking(docs, k)

    def batch(queries: list[str], k: int) -> list[Ranking]:
        out = retriever.batch(queries, k=k) if per_call else retriever.batch(queries)
        return [_ranking(docs, k) for docs in out]

    return RankingCallable(call, batch if callable(getattr(retriever, "batch", None)) else None)


def _ranking(docs: Sequence[Any], k: int) -> Ranking:
    out = []
    for i, d in enumerate(docs[:k]):
        doc_id = d.id or d.metadata.get("id") or d.metadata.get("_id")
        if doc_id is None:
            raise ValueError(
                "a LangChain Document came back without an id (Document.id or "
                "metadata['id']); evaluation needs ids matching the dataset's"
            )
        out.append((str(doc_id), float(d.metadata.get("score", -i))))
    return out
