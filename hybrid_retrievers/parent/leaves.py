"""The editable indexes under a child searcher, and the children already in them.

`ParentChildSearcher` adds and deletes children in every index that answers its child
searches: the searcher itself, or each leaf of a `FusionSearcher` (also through a
`FilteredSource`). Each leaf must have ``add_docs`` and ``delete``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..text.splitting import PARENT_ID_KEY
from ..types import Doc

__all__ = ["check_child_searcher", "child_leaves", "existing_children"]


def child_leaves(searcher: Any) -> list[Any]:
    """The editable indexes under ``searcher`` (each once, by identity)."""
    from ..fusion.searcher import FilteredSource, FusionSearcher

    out: list[Any] = []
    seen: set[int] = set()

    def walk(s: Any) -> None:
        if isinstance(s, FusionSearcher):
            for child in s.searchers:
                walk(child)
        elif isinstance(s, FilteredSource):
            walk(s.searcher)
        elif id(s) not in seen:
            seen.add(id(s))
            out.append(s)

    walk(searcher)
    return out


def check_child_searcher(searcher: Any) -> list[Any]:
    """The leaves of ``searcher``; TypeError unless it searches and each leaf edits."""
    if not callable(getattr(searcher, "search", None)):
        raise TypeError(
            "child_searcher must have a search(query, k, filter=...) method (a BM25Index, "
            f"VectorIndex or FusionSearcher), got {type(searcher).__name__}"
        )
    leaves = child_leaves(searcher)
    for leaf in leaves:
        if not (callable(getattr(leaf, "add_docs", None)) and callable(getattr(leaf, "delete", None))):
            raise TypeError(
                "every index under child_searcher must support add_docs(docs) and delete(ids) "
                f"so parents can be added and deleted; {type(leaf).__name__} does not"
            )
    return leaves


def existing_children(leaves: Sequence[Any]) -> dict[str, dict[str, Doc]]:
    """parent id -> {child id: child} for children already in the leaf indexes."""
    out: dict[str, dict[str, Doc]] = {}
    for leaf in leaves:
        docs = getattr(leaf, "docs", None)
        if callable(docs):
            docs = docs()
        for d in docs or ():
            pid = d.metadata.get(PARENT_ID_KEY)
            if isinstance(pid, str):
                out.setdefault(pid, {})[d.id] = d
    return out
