"""The hybrid recipe: BM25 + dense indexes over the same texts, fused (`hybrid_searcher`).

The 90% case of this package in one call, written once so that every caller (the CLI,
parent-document search, a script) builds the same thing: a `BM25Index` and a
`VectorIndex` over the same texts, ids and metadata, fused by a `FusionSearcher` whose
children are named ``"bm25"`` and ``"dense"`` (BM25 first, so `lexical_boost_rule`
favours it for queries with codes, numbers or quoted phrases).

Example:
    >>> from hybrid_retrievers.models import HashingEmbedder
    >>> hybrid = hybrid_searcher(["wings generate lift", "cats sleep", "lift and drag"],
    ...                          HashingEmbedder(dimension=64), ids=["a", "b", "c"])
    >>> sorted(h.id for h in hybrid.search("wing lift", k=2))
    ['a', 'c']
    >>> hybrid.names
    ('bm25', 'dense')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..tokenization import Analyzer
from ..vector import DEFAULT_BATCH_SIZE, VectorIndex
from .searcher import FusionSearcher

__all__ = ["hybrid_searcher"]


def hybrid_searcher(
    texts: Iterable[str],
    embedder: Any,
    ids: Iterable[str] | None = None,
    metadatas: Iterable[Mapping[str, Any] | None] | None = None,
    *,
    analyzer: Analyzer | None = None,
    k1: float = 1.5,
    b: float = 0.75,
    method: str = "lucene",
    delta: float | None = None,
    metric: str = "cosine",
    batch_size: int = DEFAULT_BATCH_SIZE,
    cache: Any = None,
    show_progress: bool = False,
    **fusion: Any,
) -> FusionSearcher:
    """A `FusionSearcher` over a new `BM25Index` and `VectorIndex` of ``texts``.

    Args:
        texts: the document texts (read once; both indexes get the same ids).
        embedder: the dense model (a core `Embedder`).
        ids, metadatas: as for `BM25Index.from_texts` (``None`` ids: content ids).
        analyzer, k1, b, method, delta: the BM25 settings.
        metric, batch_size, cache, show_progress: the dense settings.
        **fusion: other `FusionSearcher` arguments (``mode``, ``weights``, ``fetch_k``...;
            ``names`` defaults to ``["bm25", "dense"]``).
    """
    from ..bm25 import BM25Index

    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, got a single str; wrap it in a list")
    text_list = list(texts)
    id_list = None if ids is None else list(ids)
    meta_list = None if metadatas is None else list(metadatas)
    bm25 = BM25Index.from_texts(text_list, id_list, meta_list, analyzer=analyzer, k1=k1, b=b,
                                method=method, delta=delta, show_progress=show_progress)
    dense = VectorIndex.from_texts(text_list, id_list, meta_list, embedder=embedder,
                                   metric=metric, batch_size=batch_size, cache=cache,
                                   show_progress=show_progress)
    fusion.setdefault("names", ["bm25", "dense"])
    return FusionSearcher([bm25, dense], **fusion)
