"""Index directories as plain data, saved atomically and durably, loaded without trust.

Nothing here can run code on load: ``.npy`` headers are parsed by numpy's literal-only
parser and object or structured dtypes are refused before any data is read, text is
JSON, and every byte is checked against a SHA-256 before it is trusted.

Layout (format 2). The index path is a directory holding one *pointer* file and
versioned sub-directories::

    idx/
      manifest.json          pointer: kind, "current" version, SHA-256 of its manifest
      .lock                  taken (flock) by a saver for the whole save
      v000007-3fa9c2d1/      the current version: manifest.json + data files
      v000006-81b0e44a/      the previous version, kept for loaders still reading it

Why this shape:

* **Atomic and durable.** A save writes a new version directory, fsyncs every file and
  directory, then replaces the pointer with one ``os.replace`` (atomic on POSIX and
  Windows) and fsyncs the index directory. A crash at any moment leaves the pointer
  naming either the old complete version or the new complete one; nothing at the path
  is ever renamed away, so the path never loads as "nothing".
* **Concurrent loaders** read the pointer, then the version it names. The previous
  version is kept until the next save, and a loader whose version vanished under it
  (two saves during one load) sees the pointer change and retries with the new one.
* **Concurrent savers** take an exclusive lock on ``.lock`` (``fcntl.flock``: released
  by the kernel if the process dies, so it is never stale); they run one after the
  other and the last one wins. Versions no pointer names (left by a crash) are removed
  by the next save.
* **The manifest is covered too.** The pointer holds the SHA-256 of the version's
  manifest, which holds the size and SHA-256 of every file (and of the manifests of
  sub-directories, for composite indexes), so no byte that decides results, parameters
  included, can change unnoticed. Checksums are integrity, not authenticity: a file
  edited with every checksum recomputed is not detected.
* **Links are refused inside an index.** Files are opened with ``O_NOFOLLOW`` and must
  be regular files (never a link, FIFO, device or directory). The index path itself may
  be a symbolic link: a save follows it and saves into its target (the link stays).

Directories written by format 1 (the data files directly in the index path) still load,
without the manifest checksum; the next save converts them in place.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
from numpy.lib import format as npy_format
from numpy.typing import NDArray

from .types import Doc

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FORMAT_NAME",
    "LAYOUT_VERSION",
    "IndexFormatError",
    "IndexWriter",
    "IndexReader",
    "atomic_index_dir",
    "check_path",
    "current_files",
    "read_index",
]

FORMAT_NAME = "hybrid-retrievers"
MANIFEST = "manifest.json"
LOCK = ".lock"
LAYOUT_VERSION = 2
"""Version of the directory layout (pointer + versioned sub-directories)."""
LOCK_TIMEOUT = 300.0
"""Seconds a save waits for another process's save to the same path to finish."""

_VERSION_RE = re.compile(r"v(\d{6,})-[0-9a-f]{8}\Z")
_HEX64_RE = re.compile(r"[0-9a-f]{64}\Z")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LEFTOVER_RE = re.compile(r"(\..*\.tmp-[0-9a-f]+|.*\.(npy|json|jsonl)|parents|children)\Z")
"""Entries a save may remove besides stale versions: its temporary files and the data
files a format-1 directory held directly (user files such as notes.txt are left alone)."""
_MAX_POINTER_BYTES = 64 * 1024
_MAX_MANIFEST_BYTES = 64 * 1024 * 1024
_MAX_NPY_HEADER = 64 * 1024
_LOAD_ATTEMPTS = 8
_CHUNK = 1 << 24

_NO_LOCKS = {getattr(errno, n) for n in ("ENOLCK", "EOPNOTSUPP", "ENOSYS", "ENOTSUP")
             if hasattr(errno, n)}
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)

T = TypeVar("T")


class IndexFormatError(ValueError):
    """A saved index is missing, corrupt, truncated, foreign or from a newer version."""


def check_path(path: Any, name: str = "path") -> Path:
    """``path`` as a `Path`, or a `TypeError` / `ValueError` naming the parameter."""
    raw = path
    if isinstance(path, os.PathLike) and not isinstance(path, (bytes, bytearray)):
        raw = os.fspath(path)
    if not isinstance(raw, str):
        raise TypeError(
            f"{name} must be a str or os.PathLike naming a directory, got "
            f"{type(path).__name__}: {path!r:.80}"
        )
    if not raw:
        raise ValueError(f"{name} must not be empty; pass a directory path such as 'my-index'")
    if "\x00" in raw:
        raise ValueError(f"{name} contains a NUL character: {raw!r:.80}")
    return Path(raw)


