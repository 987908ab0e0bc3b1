"""Parent/child retrieval: match small child chunks, return the parents they came from.

Small chunks match a query precisely; whole sections give a reader (or an LLM) the
context around the match. `ParentChildSearcher` searches an index of children (any of
ours: `BM25Index`, `VectorIndex`, a `FusionSearcher` over both, or any searcher with
``search``/``add_docs``/``delete``) and maps the hits back to parents held in a parent
store (`ParentStore`, in memory with save/load, or anything implementing
`ParentStoreLike`).

What it gets right that the anchors do not:

* ``k`` counts **parents**: the searcher asks for ``fetch_k`` children and doubles that
  until ``k`` distinct parents are found or the child index has nothing more to give,
  so ``k`` parents come back whenever that many match.
* **Scores and provenance are kept**: a parent's score is its best child's score (so
  parents are ranked by their best child), and ``hit.explanation["parent"]`` lists the
  matched children.
* ``add`` and ``delete`` by **parent id** update the parent store and the child index
  together (every leaf index of a fused child searcher).
* An optional **auto-merge** rule (``merge_threshold``): a parent replaces its children
  only when at least that fraction of its children matched; otherwise the matched
  children are returned themselves.

Provenance: each hit's ``explanation`` is ``{"parent": {...}}`` with the keys

================  ==========================================================================
key               meaning
================  ==========================================================================
``parent_id``     the parent's id
``merged``        ``True`` when the hit is the parent; ``False`` for a child returned
                  because too few of its siblings matched (auto-merge only)
``score``         the parent's score: its best matched child's score
``best_rank``     the best child's 1-based rank in the child results
``matched``       how many of its children matched (among the children fetched)
``n_children``    how many children the parent has
``fraction``      ``matched / n_children``
``children``      one entry per matched child, best first: ``id``, ``rank`` (1-based, in
                  the child results), ``score`` and, when the child hit had one, its
                  ``explanation`` (e.g. fusion provenance)
================  ==========================================================================

Layout: `store` (the parent stores), `searcher` (`ParentChildSearcher`: edits and the
search loop), `grouping` (child hits -> parent hits, auto-merge), `leaves` (the
editable indexes under a child searcher) and `saving` (save/load); `searcher` also
holds the recipe (``from_docs``: split, index, store). Import the public names from here.
"""

from __future__ import annotations

from .grouping import ParentGroup, UnmergedChild
from .searcher import (
    SOURCE_ID_KEY,
    ParentChildSearcher,
    default_child_index,
    default_parent_fetch_k,
    split_into_parents,
)
from .store import ParentStore, ParentStoreLike

__all__ = [
    "SOURCE_ID_KEY",
    "ParentChildSearcher",
    "ParentGroup",
    "ParentStore",
    "ParentStoreLike",
    "UnmergedChild",
    "default_child_index",
    "default_parent_fetch_k",
    "split_into_parents",
]
