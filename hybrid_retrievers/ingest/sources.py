"""Finding the files of a folder for a `FolderIndex`, and reading record files.

What is read (see `hybrid_retrievers.ingest` for how each kind is parsed and chunked):

* `DOCUMENT_SUFFIXES` (``.txt``, ``.md``, ``.pdf``...):
  one source per file; the same compressed with gzip (``notes.md.gz``, ``changelog.gz``:
  see `hybrid_retrievers.ingest.read_document`);
* ``.jsonl`` (one JSON object per line) and ``.json`` (an object or a list of objects):
  one source per record with a string ``"text"`` (a BEIR ``"title"`` is prepended), an
  optional ``"id"`` / ``"_id"`` (``null`` or absent: a deterministic content id) and an
  optional ``"metadata"`` object;
* ``.png``, ``.jpg``, ``.jpeg``, ``.gif``, ``.webp``: images (`IMAGE_SUFFIXES`), indexed
  by the image routes when they are asked for (see `folder_images`).

Only regular files are opened (a FIFO or socket named ``x.txt`` is skipped, never
waited on), symbolic links that lead outside the source folder are not followed,
hidden files and folders (``.git``...) and the output index are left out. A file that
cannot be read (a symbolic link loop included) and a folder that cannot be listed are
skipped and reported, so one bad file never stops a folder.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..documents import check_content
from ..ids import content_id
from ..images.loading import IMAGE_SUFFIXES
from ..types import Doc
from .formats import COMPRESSED_SUFFIXES, DOCUMENT_SUFFIXES, SourceError

__all__ = ["RECORD_SUFFIXES", "SUFFIXES", "find_files", "read_records"]

RECORD_SUFFIXES = (".jsonl", ".json")
SUFFIXES = DOCUMENT_SUFFIXES + COMPRESSED_SUFFIXES + RECORD_SUFFIXES + IMAGE_SUFFIXES


def find_files(source: Path, exclude: Path | None, skipped: list[tuple[str, str]],
               other_kinds: Counter[str] | None = None) -> list[tuple[Path, str]]:
    """``(path, name relative to the folder)`` of every file to read, sorted; a single
    file given directly must be readable (`SourceError` otherwise). Files left out
    inside a folder are appended to ``skipped`` with the reason; files of a kind that is
    not read (``.py``, no suffix...) are counted by suffix in ``other_kinds``."""
    if source.is_dir():
        found = sorted(_walk(source, exclude, skipped, other_kinds),
                       key=lambda item: item[1])
        if not found:
            raise SourceError(
                f"no {', '.join(SUFFIXES)} files under {source}"
                + (f" ({len(skipped)} skipped: {skipped[0][0]}: {skipped[0][1]})"
                   if skipped else ""))
        return found
    if not source.exists():
        raise FileNotFoundError(f"{source} does not exist; pass a folder or a file to index")
    if source.suffix.lower() not in SUFFIXES:
        raise SourceError(f"{source} is not a folder nor a {'/'.join(SUFFIXES)} file")
    if not stat.S_ISREG(source.stat().st_mode):
        raise SourceError(f"{source} is not a regular file (a pipe or device cannot be indexed)")
    return [(source, source.name)]


def _walk(root: Path, exclude: Path | None, skipped: list[tuple[str, str]],
          other_kinds: Counter[str] | None = None) -> Iterator[tuple[Path, str]]:
    """Regular files with a known suffix, as (path, path relative to root)."""
    real_root = _real(root)
    skip_dir = _real(exclude) if exclude is not None else None

    def unlisted(exc: OSError) -> None:  # os.walk would leave such a folder out unnamed
        name = Path(os.path.relpath(exc.filename, root)).as_posix() if exc.filename else "."
        skipped.append((name + "/", f"folder not read: {exc.strerror or exc}"))

    # followlinks=False: a symlinked folder is never entered (it may lead anywhere).
    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and (skip_dir is None or _real(here / d) != skip_dir)
        )
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            if not name.lower().endswith(SUFFIXES):
                if other_kinds is not None:
                    other_kinds[Path(name).suffix.lower() or "no suffix"] += 1
                continue
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = _real(path)
                if not target.is_relative_to(real_root):
                    skipped.append((rel, f"symbolic link to {target}, outside {root}"))
                    continue
            try:
                mode = path.stat().st_mode  # stat never blocks, even on a FIFO
            except OSError as exc:
                skipped.append((rel, exc.strerror or str(exc)))
                continue
            if not stat.S_ISREG(mode):
                skipped.append((rel, "not a regular file"))
                continue
            yield path, rel


def _real(path: Path) -> Path:
    """``path`` with every symbolic link followed, as far as they lead.

    Not `Path.resolve`: on Python 3.10-3.12 it raises `RuntimeError` for a link loop,
    which would stop the whole folder; `os.path.realpath` (not strict) stops at the
    loop instead, and the ``stat`` that follows names the file ("Too many levels of
    symbolic links") like any other unreadable one.
    """
    return Path(os.path.realpath(path))


def read_records(text: str, path: Path, suffix: str) -> list[tuple[str, Doc]]:
    """``(where, document)`` of each record of a ``.jsonl`` or ``.json`` file's text
    (``where``: ``"line 3"`` or ``"record 0"``); errors name the file and line."""
    rows: list[tuple[str, Any]] = []
    if suffix == ".jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                rows.append((f"line {lineno}", _json(line, path, f"line {lineno}")))
    else:
        value = _json(text, path, "")
        items = value if isinstance(value, list) else [value]
        rows = [(f"record {i}", item) for i, item in enumerate(items)]
    docs = [(where, _record(row, path, where)) for where, row in rows]
    if not docs:
        raise SourceError(f"{path}: no records")
    return docs


def _json(text: str, path: Path, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f", {where}" if where else ""
        raise SourceError(f"{path}{where}: not valid JSON ({exc})") from None


def _record(row: Any, path: Path, where: str) -> Doc:
    if not isinstance(row, dict) or not isinstance(row.get("text"), str):
        raise SourceError(
            f"{path}, {where}: expected a JSON object with a string 'text', got {str(row)[:80]!r}"
        )
    text = row["text"]
    if isinstance(row.get("title"), str) and row["title"].strip():
        text = f"{row['title']} {text}"
    raw_id = row.get("id", row.get("_id"))
    try:  # a JSON escape such as "\ud800" is a lone surrogate: no hash, no save takes it
        check_content(raw_id if isinstance(raw_id, str) else None, text,
                      row.get("metadata") if isinstance(row.get("metadata"), dict) else None,
                      "the record")
    except (ValueError, TypeError) as exc:
        raise SourceError(f"{path}, {where}: {exc}") from None
    if raw_id is None:
        doc_id = content_id(text)
    elif isinstance(raw_id, str) and raw_id.strip():
        doc_id = raw_id
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        doc_id = str(raw_id)
    else:
        raise SourceError(
            f"{path}, {where}: 'id' must be a non-empty string or an integer (or null/absent "
            f"for a content id), got {raw_id!r}"
        )
    metadata = row.get("metadata", {})
    if not isinstance(metadata, dict):
        raise SourceError(f"{path}, {where}: 'metadata' must be an object, got {metadata!r:.60}")
    return Doc(doc_id, text, metadata)
