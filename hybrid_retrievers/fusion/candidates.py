"""The candidate machinery every fusion mode shares: identity, dedup, ties, provenance.

Every mode runs the same three steps: `gather` reads the input rankings into one
`Candidate` per distinct document (identity by id, or by normalised text with
``dedup="content"``), a mode computes each candidate's fused score and each source's
contribution, and `emit` sorts them (score, then best rank, then first appearance) and
builds new `Hit` objects carrying the provenance. The inputs are only read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..types import Hit
from ..validation import check_k

__all__ = [
    "Candidate",
    "Dedup",
    "Entry",
    "check_limit",
    "check_rankings",
    "emit",
    "gather",
    "normalized_text_hash",
]


class Dedup(str, Enum):
    """How fusion decides that two hits are the same document.

    ``ID``: the same ``doc.id`` (the default; ids are identity everywhere in this package).
    ``CONTENT``: additionally, the same normalised text (casefolded, whitespace collapsed,
    hashed with blake2b) under different ids is one document; the better-ranked copy is
    kept. A document whose text is blank (for example a vector added without text) is
    never merged by content, only by id.
    """

    ID = "id"
    CONTENT = "content"


def normalized_text_hash(text: str) -> str:
    """blake2b of ``text`` casefolded with whitespace collapsed: the content-dedup key.

    Example:
        >>> normalized_text_hash("Wing  LIFT\\n") == normalized_text_hash("wing lift")
        True
    """
    normal = " ".join(text.casefold().split())
    return hashlib.blake2b(normal.encode("utf-8"), digest_size=16).hexdigest()


# ---------------------------------------------------------------------- checks


def check_rankings(rankings: Any) -> list[Sequence[Hit]]:
    """A list of rankings (each a list of `Hit`), or TypeError/ValueError naming the spot."""
    if isinstance(rankings, (str, bytes, Mapping)) or not isinstance(rankings, Sequence):
        raise TypeError(
            "rankings must be a list of rankings (each a list of Hit), got "
            f"{type(rankings).__name__}"
        )
    if len(rankings) == 0:
        raise ValueError("rankings must hold at least one ranking, got an empty list")
    out = []
    for i, ranking in enumerate(rankings):
        if isinstance(ranking, (str, bytes, Mapping)) or not isinstance(ranking, Sequence):
            raise TypeError(
                f"rankings[{i}] must be a list of Hit, got {type(ranking).__name__}"
            )
        for j, hit in enumerate(ranking):
            if not isinstance(hit, Hit):
                raise TypeError(
                    f"rankings[{i}][{j}] must be a Hit, got {type(hit).__name__}: {hit!r:.80}"
                )
        out.append(ranking)
    return out


# ---------------------------------------------------------------------- gathering


@dataclass(slots=True)
class Entry:
    """One document's (best) appearance in one source."""

    source: int
    rank: int
    hit: Hit


@dataclass(slots=True)
class Candidate:
    """One distinct document across all sources."""

    order: int  # first appearance: list 0 top to bottom, then list 1, ...
    hit: Hit  # the representative copy: the best-ranked one
    best_rank: int
    entries: list[Entry] = field(default_factory=list)  # in source order, one per source


def gather(
    rankings: Sequence[Sequence[Hit]],
    weights: Sequence[float],
    dedup: Dedup,
) -> tuple[list[Candidate], list[list[Entry]]]:
    """Candidates in first-appearance order, and each source's distinct entries in rank order.

    Ranks are 1-based positions in the input list (``hit.rank`` is ignored: the list's
    order is the ranking). A document repeated inside one list counts once, at its best
    (first) position; later positions are not renumbered. Sources with weight 0 are
    skipped entirely.
    """
    by_key: dict[str, Candidate] = {}
    key_of_id: dict[str, str] = {}
    candidates: list[Candidate] = []
    per_source: list[list[Entry]] = []
    content = dedup is Dedup.CONTENT
    for s, ranking in enumerate(rankings):
        entries: list[Entry] = []
        per_source.append(entries)
        if weights[s] == 0:
            continue
        seen: set[str] = set()
        for position, hit in enumerate(ranking, 1):
            doc_id = hit.doc.id
            key = key_of_id.get(doc_id)
            if key is None:
                key = doc_id
                if content and hit.doc.text.strip():
                    key = "\x00" + normalized_text_hash(hit.doc.text)
                key_of_id[doc_id] = key  # an id always maps to one candidate
            if key in seen:
                continue
            seen.add(key)
            entry = Entry(s, position, hit)
            entries.append(entry)
            cand = by_key.get(key)
            if cand is None:
                cand = by_key[key] = Candidate(len(candidates), hit, position)
                candidates.append(cand)
            elif position < cand.best_rank:
                cand.hit, cand.best_rank = hit, position
            cand.entries.append(entry)
    return candidates, per_source


def emit(
    candidates: Sequence[Candidate],
    scores: Sequence[float],
    details: Sequence[Mapping[str, Any]],
    contributions: Sequence[Sequence[Mapping[str, Any]]],
    names: Sequence[Any],
    weights: Sequence[float],
    limit: int | None,
) -> list[Hit]:
    """Sort candidates (score desc, best rank asc, first appearance asc) into new hits.

    ``details[i]`` holds the mode-level keys of candidate ``i``'s ``"fusion"`` mapping and
    ``contributions[i][j]`` the mode-specific keys of its ``j``-th source entry.
    """
    order = sorted(range(len(candidates)),
                   key=lambda i: (-scores[i], candidates[i].best_rank, candidates[i].order))
    if limit is not None:
        order = order[:limit]
    hits = []
    for rank, i in enumerate(order, 1):
        cand = candidates[i]
        sources = []
        for entry, extra in zip(cand.entries, contributions[i]):
            item: dict[str, Any] = {
                "source": names[entry.source],
                "index": entry.source,
                "id": entry.hit.doc.id,
                "rank": entry.rank,
                "score": entry.hit.score,
                "weight": weights[entry.source],
                **extra,
            }
            if entry.hit.explanation:
                item["explanation"] = entry.hit.explanation
            sources.append(item)
        fusion = {**details[i], "score": scores[i], "best_rank": cand.best_rank,
                  "sources": sources}
        hits.append(Hit(cand.hit.doc, scores[i], rank, {"fusion": fusion}))
    return hits


def check_limit(limit: Any) -> int | None:
    """``None`` (keep every fused hit) or a top-k ``>= 1``."""
    if limit is None:
        return None
    return check_k(limit, name="limit")
