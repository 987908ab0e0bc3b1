"""Reading one file into a `ParsedDocument`, by its suffix.

======================  =======================================================================
suffix                  how
======================  =======================================================================
``.txt``                UTF-8 (or UTF-16 with a BOM) text, no structure
``.md`` ``.markdown``   `markdown_structure`
``.rst``                `rst_structure`
``.html`` ``.htm``      `html_structure` (visible text; ``<title>`` as the title), decoded
                        by `decode_html`: BOM, else the declared ``charset``, else UTF-8,
                        else windows-1252 (what browsers assume for an undeclared page)
``X.gz``                gzip-compressed: decompressed (at most `MAX_DECOMPRESSED_BYTES`),
                        then read as ``X`` (a name without a known suffix: plain text)
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

import codecs
import re
import zlib
from pathlib import Path

from .structure import (
    ParsedDocument,
    html_structure,
    markdown_structure,
    plain_structure,
    rst_structure,
    sections_from_headings,
)

__all__ = ["COMPRESSED_SUFFIXES", "DOCUMENT_SUFFIXES", "MAX_DECOMPRESSED_BYTES", "SourceError",
           "decode_html", "decode_text", "read_document"]

DOCUMENT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".html", ".htm", ".pdf", ".docx")
"""The suffixes `read_document` reads (lower case)."""
COMPRESSED_SUFFIXES = (".gz",)
"""Compressed files `read_document` opens (``changelog.gz``, ``notes.md.gz``)."""
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
"""A compressed file that inflates past this is refused (a zip bomb is 1000:1)."""


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


_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9._:-]+)""")
# Labels browsers read as windows-1252 (WHATWG Encoding: latin1, ascii, iso-8859-1...).
_WINDOWS_1252 = frozenset({"latin_1", "ascii", "iso8859_1", "cp1252"})


def decode_html(path: Path, data: bytes) -> str:
    """``data`` (an HTML page) as text, in the order a browser decides (WHATWG): a BOM;
    else the ``<meta charset>`` / ``http-equiv`` or XML declaration in the first 1024
    bytes (``ISO-8859-1``, ``latin1`` and ``ascii`` read as windows-1252, their
    superset); else UTF-8 when the bytes are valid UTF-8; else windows-1252.

    Raises:
        SourceError: bytes invalid in the declared encoding, or binary (NUL bytes).
    """
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return decode_text(path, data)
    head = data[:1024]
    declared = _CHARSET.search(head) or _XML_ENCODING.match(head)
    encoding = None
    if declared is not None:
        try:
            encoding = codecs.lookup(declared.group(1).decode("ascii")).name
        except LookupError:
            encoding = None  # an unknown label: decide as if none was declared
        if encoding is not None and encoding.replace("-", "_") in _WINDOWS_1252:
            encoding = "cp1252"
        if encoding is not None and encoding.startswith("utf_16"):
            encoding = "utf-8"  # a UTF-16 page without a BOM cannot declare it in ASCII
    if encoding is None or encoding == "utf-8":
        try:
            return decode_text(path, data)
        except SourceError:
            if encoding == "utf-8":
                raise
        encoding = "cp1252"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        if encoding != "cp1252":
            raise SourceError(f"{path}: not valid {declared.group(1).decode()} text as its "
                              f"charset declares (byte 0x{data[exc.start]:02x} at position "
                              f"{exc.start})") from None
        # windows-1252 leaves 5 bytes undefined; browsers map them to C1 controls.
        text = data.decode("latin-1")
    if "\x00" in text:
        raise SourceError(f"{path}: looks binary (contains NUL bytes)")
    return text


def _decompress(path: Path, data: bytes) -> bytes:
    """The inflated bytes of the gzip file ``path``, bounded by `MAX_DECOMPRESSED_BYTES`."""
    inflater = zlib.decompressobj(wbits=31)  # gzip header and trailer
    try:
        out = inflater.decompress(data, MAX_DECOMPRESSED_BYTES + 1)
    except zlib.error as exc:
        raise SourceError(f"{path}: not a readable gzip file ({exc})") from None
    if len(out) > MAX_DECOMPRESSED_BYTES:
        raise SourceError(f"{path}: inflates to more than {MAX_DECOMPRESSED_BYTES >> 20} MiB; "
                          "decompress it yourself if it is really text")
    if not inflater.eof:
        raise SourceError(f"{path}: not a readable gzip file (truncated: the compressed "
                          "stream ends early)")
    return out


def read_document(path: Path, data: bytes | None = None) -> ParsedDocument:
    """The text and structure of the file ``path`` (``data``: its bytes, when already read).

    Raises:
        SourceError: an unknown suffix, an unreadable file, or a file without text.
        ImportError: a ``.pdf`` / ``.docx`` without the ``ingest`` extra installed.
    """
    suffix = path.suffix.lower()
    compressed = suffix in COMPRESSED_SUFFIXES
    if compressed:
        suffix = Path(path.stem).suffix.lower()
        suffix = suffix if suffix in DOCUMENT_SUFFIXES else ".txt"
    elif suffix not in DOCUMENT_SUFFIXES:
        raise SourceError(f"{path}: not a {'/'.join(DOCUMENT_SUFFIXES)} file")
    if data is None:
        data = path.read_bytes()
    if compressed:
        data = _decompress(path, data)
    if suffix == ".pdf":
        parsed = _pdf(path, data)
    elif suffix == ".docx":
        parsed = _docx(path, data)
    else:
        text = decode_html(path, data) if suffix in (".html", ".htm") else decode_text(path, data)
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
