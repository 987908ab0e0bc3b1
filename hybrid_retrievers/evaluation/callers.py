"""Calling any retriever the same way: ``(query, k) -> [(doc_id, score), ...]``.

`evaluate` puts our searchers, LangChain retrievers, LlamaIndex retrievers and plain
callables side by side; this module turns each into one calling convention (and, where
the retriever has one, a batch path) without importing either framework: the kind is
read from the retriever's class hierarchy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Ranking", "batch_caller_for", "caller_for"]

Ranking = list[tuple[str, float]]
"""Doc ids with scores, best first."""


def caller_for(retriever: Any, name: str) -> Callable[[str, int], Ranking]:
    """A uniform ``(query, k) -> [(doc_id, score), ...]`` over any supported retriever."""
    kinds = {c.__module__.split(".")[0] for c in type(retriever).__mro__}
    if "langchain_core" in kinds and hasattr(retriever, "invoke"):
        return _langchain_caller(retriever)
    if "llama_index" in kinds and hasattr(retriever, "retrieve"):
        def llama(query: str, k: int) -> Ranking:
            nodes = retriever.retrieve(query)[:k]
            return [(n.node.node_id, float(n.score or 0.0)) for n in nodes]
        return llama
    if hasattr(retriever, "search"):
        def ours(query: str, k: int) -> Ranking:
            return [(h.doc.id, h.score) for h in retriever.search(query, k=k)]
        return ours
    if callable(retriever):
        def plain(query: str, k: int) -> Ranking:
            return [_as_pair(x) for x in retriever(query, k)][:k]
        return plain
    raise TypeError(
        f"retriever {name!r} ({type(retriever).__name__}) is not supported: pass a searcher with "
        ".search(query, k), a LangChain or LlamaIndex retriever, or a callable (query, k)"
    )


def batch_caller_for(retriever: Any) -> Callable[[list[str], int], list[Ranking]] | None:
    """``(queries, k) -> rankings`` through the retriever's batch path, or ``None``."""
    kinds = {c.__module__.split(".")[0] for c in type(retriever).__mro__}
    if "langchain_core" in kinds:
        if not callable(getattr(retriever, "batch", None)):
            return None
        batch = _k_or_without(retriever.batch)

        def lc_batch(queries: list[str], k: int) -> list[Ranking]:
            return [_langchain_ranking(docs, k) for docs in batch(queries, k)]
        return lc_batch
    if "llama_index" in kinds:
        return None  # BaseRetriever has no batch retrieval
    many = getattr(retriever, "search_many", None)
    if hasattr(retriever, "search") and callable(many):
        def ours(queries: list[str], k: int) -> list[Ranking]:
            return [[(h.doc.id, h.score) for h in hits] for hits in many(queries, k=k)]
        return ours
    return None


def _langchain_caller(retriever: Any) -> Callable[[str, int], Ranking]:
    invoke = _k_or_without(retriever.invoke)

    def call(query: str, k: int) -> Ranking:
        return _langchain_ranking(invoke(query, k), k)

    return call


def _k_or_without(method: Callable[..., Any]) -> Callable[[Any, int], Any]:
    """``method(arg, k=k)``; once that raises TypeError (no ``k``), ``method(arg)`` from then on."""
    takes_k = True

    def call(arg: Any, k: int) -> Any:
        nonlocal takes_k
        if takes_k:
            try:
                return method(arg, k=k)
            except TypeError:
                takes_k = False
        return method(arg)

    return call


def _langchain_ranking(docs: Sequence[Any], k: int) -> Ranking:
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


def _as_pair(item: Any) -> tuple[str, float]:
    if isinstance(item, str):
        return item, 0.0
    if hasattr(item, "doc") and hasattr(item, "score"):
        return item.doc.id, float(item.score)
    doc_id, score = item
    return str(doc_id), float(score)
