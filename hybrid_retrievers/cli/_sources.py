"""Read the documents of a folder (or one file) for ``hybrid-retrievers index``.

What is read, and how:

* ``.txt``, ``.md``, ``.markdown``, ``.rst``: the text as is (one document per file).
* ``.html``, ``.htm``: the visible text (stdlib `html.parser`; scripts, styles and tags
  dropped); the ``<title>`` goes into the metadata.
* ``.jsonl`` (one JSON object per line) and ``.json`` (an object or a list of objects):
  one document per record with a string ``"text"`` (a BEIR ``"title"`` is prepended), an
  optional ``"id"`` / ``"_id"`` (``null`` or absent: a deterministic content id) and an
  optional ``"metadata"`` object.

Only regular files are opened (a FIFO or socket named ``x.txt`` is skipped, never
waited on), symbolic links that lead outside the source folder are not followed,
hidden files and folders (``.git``...) and the output index are left out. A file that
cannot be read (not UTF-8 or UTF-16 text, a bad record) is skipped and reported, so one
bad file never stops a folder.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from ..ids import content_id
from ..progress import progress as progress_bar
from ..types import Doc

__all__ = ["TEXT_SUFFIXES", "RECORD_SUFFIXES", "FolderRead", "read_source", "read_records"]

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".html", ".htm")
RECORD_SUFFIXES = (".jsonl", ".json")
_HTML = (".html", ".htm")


class SourceError(ValueError):
    """A file that cannot be indexed; the message names the file and the reason."""


@dataclass
class FolderRead:
    """What `read_source` found: documents, and the files it skipped with the reason."""

    docs: list[Doc] = field(default_factory=list)
    files: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


def read_source(source: Path, *, exclude: Path | None = None, progress: bool = False) -> FolderRead:
    """Documents of a folder, or of one text/record file.

    A single file given directly must be readable: a problem raises `SourceError`
    naming it. Inside a folder, unreadable files are skipped and listed instead.
    """
    if source.is_dir():
        return _read_folder(source, exclude, progress)
    if not source.exists():
        raise FileNotFoundError(f"{source} does not exist; pass a folder or a .jsonl/.json file")
    suffix = source.suffix.lower()
    if suffix not in TEXT_SUFFIXES + RECORD_SUFFIXES:
        raise SourceError(
            f"{source} is not a folder nor a {'/'.join(TEXT_SUFFIXES + RECORD_SUFFIXES)} file"
        )
    if not stat.S_ISREG(source.stat().st_mode):
        raise SourceError(f"{source} is not a regular file (a pipe or device cannot be indexed)")
    out = FolderRead(files=1)
    out.docs = _read_file(source, source.name, suffix)
    return out


def _read_folder(root: Path, exclude: Path | None, progress: bool) -> FolderRead:
    out = FolderRead()
    candidates = list(_walk(root, exclude, out))
    if not candidates:
        raise SourceError(
            f"no {', '.join(TEXT_SUFFIXES + RECORD_SUFFIXES)} files under {root}"
            + (f" ({len(out.skipped)} skipped: {out.skipped[0][0]}: {out.skipped[0][1]})"
               if out.skipped else "")
        )
    bar = progress_bar(total=len(candidates), show=progress, desc="reading files", unit="file",
                       terminal_only=True)
    try:
        for path, rel in candidates:
            try:
                out.docs.extend(_read_file(path, rel, path.suffix.lower()))
                out.files += 1
            except SourceError as exc:
                reason = str(exc)
                for prefix in (f"{path}: ", f"{path}, "):
                    reason = reason.removeprefix(prefix)
                out.skipped.append((rel, reason))
            except OSError as exc:
                out.skipped.append((rel, exc.strerror or str(exc)))
            bar.update(1)
    finally:
        bar.close()
    return out


def _walk(root: Path, exclude: Path | None, out: FolderRead) -> Iterator[tuple[Path, str]]:
    """Regular files with a known suffix, sorted, as (path, path relative to root)."""
    real_root = root.resolve()
    skip_dir = exclude.resolve() if exclude is not None else None
    found = []
    # followlinks=False: a symlinked folder is never entered (it may lead anywhere).
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and (skip_dir is None or (here / d).resolve() != skip_dir)
        )
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(TEXT_SUFFIXES + RECORD_SUFFIXES):
                continue
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(real_root):
                    out.skipped.append((rel, f"symbolic link to {target}, outside {root}"))
                    continue
            try:
                mode = path.stat().st_mode  # stat never blocks, even on a FIFO
            except OSError as exc:
                out.skipped.append((rel, exc.strerror or str(exc)))
                continue
            if not stat.S_ISREG(mode):
                out.skipped.append((rel, "not a regular file"))
                continue
            found.append((path, rel))
    found.sort(key=lambda item: item[1])
    return iter(found)


def _read_file(path: Path, rel: str, suffix: str) -> list[Doc]:
    text = _decode(path)
    if suffix in RECORD_SUFFIXES:
        return read_records(text, path, suffix)
    metadata: dict[str, Any] = {"path": str(path)}
    if suffix in _HTML:
        title, text = html_text(text)
        if title:
            metadata["title"] = title
    if not text.strip():
        raise SourceError(f"{path}: no text")
    return [Doc(rel, text, metadata)]


def _decode(path: Path) -> str:
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{path}: not valid UTF-16 text ({exc.reason} at byte {exc.start})")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at position {exc.start}); "
            "convert it, e.g. iconv -f latin1 -t utf-8"
        ) from None
    if "\x00" in text:
        raise SourceError(f"{path}: looks binary (contains NUL bytes)")
    return text


def read_records(text: str, path: Path, suffix: str) -> list[Doc]:
    """Documents of a ``.jsonl`` or ``.json`` file's text; errors name the file and line."""
    rows: list[tuple[str, Any]] = []
    if suffix == ".jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                rows.append((f"line {lineno}", _json(line, path, f"line {lineno}")))
    else:
        value = _json(text, path, "")
        items = value if isinstance(value, list) else [value]
        rows = [(f"record {i}", item) for i, item in enumerate(items)]
    docs = []
    for where, row in rows:
        docs.append(_record(row, path, where))
    if not docs:
        raise SourceError(f"{path}: no records")
    return docs


def _json(text: str, path: Path, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}{', ' + where if where else ''}: not valid JSON ({exc})") from None


def _record(row: Any, path: Path, where: str) -> Doc:
    if not isinstance(row, dict) or not isinstance(row.get("text"), str):
        raise SourceError(
            f"{path}, {where}: expected a JSON object with a string 'text', got {str(row)[:80]!r}"
        )
    text = row["text"]
    if isinstance(row.get("title"), str) and row["title"].strip():
        text = f"{row['title']} {text}"
    raw_id = row.get("id", row.get("_id"))
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


class _TextExtractor(HTMLParser):
    """Visible text of an HTML page: tags dropped, blocks on their own lines."""

    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
                         "section", "article", "pre", "blockquote", "table", "ul", "ol", "dd"})
    _HIDDEN = frozenset({"script", "style", "noscript", "template", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._hidden = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self._HIDDEN:
            self._hidden += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._hidden:
            self.parts.append(data)


def html_text(markup: str) -> tuple[str, str]:
    """``(title, visible text)`` of an HTML document.

    Example:
        >>> html_text("<html><head><title>T</title><style>p{}</style></head>"
        ...           "<body><p>Hello <b>world</b></p><script>x()</script></body></html>")
        ('T', 'Hello world')
    """
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return " ".join("".join(parser.title).split()), "\n".join(line for line in lines if line)
