"""`DescriptionCache`: image descriptions by (describer, prompt, image content hash).

Describing an image is the slow, paid part of the description route (one vision-model
call per image, seconds each), so re-indexing a folder whose images did not change must
not ask the model again. The cache maps ``(describer name, prompt, image SHA-256)`` to
the description: the describer's name because two models describe differently, the
prompt because it decides what a description says, and the hash of the image's bytes
(`LoadedImage.sha256`) because an image renamed or copied is still the same image, and
one edited in place is not.

It lives in memory and can be bound to a directory (``DescriptionCache(path)``) and
saved there (`DescriptionCache.save`) with the project's persistence: JSON only (never
pickle), written atomically (a new version directory, fsynced, behind one pointer
replaced atomically) with a SHA-256 over every byte, so a crash leaves the old or the
new cache and a corrupt or edited file is refused with an `IndexFormatError` naming it.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any, Self

from ..persistence import (
    AtomicSave,
    IndexFormatError,
    IndexReader,
    IndexWriter,
    check_path,
    read_index,
)

__all__ = ["DESCRIPTION_CACHE_FORMAT_VERSION", "DescriptionCache"]

DESCRIPTION_CACHE_FORMAT_VERSION = 1
"""Version of the saved `DescriptionCache` format (``"description-cache"``)."""

_KIND = "description-cache"
_SHA256_RE = re.compile(r"[0-9a-f]{64}\Z")

Key = tuple[str, str, str]
"""(describer name, prompt, image SHA-256)."""


class DescriptionCache(AtomicSave):
    """Image descriptions by (describer name, prompt, image SHA-256); thread-safe.

    Args:
        path: a directory to bind the cache to: a cache saved there is loaded now (an
            absent path or an empty directory starts empty), and `save` without an
            argument writes there.

    Raises:
        IndexFormatError: ``path`` holds a corrupt, edited or foreign directory.

    Example:
        >>> cache = DescriptionCache()
        >>> cache.put("my-vlm", "Describe it.", "ab" * 32, "A bar chart of sales.")
        >>> cache.get("my-vlm", "Describe it.", "ab" * 32)
        'A bar chart of sales.'
        >>> cache.get("other-vlm", "Describe it.", "ab" * 32) is None
        True
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.RLock()
        self._entries: dict[Key, str] = {}
        self.hits = 0
        """Lookups answered from the cache (by `get` with ``count=True``)."""
        self.misses = 0
        """Lookups the cache could not answer (by `get` with ``count=True``)."""
        self._path = None if path is None else check_path(path)
        if self._path is not None and _holds_a_save(self._path):
            self._entries = _read_saved(self._path)

    @property
    def path(self) -> Path | None:
        """The directory the cache is bound to (``None``: memory only)."""
        return self._path

    def get(self, describer: str, prompt: str, sha256: str, *, count: bool = False) -> str | None:
        """The cached description, or ``None``; ``count`` adds to `hits` / `misses`."""
        with self._lock:
            text = self._entries.get((describer, prompt, sha256))
            if count:
                if text is None:
                    self.misses += 1
                else:
                    self.hits += 1
        return text

    def put(self, describer: str, prompt: str, sha256: str, description: str) -> None:
        """Remember ``description`` for the image ``sha256`` described by ``describer``."""
        key = _check_key(describer, prompt, sha256)
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"description must be a non-empty str, got {description!r:.80}")
        with self._lock:
            self._entries[key] = description

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Forget every description (the saved directory is untouched until `save`)."""
        with self._lock:
            self._entries.clear()

    def __repr__(self) -> str:
        return f"DescriptionCache(descriptions={len(self)}, path={self._path})"

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str] | None = None) -> None:
        """Write the cache to directory ``path`` (default: the bound `path`) atomically
        and durably, as checksummed JSON (see `hybrid_retrievers.persistence`).

        Raises:
            ValueError: no ``path`` given and the cache is not bound to one.
            FileExistsError: ``path`` exists and is not a saved cache or index.
        """
        if path is None:
            if self._path is None:
                raise ValueError(
                    "this DescriptionCache is not bound to a directory; pass save(path) or "
                    "create it as DescriptionCache(path)"
                )
            path = self._path
        super().save(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Read the cache saved in directory ``path`` and bind it there; every file is
        checked first.

        Raises:
            IndexFormatError: missing, corrupt, edited or foreign directory.
        """
        cache = cls()
        cache._path = check_path(path)
        cache._entries = _read_saved(cache._path)
        return cache

    def _save_into(self, directory: Path) -> None:
        # Prompts and describer names repeat on every entry: each is stored once and
        # entries refer to it by position.
        with self._lock:
            entries = sorted(self._entries.items())
        describers: dict[str, int] = {}
        prompts: dict[str, int] = {}
        rows = [[describers.setdefault(d, len(describers)), prompts.setdefault(p, len(prompts)),
                 sha, text] for (d, p, sha), text in entries]
        w = IndexWriter(directory)
        w.json("descriptions", {"describers": list(describers), "prompts": list(prompts),
                                "entries": rows})
        w.manifest(_KIND, DESCRIPTION_CACHE_FORMAT_VERSION, {"size": len(rows)})


