"""Loading: `read_index` (pointer, retry on a concurrent save) and `IndexReader`.

`IndexReader` validates one version directory (or a format-1 directory): the manifest
against the pointer's checksum, then each file's size and SHA-256 before its bytes are
trusted. Errors name the file and the problem and are always `IndexFormatError`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..types import Doc
from .manifest import (
    FORMAT_NAME,
    HEX64_RE,
    LAYOUT_VERSION,
    MANIFEST,
    MAX_MANIFEST_BYTES,
    VERSION_RE,
    check_hash,
    check_kind,
    check_size,
    check_version,
    hash_stream,
    pointer_bytes,
    pointer_head,
)
from .safe_read import (
    SURROGATE_ESCAPE,
    IndexFormatError,
    check_directory,
    check_path,
    open_regular,
    parse_json,
    read_bytes,
    read_npy_header,
)

__all__ = ["IndexReader", "read_index"]

_LOAD_ATTEMPTS = 8

T = TypeVar("T")


def read_index(
    path: str | os.PathLike[str],
    *,
    kind: str,
    max_version: int,
    read: Callable[[IndexReader], T],
) -> T:
    """Open the index at ``path`` and pass its reader to ``read``.

    When the version being read is replaced and removed by concurrent saves (the load
    fails and the pointer has changed meanwhile), the load starts again on the new
    version, so a loader racing a saver always gets one complete version.
    """
    path = check_path(path)
    for attempt in range(_LOAD_ATTEMPTS):
        pointer = pointer_bytes(path)
        try:
            return read(_reader_for(path, pointer, kind=kind, max_version=max_version))
        except IndexFormatError:
            if attempt + 1 < _LOAD_ATTEMPTS and pointer_bytes(path, missing_ok=True) != pointer:
                continue
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def _reader_for(path: Path, pointer: bytes | None, *, kind: str, max_version: int) -> IndexReader:
    assert pointer is not None
    where = path / MANIFEST
    head = pointer_head(pointer, where)
    if "current" not in head:  # format 1: the data files are in the path itself
        return IndexReader(
            path, kind=kind, max_version=max_version, manifest_bytes=pointer, top_level=True
        )
    check_kind(head, kind, path)
    version = head.get("format_version")
    check_version(version, LAYOUT_VERSION, where, head)
    current, digest = head.get("current"), head.get("manifest_sha256")
    if not isinstance(current, str) or not VERSION_RE.match(current):
        raise IndexFormatError(f"{where}: invalid 'current' version {current!r}")
    if not isinstance(digest, str) or not HEX64_RE.match(digest):
        raise IndexFormatError(f"{where}: invalid 'manifest_sha256' {digest!r}")
    return IndexReader(
        path / current, kind=kind, max_version=max_version, manifest_sha256=digest,
        display=path,
    )


class IndexReader:
    """Reads and validates one index directory (a version, or a format-1 directory).

    Errors name the file and the problem and are always `IndexFormatError`.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        kind: str,
        max_version: int,
        manifest_sha256: str | None = None,
        manifest_bytes: bytes | None = None,
        display: Path | None = None,
        top_level: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.display = display if display is not None else self.directory
        self.bound = manifest_sha256 is not None
        """Whether the manifest itself is checksummed (format 2)."""
        check_directory(self.directory, may_be_link=top_level)
        manifest_path = self.directory / MANIFEST
        if manifest_bytes is None:
            if not os.path.lexists(manifest_path):
                raise IndexFormatError(
                    f"{str(self.display)!r} is not a hybrid-retrievers index: "
                    f"{MANIFEST} is missing"
                )
            manifest_bytes = read_bytes(manifest_path, MAX_MANIFEST_BYTES)
        if manifest_sha256 is not None and (
            hashlib.sha256(manifest_bytes).hexdigest() != manifest_sha256
        ):
            raise IndexFormatError(
                f"{manifest_path} is corrupt or was edited: its checksum does not match "
                f"the one recorded when it was saved"
            )
        manifest = parse_json(manifest_bytes, manifest_path)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
            raise IndexFormatError(
                f"{manifest_path} is not a hybrid-retrievers manifest (format="
                f"{manifest.get('format') if isinstance(manifest, dict) else None!r})"
            )
        check_kind(manifest, kind, self.display)
        check_version(manifest.get("format_version"), max_version, manifest_path, manifest)
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise IndexFormatError(f"{manifest_path}: 'files' must be an object")
        for name, entry in files.items():
            if not (
                isinstance(entry, dict)
                and type(entry.get("bytes")) is int
                and entry["bytes"] >= 0
                and isinstance(entry.get("sha256"), str)
                and HEX64_RE.match(entry["sha256"])
            ):
                raise IndexFormatError(
                    f"{manifest_path}: the entry for {name!r} must hold an int 'bytes' >= 0 "
                    f"and a 64-hex-digit 'sha256', got {entry!r:.120}"
                )
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

    def count(self, key: str) -> int:
        """A manifest count: an int >= 0."""
        value = self.field(key, int)
        if value < 0:
            raise IndexFormatError(
                f"{self.directory / MANIFEST}: {key!r} must be >= 0, got {value}"
            )
        return value

    def where(self, filename: str | None = None) -> str:
        """The path to name in an error message."""
        return str(self.directory / filename) if filename else str(self.directory)

    def array(
        self,
        name: str,
        *,
        dtype_kind: str,
        ndim: int,
        length: int | None = None,
        mmap: bool = False,
        verify: bool = False,
    ) -> NDArray[Any]:
        """Load ``name.npy``: header, size, dtype kind, rank and length are always checked.

        Read into memory, the file is checksummed in the same pass; memory-mapped, only
        when ``verify`` (hashing reads the whole file, which a memory map avoids).
        """
        filename = f"{name}.npy"
        entry = self._entry(filename)
        path = self.directory / filename
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            check_size(path, size, entry)
            dtype, shape, offset = read_npy_header(fh, path)
            if dtype.kind not in dtype_kind or len(shape) != ndim:
                raise IndexFormatError(
                    f"{path}: expected a {ndim}-d array of kind {dtype_kind!r}, "
                    f"got dtype {dtype} with shape {shape}"
                )
            if length is not None and shape[0] != length:
                raise IndexFormatError(f"{path}: expected {length} rows, found {shape[0]}")
            nbytes = dtype.itemsize
            for n in shape:
                nbytes *= n
            if offset + nbytes != size:
                raise IndexFormatError(
                    f"{path}: its header declares shape {shape} of {dtype} ({nbytes} bytes of "
                    f"data) but the file holds {size - offset} bytes after the header"
                )
            if mmap:
                if verify:
                    check_hash(path, hash_stream(fh), entry)
                if nbytes == 0:
                    return np.zeros(shape, dtype=dtype)
                try:
                    return np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=shape)
                except (OSError, ValueError) as exc:
                    raise IndexFormatError(f"{path} cannot be memory-mapped: {exc}") from None
            digest = hashlib.sha256()
            fh.seek(0)
            digest.update(fh.read(offset))
            array = np.empty(shape, dtype=dtype)
            if nbytes:
                flat = memoryview(array.reshape(-1).view(np.uint8))
                got = 0
                while got < nbytes:
                    n = fh.readinto(flat[got:])
                    if not n:
                        raise IndexFormatError(f"{path} is truncated while being read")
                    got += n
                digest.update(flat)
            check_hash(path, digest.hexdigest(), entry)
            return array

    def checksum(self, filename: str) -> str:
        """The SHA-256 the manifest records for ``filename``."""
        return str(self._entry(filename)["sha256"])

    def json(self, name: str) -> Any:
        """Load ``name.json`` (checksummed, then parsed)."""
        path = self.directory / f"{name}.json"
        return parse_json(self._checked_bytes(path.name), path)

    def docs(self, name: str) -> Iterator[Doc]:
        """Yield the documents of ``name.jsonl``; errors name the file and line."""
        from ..documents import check_unicode

        path = self.directory / f"{name}.jsonl"
        data = self._checked_bytes(path.name)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            lineno = data.count(b"\n", 0, exc.start) + 1
            raise IndexFormatError(
                f"{path}, line {lineno}: bad document (not valid UTF-8: {exc.reason})"
            ) from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        # Only a \uD800-\uDFFF escape can decode to a lone surrogate (the writer never
        # writes one), so only lines holding such an escape need the full check.
        suspects = ("\\ud" in text or "\\uD" in text) and (
            SURROGATE_ESCAPE.search(text) is not None
        )
        for lineno, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                if type(row) is not dict:
                    raise TypeError(f"expected a JSON object, got {type(row).__name__}")
                doc = Doc(row["id"], row["text"], row["metadata"])
                if suspects and SURROGATE_ESCAPE.search(line):
                    check_unicode(doc.id, doc.text, doc.metadata, f"document {doc.id!r}")
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                problem = "nested too deeply" if isinstance(exc, RecursionError) else exc
                raise IndexFormatError(f"{path}, line {lineno}: bad document ({problem})") from None
            yield doc

    def subdir(self, name: str, *, kind: str, max_version: int) -> IndexReader:
        """The reader of nested index ``name/``, bound by this manifest's checksum of it."""
        filename = f"{name}/{MANIFEST}"
        directory = self.directory / name
        if filename not in self._files and not self.bound:
            # Format 1 did not bind sub-directories; they load as they are.
            return IndexReader(directory, kind=kind, max_version=max_version)
        entry = self._entry(filename)
        check_directory(directory)
        data = read_bytes(directory / MANIFEST, MAX_MANIFEST_BYTES)
        check_size(directory / MANIFEST, len(data), entry)
        return IndexReader(
            directory, kind=kind, max_version=max_version, manifest_sha256=entry["sha256"],
            manifest_bytes=data,
        )

    def _entry(self, filename: str) -> dict[str, Any]:
        entry = self._files.get(filename)
        if not isinstance(entry, dict):
            raise IndexFormatError(f"{self.directory / MANIFEST} does not list {filename!r}")
        return entry

    def _checked_bytes(self, filename: str) -> bytes:
        entry = self._entry(filename)
        path = self.directory / filename
        with open_regular(path) as fh:
            check_size(path, os.fstat(fh.fileno()).st_size, entry)
            data = fh.read()
        check_size(path, len(data), entry)
        check_hash(path, hashlib.sha256(data).hexdigest(), entry)
        return data


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__