# ---------------------------------------------------------------------- writing


class IndexWriter:
    """Writes the files of one index version into a directory and records them.

    Every file is hashed while it is written and fsynced before the writer moves on,
    so the manifest's checksums describe exactly the bytes on disk.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._files: dict[str, dict[str, Any]] = {}

    def array(self, name: str, array: NDArray[Any]) -> None:
        """Save ``array`` as ``name.npy`` (never pickled)."""
        if array.dtype.hasobject or array.dtype.fields is not None:
            raise TypeError(f"array {name!r} has dtype {array.dtype}, which cannot be saved safely")
        array = np.ascontiguousarray(array)
        filename = f"{name}.npy"
        with _HashingFile(self.directory / filename) as out:
            npy_format.write_array_header_1_0(out, npy_format.header_data_from_array_1_0(array))
            if array.size:
                flat = array.reshape(-1).view(np.uint8)
                for lo in range(0, flat.size, _CHUNK):
                    out.write(memoryview(flat[lo : lo + _CHUNK]))
        self._record(filename, out, {"dtype": array.dtype.str, "shape": list(array.shape)})

    def json(self, name: str, value: Any) -> None:
        """Save ``value`` as ``name.json`` (strict JSON: no NaN or infinity)."""
        filename = f"{name}.json"
        try:
            data = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{filename} cannot be saved as JSON: {exc}") from None
        with _HashingFile(self.directory / filename) as out:
            out.write(data)
        self._record(filename, out, {})

    def docs(self, name: str, docs: Iterable[Doc]) -> None:
        """Save documents as JSON lines.

        Metadata must be JSON data that loads back equal: str keys; str, int, float,
        bool, None, lists and dicts as values. Anything JSON would change (a tuple
        becomes a list, an int key a str key, ``1`` and ``"1"`` collide) or cannot
        store is refused with an error naming the document and the key; nothing is
        coerced.
        """
        filename = f"{name}.jsonl"
        with _HashingFile(self.directory / filename) as out:
            lines: list[str] = []
            for doc in docs:
                lines.append(_doc_line(doc))
                if len(lines) >= 4096:
                    out.write(_encode_lines(lines))
                    lines = []
            if lines:
                out.write(_encode_lines(lines))
        self._record(filename, out, {})

    def subdirectory(self, name: str) -> Path:
        """Create ``name/`` for a nested index; `bind` it once it is written."""
        path = self.directory / name
        path.mkdir()
        return path

    def bind(self, name: str) -> None:
        """Record the manifest of sub-directory ``name`` (and so all of its files)."""
        filename = f"{name}/{MANIFEST}"
        data = (self.directory / filename).read_bytes()
        self._files[filename] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

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
        data = json.dumps(manifest, indent=2, ensure_ascii=False, allow_nan=False)
        with _HashingFile(self.directory / MANIFEST) as out:
            out.write(data.encode("utf-8"))

    def _record(self, filename: str, out: _HashingFile, extra: dict[str, Any]) -> None:
        self._files[filename] = {"bytes": out.size, "sha256": out.hexdigest(), **extra}


class _HashingFile:
    """A new file that hashes and counts what is written, fsynced on close."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "xb")  # noqa: SIM115 - closed in __exit__
        self._digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        self._digest.update(data)
        self.size += len(data) if isinstance(data, bytes) else data.nbytes
        return self._fh.write(data)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()

    def __enter__(self) -> _HashingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self._fh.flush()
                os.fsync(self._fh.fileno())
        finally:
            self._fh.close()


def _doc_line(doc: Doc) -> str:
    metadata = dict(doc.metadata)
    try:
        line = json.dumps(
            {"id": doc.id, "text": doc.text, "metadata": metadata},
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError, RecursionError) as exc:
        problem = _json_problem(metadata) or str(exc)
        raise TypeError(
            f"metadata of document {doc.id!r} is not JSON-serialisable ({problem}); store "
            "only str keys and str, int, float, bool, None, lists and dicts as values to "
            "save the index"
        ) from None
    if not _flat_json(metadata) and json.loads(line)["metadata"] != metadata:
        raise TypeError(
            f"metadata of document {doc.id!r} would not load back unchanged "
            f"({_json_problem(metadata)}); nothing is coerced silently: convert it before "
            "adding the document"
        )
    return line


