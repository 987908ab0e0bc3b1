"""Any LlamaIndex retriever as an `evaluate` row: `as_eval_callable`.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> from llama_index_hybrid_retrievers import BM25Retriever, as_eval_callable
    >>> nodes = [TextNode(id_="a", text="wings lift"), TextNode(id_="b", text="cats sleep")]
    >>> run = as_eval_callable(BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=1))
    >>> [doc_id for doc_id, _ in run("wing lift", 1)]
    ['a']
"""

from __future__ import annotations

from llama_index.core.base.base_retriever import BaseRetriever

from hybrid_retrievers.evaluation import Ranking, RankingCallable

__all__ = ["as_eval_callable"]


def as_eval_callable(retriever: BaseRetriever) -> RankingCallable:
    """``retriever`` as ``(query, k) -> [(node_id, score), ...]``, one query at a time.

    A LlamaIndex retriever returns what it is configured for (``similarity_top_k``):
    configure it for at least the evaluation's ``k``; the ranking is cut to ``k``.
    LlamaIndex retrievers have no batch path, so none is given.

    Raises:
        TypeError: ``retriever`` has no ``retrieve``.
    """
    if not callable(getattr(retriever, "retrieve", None)):
        raise TypeError(f"retriever must be a LlamaIndex retriever (with retrieve), got "
                        f"{type(retriever).__name__}")

    def call(query: str, k: int) -> Ranking:
        return [(n.node.node_id, float(n.score or 0.0)) for n in retriever.retrieve(query)[:k]]

    return RankingCallable(call)
