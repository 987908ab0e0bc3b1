"""Save and load a fusion of this package's indexes: one folder, one sub-folder per child.

The LangChain and LlamaIndex fusion retrievers (`HybridRetriever`, `FusionRetriever`)
persist through these two functions, so both frameworks write the same format:

``manifest.json``  kind ``"fusion"``: the fusion settings, and per child its kind
                   (``"bm25"``, ``"vector"`` or a nested ``"fusion"``), its sub-folder and
                   the adapter's per-child settings (such as its depth)
``child_0/`` ...   each child saved by its own index's ``save`` (JSON + ``.npy``, no
                   pickle), and validated by its own ``load``

The save is atomic (the folder appears complete or not at all). Models are never saved:
a vector child records its model identity, and the loader passes the model back in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index

__all__ = ["CHILD_KINDS", "SavedChild", "child_kind", "save_fusion", "read_fusion"]

FORMAT_VERSION = 1
CHILD_KINDS = ("bm25", "vector", "fusion")
_CHILD_DIR = re.compile(r"child_\d+")

SavedChild = tuple[str, Callable[[Path], None], Mapping[str, Any]]
"""``(kind, save(folder), settings)`` for one child."""



def child_kind(position: int, child: Any, classes: Mapping[str, type], verb: str) -> str:
    """The saved kind of a fusion's child, looked up by its adapter class in ``classes``.

    Both frameworks' adapters call this with their own ``{"bm25": BM25Retriever, ...}``,
    so they accept and refuse the same children with the same message.

    Raises:
        TypeError: naming the child, for a class not in ``classes``.
    """
    for kind, cls in classes.items():
        if isinstance(child, cls):
            return kind
    names = [cls.__name__ for cls in classes.values()]
    raise TypeError(
        f"cannot {verb} child {position} ({type(child).__name__}): a fusion {verb}s only "
        f"{', '.join(names[:-1])} and {names[-1]} (HybridRetriever too) children; persist "
        "that retriever with its own tools and rebuild the fusion on load"
    )

def save_fusion(
    path: str | os.PathLike[str],
    children: Sequence[SavedChild],
    settings: Mapping[str, Any],
) -> None:
    """Write the children (each by its own ``save``) and the fusion settings to ``path``."""
    with atomic_index_dir(path) as tmp:
        entries = []
        for i, (kind, save, extra) in enumerate(children):
            if kind not in CHILD_KINDS:
                raise ValueError(f"child kind must be one of {CHILD_KINDS}, got {kind!r}")
            save(tmp / f"child_{i}")
            entries.append({"kind": kind, "dir": f"child_{i}", "settings": dict(extra)})
        IndexWriter(tmp).manifest(
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
            children.append((entry["kind"], reader.directory / entry["dir"], entry["settings"]))
        if not children:
            raise IndexFormatError(f"{path}: manifest.json lists no children")
        return settings, children

    return read_index(path, kind="fusion", max_version=FORMAT_VERSION, read=read)
