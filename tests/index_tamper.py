"""Test helpers that reach into saved index directories (to damage or forge them)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hybrid_retrievers.persistence import MANIFEST, current_files

__all__ = ["files_of", "rehash", "rebind_pointer", "edit_manifest"]


def files_of(path: Path) -> Path:
    """The directory holding the current version's files."""
    return current_files(path)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rehash(path: Path) -> None:
    """Recompute every checksum (files, sub-manifests, pointer): a consistent forgery."""
    _rehash_dir(files_of(path))
    rebind_pointer(path)


def rebind_pointer(path: Path) -> None:
    """Make the pointer's checksum match the current manifest (nothing else changes)."""
    version = files_of(path)
    pointer_path = path / MANIFEST
    pointer = json.loads(pointer_path.read_text())
    if "current" in pointer:
        pointer["manifest_sha256"] = _sha(version / MANIFEST)
        pointer_path.write_text(json.dumps(pointer))


def _rehash_dir(directory: Path) -> None:
    manifest_path = directory / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    for name, entry in manifest.get("files", {}).items():
        target = directory / name
        if name.endswith("/" + MANIFEST):
            _rehash_dir(target.parent)
        if target.is_file():
            entry["bytes"] = target.stat().st_size
            entry["sha256"] = _sha(target)
    manifest_path.write_text(json.dumps(manifest))


def edit_manifest(path: Path, *, rebind: bool = True, **changes: Any) -> None:
    """Change top-level keys of the current version's manifest (re-binding it by default)."""
    version = files_of(path)
    manifest = json.loads((version / MANIFEST).read_text())
    manifest.update(changes)
    (version / MANIFEST).write_text(json.dumps(manifest))
    if rebind:
        rehash(path)
