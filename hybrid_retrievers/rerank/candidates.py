"""What both rerankers do to their input and to each result's provenance.

A reranker takes `Doc`s or `Hit`s (mixed is fine), in retrieval order. `rerank_items`
checks the list and turns each entry into a `RerankItem` (the document and where it
stood before); a document id seen twice counts once (its first, better-ranked
occurrence). `provenance` builds the ``explanation["rerank"]`` mapping of a result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from ..types import Doc, Hit
from ..validation import check_k, check_query

__all__ = ["RERANK_KEY", "RerankInput", "RerankItem", "prepare", "provenance", "rerank_items"]

RERANK_KEY = "rerank"
"""Key of the provenance mapping in a reranked hit's ``explanation``."""

RerankInput = Union[Doc, Hit]
"""One candidate given to a reranker: a `Doc`, or a `Hit` that keeps its rank and score.

(Not to be confused with fusion's candidates, which are distinct documents across
several ranked lists.)"""


@dataclass(frozen=True, slots=True)
class RerankItem:
    """One distinct input document and where it stood before reranking."""

    doc: Doc
    previous_rank: int
    previous_score: float | None
    previous_explanation: Mapping[str, Any]


def rerank_items(items: Any, name: str = "docs") -> list[RerankItem]:
    """Validate and normalise the input list; a repeated id keeps its first occurrence.

    Raises:
        TypeError: for a single document or string instead of a list, or an entry that
            is neither a `Doc` nor a `Hit`.
    """
    if isinstance(items, (str, Doc, Hit)) or not isinstance(items, Sequence):
        raise TypeError(
            f"{name} must be a list of Doc or Hit, got {type(items).__name__}; "
            "wrap a single document in a list"
        )
    out: list[RerankItem] = []
    seen: set[str] = set()
    for position, item in enumerate(items, 1):
        if isinstance(item, Hit):
            entry = RerankItem(item.doc, int(item.rank), float(item.score), item.explanation)
        elif isinstance(item, Doc):
            entry = RerankItem(item, position, None, {})
        else:
            raise TypeError(
                f"{name}[{position - 1}] must be a hybrid_retrievers Doc or Hit, got "
                f"{type(item).__name__}: {item!r:.80}"
            )
        if entry.doc.id not in seen:
            seen.add(entry.doc.id)
            out.append(entry)
    return out


def prepare(query: Any, docs: Any, top_n: Any, default_top_n: int
            ) -> tuple[str, list[RerankItem], int]:
    """The checks every ``rerank`` call starts with: query, candidates, ``top_n`` override."""
    query = check_query(query)
    items = rerank_items(docs)
    top_n = default_top_n if top_n is None else check_k(top_n, name="top_n")
    return query, items, top_n


def provenance(item: RerankItem, score: float, extra: Mapping[str, Any]) -> dict[str, Any]:
    """``{"rerank": {...extra, score, previous_rank, previous_score[, previous_explanation]}}``."""
    info: dict[str, Any] = {**extra, "score": score, "previous_rank": item.previous_rank,
                            "previous_score": item.previous_score}
    if item.previous_explanation:
        info["previous_explanation"] = item.previous_explanation
    return {RERANK_KEY: info}
