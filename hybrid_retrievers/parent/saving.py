"""Saving and loading a parent/child searcher: its `ParentStore` and its child index.

The directory holds ``parents/`` (a saved `ParentStore`) and ``children/`` (a saved
`BM25Index` or `VectorIndex`); the top manifest (kind ``parent_child``) checksums both
halves' manifests, so neither can be swapped for another saved store or index.
`ParentChildSearcher.save` and `ParentChildSearcher.load` call these functions.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from ..persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index
from ..text.splitting import PARENT_ID_KEY
from .store import STORE_FORMAT_VERSION, ParentStore, ParentStoreLike

__all__ = ["SEARCHER_FORMAT_VERSION", "load_parent_child", "save_parent_child"]

SEARCHER_FORMAT_VERSION = 1
"""Format version of a saved parent/child directory (manifest kind ``parent_child``)."""

S = TypeVar("S")


def save_parent_child(
    path: str | os.PathLike[str], child: Any, store: ParentStoreLike
) -> None:
    """Write ``store`` and the child index ``child`` under directory ``path``, atomically.

    Raises:
        TypeError: ``child`` is not a `BM25Index` / `VectorIndex`, or ``store`` is not a
            `ParentStore`.
    """
    from ..bm25 import BM25Index
    from ..vector import VectorIndex

    if not isinstance(child, (BM25Index, VectorIndex)):
        raise TypeError(
            f"save() supports a BM25Index or VectorIndex child searcher, got "
            f"{type(child).__name__}; save its indexes and the parent store separately"
        )
    if not isinstance(store, ParentStore):
        raise TypeError(
            f"save() needs a ParentStore, got {type(store).__name__}; persist "
            "that store with its own mechanism and save the child index separately"
        )
    with atomic_index_dir(path) as tmp:
        w = IndexWriter(tmp)
        store._save_into(w.subdirectory("parents"))
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


def load_parent_child(
    path: str | os.PathLike[str],
    build: Callable[[Any, ParentStore], S],
    *,
    embedder: Any = None,
) -> S:
    """Read a directory written by `save_parent_child`; ``build(child, store)`` makes the searcher.

    Raises:
        TypeError: ``path`` is not a str or path.
        IndexFormatError: missing, corrupt, foreign, inconsistent or newer-format
            directory.
    """
    return read_index(
        path, kind="parent_child", max_version=SEARCHER_FORMAT_VERSION,
        read=lambda r: build(*_read_halves(r, embedder)),
    )


def _read_halves(r: IndexReader, embedder: Any) -> tuple[Any, ParentStore]:
    from ..bm25 import FORMAT_VERSION as BM25_FORMAT_VERSION
    from ..bm25 import BM25Index
    from ..vector import FORMAT_VERSION as VECTOR_FORMAT_VERSION
    from ..vector import VectorIndex

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
    return child, store
