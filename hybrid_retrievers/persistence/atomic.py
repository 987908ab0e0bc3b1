"""Atomic, durable, serialised saves: version directories, fsync, locks, pointer replace.

A save (`atomic_index_dir`) takes an exclusive ``flock`` on ``.lock`` (released by the
kernel if the process dies, so never stale), writes a new version directory, fsyncs
every file and directory, then replaces the pointer with one ``os.replace`` and fsyncs
the index directory. A crash at any moment leaves the pointer naming either the old
complete version or the new one. Versions no pointer names are removed by the next save.
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
from collections.abc import Iterator
from pathlib import Path

from .._version import __version__
from .manifest import (
    FORMAT_NAME,
    LAYOUT_VERSION,
    LOCK,
    MANIFEST,
    VERSION_RE,
    current_versions,
    is_our_manifest,
)
from .safe_read import check_path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_TIMEOUT", "atomic_index_dir"]

LOCK_TIMEOUT = 300.0
"""Seconds a save waits for another process's save to the same path to finish."""

_LEFTOVER_RE = re.compile(r"(\..*\.tmp-[0-9a-f]+|.*\.(npy|json|jsonl)|parents|children)\Z")
"""Entries a save may remove besides stale versions: its temporary files and the data
files a format-1 directory held directly (user files such as notes.txt are left alone)."""
_NO_LOCKS = {getattr(errno, n) for n in ("ENOLCK", "EOPNOTSUPP", "ENOSYS", "ENOTSUP")
             if hasattr(errno, n)}
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


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
        previous, before_previous = current_versions(path)
        # Crash leftovers go first, so at most three versions ever exist: the current
        # one, the previous one (a loader may still read it) and the one being written.
        _remove_stale(path, keep={previous, before_previous}, data_files=False)
        match = VERSION_RE.match(previous) if previous else None
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


def _check_saveable(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        names = os.listdir(path)
        if not names or (MANIFEST in names and is_our_manifest(path / MANIFEST)):
            return
        # A first save that crashed before writing the pointer leaves only its lock,
        # version directories and temporary files: still ours (and so is a directory
        # of that shape whose pointer was damaged: a new save repairs it).
        if LOCK in names and all(
            n in (LOCK, MANIFEST) or VERSION_RE.match(n)
            or (n.startswith(".") and _LEFTOVER_RE.match(n))
            for n in names
        ):
            return
    raise FileExistsError(
        f"{str(path)!r} exists and is not a hybrid-retrievers index; "
        "choose a new path or remove it first"
    )


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
            VERSION_RE.match(name)
            or (_LEFTOVER_RE.match(name) and (data_files or name.startswith(".")))
        ):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


class HashingFile:
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

    def __enter__(self) -> HashingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self._fh.flush()
                os.fsync(self._fh.fileno())
        finally:
            self._fh.close()


def _replace_file(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    try:
        with HashingFile(tmp) as out:
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
