"""From ranked child hits to ranked parent hits: grouping, auto-merge, resolution.

One search round groups the child hits by parent (`group_hits`); each group either
stands for its parent (a `ParentGroup` item) or, under auto-merge when too few of the
parent's children matched, gives way to its matched children (`UnmergedChild` items).
`resolve_items` then fetches the parents from the store and builds the final `Hit`
list with the provenance described in `hybrid_retrievers.parent`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..text.splitting import PARENT_ID_KEY
from ..types import Doc, Hit
from .store import ParentStoreLike

__all__ = ["ParentGroup", "ResultItem", "UnmergedChild", "group_hits", "resolve_items"]

# The package's logger name (tests and users filter on it), not this module's.
logger = logging.getLogger("hybrid_retrievers.parent")


@dataclass(frozen=True)
class ParentGroup:
    """A parent and the children of it that matched, best first.

    As a result item it means "return the parent"; ``best_rank`` (its best child's
    1-based rank in the child results) orders it among the other items.
    """

    parent_id: str
    score: float
    """The best matched child's score."""
    best_rank: int
    matched: int
    """How many of its children matched (among the children fetched)."""
    n_children: int
    children: tuple[dict[str, Any], ...]
    """One entry per matched child: ``id``, ``rank``, ``score`` (and ``explanation``)."""

    @property
    def fraction(self) -> float:
        """``matched / n_children``: the auto-merge rule compares it with the threshold."""
        return self.matched / self.n_children

    @property
    def rank(self) -> int:
        """Where this item sorts among the result items: its best child's rank."""
        return self.best_rank

    def provenance(self, *, merged: bool) -> dict[str, Any]:
        """The ``explanation["parent"]`` mapping of a hit from this group."""
        return {
            "parent_id": self.parent_id,
            "score": self.score,
            "best_rank": self.best_rank,
            "matched": self.matched,
            "n_children": self.n_children,
            "fraction": self.fraction,
            "children": list(self.children),
            "merged": merged,
        }


@dataclass(frozen=True)
class UnmergedChild:
    """A matched child returned itself: too few of its parent's children matched."""

    hit: Hit
    rank: int
    """The child's 1-based rank in the child results."""
    group: ParentGroup


ResultItem = ParentGroup | UnmergedChild
"""One result item: a parent to return, or an unmerged child."""


def group_hits(
    hits: Sequence[Hit],
    threshold: float | None,
    children_of: Mapping[str, Sequence[str]],
) -> list[ResultItem]:
    """The result items for one round of child ``hits``, in child-rank order.

    Args:
        hits: the child searcher's hits, best first; each names its parent in
            ``parent_id`` metadata (ValueError otherwise).
        threshold: the auto-merge fraction, or ``None`` to always return parents.
        children_of: parent id -> its child ids (for ``n_children``).
    """
    groups: dict[str, list[tuple[int, Hit]]] = {}
    for rank, hit in enumerate(hits, 1):
        pid = hit.doc.metadata.get(PARENT_ID_KEY)
        if not isinstance(pid, str):
            raise ValueError(
                f"child {hit.doc.id!r} has no {PARENT_ID_KEY!r} metadata; every document "
                "in the child index must name its parent (use split_parents)"
            )
        groups.setdefault(pid, []).append((rank, hit))
    items: list[ResultItem] = []
    for pid, matched in groups.items():
        group = ParentGroup(
            parent_id=pid,
            score=float(matched[0][1].score),
            best_rank=matched[0][0],
            matched=len(matched),
            n_children=max(len(children_of.get(pid, ())), len(matched)),
            children=tuple(_child_entry(r, h) for r, h in matched),
        )
        if threshold is None or group.fraction >= threshold - 1e-12:
            items.append(group)
        else:
            items.extend(UnmergedChild(h, r, group) for r, h in matched)
    items.sort(key=lambda item: item.rank)
    return items


def resolve_items(
    items: Sequence[ResultItem],
    top: int,
    store: ParentStoreLike,
    before: Mapping[str, Doc] | None = None,
) -> list[Hit]:
    """The first ``top`` hits for ``items``: parents fetched from ``store``.

    A parent missing from ``store`` is taken from ``before`` (the store's version when
    the search started, if known), else skipped with a warning.
    """
    wanted = [item.parent_id for item in items if isinstance(item, ParentGroup)]
    found = dict(zip(wanted, store.get_many(wanted))) if wanted else {}
    if before is not None:
        for pid, doc in found.items():
            if doc is None:
                found[pid] = before.get(pid)
    out: list[Hit] = []
    for item in items:
        if len(out) >= top:
            break
        if isinstance(item, ParentGroup):
            parent = found.get(item.parent_id)
            if parent is None:
                logger.warning(
                    "parent %r of matched children is not in the parent store; skipped",
                    item.parent_id,
                )
                continue
            out.append(Hit(parent, item.score, len(out) + 1,
                           {"parent": item.provenance(merged=True)}))
        else:
            out.append(Hit(item.hit.doc, float(item.hit.score), len(out) + 1,
                           {"parent": item.group.provenance(merged=False)}))
    return out


def _child_entry(rank: int, hit: Hit) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": hit.doc.id, "rank": rank, "score": float(hit.score)}
    if hit.explanation:
        entry["explanation"] = dict(hit.explanation)
    return entry
