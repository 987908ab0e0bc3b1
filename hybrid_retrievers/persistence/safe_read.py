"""Opening and parsing the files of an index without trusting them.

Files are opened with ``O_NOFOLLOW`` and must be regular files (never a link, FIFO,
device or directory); reads are bounded; JSON is parsed strictly; ``.npy`` headers are
parsed by numpy's literal-only parser and object or structured dtypes are refused before
any data is read, so nothing here can run code. Every failure is an `IndexFormatError`
naming the file.

`IndexFormatError` is the one error a bad saved index raises, here with the first reads
that raise it; `check_path` checks a user-given index path before anything is opened.
The rest (`check_directory`, `open_regular`, `read_bytes`, `parse_json`,
`read_npy_header`, `SURROGATE_ESCAPE`) is the package's own toolkit: `reader`,
`manifest` and `documents` use it; it is not on the package's face.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.lib import format as npy_format


__all__ = ["IndexFormatError", "check_path"]


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


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON ``\\uD800``-``\\uDFFF`` escape: the only way a JSON text can decode to a lone
surrogate (which our writers never write), so only a text where this matches needs the
full Unicode check on load."""

_MAX_NPY_HEADER = 64 * 1024
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def check_directory(path: Path, may_be_link: bool = False) -> None:
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


def open_regular(path: Path) -> IO[bytes]:
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


def read_bytes(path: Path, limit: int) -> bytes:
    """The bytes of index file ``path`` (`open_regular`), refused above ``limit``."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise IndexFormatError(f"{path} is {size} bytes; more than {limit} is not plausible")
        return fh.read(limit + 1)


def parse_json(data: bytes, path: Path) -> Any:
    """``data`` (from ``path``) parsed as UTF-8 JSON; any failure an `IndexFormatError`."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise IndexFormatError(f"{path} is not valid UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise IndexFormatError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise IndexFormatError(f"{path} is not valid here: its JSON is nested too deeply") from None


def read_npy_header(fh: IO[bytes], path: Path) -> tuple[np.dtype[Any], tuple[int, ...], int]:
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
