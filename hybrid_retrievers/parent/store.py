"""Parent stores: where `ParentChildSearcher` keeps the parents its children point to.

`ParentStoreLike` is the protocol the searcher needs (four methods); `ParentStore` is
the in-memory implementation, saved as JSON lines (no pickle). Adapters wrap their
framework's document stores in the protocol (e.g. LangChain's ``LangChainParentStore``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from ..document_columns import DocColumns
from ..documents import DocTable, check_docs
from ..persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index
from ..types import Doc
from ..validation import check_id_list

__all__ = ["STORE_FORMAT_VERSION", "ParentStore", "ParentStoreLike", "check_parent_store"]

STORE_FORMAT_VERSION = 1
"""Format version of a saved `ParentStore` directory (manifest kind ``parent_store``)."""

@runtime_checkable
class ParentStoreLike(Protocol):
    """What `ParentChildSearcher` needs from a parent store."""

    def get_many(self, ids: Sequence[str]) -> list[Doc | None]: ...

    def put_many(self, docs: Sequence[Doc]) -> None: ...

    def delete(self, ids: Iterable[str]) -> None: ...

    def __contains__(self, doc_id: object) -> bool: ...


class ParentStore:
    """Parents by id, in memory, in insertion order; saved as JSON lines (no pickle).

    The parents are one `DocColumns` table (columns, not a `Doc` and a dict entry per
    parent; `Doc` objects are made when read). Concurrency: reads (`get`, `get_many`,
    iteration) see one version of the store, before or after any edit; edits build a
    new table and publish it with one reference swap (O(n) per call: batch them),
    serialised by a lock.

    Example:
        >>> store = ParentStore([Doc("p1", "A whole section.")])
        >>> store.get("p1").text, len(store)
        ('A whole section.', 1)
    """

    def __init__(self, docs: Iterable[Doc] = ()) -> None:
        self._docs = DocTable(DocColumns.empty())
        self._lock = threading.RLock()
        self.put_many(check_docs(docs))

    def put_many(self, docs: Sequence[Doc]) -> None:
        """Insert or replace parents (by id): a replaced parent keeps its place."""
        docs = check_docs(docs)
        with self._lock:
            if docs:
                table = self._docs  # copy-on-write: readers keep the old table
                self._docs = DocTable(table.docs.placed(docs, table.upsert_rows(docs)))

    def add(self, docs: Iterable[Doc]) -> list[str]:
        """Insert parents; an id already stored is an error (nothing is added then)."""
        docs = check_docs(docs)
        with self._lock:
            clash = [i for i in docs.ids() if i in self._docs.positions]
            if clash:
                raise ValueError(
                    f"{len(clash)} parent id(s) already stored: {clash[:5]}; delete them first"
                )
            self.put_many(docs)
        return docs.ids()

    def get(self, doc_id: str) -> Doc:
        """The parent with id ``doc_id``; KeyError when absent."""
        row = self._docs.positions.get(doc_id)
        if row is None:
            raise KeyError(f"no parent with id {doc_id!r} in the store")
        return self._docs.docs[row]

    def get_many(self, ids: Sequence[str]) -> list[Doc | None]:
        """The parents for ``ids`` in order, ``None`` for unknown ids (one version)."""
        table = self._docs
        ids = list(ids)
        if not ids or not len(table):
            return [None] * len(ids)
        rows = table.positions.find(ids).tolist()
        found = iter(table.docs.at([r for r in rows if r >= 0]))
        return [next(found) if r >= 0 else None for r in rows]

    def snapshot(self) -> Mapping[str, Doc]:
        """A read-only view of the current version: later edits do not change it."""
        return _ById(self._docs)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove parents; unknown ids are ignored."""
        ids = check_id_list(ids)
        with self._lock:
            table = self._docs
            rows = table.positions.find(ids) if ids and len(table) else np.zeros(0, np.int64)
            rows = rows[rows >= 0]
            if rows.size:
                alive = np.ones(len(table), dtype=bool)
                alive[rows] = False
                self._docs = DocTable(table.docs.kept(alive))

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs.positions

    def __len__(self) -> int:
        return len(self._docs)

    def __iter__(self) -> Iterator[Doc]:
        return iter(self._docs.docs)

    def __repr__(self) -> str:
        return f"ParentStore({len(self._docs)} parents)"

    @property
    def ids(self) -> list[str]:
        """Stored ids, in insertion order."""
        return self._docs.docs.ids()

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
            w.docs("parents", self._docs.docs)
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


class _ById(Mapping[str, Doc]):
    """A read-only id -> parent view of one version of a `ParentStore`."""

    __slots__ = ("_table",)

    def __init__(self, table: DocTable) -> None:
        self._table = table

    def __getitem__(self, doc_id: str) -> Doc:
        row = self._table.positions.get(doc_id)
        if row is None:
            raise KeyError(doc_id)
        return self._table.docs[row]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table.docs.ids())

    def __len__(self) -> int:
        return len(self._table)


def check_parent_store(store: ParentStoreLike | None) -> ParentStoreLike:
    """``store``, or a new `ParentStore` for ``None``; TypeError if it lacks a method."""
    if store is None:
        return ParentStore()
    for method in ("get_many", "put_many", "delete", "__contains__"):
        if not callable(getattr(store, method, None)):
            raise TypeError(
                f"parent_store must implement get_many, put_many, delete and `in` "
                f"(see ParentStoreLike); {type(store).__name__} lacks {method}"
            )
    return store
