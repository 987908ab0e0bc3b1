"""Saving and loading an index's documents (`DocColumns`) as plain arrays, memory-mappable.

Layout: three UTF-8 buffers with their offsets, as ``.npy`` files (no pickle):
``doc_ids.npy`` + ``doc_id_offsets.npy``, ``doc_texts.npy`` + ``doc_text_offsets.npy``,
``doc_metadata.npy`` + ``doc_metadata_offsets.npy`` (each document's metadata as a JSON
object, empty for none); the index's manifest says ``"documents": "columns"``.
Document ``i``'s text is ``doc_texts[doc_text_offsets[i]:doc_text_offsets[i + 1]]``.
Loaded with ``mmap``, the three buffers are memory-mapped (texts are read when a hit
returns them); their offsets are read and checked always.

Indexes saved before (``docs.jsonl``, one JSON document per line) still load.

Checked on load: offsets start at 0, never decrease and end at their buffer's size; ids
are unique. Read into memory (or with ``verify``), also: every buffer is valid UTF-8 cut
at character boundaries and every metadata text is a JSON object with no NaN, infinity
or lone surrogate. Saving refuses metadata JSON would not give back exactly, with the
error `IndexWriter.docs` gives.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._integrity import check_offsets, check_unique_ids
from ..document_columns import DocColumns, StrColumn
from .reader import IndexReader
from .safe_read import SURROGATE_ESCAPE, IndexFormatError
from .writer import IndexWriter, doc_json_line

__all__ = ["COLUMNS", "write_documents", "read_documents"]

COLUMNS = "columns"
"""The manifest's ``"documents"`` value for documents saved as arrays."""

_PARTS = (("doc_ids", "doc_id_offsets", "ids"), ("doc_texts", "doc_text_offsets", "texts"),
          ("doc_metadata", "doc_metadata_offsets", "metadata"))


def write_documents(w: IndexWriter, docs: DocColumns) -> dict[str, str]:
    """Write ``docs`` as arrays; the manifest entry to add (``{"documents": "columns"}``).

    Raises:
        TypeError: a document's metadata would not load back unchanged (named).
    """
    ids, texts, meta, extras = docs.columns
    for row in sorted(extras):
        doc_json_line(docs[row])  # raises the error naming the document and the problem
    for (name, offsets_name, _), column in zip(_PARTS, (ids, texts, meta)):
        buf, off = column.buffers()
        w.array(name, np.asarray(buf, dtype=np.uint8))
        w.array(offsets_name, np.asarray(off, dtype=np.int64))
    return {"documents": COLUMNS}


def read_documents(r: IndexReader, n_docs: int, *, mmap: bool = False,
                   verify: bool = False) -> DocColumns:
    """The documents of a saved index (either layout), checked (see the module).

    Raises:
        IndexFormatError: a missing, corrupt or inconsistent part, naming the file.
    """
    where = r.where()
    layout = r.manifest.get("documents")
    if layout is None:
        return _read_lines(r, n_docs)
    if layout != COLUMNS:
        raise IndexFormatError(f"{where}: unknown documents layout {layout!r} in manifest "
                               f"(this release reads {COLUMNS!r} and docs.jsonl)")
    full = not mmap or verify
    columns = []
    for name, offsets_name, what in _PARTS:
        off = r.array(offsets_name, dtype_kind="iu", ndim=1, length=n_docs + 1)
        buf = r.array(name, dtype_kind="u", ndim=1, mmap=mmap, verify=verify)
        if buf.dtype != np.uint8:
            raise IndexFormatError(f"{r.where(name + '.npy')}: must be uint8, got {buf.dtype}")
        off = off.astype(np.int64, copy=False)
        check_offsets(off, where=where, file=f"{offsets_name}.npy", end=buf.size)
        if full:
            _check_utf8(buf, off, r.where(f"{name}.npy"), what)
        columns.append(StrColumn(buf=buf, off=off))
    table = DocColumns(*columns)
    table.source = tuple(r.checksum(f"{name}.npy") for part in _PARTS for name in part[:2])
    if full:
        _check_metadata(columns[2], r.where("doc_metadata.npy"))
    dupes = table.rows.duplicates()
    if dupes:
        raise IndexFormatError(f"{r.where('doc_ids.npy')}: duplicate document id {dupes[0]!r}")
    return table


def _read_lines(r: IndexReader, n_docs: int) -> DocColumns:
    """Documents saved as ``docs.jsonl`` (releases before the columns)."""
    docs = list(r.docs("docs"))
    where = r.where()
    if len(docs) != n_docs:
        raise IndexFormatError(f"{where}: docs.jsonl has {len(docs)} documents, manifest "
                               f"says {n_docs}")
    check_unique_ids([d.id for d in docs], where=f"{where}/docs.jsonl")
    return DocColumns.from_docs(docs)


def _check_utf8(buf: NDArray[np.uint8], off: NDArray[np.int64], where: str, what: str) -> None:
    """The buffer decodes as UTF-8 and every offset falls on a character boundary."""
    try:
        memoryview(np.ascontiguousarray(buf)).tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        row = int(np.searchsorted(off, exc.start, side="right")) - 1
        raise IndexFormatError(f"{where}: the {what} of document {row} are not valid UTF-8 "
                               f"({exc.reason})") from None
    inner = off[(off > 0) & (off < buf.size)]
    cut = np.flatnonzero((buf[inner] & 0xC0) == 0x80)
    if cut.size:
        row = int(np.searchsorted(off, inner[cut[0]], side="right")) - 1
        raise IndexFormatError(f"{where}: offsets cut a character before document {row}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON data")


def _check_metadata(meta: StrColumn, where: str) -> None:
    from ..documents import check_unicode

    for row, blob in enumerate(meta):
        if not blob:
            continue
        try:
            value = json.loads(blob, parse_constant=_refuse_constant)
            if type(value) is not dict or not value:
                raise ValueError("expected a non-empty JSON object")
            if SURROGATE_ESCAPE.search(blob):
                check_unicode(None, "", value, f"document {row}")
        except (ValueError, RecursionError) as exc:
            problem = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise IndexFormatError(f"{where}: bad metadata of document {row} ({problem})"
                                   ) from None
