"""Calling any retriever the same way: ``(query, k) -> [(doc_id, score), ...]``.

`evaluate` puts our searchers and any other system side by side; this module turns
each into one calling convention, and, where it has one, a batch path. It knows no
framework: a LangChain or LlamaIndex retriever is wrapped by its adapter's
``as_eval_callable(retriever)`` (`langchain_hybrid_retrievers.as_eval_callable`,
`llama_index_hybrid_retrievers.as_eval_callable`), which returns a `RankingCallable`.

What is accepted:

* a searcher (``search(query, k)`` returning `Hit`s; ``search_many`` is its batch path);
* a callable ``(query, k)`` returning doc ids, ``(doc_id, score)`` pairs or `Hit`s
  (a `RankingCallable` also carries a batch path).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Ranking", "RankingCallable", "batch_caller_for", "caller_for"]

Ranking = list[tuple[str, float]]
"""Doc ids with scores, best first."""


@dataclass(frozen=True)
class RankingCallable:
    """A ``(query, k) -> Ranking`` callable with an optional batch path.

    What framework adapters return for `evaluate` (``as_eval_callable``); usable by hand
    for any other system.

    Example:
        >>> run = RankingCallable(lambda q, k: [("d1", 2.0), ("d2", 1.0)][:k])
        >>> run("wing lift", 1)
        [('d1', 2.0)]
    """

    call: Callable[[str, int], Ranking]
    """``(query, k)`` -> up to ``k`` (doc_id, score) pairs, best first."""
    batch: Callable[[list[str], int], list[Ranking]] | None = None
    """``(queries, k)`` -> one ranking per query, or ``None`` (one query at a time)."""

    def __call__(self, query: str, k: int) -> Ranking:
        return self.call(query, k)


def caller_for(retriever: Any, name: str) -> Callable[[str, int], Ranking]:
    """A uniform ``(query, k) -> [(doc_id, score), ...]`` over a searcher or a callable."""
    if hasattr(retriever, "search"):
        def ours(query: str, k: int) -> Ranking:
            return [(h.doc.id, h.score) for h in retriever.search(query, k=k)]
        return ours
    if callable(retriever):
        def plain(query: str, k: int) -> Ranking:
            return [_as_pair(x) for x in retriever(query, k)][:k]
        return plain
    hint = ""
    if hasattr(retriever, "invoke") or hasattr(retriever, "retrieve"):
        hint = (" A LangChain retriever is wrapped by "
                "langchain_hybrid_retrievers.as_eval_callable(retriever), a LlamaIndex one by "
                "llama_index_hybrid_retrievers.as_eval_callable(retriever).")
    raise TypeError(
        f"retriever {name!r} ({type(retriever).__name__}) is not supported: pass a searcher with "
        f".search(query, k) or a callable (query, k) returning (doc_id, score) pairs.{hint}"
    )


def batch_caller_for(retriever: Any) -> Callable[[list[str], int], list[Ranking]] | None:
    """``(queries, k) -> rankings`` through the retriever's batch path, or ``None``."""
    if isinstance(retriever, RankingCallable):
        return retriever.batch
    many = getattr(retriever, "search_many", None)
    if hasattr(retriever, "search") and callable(many):
        def ours(queries: list[str], k: int) -> list[Ranking]:
            return [[(h.doc.id, h.score) for h in hits] for hits in many(queries, k=k)]
        return ours
    return None


def _as_pair(item: Any) -> tuple[str, float]:
    if isinstance(item, str):
        return item, 0.0
    if hasattr(item, "doc") and hasattr(item, "score"):
        return item.doc.id, float(item.score)
    doc_id, score = item
    return str(doc_id), float(score)

