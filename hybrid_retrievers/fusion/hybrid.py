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

from .searcher import FusionSearcher

__all__ = ["hybrid_searcher"]


def hybrid_searcher(
    texts: Iterable[str],
    embedder: Any,
    ids: Iterable[str] | None = None,
    metadatas: Iterable[Mapping[str, Any] | None] | None = None,
    *,
    bm25: Mapping[str, Any] | None = None,
    dense: Mapping[str, Any] | None = None,
    show_progress: bool = False,
    **fusion: Any,
) -> FusionSearcher:
    """A `FusionSearcher` over a new `BM25Index` and `VectorIndex` of ``texts``.

    The two indexes' settings are passed through, not listed again here, so a new
    index option needs no change to the recipe.

    Args:
        texts: the document texts (read once; both indexes get the same ids).
        embedder: the dense model (a core `Embedder`).
        ids, metadatas: as for `BM25Index.from_texts` (``None`` ids: content ids).
        bm25: keyword arguments of `BM25Index.from_texts` (``analyzer``, ``k1``, ``b``,
            ``method``, ``delta``).
        dense: keyword arguments of `VectorIndex.from_texts` (``metric``,
            ``batch_size``, ``cache``).
        show_progress: progress bars while indexing (both indexes).
        **fusion: `FusionSearcher` arguments (``mode``, ``weights``, ``fetch_k``...;
            ``names`` defaults to ``["bm25", "dense"]``).
    """
    from ..bm25 import BM25Index
    from ..vector import VectorIndex

    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, got a single str; wrap it in a list")
    text_list = list(texts)
    id_list = None if ids is None else list(ids)
    meta_list = None if metadatas is None else list(metadatas)
    lexical = BM25Index.from_texts(text_list, id_list, meta_list, show_progress=show_progress,
                                   **dict(bm25 or {}))
    vectors = VectorIndex.from_texts(text_list, id_list, meta_list, embedder=embedder,
                                     show_progress=show_progress, **dict(dense or {}))
    fusion.setdefault("names", ["bm25", "dense"])
    return FusionSearcher([lexical, vectors], **fusion)
