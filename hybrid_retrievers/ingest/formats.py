"""Reading one file into a `ParsedDocument`, by its suffix.

======================  =======================================================================
suffix                  how
======================  =======================================================================
``.txt``                UTF-8 (or UTF-16 with a BOM) text, no structure
``.md`` ``.markdown``   `markdown_structure`
``.rst``                `rst_structure`
``.html`` ``.htm``      `html_structure` (visible text; ``<title>`` as the title)
``.pdf``                the text layer, page by page, with pypdf (the ``ingest`` extra); page
                        start offsets in `ParsedDocument.pages`
``.docx``               paragraphs and tables in body order with python-docx (the ``ingest``
                        extra); ``Title`` / ``Heading N`` paragraph styles open sections,
                        tables are atomic blocks (one row a line, cells joined by ``" | "``)
======================  =======================================================================

Every failure is a `SourceError` naming the file and the reason (not text, not UTF-8,
encrypted PDF, no text layer...), so a folder reader can skip the file and list it.
"""

from __future__ import annotations

from pathlib import Path

from .structure import (
    ParsedDocument,
    html_structure,
    markdown_structure,
    plain_structure,
    rst_structure,
    sections_from_headings,
)

__all__ = ["DOCUMENT_SUFFIXES", "SourceError", "decode_text", "read_document"]

DOCUMENT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".html", ".htm", ".pdf", ".docx")
"""The suffixes `read_document` reads (lower case)."""


class SourceError(ValueError):
    """A file that cannot be indexed; the message names the file and the reason."""


def decode_text(path: Path, data: bytes) -> str:
    """``data`` (the bytes of ``path``) as text: UTF-16 with a BOM, else UTF-8.

    Raises:
        SourceError: not valid UTF-8 / UTF-16, or binary (NUL bytes).
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{path}: not valid UTF-16 text ({exc.reason} at byte {exc.start})")
    if b"\x00" in data:  # first: advice to convert a binary file from latin-1 would mislead
        raise SourceError(f"{path}: looks binary (contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at position {exc.start}); "
            "convert it, e.g. iconv -f latin1 -t utf-8"
        ) from None


def read_document(path: Path, data: bytes | None = None) -> ParsedDocument:
    """The text and structure of the file ``path`` (``data``: its bytes, when already read).

    Raises:
        SourceError: an unknown suffix, an unreadable file, or a file without text.
        ImportError: a ``.pdf`` / ``.docx`` without the ``ingest`` extra installed.
    """
    suffix = path.suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        raise SourceError(f"{path}: not a {'/'.join(DOCUMENT_SUFFIXES)} file")
    if data is None:
        data = path.read_bytes()
    if suffix == ".pdf":
        parsed = _pdf(path, data)
    elif suffix == ".docx":
        parsed = _docx(path, data)
    else:
        text = decode_text(path, data)
        if suffix in (".md", ".markdown"):
            parsed = markdown_structure(text)
        elif suffix == ".rst":
            parsed = rst_structure(text)
        elif suffix in (".html", ".htm"):
            parsed = html_structure(text)
        else:
            parsed = plain_structure(text)
    if not parsed.text.strip():
        raise SourceError(f"{path}: no text")
    return parsed


def _missing(package: str, suffix: str) -> ImportError:
    return ImportError(
        f"reading {suffix} files needs {package}: pip install 'hybrid-retrievers[ingest]'"
    )


def _pdf(path: Path, data: bytes) -> ParsedDocument:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise _missing("pypdf", ".pdf") from None
    import io

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise SourceError(f"{path}: the PDF is encrypted; decrypt it first (qpdf --decrypt)")
        pages = [page.extract_text() or "" for page in reader.pages]
    except SourceError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise SourceError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc})") from None
    starts, parts, size = [], [], 0
    for text in pages:
        starts.append(size)
        piece = text.strip() + "\n\n"
        parts.append(piece)
        size += len(piece)
    text = "".join(parts).rstrip()
    if not text.strip():
        raise SourceError(f"{path}: the PDF has no text layer (a scan?); run OCR on it first")
    base = plain_structure(text, _pdf_title(reader))
    return ParsedDocument(text, base.sections, pages=tuple(min(s, len(text)) for s in starts),
                          title=base.title)


def _pdf_title(reader: object) -> str | None:
    try:
        title = reader.metadata.title  # type: ignore[attr-defined]
    except Exception:  # metadata of a damaged PDF: the title is optional
        return None
    return title.strip() if isinstance(title, str) and title.strip() else None


def _docx(path: Path, data: bytes) -> ParsedDocument:
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise _missing("python-docx", ".docx") from None
    import io
    import zipfile

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise SourceError(f"{path}: not a readable DOCX file ({exc})") from None
    parts: list[str] = []
    headings: list[tuple[int, int, str]] = []
    blocks: list[tuple[int, int]] = []
    size = 0
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = [" | ".join(cell.text.strip() for cell in row.cells) for row in item.rows]
            piece = "\n".join(rows)
            if piece.strip():
                blocks.append((size, size + len(piece)))
        else:
            piece = item.text
            level = _heading_level(getattr(item.style, "name", "") or "")
            if level is not None and piece.strip():
                headings.append((size, level, piece.strip()))
        if piece.strip():
            parts.append(piece + "\n\n")
            size += len(piece) + 2
    text = "".join(parts).rstrip()
    title = (document.core_properties.title or "").strip() or \
        next((t for _, level, t in headings if level <= 1), None)
    return ParsedDocument(text, sections_from_headings(text, headings), tuple(blocks), title=title)


def _heading_level(style: str) -> int | None:
    if style == "Title":
        return 0
    if style.startswith("Heading "):
        number = style.removeprefix("Heading ").strip()
        if number.isdigit():
            return int(number)
    return None
