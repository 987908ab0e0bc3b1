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
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from .documents import check_docs, make_docs
from .validation import check_id_list, check_k, check_merge_threshold, check_query
from .persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index
from .splitting import PARENT_ID_KEY, SentenceSplitter, split_parents
from .types import Doc, Hit, MetadataFilter

__all__ = [
    "ParentChildSearcher",
    "ParentStore",
    "ParentStoreLike",
    "default_child_index",
    "default_parent_fetch_k",
]

logger = logging.getLogger(__name__)

STORE_FORMAT_VERSION = 1
SEARCHER_FORMAT_VERSION = 1
_MAX_DOUBLINGS = 30


def default_parent_fetch_k(k: int) -> int:
    """Children asked for first, for ``k`` parents: ``max(4 * k, 20)``.

    Several children of one parent often match together, so asking for ``k`` children
    rarely yields ``k`` parents; four per parent usually does in one round, and a BM25
    or exact dense search for 40 instead of 10 costs almost nothing. When it does not,
    the searcher doubles the request until it does.
    """
    return max(4 * k, 20)


# ---------------------------------------------------------------------- store


@runtime_checkable
class ParentStoreLike(Protocol):
    """What `ParentChildSearcher` needs from a parent store."""

    def get_many(self, ids: Sequence[str]) -> list[Doc | None]: ...

    def put_many(self, docs: Sequence[Doc]) -> None: ...

    def delete(self, ids: Iterable[str]) -> None: ...

    def __contains__(self, doc_id: object) -> bool: ...


class ParentStore:
    """Parents by id, in memory, in insertion order; saved as JSON lines (no pickle).

    Concurrency: reads (`get`, `get_many`, iteration) see one version of the store,
    before or after any edit; edits copy the id -> parent map and publish the copy
    with one reference swap (O(n) per call: batch them), serialised by a lock.

    Example:
        >>> store = ParentStore([Doc("p1", "A whole section.")])
        >>> store.get("p1").text, len(store)
        ('A whole section.', 1)
    """

    def __init__(self, docs: Iterable[Doc] = ()) -> None:
        self._docs: dict[str, Doc] = {}
        self._lock = threading.RLock()
        self.put_many(check_docs(docs))

    def put_many(self, docs: Sequence[Doc]) -> None:
        """Insert or replace parents (by id)."""
        docs = check_docs(docs)
        with self._lock:
            if docs:
                updated = dict(self._docs)  # copy-on-write: readers keep the old map
                for d in docs:
                    updated[d.id] = d
                self._docs = updated

    def add(self, docs: Iterable[Doc]) -> list[str]:
        """Insert parents; an id already stored is an error (nothing is added then)."""
        docs = check_docs(docs)
        with self._lock:
            clash = [d.id for d in docs if d.id in self._docs]
            if clash:
                raise ValueError(
                    f"{len(clash)} parent id(s) already stored: {clash[:5]}; delete them first"
                )
            self.put_many(docs)
        return [d.id for d in docs]

    def get(self, doc_id: str) -> Doc:
        """The parent with id ``doc_id``; KeyError when absent."""
        try:
            return self._docs[doc_id]
        except KeyError:
            raise KeyError(f"no parent with id {doc_id!r} in the store") from None

    def get_many(self, ids: Sequence[str]) -> list[Doc | None]:
        """The parents for ``ids`` in order, ``None`` for unknown ids (one version)."""
        docs = self._docs
        return [docs.get(i) for i in ids]

    def snapshot(self) -> Mapping[str, Doc]:
        """A read-only view of the current version: later edits do not change it."""
        return MappingProxyType(self._docs)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove parents; unknown ids are ignored."""
        ids = set(check_id_list(ids))
        with self._lock:
            if ids & self._docs.keys():
                self._docs = {i: d for i, d in self._docs.items() if i not in ids}

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def __len__(self) -> int:
        return len(self._docs)

    def __iter__(self) -> Iterator[Doc]:
        return iter(list(self._docs.values()))

    def __repr__(self) -> str:
        return f"ParentStore({len(self._docs)} parents)"

    @property
    def ids(self) -> list[str]:
        """Stored ids, in insertion order."""
        return list(self._docs)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the store to directory ``path`` atomically and durably (JSON lines).

        A crash at any moment leaves the previous save or this one (see
        `hybrid_retrievers.persistence`).
        """
        with self._lock, atomic_index_dir(path) as tmp:
            self._save_into(tmp)

    def _save_into(self, directory: Path) -> None:
        with self._lock:
            w = IndexWriter(directory)
            w.docs("parents", self._docs.values())
            w.manifest("parent_store", STORE_FORMAT_VERSION, {"n_docs": len(self._docs)})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ParentStore:
        """Read a store written by `save`.

        Raises:
            TypeError: ``path`` is not a str or path.
            IndexFormatError: missing, corrupt, foreign or newer-format directory.
        """
        return read_index(path, kind="parent_store", max_version=STORE_FORMAT_VERSION,
                          read=cls._from_reader)

    @classmethod
    def _from_reader(cls, r: IndexReader) -> ParentStore:
        n = r.count("n_docs")
        docs = list(r.docs("parents"))
        if len(docs) != n:
            raise IndexFormatError(
                f"{r.where()}: parents.jsonl has {len(docs)} parents, manifest says {n}"
            )
        try:
            return cls(docs)
        except ValueError as exc:
            raise IndexFormatError(f"{r.where()}/parents.jsonl: {exc}") from None


