"""Save and load a fusion of this package's indexes: one folder, one sub-folder per child.

`FusionSearcher.save` / `FusionSearcher.load` and the LangChain and LlamaIndex
``FusionRetriever`` persist through these functions, so the core and both frameworks
write the same format:

``manifest.json``  kind ``"fusion"``: the fusion settings, per child its kind
                   (``"bm25"``, ``"vector"``, ``"sparse"`` or a nested ``"fusion"``), its sub-folder and
                   the saver's per-child settings (such as an adapter's depth), and the
                   checksum of each child's own manifest
``child_0/`` ...   each child saved by its own ``save`` (JSON + ``.npy``, no pickle), and
                   validated by its own ``load``; an adapter that keeps fields beside the
                   core index names the core index's sub-folder in ``index_dir``

The save is atomic (the folder appears complete or not at all) and checksummed: the
fusion's manifest binds each child's manifest, so a child cannot be swapped for another
saved index. Models are never saved: a vector child records its model identity, and
the loader passes the model back in.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..persistence import (
    MANIFEST,
    IndexFormatError,
    IndexReader,
    IndexWriter,
    atomic_index_dir,
    current_files,
    read_index,
)

__all__ = ["CHILD_KINDS", "SavedChild", "child_kind", "core_index_dir", "read_fusion",
           "save_fusion"]

FORMAT_VERSION = 1
CHILD_KINDS = ("bm25", "vector", "sparse", "fusion")
_CHILD_DIR = re.compile(r"child_\d+")

SavedChild = tuple[str, Callable[[Path], None], Mapping[str, Any]]
"""``(kind, save(folder), settings)`` for one child."""


def child_kind(position: int, child: Any, classes: Mapping[str, type], verb: str) -> str:
    """The saved kind of a fusion's child, looked up by its adapter class in ``classes``.

    The core calls this with ``{"bm25": BM25Index, ...}`` and both frameworks' adapters
    with their own ``{"bm25": BM25Retriever, ...}`` (a kind may map to a tuple of
    classes), so they accept and refuse children with the same message.

    Raises:
        TypeError: naming the child, for a class not in ``classes``.
    """
    for kind, cls in classes.items():
        if isinstance(child, cls):
            return kind
    names = [c.__name__ for cls in classes.values()
             for c in (cls if isinstance(cls, tuple) else (cls,))]
    raise TypeError(
        f"cannot {verb} child {position} ({type(child).__name__}): a fusion {verb}s only "
        f"{', '.join(names[:-1])} and {names[-1]} children; persist that child with its "
        "own tools and rebuild the fusion on load"
    )


def save_fusion(
    path: str | os.PathLike[str],
    children: Sequence[SavedChild],
    settings: Mapping[str, Any],
) -> None:
    """Write the children (each by its own ``save``) and the fusion settings to ``path``."""
    with atomic_index_dir(path) as tmp:
        writer = IndexWriter(tmp)
        entries = []
        for i, (kind, save, extra) in enumerate(children):
            if kind not in CHILD_KINDS:
                raise ValueError(f"child kind must be one of {CHILD_KINDS}, got {kind!r}")
            save(tmp / f"child_{i}")
            writer.bind(f"child_{i}")  # the child's manifest, checksummed in the fusion's
            entries.append({"kind": kind, "dir": f"child_{i}", "settings": dict(extra)})
        writer.manifest(
            "fusion", FORMAT_VERSION, {"settings": dict(settings), "children": entries}
        )


def read_fusion(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[tuple[str, Path, dict[str, Any]]]]:
    """``(settings, [(kind, child folder, child settings), ...])`` of a saved fusion.

    Raises:
        IndexFormatError: a missing, foreign or malformed folder.
    """
    def read(reader: IndexReader) -> tuple[dict[str, Any], list[tuple[str, Path, dict[str, Any]]]]:
        settings = reader.field("settings", dict)
        entries = reader.field("children", list)
        children = []
        for entry in entries:
            if (not isinstance(entry, dict) or entry.get("kind") not in CHILD_KINDS
                    or not isinstance(entry.get("dir"), str)
                    or not _CHILD_DIR.fullmatch(entry["dir"])
                    or not isinstance(entry.get("settings"), dict)):
                raise IndexFormatError(f"{path}: bad child entry {entry!r:.120} in manifest.json")
            _check_bound(reader, entry["dir"])
            children.append((entry["kind"], reader.directory / entry["dir"], entry["settings"]))
        if not children:
            raise IndexFormatError(f"{path}: manifest.json lists no children")
        return settings, children

    return read_index(path, kind="fusion", max_version=FORMAT_VERSION, read=read)


def core_index_dir(path: str | os.PathLike[str], child: Path, settings: Mapping[str, Any]) -> Path:
    """The folder of a child's core index: ``child`` itself, or its ``index_dir``
    sub-folder when the saver kept fields beside the index (LlamaIndex's node fields).

    Raises:
        IndexFormatError: an ``index_dir`` other than ``"index"``.
    """
    sub = settings.get("index_dir")
    if sub is None:
        return child
    if sub != "index":
        raise IndexFormatError(f"{path}: bad index_dir {sub!r:.60} in manifest.json")
    return current_files(child) / sub


def _check_bound(reader: IndexReader, name: str) -> None:
    """Refuse a child whose manifest is not the one the fusion's manifest checksummed."""
    entry = reader.manifest["files"].get(f"{name}/{MANIFEST}")
    where = reader.where(f"{name}/{MANIFEST}")
    if not isinstance(entry, dict):
        raise IndexFormatError(f"{reader.where(MANIFEST)} does not bind child {name!r}")
    try:
        data = (reader.directory / name / MANIFEST).read_bytes()
    except OSError as exc:
        raise IndexFormatError(f"{where} cannot be read: {exc.strerror}") from None
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise IndexFormatError(
            f"{where} is not the child saved with this fusion (its checksum differs from "
            "the one recorded when the fusion was saved): it was edited or swapped; "
            "save the fusion again"
        )
