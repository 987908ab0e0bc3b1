"""The names and rules of the on-disk layout: pointer, manifests and checksums.

The index path holds a pointer file (``manifest.json``: kind, the ``current`` version
directory and the SHA-256 of that version's manifest); each version's own
``manifest.json`` lists every data file with its size and SHA-256. This module holds
those names, the checks of manifest fields and checksums, and the reading of the pointer
(shared by savers, which need the current version, and loaders).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from .safe_read import IndexFormatError, check_path, parse_json, read_bytes

__all__ = ["FORMAT_NAME", "LAYOUT_VERSION", "LOCK", "MANIFEST", "current_files", "index_kind"]

FORMAT_NAME = "hybrid-retrievers"
MANIFEST = "manifest.json"
LOCK = ".lock"
LAYOUT_VERSION = 2
"""Version of the directory layout (pointer + versioned sub-directories)."""

VERSION_RE = re.compile(r"v(\d{6,})-[0-9a-f]{8}\Z")
HEX64_RE = re.compile(r"[0-9a-f]{64}\Z")
_MAX_POINTER_BYTES = 64 * 1024
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
CHUNK_BYTES = 1 << 24
"""Bytes hashed or written per step for large arrays."""


def current_files(path: str | os.PathLike[str]) -> Path:
    """The directory that holds the files of the index saved at ``path`` now.

    For a format-2 index that is the version the pointer names; for format 1, ``path``
    itself. Meant for inspection and tests: a later save may remove it.
    """
    path = check_path(path)
    pointer = pointer_bytes(path)
    head = parse_json(pointer, path / MANIFEST) if pointer is not None else None
    if isinstance(head, dict) and isinstance(head.get("current"), str) and VERSION_RE.match(
        head["current"]
    ):
        return path / head["current"]
    return path


def index_kind(path: str | os.PathLike[str]) -> str:
    """The kind of index saved at ``path`` (``"bm25"``, ``"fusion"``, ...), read from its
    pointer (format 2) or its manifest (format 1) alone, no data file opened; for code
    that opens several kinds of index folder and must choose a loader before loading.

    Raises:
        IndexFormatError: no index at ``path``, or one not written by hybrid-retrievers
            (no manifest, foreign or unparsable, no kind), naming it.
    """
    path = check_path(path)
    pointer = pointer_bytes(path)
    assert pointer is not None
    kind = pointer_head(pointer, path / MANIFEST).get("kind")
    if not isinstance(kind, str) or not kind:
        raise IndexFormatError(f"{path / MANIFEST} names no index kind (kind={kind!r:.60})")
    return kind


def pointer_head(pointer: bytes, where: Path) -> dict[str, Any]:
    """The parsed pointer (or format-1 manifest) ``where`` holds: a JSON object of our
    format, or an `IndexFormatError` naming ``where``."""
    head = parse_json(pointer, where)
    if not isinstance(head, dict) or head.get("format") != FORMAT_NAME:
        raise IndexFormatError(
            f"{where} is not a hybrid-retrievers manifest (format="
            f"{head.get('format') if isinstance(head, dict) else None!r})"
        )
    return head


def pointer_bytes(path: Path, missing_ok: bool = False) -> bytes | None:
    """The bytes of ``path``'s pointer (or format-1 manifest); a missing or unreadable
    one is an `IndexFormatError` naming what is wrong, or None with ``missing_ok``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise IndexFormatError(f"no index directory at {str(path)!r}") from None
    except OSError as exc:
        raise IndexFormatError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        if missing_ok:
            return None
        raise IndexFormatError(f"no index directory at {str(path)!r} (it is a file)")
    manifest = path / MANIFEST
    if not os.path.lexists(manifest):
        if missing_ok:
            return None
        names = os.listdir(path)
        if LOCK in names:
            raise IndexFormatError(
                f"no complete index at {str(path)!r}: {MANIFEST} is missing (the first save "
                "to this path did not finish)"
            )
        raise IndexFormatError(
            f"{str(path)!r} is not a hybrid-retrievers index: {MANIFEST} is missing"
        )
    try:
        return read_bytes(manifest, MAX_MANIFEST_BYTES)
    except IndexFormatError:
        if missing_ok:
            return None
        raise


def is_our_manifest(path: Path) -> bool:
    """Whether ``path`` is a manifest hybrid-retrievers wrote (so a save may replace
    what is there)."""
    try:
        data = read_bytes(path, MAX_MANIFEST_BYTES)
        return json.loads(data).get("format") == FORMAT_NAME
    except (IndexFormatError, ValueError, AttributeError, RecursionError):
        return False


def current_versions(path: Path) -> tuple[str | None, str | None]:
    """The current and previous versions the pointer names (None when unknown)."""
    try:
        pointer = json.loads(read_bytes(path / MANIFEST, _MAX_POINTER_BYTES))
    except (IndexFormatError, ValueError, RecursionError):
        return None, None
    if not isinstance(pointer, dict):
        return None, None
    names = [pointer.get("current"), pointer.get("previous")]
    current, previous = (n if isinstance(n, str) and VERSION_RE.match(n) else None for n in names)
    return current, previous if current else None


def check_kind(manifest: Mapping[str, Any], kind: str, where: Path) -> None:
    """Refuse a manifest of another kind than ``kind``, naming ``where``."""
    if manifest.get("kind") != kind:
        raise IndexFormatError(
            f"{str(where)!r} holds a {manifest.get('kind')!r} index, not {kind!r}"
        )


def check_version(
    version: Any, max_version: int, where: Path, manifest: Mapping[str, Any]
) -> None:
    """Refuse a ``format_version`` that is not an int >= 1, or newer than this release
    reads (saying to upgrade)."""
    if type(version) is not int or version < 1:
        raise IndexFormatError(f"{where}: invalid format_version {version!r}")
    if version > max_version:
        raise IndexFormatError(
            f"{str(where.parent)!r} was saved in format version {version} by "
            f"hybrid-retrievers {manifest.get('library_version')}; this version reads up "
            f"to {max_version}: upgrade hybrid-retrievers to load it"
        )


def check_size(path: Path, size: int, entry: Mapping[str, Any]) -> None:
    """Refuse a file whose size is not the one ``entry`` (its manifest entry) records."""
    if size != entry["bytes"]:
        raise IndexFormatError(
            f"{path} is truncated or altered: {size} bytes, manifest says {entry['bytes']}"
        )


def check_hash(path: Path, digest: str, entry: Mapping[str, Any]) -> None:
    """Refuse a file whose SHA-256 is not the one ``entry`` records."""
    if digest != entry["sha256"]:
        raise IndexFormatError(f"{path} is corrupt: its checksum does not match the manifest")


def hash_stream(fh: IO[bytes]) -> str:
    """The SHA-256 of the whole of ``fh``, read in `CHUNK_BYTES` blocks."""
    fh.seek(0)
    digest = hashlib.sha256()
    for block in iter(lambda: fh.read(CHUNK_BYTES), b""):
        digest.update(block)
    return digest.hexdigest()