# ------------------------------------------------------------ child indexes


def _leaves(searcher: Any) -> list[Any]:
    """The editable indexes under ``searcher`` (each once, by identity)."""
    from .fusion import FilteredSource, FusionSearcher

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


def _check_child_searcher(searcher: Any) -> list[Any]:
    if not callable(getattr(searcher, "search", None)):
        raise TypeError(
            "child_searcher must have a search(query, k, filter=...) method (a BM25Index, "
            f"VectorIndex or FusionSearcher), got {type(searcher).__name__}"
        )
    leaves = _leaves(searcher)
    for leaf in leaves:
        if not (callable(getattr(leaf, "add_docs", None)) and callable(getattr(leaf, "delete", None))):
            raise TypeError(
                "every index under child_searcher must support add_docs(docs) and delete(ids) "
                f"so parents can be added and deleted; {type(leaf).__name__} does not"
            )
    return leaves


def _existing_children(leaves: Sequence[Any]) -> dict[str, dict[str, Doc]]:
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


# ------------------------------------------------------------------ searcher


class ParentChildSearcher:
    """Search children, return distinct parents ranked by their best child.

    Concurrency: searches may run while one thread calls `add` or `delete`. The
    child indexes and the parent store each give a search one consistent version;
    edits are ordered so that a search never returns a child whose parent is missing
    (`add` stores the parents before indexing their children, `delete` unindexes
    the children before removing the parents, and a search that finds a child
    deleted meanwhile takes its parent from the `ParentStore` version it started
    with). With several child indexes (a
    `FusionSearcher`), an edit reaches them one after the other, so during the edit
    a search may see the new children in some of them only. Writers are serialised
    by a lock.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> searcher = ParentChildSearcher.from_docs(
        ...     [Doc("wings", "Wings make lift. Flaps add lift at low speed."),
        ...      Doc("bread", "Yeast makes bread rise. Steam gives a crust.")],
        ...     chunk_size=30, chunk_overlap=0, k=1,
        ... )
        >>> hit = searcher.search("flaps")[0]
        >>> hit.id, hit.explanation["parent"]["children"][0]["id"]
        ('wings', 'wings:1')
    """

    def __init__(
        self,
        child_searcher: Any,
        parent_store: ParentStoreLike | None = None,
        *,
        k: int = 4,
        fetch_k: int | None = None,
        splitter: Any = None,
        merge_threshold: float | None = None,
    ) -> None:
        """Args:
            child_searcher: searches the children (`BM25Index`, `VectorIndex`,
                `FusionSearcher`...); children must carry ``parent_id`` metadata.
            parent_store: where parents live (default: a new `ParentStore`); anything
                with ``get_many``, ``put_many``, ``delete`` and ``in``.
            k: default number of parents per search.
            fetch_k: children asked for in the first round (default
                `default_parent_fetch_k`); doubled until ``k`` parents are found.
            splitter: cuts parents added later with `add` (default `SentenceSplitter()`):
                a callable ``str -> list[str]`` or an object with ``split_text``.
            merge_threshold: ``None`` (always return parents) or a fraction in (0, 1]:
                return a parent only when at least this fraction of its children
                matched, else return the matched children themselves.
        """
        self._leaves = _check_child_searcher(child_searcher)
        if parent_store is None:
            parent_store = ParentStore()
        for method in ("get_many", "put_many", "delete", "__contains__"):
            if not callable(getattr(parent_store, method, None)):
                raise TypeError(
                    f"parent_store must implement get_many, put_many, delete and `in` "
                    f"(see ParentStoreLike); {type(parent_store).__name__} lacks {method}"
                )
        self._child_searcher = child_searcher
        self._store = parent_store
        self._k = check_k(k, "k")
        self._fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        self._splitter = SentenceSplitter() if splitter is None else splitter
        self._merge = check_merge_threshold(merge_threshold)
        self._lock = threading.RLock()
        # parent id -> child ids; replaced (never modified) by edits, so a search can
        # read it without a lock.
        self._children: dict[str, tuple[str, ...]] = {
            pid: tuple(kids) for pid, kids in _existing_children(self._leaves).items()
        }

    @classmethod
    def from_docs(
        cls,
        parents: Iterable[Doc],
        *,
        chunk_size: int = 400,
        chunk_overlap: int = 50,
        splitter: Any = None,
        embedder: Any = None,
        child_index: Callable[[list[Doc]], Any] | None = None,
        parent_store: ParentStoreLike | None = None,
        k: int = 4,
        fetch_k: int | None = None,
        merge_threshold: float | None = None,
    ) -> ParentChildSearcher:
        """Split ``parents``, index the children and store the parents.

        Args:
            parents: the parent documents (ids are kept).
            chunk_size, chunk_overlap: for the default `SentenceSplitter` (characters).
            splitter: any splitter instead (then ``chunk_size``/``chunk_overlap`` are unused).
            embedder: when given, children are indexed hybrid: a `FusionSearcher` (RRF)
                over a `BM25Index` and a `VectorIndex` with this embedder; otherwise BM25.
            child_index: a factory ``children -> searcher`` overriding both defaults.
            parent_store: default a new `ParentStore`.
            k, fetch_k, merge_threshold: as for the constructor.

        Raises:
            ValueError: no parents, duplicate ids, or no parent with any text.
        """
        parents = check_docs(parents)
        if not parents:
            raise ValueError("parents must hold at least one document, got none")
        if splitter is None:
            splitter = SentenceSplitter(chunk_size, chunk_overlap)
        children = split_parents(parents, splitter)
        if not children:
            raise ValueError("no parent has any text to split into children")
        if child_index is not None:
            searcher = child_index(children)
        else:
            searcher = default_child_index(children, embedder)
        if parent_store is None:
            parent_store = ParentStore()
        parent_store.put_many(parents)
        return cls(searcher, parent_store, k=k, fetch_k=fetch_k, splitter=splitter,
                   merge_threshold=merge_threshold)

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        **kwargs: Any,
    ) -> ParentChildSearcher:
        """`from_docs` for raw texts (missing ids become content ids)."""
        return cls.from_docs(make_docs(texts, ids, metadatas), **kwargs)

    # ---------------------------------------------------------------- properties

    @property
    def child_searcher(self) -> Any:
        """The searcher over the children."""
        return self._child_searcher

    @property
    def parent_store(self) -> ParentStoreLike:
        """The parent store."""
        return self._store

    @property
    def k(self) -> int:
        """Default number of parents per search."""
        return self._k

    @property
    def merge_threshold(self) -> float | None:
        """The auto-merge fraction, or ``None`` (always parents)."""
        return self._merge

    def children_of(self, parent_id: str) -> list[str]:
        """The child ids of ``parent_id`` in order (empty for an unknown parent)."""
        return list(self._children.get(parent_id, ()))

    def __len__(self) -> int:
        """Number of parents with children."""
        return len(self._children)

    def __repr__(self) -> str:
        return (
            f"ParentChildSearcher({type(self._child_searcher).__name__}, "
            f"{len(self._children)} parents, k={self._k})"
        )

    # ------------------------------------------------------------------- editing

    def add(self, parents: Iterable[Doc], *, splitter: Any = None) -> list[str]:
        """Store parents, split them and index their children; returns the parent ids.

        Raises:
            ValueError: a parent id already present (nothing is added then).
        """
        parents = check_docs(parents)
        children = split_parents(parents, self._splitter if splitter is None else splitter)
        with self._lock:
            clash = [p.id for p in parents if p.id in self._children or p.id in self._store]
            if clash:
                raise ValueError(
                    f"{len(clash)} parent id(s) already present: {clash[:5]}; "
                    "delete them first to replace those parents"
                )
            child_ids = {c.id for c in children}
            for leaf in self._leaves:
                taken = [i for i in child_ids if i in leaf]
                if taken:
                    raise ValueError(
                        f"child id(s) {sorted(taken)[:5]} already in the child index; "
                        "a parent id must not collide with another parent's child ids"
                    )
            before = self._children
            updated = dict(before)
            for c in children:
                pid = c.metadata[PARENT_ID_KEY]
                updated[pid] = (*updated.get(pid, ()), c.id)
            # Parents first: a search that finds a new child always finds its parent.
            self._store.put_many(parents)
            self._children = updated
            done: list[Any] = []
            try:
                if children:
                    for leaf in self._leaves:
                        leaf.add_docs(children)
                        done.append(leaf)
            except BaseException:
                for leaf in done:  # keep the leaves consistent with each other
                    leaf.delete([c.id for c in children])
                self._children = before
                self._store.delete([p.id for p in parents])
                raise
        return [p.id for p in parents]

    def add_texts(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
    ) -> list[str]:
        """`add` for raw texts; returns the parent ids."""
        return self.add(make_docs(texts, ids, metadatas))

    def delete(self, parent_ids: Iterable[str]) -> None:
        """Remove parents and all their children.

        Raises:
            KeyError: an id that is neither a stored parent nor a parent of indexed
                children (nothing is removed then).
        """
        ids = list(dict.fromkeys(check_id_list(parent_ids, "parent_ids")))
        with self._lock:
            unknown = [i for i in ids if i not in self._children and i not in self._store]
            if unknown:
                raise KeyError(f"{len(unknown)} parent id(s) not present: {unknown[:5]}")
            child_ids = [c for i in ids for c in self._children.get(i, ())]
            for leaf in self._leaves:
                present = [c for c in child_ids if c in leaf]
                if present:
                    leaf.delete(present)
            # Children first: a search never finds a child whose parent is gone.
            self._store.delete(ids)
            gone = set(ids)
            self._children = {p: c for p, c in self._children.items() if p not in gone}

    # ----------------------------------------------------------------- searching

    def search(
        self,
        query: str,
        k: int | None = None,
        *,
        filter: MetadataFilter | None = None,
        fetch_k: int | None = None,
        merge_threshold: float | None = None,
    ) -> list[Hit]:
        """The top ``k`` parents for ``query`` (see the module docstring).

        Args:
            query: passed to the child searcher.
            k: parents to return (default: the constructor's ``k``); with
                auto-merge, results (parents or unmerged children).
            filter: passed to the child searcher: it filters children, which carry
                their parent's metadata.
            fetch_k: children asked for in the first round (this call only).
            merge_threshold: overrides the constructor's auto-merge rule (this call
                only); ``None`` keeps the constructor's.
        """
        check_query(query)
        top = self._k if k is None else check_k(k, "k")
        n = self._fetch_for(top, fetch_k)
        threshold = self._merge if merge_threshold is None else check_merge_threshold(merge_threshold)
        children_of = self._children  # one version for this search; never modified
        # The parents as they were before the child search: a parent deleted while it
        # ran is still found (the child index snapshot may predate the delete).
        before = self._store.snapshot() if isinstance(self._store, ParentStore) else None
        for _ in range(_MAX_DOUBLINGS):
            hits = self._child_searcher.search(query, n, filter=filter)
            items = self._group(hits, threshold, children_of)
            if len(items) >= top or len(hits) < n:
                break
            n *= 2
        return self._resolve(items, top, before)

    def _fetch_for(self, k: int, override: int | None) -> int:
        if override is not None:
            return max(k, check_k(override, "fetch_k"))
        if self._fetch_k is not None:
            return max(k, self._fetch_k)
        return default_parent_fetch_k(k)

    def _group(
        self,
        hits: Sequence[Hit],
        threshold: float | None,
        children_of: Mapping[str, Sequence[str]],
    ) -> list[tuple[str, Any]]:
        """Ordered result items: ("parent", info) or ("child", (hit, info))."""
        groups: dict[str, list[tuple[int, Hit]]] = {}
        for rank, hit in enumerate(hits, 1):
            pid = hit.doc.metadata.get(PARENT_ID_KEY)
            if not isinstance(pid, str):
                raise ValueError(
                    f"child {hit.doc.id!r} has no {PARENT_ID_KEY!r} metadata; every document "
                    "in the child index must name its parent (use split_parents)"
                )
            groups.setdefault(pid, []).append((rank, hit))
        items: list[tuple[int, str, Any]] = []
        for pid, matched in groups.items():
            total = max(len(children_of.get(pid, ())), len(matched))
            info = {
                "parent_id": pid,
                "score": float(matched[0][1].score),
                "best_rank": matched[0][0],
                "matched": len(matched),
                "n_children": total,
                "fraction": len(matched) / total,
                "children": [_child_entry(r, h) for r, h in matched],
            }
            if threshold is None or info["fraction"] >= threshold - 1e-12:
                items.append((matched[0][0], "parent", info))
            else:
                for r, h in matched:
                    items.append((r, "child", (h, info)))
        items.sort(key=lambda t: t[0])
        return [(kind, payload) for _, kind, payload in items]

    def _resolve(
        self, items: list[tuple[str, Any]], top: int, before: Mapping[str, Doc] | None = None
    ) -> list[Hit]:
        out: list[Hit] = []
        wanted = [p["parent_id"] for kind, p in items if kind == "parent"]
        found = dict(zip(wanted, self._store.get_many(wanted))) if wanted else {}
        if before is not None:
            for pid, doc in found.items():
                if doc is None:
                    found[pid] = before.get(pid)
        for kind, payload in items:
            if len(out) >= top:
                break
            if kind == "parent":
                parent = found.get(payload["parent_id"])
                if parent is None:
                    logger.warning(
                        "parent %r of matched children is not in the parent store; skipped",
                        payload["parent_id"],
                    )
                    continue
                out.append(Hit(parent, payload["score"], len(out) + 1,
                               {"parent": {**payload, "merged": True}}))
            else:
                hit, info = payload
                out.append(Hit(hit.doc, float(hit.score), len(out) + 1,
                               {"parent": {**info, "merged": False}}))
        return out

    # --------------------------------------------------------------- persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the parent store and the child index under directory ``path``.

        The child searcher must be a `BM25Index` or a `VectorIndex` (a
        `FusionSearcher` is not saved: save its indexes and the `ParentStore`
        yourself and rebuild it). Query-time settings (``k``, ``fetch_k``,
        ``merge_threshold``) and a custom splitter are not saved.

        Raises:
            TypeError: a parent store or child searcher that cannot be saved.
        """
        from .bm25 import BM25Index
        from .vector import VectorIndex

        child = self._child_searcher
        if not isinstance(child, (BM25Index, VectorIndex)):
            raise TypeError(
                f"save() supports a BM25Index or VectorIndex child searcher, got "
                f"{type(child).__name__}; save its indexes and the parent store separately"
            )
        if not isinstance(self._store, ParentStore):
            raise TypeError(
                f"save() needs a ParentStore, got {type(self._store).__name__}; persist "
                "that store with its own mechanism and save the child index separately"
            )
        with self._lock, atomic_index_dir(path) as tmp:
            w = IndexWriter(tmp)
            self._store._save_into(w.subdirectory("parents"))
            child._save_into(w.subdirectory("children"))
            # The manifest binds both halves: each one's manifest (which checksums its
            # files) is checksummed here, so neither can be swapped for another.
            w.bind("parents")
            w.bind("children")
            w.manifest(
                "parent_child",
                SEARCHER_FORMAT_VERSION,
                {"child_kind": "bm25" if isinstance(child, BM25Index) else "vector"},
            )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        embedder: Any = None,
        k: int = 4,
        fetch_k: int | None = None,
        splitter: Any = None,
        merge_threshold: float | None = None,
    ) -> ParentChildSearcher:
        """Load a searcher saved with `save` (``embedder`` for a dense child index).

        Both halves are checked against the checksums in the top manifest, so neither
        can be replaced by another saved store or index.

        Raises:
            TypeError: ``path`` is not a str or path.
            IndexFormatError: missing, corrupt, foreign, inconsistent or newer-format
                directory.
        """
        return read_index(
            path, kind="parent_child", max_version=SEARCHER_FORMAT_VERSION,
            read=lambda r: cls._from_reader(r, embedder=embedder, k=k, fetch_k=fetch_k,
                                            splitter=splitter, merge_threshold=merge_threshold),
        )

    @classmethod
    def _from_reader(cls, r: IndexReader, *, embedder: Any, **kwargs: Any) -> ParentChildSearcher:
        from .bm25 import BM25Index
        from .bm25 import FORMAT_VERSION as BM25_FORMAT_VERSION
        from .vector import FORMAT_VERSION as VECTOR_FORMAT_VERSION
        from .vector import VectorIndex

        kind = r.field("child_kind", str)
        store = ParentStore._from_reader(
            r.subdir("parents", kind="parent_store", max_version=STORE_FORMAT_VERSION)
        )
        if kind == "bm25":
            child: Any = BM25Index._from_reader(
                r.subdir("children", kind="bm25", max_version=BM25_FORMAT_VERSION)
            )
        elif kind == "vector":
            child = VectorIndex._from_reader(
                r.subdir("children", kind="vector", max_version=VECTOR_FORMAT_VERSION), embedder
            )
        else:
            raise IndexFormatError(f"{r.where('manifest.json')}: unknown child_kind {kind!r}")
        unnamed = [d.id for d in child.docs if not isinstance(d.metadata.get(PARENT_ID_KEY), str)]
        if unnamed:
            raise IndexFormatError(
                f"{r.where('children')}: {len(unnamed)} child chunk(s) have no "
                f"{PARENT_ID_KEY!r} metadata naming their parent, e.g. {unnamed[:3]}"
            )
        return cls(child, store, **kwargs)


def default_child_index(children: list[Doc], embedder: Any = None) -> Any:
    """BM25 over ``children``; with an ``embedder``, RRF of BM25 and dense (`FusionSearcher`)."""
    from .bm25 import BM25Index

    bm25 = BM25Index.from_docs(children)
    if embedder is None:
        return bm25
    from .fusion import FusionSearcher
    from .vector import VectorIndex

    dense = VectorIndex.from_docs(children, embedder=embedder)
    return FusionSearcher([bm25, dense], names=["bm25", "dense"])


def _child_entry(rank: int, hit: Hit) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": hit.doc.id, "rank": rank, "score": float(hit.score)}
    if hit.explanation:
        entry["explanation"] = dict(hit.explanation)
    return entry


