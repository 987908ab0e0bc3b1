"""Index directories as plain data: a JSON manifest, ``.npy`` arrays and JSON lines.

Nothing here can run code on load: arrays are read with ``allow_pickle=False``, text
is JSON, and every file is checked against the manifest (size and SHA-256) before it
is trusted. Saves are atomic: the new directory is written beside the old one and
swapped in, so a crash mid-save leaves the previous save intact.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .types import Doc

__all__ = [
    "FORMAT_NAME",
    "IndexFormatError",
    "IndexWriter",
    "IndexReader",
    "atomic_index_dir",
]

FORMAT_NAME = "hybrid-retrievers"
MANIFEST = "manifest.json"


class IndexFormatError(ValueError):
    """A saved index is missing, corrupt, truncated, foreign or from a newer version."""


class IndexWriter:
    """Writes the files of one index into a (temporary) directory and records them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._files: dict[str, dict[str, Any]] = {}

    def array(self, name: str, array: NDArray[Any]) -> None:
        """Save ``array`` as ``name.npy`` (never pickled)."""
        if array.dtype.hasobject:
            raise TypeError(f"array {name!r} has dtype object, which cannot be saved safely")
        path = self.directory / f"{name}.npy"
        np.save(path, np.ascontiguousarray(array), allow_pickle=False)
        self._record(path.name, {"dtype": array.dtype.str, "shape": list(array.shape)})

    def json(self, name: str, value: Any) -> None:
        """Save ``value`` as ``name.json``."""
        path = self.directory / f"{name}.json"
        path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
        self._record(path.name, {})

    def docs(self, name: str, docs: Iterable[Doc]) -> None:
        """Save documents as JSON lines; metadata must be JSON data (nothing is coerced)."""
        path = self.directory / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for doc in docs:
                try:
                    line = json.dumps(
                        {"id": doc.id, "text": doc.text, "metadata": dict(doc.metadata)},
                        ensure_ascii=False,
                        allow_nan=False,
                    )
                except (TypeError, ValueError) as exc:
                    raise TypeError(
                        f"metadata of document {doc.id!r} is not JSON-serialisable ({exc}); "
                        "store only str, int, float, bool, None, lists and dicts in metadata "
                        "to save the index"
                    ) from None
                fh.write(line + "\n")
        self._record(path.name, {})

    def manifest(self, kind: str, format_version: int, payload: Mapping[str, Any]) -> None:
        """Write the manifest last: it lists every file with its size and checksum."""
        from . import __version__

        manifest = {
            "format": FORMAT_NAME,
            "kind": kind,
            "format_version": format_version,
            "library_version": __version__,
            **payload,
            "files": self._files,
        }
        (self.directory / MANIFEST).write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8"
        )

    def _record(self, filename: str, extra: dict[str, Any]) -> None:
        path = self.directory / filename
        self._files[filename] = {"bytes": path.stat().st_size, "sha256": _sha256(path), **extra}


class IndexReader:
    """Reads and validates an index directory written by `IndexWriter`."""

    def __init__(self, directory: str | os.PathLike[str], *, kind: str, max_version: int):
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise IndexFormatError(f"no index directory at {str(self.directory)!r}")
        manifest_path = self.directory / MANIFEST
        if not manifest_path.is_file():
            raise IndexFormatError(
                f"{str(self.directory)!r} is not a hybrid-retrievers index: {MANIFEST} is missing"
            )
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise IndexFormatError(f"{manifest_path} is not valid JSON: {exc}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
            raise IndexFormatError(
                f"{manifest_path} is not a hybrid-retrievers manifest (format="
                f"{manifest.get('format') if isinstance(manifest, dict) else None!r})"
            )
        if manifest.get("kind") != kind:
            raise IndexFormatError(
                f"{str(self.directory)!r} holds a {manifest.get('kind')!r} index, not {kind!r}"
            )
        version = manifest.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise IndexFormatError(f"{manifest_path}: invalid format_version {version!r}")
        if version > max_version:
            raise IndexFormatError(
                f"{str(self.directory)!r} was saved in format version {version} by "
                f"hybrid-retrievers {manifest.get('library_version')}; this version reads up "
                f"to {max_version}: upgrade hybrid-retrievers to load it"
            )
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise IndexFormatError(f"{manifest_path}: 'files' must be an object")
        self.manifest: dict[str, Any] = manifest
        self._files: dict[str, Any] = files

    def field(self, key: str, kind: type | tuple[type, ...]) -> Any:
        """A manifest value of the expected type, or a clear error."""
        value = self.manifest.get(key)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise IndexFormatError(
                f"{self.directory / MANIFEST}: {key!r} must be {_kind_name(kind)}, got {value!r}"
            )
        return value

    def array(
        self,
        name: str,
        *,
        dtype_kind: str,
        ndim: int,
        length: int | None = None,
        mmap: bool = False,
    ) -> NDArray[Any]:
        """Load ``name.npy``, checking checksum (unless mmap), dtype kind, rank and length."""
        filename = f"{name}.npy"
        path = self._checked(filename, verify_hash=not mmap)
        try:
            array = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
        except (ValueError, OSError, EOFError) as exc:
            raise IndexFormatError(f"{path} is not a readable .npy array: {exc}") from None
        if array.dtype.kind not in dtype_kind or array.ndim != ndim:
            raise IndexFormatError(
                f"{path}: expected a {ndim}-d array of kind {dtype_kind!r}, "
                f"got dtype {array.dtype} with shape {array.shape}"
            )
        if length is not None and array.shape[0] != length:
            raise IndexFormatError(f"{path}: expected {length} rows, found {array.shape[0]}")
        return array

    def json(self, name: str) -> Any:
        """Load ``name.json``."""
        path = self._checked(f"{name}.json")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise IndexFormatError(f"{path} is not valid JSON: {exc}") from None

    def docs(self, name: str) -> Iterator[Doc]:
        """Yield the documents of ``name.jsonl``; errors name the line."""
        path = self._checked(f"{name}.jsonl")
        with path.open("r", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                try:
                    row = json.loads(line)
                    doc = Doc(row["id"], row["text"], row["metadata"])
                except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as exc:
                    raise IndexFormatError(f"{path}, line {lineno}: bad document ({exc})") from None
                yield doc

    def _checked(self, filename: str, verify_hash: bool = True) -> Path:
        entry = self._files.get(filename)
        path = self.directory / filename
        if not isinstance(entry, dict):
            raise IndexFormatError(f"{self.directory / MANIFEST} does not list {filename!r}")
        if not path.is_file():
            raise IndexFormatError(f"{path} is missing")
        if path.stat().st_size != entry.get("bytes"):
            raise IndexFormatError(
                f"{path} is truncated or altered: {path.stat().st_size} bytes, "
                f"manifest says {entry.get('bytes')}"
            )
        if verify_hash and _sha256(path) != entry.get("sha256"):
            raise IndexFormatError(f"{path} is corrupt: its checksum does not match the manifest")
        return path


@contextlib.contextmanager
def atomic_index_dir(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary directory that replaces ``target`` when the block succeeds.

    ``target`` may be absent or an earlier index; any other existing path is refused,
    so a typo cannot delete a user's folder.
    """
    target = Path(target)
    if target.exists():
        if not target.is_dir() or (
            any(target.iterdir()) and not (target / MANIFEST).is_file()
        ):
            raise FileExistsError(
                f"{str(target)!r} exists and is not a hybrid-retrievers index; "
                "choose a new path or remove it first"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.rmdir(old)
            os.rename(target, old)
        os.rename(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__