def _encode_lines(lines: list[str]) -> bytes:
    text = "\n".join(lines) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        for line in lines:
            try:
                line.encode("utf-8")
            except UnicodeEncodeError as exc:
                doc_id = json.loads(line)["id"]
                raise ValueError(
                    f"document {doc_id!r} holds a lone surrogate "
                    f"({line[exc.start]!r}), which is not valid Unicode and cannot be saved"
                ) from None
        raise


_STR = frozenset({str})
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat_json(metadata: Mapping[Any, Any]) -> bool:
    """True when metadata trivially round-trips: str keys and scalar values only."""
    return _STR.issuperset(map(type, metadata)) and _JSON_SCALARS.issuperset(
        map(type, metadata.values())
    )


def _json_problem(value: Any) -> str | None:
    """The first thing in ``value`` that JSON cannot store exactly, described."""
    stack: list[tuple[str, Any]] = [("", value)]
    seen: set[int] = set()
    while stack:
        where, v = stack.pop()
        at = f"key {where}" if where else "the metadata"
        if isinstance(v, bool) or v is None or isinstance(v, (str, int)):
            continue
        if isinstance(v, float):
            if v != v or v in (float("inf"), float("-inf")):
                return f"{at} holds {v!r}, which JSON cannot store"
            continue
        if id(v) in seen:
            return f"{at} refers to itself"
        seen.add(id(v))
        if isinstance(v, tuple):
            return f"{at} holds a tuple, which JSON stores as a list; use a list"
        if isinstance(v, list):
            stack.extend((f"{where}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, dict):
            keys = {}
            for k, x in v.items():
                if not isinstance(k, str):
                    return (
                        f"{at} has the {type(k).__name__} key {k!r}; JSON keys are strings, "
                        f"so it would load back as {json.dumps(k)!r}"
                    )
                keys[k] = x
            stack.extend((f"{where}.{k}" if where else repr(k), x) for k, x in keys.items())
        else:
            return f"{at} holds a {type(v).__name__}, which is not JSON data"
    return None


# ---------------------------------------------------------------------- saving


@contextlib.contextmanager
def atomic_index_dir(
    target: str | os.PathLike[str], *, lock_timeout: float = LOCK_TIMEOUT
) -> Iterator[Path]:
    """Yield a new version directory; on success it becomes the index at ``target``.

    ``target`` may be absent, an earlier index (format 1 or 2) or an empty directory;
    any other existing path is refused, so a typo cannot delete a user's folder. A
    symbolic link is followed: the index is saved into its target. Another process's
    save to the same path is waited for (up to ``lock_timeout`` seconds, then
    `TimeoutError`). If the block raises, the new version is removed and the index at
    ``target`` is untouched.
    """
    path = check_path(target)
    if path.is_symlink():
        path = path.resolve()
    _check_saveable(path)
    with _save_lock(path, lock_timeout) as created:
        _check_saveable(path)
        previous, before_previous = _current_versions(path)
        # Crash leftovers go first, so at most three versions ever exist: the current
        # one, the previous one (a loader may still read it) and the one being written.
        _remove_stale(path, keep={previous, before_previous}, data_files=False)
        match = _VERSION_RE.match(previous) if previous else None
        seq = int(match.group(1)) + 1 if match else 1
        version = path / f"v{seq:06d}-{secrets.token_hex(4)}"
        version.mkdir()
        try:
            yield version
            for directory, _, _ in os.walk(version, topdown=False):
                _fsync_dir(Path(directory))
            _fsync_dir(path)
            manifest = (version / MANIFEST).read_bytes()
            kind = json.loads(manifest)["kind"]
            from . import __version__

            pointer = {
                "format": FORMAT_NAME,
                "kind": kind,
                "format_version": LAYOUT_VERSION,
                "library_version": __version__,
                "current": version.name,
                "manifest_sha256": hashlib.sha256(manifest).hexdigest(),
                "previous": previous,
            }
            _replace_file(path / MANIFEST, json.dumps(pointer, indent=2).encode("utf-8"))
        except BaseException:
            shutil.rmtree(version, ignore_errors=True)
            if created and not os.path.lexists(path / MANIFEST):
                # A failed first save leaves nothing behind (the lock file goes while
                # it is held; a waiting saver notices and starts over).
                with contextlib.suppress(OSError):
                    os.unlink(path / LOCK)
                    os.rmdir(path)
            raise
        _remove_stale(path, keep={version.name, previous})


def current_files(path: str | os.PathLike[str]) -> Path:
    """The directory that holds the files of the index saved at ``path`` now.

    For a format-2 index that is the version the pointer names; for format 1, ``path``
    itself. Meant for inspection and tests: a later save may remove it.
    """
    path = check_path(path)
    pointer = _pointer_bytes(path)
    head = _parse_json(pointer, path / MANIFEST) if pointer is not None else None
    if isinstance(head, dict) and isinstance(head.get("current"), str) and _VERSION_RE.match(
        head["current"]
    ):
        return path / head["current"]
    return path


def _check_saveable(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        names = os.listdir(path)
        if not names or (MANIFEST in names and _is_our_manifest(path / MANIFEST)):
            return
        # A first save that crashed before writing the pointer leaves only its lock,
        # version directories and temporary files: still ours (and so is a directory
        # of that shape whose pointer was damaged: a new save repairs it).
        if LOCK in names and all(
            n in (LOCK, MANIFEST) or _VERSION_RE.match(n)
            or (n.startswith(".") and _LEFTOVER_RE.match(n))
            for n in names
        ):
            return
    raise FileExistsError(
        f"{str(path)!r} exists and is not a hybrid-retrievers index; "
        "choose a new path or remove it first"
    )


def _is_our_manifest(path: Path) -> bool:
    try:
        data = _read_bytes(path, _MAX_MANIFEST_BYTES)
        return json.loads(data).get("format") == FORMAT_NAME
    except (IndexFormatError, ValueError, AttributeError, RecursionError):
        return False


def _current_versions(path: Path) -> tuple[str | None, str | None]:
    """The current and previous versions the pointer names (None when unknown)."""
    try:
        pointer = json.loads(_read_bytes(path / MANIFEST, _MAX_POINTER_BYTES))
    except (IndexFormatError, ValueError, RecursionError):
        return None, None
    if not isinstance(pointer, dict):
        return None, None
    names = [pointer.get("current"), pointer.get("previous")]
    current, previous = (n if isinstance(n, str) and _VERSION_RE.match(n) else None for n in names)
    return current, previous if current else None


def _remove_stale(path: Path, keep: set[str | None], data_files: bool = True) -> None:
    """Remove versions other than ``keep`` and leftovers of crashed saves.

    With ``data_files``, also the data files a format-1 directory held directly (only
    once a format-2 pointer has replaced its manifest).
    """
    for entry in os.scandir(path):
        name = entry.name
        if name in (MANIFEST, LOCK) or name in keep:
            continue
        if not (
            _VERSION_RE.match(name)
            or (_LEFTOVER_RE.match(name) and (data_files or name.startswith(".")))
        ):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def _replace_file(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    try:
        with _HashingFile(tmp) as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _save_lock(path: Path, timeout: float) -> Iterator[bool]:
    """Create ``path`` if needed and hold an exclusive lock on ``path/.lock``.

    Yields whether this call created the directory.
    """
    deadline = time.monotonic() + timeout
    created = False
    while True:
        if not os.path.isdir(path):
            path.mkdir(parents=True, exist_ok=True)
            _fsync_dir(path.parent)
            created = True
        try:
            fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW, 0o644)
        except FileNotFoundError:  # the directory was removed meanwhile: start over
            continue
        try:
            _lock(fd, path, deadline, timeout)
            try:
                same = os.path.samestat(os.fstat(fd), os.lstat(path / LOCK))
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)  # a failed first save removed the lock file we waited on
    try:
        yield created
    finally:
        os.close(fd)  # closing releases the lock


def _lock(fd: int, path: Path, deadline: float, timeout: float) -> None:
    if fcntl is None:  # pragma: no cover - no advisory locks on this platform
        return
    delay = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno in _NO_LOCKS:  # pragma: no cover - e.g. some network filesystems
                return  # saves stay atomic; only concurrent savers are not serialised
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"another process has been saving to {str(path)!r} for more than "
                f"{timeout:g} s; try again when it is done"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


# ---------------------------------------------------------------------- loading


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
        pointer = _pointer_bytes(path)
        try:
            return read(_reader_for(path, pointer, kind=kind, max_version=max_version))
        except IndexFormatError:
            if attempt + 1 < _LOAD_ATTEMPTS and _pointer_bytes(path, missing_ok=True) != pointer:
                continue
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def _pointer_bytes(path: Path, missing_ok: bool = False) -> bytes | None:
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
        return _read_bytes(manifest, _MAX_MANIFEST_BYTES)
    except IndexFormatError:
        if missing_ok:
            return None
        raise


def _reader_for(path: Path, pointer: bytes | None, *, kind: str, max_version: int) -> IndexReader:
    assert pointer is not None
    where = path / MANIFEST
    head = _parse_json(pointer, where)
    if not isinstance(head, dict) or head.get("format") != FORMAT_NAME:
        raise IndexFormatError(
            f"{where} is not a hybrid-retrievers manifest (format="
            f"{head.get('format') if isinstance(head, dict) else None!r})"
        )
    if "current" not in head:  # format 1: the data files are in the path itself
        return IndexReader(
            path, kind=kind, max_version=max_version, manifest_bytes=pointer, top_level=True
        )
    _check_kind(head, kind, path)
    version = head.get("format_version")
    _check_version(version, LAYOUT_VERSION, where, head)
    current, digest = head.get("current"), head.get("manifest_sha256")
    if not isinstance(current, str) or not _VERSION_RE.match(current):
        raise IndexFormatError(f"{where}: invalid 'current' version {current!r}")
    if not isinstance(digest, str) or not _HEX64_RE.match(digest):
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
        _check_directory(self.directory, may_be_link=top_level)
        manifest_path = self.directory / MANIFEST
        if manifest_bytes is None:
            if not os.path.lexists(manifest_path):
                raise IndexFormatError(
                    f"{str(self.display)!r} is not a hybrid-retrievers index: "
                    f"{MANIFEST} is missing"
                )
            manifest_bytes = _read_bytes(manifest_path, _MAX_MANIFEST_BYTES)
        if manifest_sha256 is not None and (
            hashlib.sha256(manifest_bytes).hexdigest() != manifest_sha256
        ):
            raise IndexFormatError(
                f"{manifest_path} is corrupt or was edited: its checksum does not match "
                f"the one recorded when it was saved"
            )
        manifest = _parse_json(manifest_bytes, manifest_path)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
            raise IndexFormatError(
                f"{manifest_path} is not a hybrid-retrievers manifest (format="
                f"{manifest.get('format') if isinstance(manifest, dict) else None!r})"
            )
        _check_kind(manifest, kind, self.display)
        _check_version(manifest.get("format_version"), max_version, manifest_path, manifest)
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise IndexFormatError(f"{manifest_path}: 'files' must be an object")
        for name, entry in files.items():
            if not (
                isinstance(entry, dict)
                and type(entry.get("bytes")) is int
                and entry["bytes"] >= 0
                and isinstance(entry.get("sha256"), str)
                and _HEX64_RE.match(entry["sha256"])
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
        with _open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            _check_size(path, size, entry)
            dtype, shape, offset = _read_npy_header(fh, path)
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
                    _check_hash(path, _hash_stream(fh), entry)
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
            _check_hash(path, digest.hexdigest(), entry)
            return array

    def json(self, name: str) -> Any:
        """Load ``name.json`` (checksummed, then parsed)."""
        path = self.directory / f"{name}.json"
        return _parse_json(self._checked_bytes(path.name), path)

    def docs(self, name: str) -> Iterator[Doc]:
        """Yield the documents of ``name.jsonl``; errors name the file and line."""
        from .documents import check_unicode

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
            _SURROGATE_ESCAPE.search(text) is not None
        )
        for lineno, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                if type(row) is not dict:
                    raise TypeError(f"expected a JSON object, got {type(row).__name__}")
                doc = Doc(row["id"], row["text"], row["metadata"])
                if suspects and _SURROGATE_ESCAPE.search(line):
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
        _check_directory(directory)
        data = _read_bytes(directory / MANIFEST, _MAX_MANIFEST_BYTES)
        _check_size(directory / MANIFEST, len(data), entry)
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
        with _open_regular(path) as fh:
            _check_size(path, os.fstat(fh.fileno()).st_size, entry)
            data = fh.read()
        _check_size(path, len(data), entry)
        _check_hash(path, hashlib.sha256(data).hexdigest(), entry)
        return data


def _check_kind(manifest: Mapping[str, Any], kind: str, where: Path) -> None:
    if manifest.get("kind") != kind:
        raise IndexFormatError(
            f"{str(where)!r} holds a {manifest.get('kind')!r} index, not {kind!r}"
        )


def _check_version(
    version: Any, max_version: int, where: Path, manifest: Mapping[str, Any]
) -> None:
    if type(version) is not int or version < 1:
        raise IndexFormatError(f"{where}: invalid format_version {version!r}")
    if version > max_version:
        raise IndexFormatError(
            f"{str(where.parent)!r} was saved in format version {version} by "
            f"hybrid-retrievers {manifest.get('library_version')}; this version reads up "
            f"to {max_version}: upgrade hybrid-retrievers to load it"
        )


def _check_directory(path: Path, may_be_link: bool = False) -> None:
    """``path`` is a real directory (a link only if ``may_be_link``) holding no links."""
    try:
        st = os.stat(path) if may_be_link else os.lstat(path)
    except FileNotFoundError:
        raise IndexFormatError(f"{path} is missing") from None
    if stat.S_ISLNK(st.st_mode):
        raise IndexFormatError(f"{path} is a symbolic link; an index may not contain links")
    if not stat.S_ISDIR(st.st_mode):
        raise IndexFormatError(f"{path} is not a directory")
    for entry in os.scandir(path):
        if entry.is_symlink():
            raise IndexFormatError(
                f"{entry.path} is a symbolic link; an index may not contain links"
            )


def _open_regular(path: Path) -> IO[bytes]:
    """Open an index file for reading: a regular file, never a link, FIFO or device."""
    try:
        _require_regular(path, os.lstat(path))
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY)
    except FileNotFoundError:
        raise IndexFormatError(f"{path} is missing") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IndexFormatError(f"{path} is a symbolic link, not a regular file") from None
        raise IndexFormatError(f"{path} cannot be read: {exc.strerror}") from None
    try:
        _require_regular(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _require_regular(path: Path, st: os.stat_result) -> None:
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return
    what = (
        "a symbolic link" if stat.S_ISLNK(mode)
        else "a directory" if stat.S_ISDIR(mode)
        else "a FIFO" if stat.S_ISFIFO(mode)
        else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket" if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    raise IndexFormatError(f"{path} is {what}, not a regular file")


def _read_bytes(path: Path, limit: int) -> bytes:
    with _open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise IndexFormatError(f"{path} is {size} bytes; more than {limit} is not plausible")
        return fh.read(limit + 1)


def _parse_json(data: bytes, path: Path) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise IndexFormatError(f"{path} is not valid UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise IndexFormatError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise IndexFormatError(f"{path} is not valid here: its JSON is nested too deeply") from None


def _check_size(path: Path, size: int, entry: Mapping[str, Any]) -> None:
    if size != entry["bytes"]:
        raise IndexFormatError(
            f"{path} is truncated or altered: {size} bytes, manifest says {entry['bytes']}"
        )


def _check_hash(path: Path, digest: str, entry: Mapping[str, Any]) -> None:
    if digest != entry["sha256"]:
        raise IndexFormatError(f"{path} is corrupt: its checksum does not match the manifest")


def _hash_stream(fh: IO[bytes]) -> str:
    fh.seek(0)
    digest = hashlib.sha256()
    for block in iter(lambda: fh.read(_CHUNK), b""):
        digest.update(block)
    return digest.hexdigest()


def _read_npy_header(fh: IO[bytes], path: Path) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    """Parse a ``.npy`` header without reading data; refuse what we never write."""
    try:
        major, _ = npy_format.read_magic(fh)
        if major == 1:
            shape, fortran, dtype = npy_format.read_array_header_1_0(fh, _MAX_NPY_HEADER)
        elif major == 2:
            shape, fortran, dtype = npy_format.read_array_header_2_0(fh, _MAX_NPY_HEADER)
        else:
            raise ValueError(f"unsupported .npy format version {major}")
    except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many kinds
        raise IndexFormatError(
            f"{path} is not a readable .npy array: {type(exc).__name__}: {exc}"
        ) from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise IndexFormatError(
            f"{path} is not a readable .npy array: dtype {dtype} is not a plain numeric "
            "type (object and structured arrays are never loaded)"
        )
    if fortran:
        raise IndexFormatError(f"{path}: Fortran-ordered arrays are not written by this library")
    if not all(type(n) is int and n >= 0 for n in shape):
        raise IndexFormatError(f"{path}: invalid shape {shape!r} in its header")
    return dtype, tuple(shape), fh.tell()


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__
