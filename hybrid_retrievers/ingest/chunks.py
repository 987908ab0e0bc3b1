"""Chunks as `Doc` objects with their provenance, and parents rebuilt from them.

Every chunk of a source (a file, or one record of a JSONL file) becomes a `Doc` whose
text is exactly ``parsed.text[start_index:end_index]`` and whose metadata holds:

=================  ===========================================================================
key                value
=================  ===========================================================================
``file``           the source file, relative to the indexed folder (POSIX separators)
``file_sha256``    SHA-256 of the file's bytes (what incremental indexing compares)
``section``        the heading path, ``"Install > From source"`` (``""`` before any heading)
``parent_id``      the chunk's parent: ``"<source id>#s<n>"`` for the n-th leaf section,
                   or the source id when the source has one section
``child_index``    the chunk's 0-based position within its parent
``start_index``    character offset of the chunk in the source's extracted text
``end_index``      the offset just past the chunk
``page``           1-based page of ``start_index`` (PDF only); ``page_end`` when it ends on
                   a later page
``title``          the document's title, when it has one
=================  ===========================================================================

plus the record's own metadata for JSONL records. Chunk ids are
``"<parent_id>:<child_index>"`` (`child_id`), so ids are stable for an unchanged file.

Parents are not stored twice: `parents_from_chunks` rebuilds each parent's text from
its chunks' spans (overlaps removed), which is what ``search --parents`` returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..text.splitting import CHILD_INDEX_KEY, PARENT_ID_KEY, START_INDEX_KEY, child_id
from ..types import Doc
from .chunking import StructuredChunker
from .structure import ParsedDocument

__all__ = ["END_INDEX_KEY", "FILE_HASH_KEY", "FILE_KEY", "SECTION_KEY", "document_chunks",
           "parents_from_chunks"]

FILE_KEY = "file"
FILE_HASH_KEY = "file_sha256"
SECTION_KEY = "section"
END_INDEX_KEY = "end_index"


def document_chunks(
    parsed: ParsedDocument,
    source_id: str,
    chunker: StructuredChunker | None,
    *,
    file: str,
    file_hash: str,
    metadata: Mapping[str, Any] | None = None,
) -> list[Doc]:
    """The chunks of one source as `Doc` objects (see the module doc for ids and metadata).

    ``chunker=None`` keeps the whole source as one chunk with id ``source_id`` (the
    ``--whole-files`` path: records keep their own ids, as evaluation needs).

    Example:
        >>> from hybrid_retrievers.ingest import StructuredChunker, markdown_structure
        >>> doc = markdown_structure("# Setup\\nRun it.\\n\\n## Proxy\\nSet a proxy.\\n")
        >>> chunks = document_chunks(doc, "notes.md", StructuredChunker(), file="notes.md",
        ...                          file_hash="ab12")
        >>> [(c.id, c.metadata["section"]) for c in chunks]
        [('notes.md#s0:0', 'Setup'), ('notes.md#s1:0', 'Setup > Proxy')]
    """
    base = dict(metadata or {})
    base[FILE_KEY] = file
    base[FILE_HASH_KEY] = file_hash
    if parsed.title:
        base.setdefault("title", parsed.title)
    text = parsed.text
    if chunker is None:
        start = len(text) - len(text.lstrip())
        meta = {**base, SECTION_KEY: "", PARENT_ID_KEY: source_id, CHILD_INDEX_KEY: 0,
                START_INDEX_KEY: start, END_INDEX_KEY: len(text.rstrip())}
        return [Doc(source_id, text, meta)]
    chunks = chunker.chunk(parsed)
    one_section = len(parsed.sections) == 1
    out: list[Doc] = []
    positions: dict[int, int] = {}
    for c in chunks:
        section = parsed.sections[c.section]
        parent = source_id if one_section else f"{source_id}#s{c.section}"
        position = positions.get(c.section, 0)
        positions[c.section] = position + 1
        meta = {**base, SECTION_KEY: " > ".join(section.path), PARENT_ID_KEY: parent,
                CHILD_INDEX_KEY: position, START_INDEX_KEY: c.start, END_INDEX_KEY: c.end}
        if parsed.pages:
            first, last = parsed.page_at(c.start), parsed.page_at(max(c.start, c.end - 1))
            meta["page"] = first
            if last != first:
                meta["page_end"] = last
        out.append(Doc(child_id(parent, position), text[c.start:c.end], meta))
    return out


def parents_from_chunks(chunks: Iterable[Doc]) -> list[Doc]:
    """One `Doc` per ``parent_id``: its chunks' texts joined in span order, overlaps removed.

    The parent's metadata is its first chunk's, without the chunk-only keys, with the
    parent's span (``start_index`` of the first chunk, ``end_index`` of the last). The
    whitespace between two chunks that do not touch is written as one newline.

    Example:
        >>> a = Doc("f#s0:0", "One. Two.", {"parent_id": "f#s0", "child_index": 0,
        ...                                 "start_index": 0, "end_index": 9})
        >>> b = Doc("f#s0:1", "Two. Three.", {"parent_id": "f#s0", "child_index": 1,
        ...                                   "start_index": 5, "end_index": 16})
        >>> parents_from_chunks([b, a])[0].text
        'One. Two. Three.'
    """
    groups: dict[str, list[Doc]] = {}
    for chunk in chunks:
        parent = chunk.metadata.get(PARENT_ID_KEY)
        if isinstance(parent, str):
            groups.setdefault(parent, []).append(chunk)
    parents = []
    for parent, members in groups.items():
        members.sort(key=lambda d: (d.metadata.get(START_INDEX_KEY, 0),
                                    d.metadata.get(CHILD_INDEX_KEY, 0)))
        pieces: list[str] = []
        reached = None
        for d in members:
            start = d.metadata.get(START_INDEX_KEY)
            end = d.metadata.get(END_INDEX_KEY)
            if not isinstance(start, int) or not isinstance(end, int) or reached is None:
                pieces.append(d.text if not pieces else "\n" + d.text)
            elif start < reached:
                pieces.append(d.text[reached - start:])
            else:
                pieces.append("\n" + d.text)
            if isinstance(end, int):
                reached = end if reached is None else max(reached, end)
        first, last = members[0].metadata, members[-1].metadata
        meta = {k: v for k, v in first.items() if k not in (CHILD_INDEX_KEY, PARENT_ID_KEY)}
        if END_INDEX_KEY in last:
            meta[END_INDEX_KEY] = last[END_INDEX_KEY]
        parents.append(Doc(parent, "".join(pieces), meta))
    return parents