def _check_key(describer: Any, prompt: Any, sha256: Any) -> Key:
    if not isinstance(describer, str) or not describer.strip():
        raise TypeError(f"describer must be a non-empty str (its name), got {describer!r:.80}")
    if not isinstance(prompt, str) or not prompt.strip():
        raise TypeError(f"prompt must be a non-empty str, got {prompt!r:.80}")
    if not isinstance(sha256, str) or not _SHA256_RE.match(sha256):
        raise ValueError(f"sha256 must be 64 lowercase hex digits, got {sha256!r:.80}")
    return describer, prompt, sha256


def _holds_a_save(path: Path) -> bool:
    """Whether ``path`` should be read: anything there but an empty directory (a file or
    a foreign directory is read, and refused with a clear error)."""
    if not os.path.lexists(path):
        return False
    return not (path.is_dir() and not path.is_symlink() and not any(path.iterdir()))


def _read_saved(path: Path) -> dict[Key, str]:
    """The entries of the cache saved in ``path``, every file checked first."""
    return read_index(path, kind=_KIND, max_version=DESCRIPTION_CACHE_FORMAT_VERSION,
                      read=_read_entries)


def _read_entries(r: IndexReader) -> dict[Key, str]:
    size = r.count("size")
    where = r.where("descriptions.json")
    data = r.json("descriptions")
    if not isinstance(data, dict):
        raise IndexFormatError(f"{where}: must hold a JSON object")
    describers, prompts, rows = (data.get(k) for k in ("describers", "prompts", "entries"))
    if not (isinstance(describers, list) and isinstance(prompts, list)
            and isinstance(rows, list)):
        raise IndexFormatError(f"{where}: must hold the lists 'describers', 'prompts' "
                               "and 'entries'")
    if len(rows) != size:
        raise IndexFormatError(f"{where}: holds {len(rows)} entries, the manifest says {size}")
    entries: dict[Key, str] = {}
    for i, row in enumerate(rows):
        try:
            d, p, sha, text = row
            if type(d) is not int or type(p) is not int or d < 0 or p < 0:
                raise TypeError("describer and prompt positions must be ints >= 0")
            key = _check_key(describers[d], prompts[p], sha)
        except (TypeError, ValueError, IndexError) as exc:
            raise IndexFormatError(f"{where}: entry {i} is invalid ({exc}): {row!r:.200}") from None
        if not isinstance(text, str) or not text.strip():
            raise IndexFormatError(f"{where}: entry {i} has no description: {row!r:.200}")
        if key in entries:
            raise IndexFormatError(f"{where}: entry {i} repeats an earlier key: {row!r:.200}")
        entries[key] = text
    return entries
