"""The one error a bad saved index raises, and the check of a user-given index path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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
