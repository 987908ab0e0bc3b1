"""`RerankingSearcher`: "retrieve ``fetch_k``, keep the best ``k``" as one `Searcher`.

The stage is anything with ``rerank(query, candidates, *, top_n=...) -> list[Hit]``:
`Reranker`, `LLMReranker`, `MMRReranker`, `SourceCap`. Stages compose by nesting:
``RerankingSearcher(RerankingSearcher(index, reranker, fetch_k=50), SourceCap(),
fetch_k=20)`` reranks 50 candidates, then keeps the best ``k`` with one per parent.
"""

from __future__ import annotations

from typing import Any

from ..types import Hit
from ..validation import check_k
from .listwise import LLMReranker
from .mmr import MMRReranker
from .pointwise import Reranker
from .source_cap import SourceCap

__all__ = ["RerankingSearcher"]


class RerankingSearcher:
    """A `Searcher` that asks ``searcher`` for ``fetch_k`` candidates and reranks them.

    The "retrieve 30, keep the best k" pipeline as one searcher, so it can be
    evaluated, fused or wrapped like any other.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> class Length:
        ...     model_id = "length"
        ...     def score(self, pairs):
        ...         return [len(p) for _, p in pairs]
        >>> index = BM25Index.from_texts(["lift", "lift and drag of wings"], ids=["a", "b"])
        >>> [h.id for h in RerankingSearcher(index, Reranker(Length())).search("lift", k=2)]
        ['b', 'a']
    """

    def __init__(self, searcher: Any,
                 reranker: Reranker | LLMReranker | MMRReranker | SourceCap, *,
                 fetch_k: int = 30):
        if not callable(getattr(searcher, "search", None)):
            raise TypeError(
                f"searcher must have search(query, k), got {type(searcher).__name__}"
            )
        if not callable(getattr(reranker, "rerank", None)):
            raise TypeError(f"reranker must have rerank(query, docs), got {type(reranker).__name__}")
        self.searcher = searcher
        self.reranker = reranker
        self.fetch_k = check_k(fetch_k, name="fetch_k")

    def search(self, query: str, k: int = 10, *, filter: Any = None) -> list[Hit]:
        """The best ``k`` of the first ``max(fetch_k, k)`` candidates, reranked."""
        k = check_k(k)
        candidates = self.searcher.search(query, k=max(self.fetch_k, k), filter=filter)
        return self.reranker.rerank(query, candidates, top_n=k)
