"""`ParentChildSearcher`: search child chunks, return the distinct parents they came from.

The searcher owns the edits (``add``/``delete`` by parent id, reaching the parent store
and every child index) and the search loop (ask for ``fetch_k`` children, double until
``k`` parents are found). Grouping and auto-merge are in `.grouping`, the child-index
discovery in `.leaves` and save/load in `.saving`. The one recipe for a parent/child
searcher is here too (`ParentChildSearcher.from_docs`: split, index the children, store
the parents; `from_texts` its raw-text form): the LangChain and LlamaIndex
``ParentDocumentRetriever`` factories convert their documents, stores and indexes and
call it instead of repeating these steps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from ..documents import check_docs, make_docs
from ..text.splitting import (
    CHILD_INDEX_KEY,
    PARENT_ID_KEY,
    START_INDEX_KEY,
    SentenceSplitter,
    split_parents,
)
from ..types import Doc, Hit, MetadataFilter
from ..validation import check_id_list, check_k, check_merge_threshold, check_query
from .grouping import group_hits, resolve_items
from .leaves import check_child_searcher, existing_children
from .saving import load_parent_child, save_parent_child
from .store import ParentStore, ParentStoreLike, check_parent_store

__all__ = ["SOURCE_ID_KEY", "ParentChildSearcher", "default_child_index",
           "default_parent_fetch_k", "split_into_parents"]

_MAX_DOUBLINGS = 30

SOURCE_ID_KEY = "source_id"
"""Metadata key of a parent cut by ``parent_splitter``: the id of the document it came from."""

_CHILD_KEYS = (PARENT_ID_KEY, CHILD_INDEX_KEY, START_INDEX_KEY)


def default_parent_fetch_k(k: int) -> int:
    """Children asked for first, for ``k`` parents: ``max(4 * k, 20)``.

    Several children of one parent often match together, so asking for ``k`` children
    rarely yields ``k`` parents; four per parent usually does in one round, and a BM25
    or exact dense search for 40 instead of 10 costs almost nothing. When it does not,
    the searcher doubles the request until it does.
    """
    return max(4 * k, 20)


def default_child_index(children: list[Doc], embedder: Any = None) -> Any:
    """BM25 over ``children``; with an ``embedder``, the hybrid recipe over them
    (`FusionSearcher.hybrid`: RRF of BM25 and dense)."""
    if embedder is None:
        from ..bm25.index import BM25Index

        return BM25Index.from_docs(children)
    from ..fusion.searcher import FusionSearcher

    return FusionSearcher.hybrid([c.text for c in children], embedder,
                                 [c.id for c in children], [c.metadata for c in children])


def split_into_parents(docs: Iterable[Doc], parent_splitter: Any) -> list[Doc]:
    """Cut whole documents into parents (LangChain's ``parent_splitter`` step).

    Each parent chunk gets id ``"<document id>:p<i>"`` and its document's metadata plus
    ``source_id`` (the document's id), so the chunks can be traced back.
    """
    out = []
    for chunk in split_parents(docs, parent_splitter):
        metadata = {k: v for k, v in chunk.metadata.items() if k not in _CHILD_KEYS}
        source = chunk.metadata[PARENT_ID_KEY]
        metadata[SOURCE_ID_KEY] = source
        position = chunk.metadata[CHILD_INDEX_KEY]
        out.append(Doc(f"{source}:p{position}", chunk.text, metadata))
    return out


def _check_children(children: list[Doc], parent_ids: set[str]) -> list[Doc]:
    """``children`` when each names one of ``parent_ids`` under ``parent_id``; else ValueError."""
    for child in children:
        pid = child.metadata.get(PARENT_ID_KEY)
        if pid not in parent_ids:
            raise ValueError(
                f"child {child.id!r} names parent {pid!r} under {PARENT_ID_KEY!r}; each "
                "child passed to add() must name one of the parents added with it"
            )
    return children


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
        self._leaves = check_child_searcher(child_searcher)
        self._child_searcher = child_searcher
        self._store = check_parent_store(parent_store)
        self._k = check_k(k, "k")
        self._fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        self._splitter = SentenceSplitter() if splitter is None else splitter
        self._merge = check_merge_threshold(merge_threshold)
        self._lock = threading.RLock()
        # parent id -> child ids; replaced (never modified) by edits, so a search can
        # read it without a lock.
        self._children: dict[str, tuple[str, ...]] = {
            pid: tuple(kids) for pid, kids in existing_children(self._leaves).items()
        }

    @classmethod
    def from_docs(
        cls,
        parents: Iterable[Doc],
        *,
        chunk_size: int = 400,
        chunk_overlap: int = 50,
        splitter: Any = None,
        parent_splitter: Any = None,
        embedder: Any = None,
        child_index: Callable[[list[Doc]], Any] | None = None,
        child_searcher: Any = None,
        parent_store: ParentStoreLike | None = None,
        k: int = 4,
        fetch_k: int | None = None,
        merge_threshold: float | None = None,
    ) -> Self:
        """Split ``parents``, index the children and store the parents.

        Args:
            parents: the parent documents (ids are kept).
            chunk_size, chunk_overlap: for the default `SentenceSplitter` (characters).
            splitter: any splitter instead (then ``chunk_size``/``chunk_overlap`` are unused).
            parent_splitter: cut ``parents`` into smaller parents first (any splitter);
                see `split_into_parents` for their ids and ``source_id`` metadata.
            embedder: when given, children are indexed hybrid: a `FusionSearcher` (RRF)
                over a `BM25Index` and a `VectorIndex` with this embedder; otherwise BM25.
            child_index: a factory ``children -> searcher`` overriding both defaults.
            child_searcher: an existing editable index (or `FusionSearcher`) to add the
                children to instead of building one (``embedder`` is then unused); the
                parents are added as by `ParentChildSearcher.add`.
            parent_store: default a new `ParentStore`.
            k, fetch_k, merge_threshold: as for the constructor.

        Raises:
            ValueError: no parents, duplicate ids, no parent with any text (when the
                child index is built here), or both ``child_index`` and ``child_searcher``.
        """
        if child_index is not None and child_searcher is not None:
            raise ValueError(
                "pass child_index= (a factory) or child_searcher= (an index), not both")
        parents = check_docs(parents)
        if not parents:
            raise ValueError("parents must hold at least one document, got none")
        if parent_splitter is not None:
            parents = split_into_parents(parents, parent_splitter)
        if splitter is None:
            splitter = SentenceSplitter(chunk_size, chunk_overlap)
        options = {"k": k, "fetch_k": fetch_k, "splitter": splitter,
                   "merge_threshold": merge_threshold}
        if child_searcher is not None:
            searcher = cls(child_searcher, parent_store, **options)
            searcher.add(parents)
            return searcher
        children = split_parents(parents, splitter)
        if not children:
            raise ValueError("no parent has any text to split into children")
        index = default_child_index(children, embedder) if child_index is None \
            else child_index(children)
        parent_store = check_parent_store(parent_store)
        parent_store.put_many(parents)
        return cls(index, parent_store, **options)

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        **kwargs: Any,
    ) -> Self:
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

    def add(
        self,
        parents: Iterable[Doc],
        *,
        splitter: Any = None,
        children: Iterable[Doc] | None = None,
        store_parents: bool = True,
    ) -> list[str]:
        """Store parents, split them and index their children; returns the parent ids.

        Args:
            parents: the parents (ids kept).
            splitter: cuts them instead of the constructor's splitter (this call only).
            children: the parents' children already cut (each naming its parent under
                ``parent_id`` metadata), indexed as given instead of splitting: a
                framework that cuts children its own way (LangChain's
                ``child_splitter.split_documents``) keeps its layout.
            store_parents: ``False`` when the parents are already in the parent store
                (LangChain's ``add_to_docstore=False``): only their children are indexed.

        Raises:
            ValueError: a parent id already present (in the parent store, unless
                ``store_parents`` is ``False``, or with indexed children), or a child
                naming no parent of this call (nothing is added then).
        """
        parents = check_docs(parents)
        if children is None:
            children = split_parents(parents, self._splitter if splitter is None else splitter)
        else:
            children = _check_children(check_docs(children), {p.id for p in parents})
        with self._lock:
            clash = [p.id for p in parents if p.id in self._children
                     or (store_parents and p.id in self._store)]
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
            if store_parents:
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
                if store_parents:
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
        refetch: bool = True,
    ) -> list[Hit]:
        """The top ``k`` parents for ``query`` (provenance: see `hybrid_retrievers.parent`).

        Args:
            query: passed to the child searcher.
            k: parents to return (default: the constructor's ``k``); with
                auto-merge, results (parents or unmerged children).
            filter: passed to the child searcher: it filters children, which carry
                their parent's metadata.
            fetch_k: children asked for in the first round (this call only).
            merge_threshold: overrides the constructor's auto-merge rule (this call
                only); ``None`` keeps the constructor's.
            refetch: ``True`` asks for more children until ``k`` parents are found;
                ``False`` makes one round of ``fetch_k`` children and returns the
                parents they name (at most ``k``): LangChain's ``MultiVectorRetriever``
                semantics, where ``search_kwargs["k"]`` counts children.
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
            items = group_hits(hits, threshold, children_of)
            if not refetch or len(items) >= top or len(hits) < n:
                break
            n *= 2
        return resolve_items(items, top, self._store, before)

    def _fetch_for(self, k: int, override: int | None) -> int:
        if override is not None:
            return max(k, check_k(override, "fetch_k"))
        if self._fetch_k is not None:
            return max(k, self._fetch_k)
        return default_parent_fetch_k(k)

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
        with self._lock:
            save_parent_child(path, self._child_searcher, self._store)

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
        return load_parent_child(
            path,
            lambda child, store: cls(child, store, k=k, fetch_k=fetch_k, splitter=splitter,
                                     merge_threshold=merge_threshold),
            embedder=embedder,
        )
