"""`SourceCap`: at most ``n`` results per source, so one long document cannot fill the top k.

A document split into chunks (`hybrid_retrievers.text.split_parents` records the parent
under ``metadata["parent_id"]``), a web page cut into passages, or a file cut into
sections often matches a query in several places; without a cap its chunks crowd out
every other source. The same idea as OpenSearch's ``collapse`` and Haystack's
per-document limits: walk the candidates in their order and keep a candidate only while
its source has fewer than ``max_per_source`` results above it.

The order and scores of the kept candidates are unchanged (so scores still never
increase down the list; a `Doc` given without a score gets ``1 / rank``); ranks are
renumbered. A candidate without the key is its own
source: it is never dropped for lack of metadata. Provenance: ``explanation["rerank"]``
holds ``method="source_cap"``, ``source`` (the key's value, ``None`` when missing) and
the usual ``previous_rank`` / ``previous_score``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from ..text.splitting import PARENT_ID_KEY
from ..types import Hit
from ..validation import check_number
from .candidates import RerankInput, prepare, provenance

__all__ = ["SourceCap"]


class SourceCap:
    """Keep at most ``max_per_source`` candidates per value of ``metadata[key]``.

    A reranking stage: ``RerankingSearcher(searcher, SourceCap("parent_id"), fetch_k=50)``
    returns the best ``k`` chunks with at most one per parent document.

    Args:
        key: The metadata key naming a candidate's source: ``"parent_id"`` (the default:
            what the splitter records), ``"source"`` or ``"file_path"`` (LangChain's and
            LlamaIndex's loaders), or any other. Values must be hashable.
        max_per_source: How many candidates one source may keep (>= 1).
        top_n: How many candidates to return in all; ``None`` returns every kept one.

    Example:
        >>> from hybrid_retrievers import Doc
        >>> docs = [Doc("a:0", "x", {"parent_id": "a"}), Doc("a:1", "x", {"parent_id": "a"}),
        ...         Doc("b:0", "x", {"parent_id": "b"})]
        >>> [h.id for h in SourceCap().rerank("q", docs)]
        ['a:0', 'b:0']
    """

    def __init__(self, key: str = PARENT_ID_KEY, *, max_per_source: int = 1,
                 top_n: int | None = None) -> None:
        if not isinstance(key, str) or not key:
            raise TypeError(f"key must be a non-empty metadata key (str), got {key!r:.80}; "
                            "e.g. 'parent_id' or 'source'")
        self.key = key
        self.max_per_source = check_number(max_per_source, "max_per_source", low=1,
                                           integer=True)
        self.top_n = None if top_n is None else check_number(top_n, "top_n", low=1,
                                                             integer=True)

    @property
    def model_id(self) -> str:
        """How the stage is recorded under ``explanation["rerank"]["model"]``."""
        return f"source_cap({self.key}<={self.max_per_source})"

    def rerank(self, query: str, docs: Sequence[RerankInput], *, top_n: int | None = None,
               max_per_source: int | None = None) -> list[Hit]:
        """The candidates in their order, at most ``max_per_source`` per source.

        Args:
            query: The search query (checked, otherwise unused: the cap looks only at
                metadata and order).
            docs: Candidates (`Doc` or `Hit`) in retrieval order; a repeated id counts once.
            top_n: Per-call override of ``top_n``.
            max_per_source: Per-call override of ``max_per_source``.

        Raises:
            TypeError: for a source value that cannot be a dict key (e.g. a list).
        """
        limit = self.top_n if top_n is None else top_n
        query, items, limit = prepare(query, docs, limit, 0)
        cap = self.max_per_source if max_per_source is None else check_number(
            max_per_source, "max_per_source", low=1, integer=True)
        counts: dict[Any, int] = {}
        extra = {"method": "source_cap", "model": self.model_id}
        out: list[Hit] = []
        for it in items:
            if limit and len(out) >= limit:
                break
            source = it.doc.metadata.get(self.key)
            if not isinstance(source, Hashable):
                raise TypeError(f"metadata[{self.key!r}] of document {it.doc.id!r} must be "
                                f"hashable to name a source, got {type(source).__name__}")
            group = ("doc", it.doc.id) if source is None else ("source", source)
            if counts.get(group, 0) >= cap:
                continue
            counts[group] = counts.get(group, 0) + 1
            score = it.previous_score
            value = 1.0 / (len(out) + 1) if score is None else score
            out.append(Hit(it.doc, value, len(out) + 1,
                           provenance(it, value, {**extra, "source": source})))
        return out

    async def arerank(self, query: str, docs: Sequence[RerankInput], *,
                      top_n: int | None = None, max_per_source: int | None = None
                      ) -> list[Hit]:
        """Async `rerank` (no model: runs inline)."""
        return self.rerank(query, docs, top_n=top_n, max_per_source=max_per_source)

    def __repr__(self) -> str:
        return (f"SourceCap({self.key!r}, max_per_source={self.max_per_source}, "
                f"top_n={self.top_n})")
