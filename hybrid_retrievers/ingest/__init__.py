"""Ingestion: files to structured text to chunks with provenance, and incremental re-indexing.

The steps the ``hybrid-retrievers index`` command runs, usable from Python too:

1. `read_document` (``formats``): a file to a `ParsedDocument` -- the text, its leaf
   sections with their heading paths, the atomic blocks (code, tables) and, for PDF,
   page offsets. Markdown, reStructuredText and HTML parsers are in ``structure``;
   PDF (pypdf) and DOCX (python-docx) need the ``ingest`` extra.
2. `StructuredChunker` (``chunking``): section-bounded, sentence-packed chunks counted
   in the embedding model's tokens (`token_counter`), with overlap; atomic blocks are
   never cut.
3. `document_chunks` (``chunks``): chunks as `Doc` objects with file, section, span,
   page and parent in their metadata; `parents_from_chunks` rebuilds the parents.
4. `plan_sync` (``incremental``): which files changed, appeared, vanished or were
   renamed since an index was built, from the content hashes its chunks carry.
5. `FolderIndex` (``folder``): the whole of it as one object: build a folder index on
   disk, update it, open it and search it (the format the command line writes).

Example:
    >>> from hybrid_retrievers.ingest import (StructuredChunker, document_chunks,
    ...                                       markdown_structure)
    >>> parsed = markdown_structure("# Proxy\\nSet HTTPS_PROXY. Then retry.\\n")
    >>> [c.text for c in document_chunks(parsed, "a.md", StructuredChunker(),
    ...                                  file="a.md", file_hash="0f")]
    ['# Proxy\\nSet HTTPS_PROXY. Then retry.']
"""

from __future__ import annotations

from .chunking import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    MAX_CHARS_PER_TOKEN,
    Chunk,
    StructuredChunker,
    TokenCounter,
    approximate_tokens,
    token_counter,
)
from .chunks import (
    END_INDEX_KEY,
    FILE_HASH_KEY,
    FILE_KEY,
    SECTION_KEY,
    document_chunks,
    parents_from_chunks,
)
from .formats import (
    COMPRESSED_SUFFIXES,
    DOCUMENT_SUFFIXES,
    MAX_DECOMPRESSED_BYTES,
    SourceError,
    decode_html,
    decode_text,
    read_document,
)
from .folder import FolderIndex, FolderResult, IndexReport
from .incremental import SyncPlan, indexed_files, plan_sync, renamed_id
from .structure import (
    ParsedDocument,
    Section,
    html_structure,
    markdown_structure,
    plain_structure,
    rst_structure,
    sections_from_headings,
)

__all__ = [
    "COMPRESSED_SUFFIXES",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "DOCUMENT_SUFFIXES",
    "END_INDEX_KEY",
    "FILE_HASH_KEY",
    "FILE_KEY",
    "MAX_CHARS_PER_TOKEN",
    "MAX_DECOMPRESSED_BYTES",
    "SECTION_KEY",
    "Chunk",
    "FolderIndex",
    "FolderResult",
    "IndexReport",
    "ParsedDocument",
    "Section",
    "SourceError",
    "StructuredChunker",
    "SyncPlan",
    "TokenCounter",
    "approximate_tokens",
    "decode_html",
    "decode_text",
    "document_chunks",
    "html_structure",
    "indexed_files",
    "markdown_structure",
    "parents_from_chunks",
    "plain_structure",
    "plan_sync",
    "read_document",
    "renamed_id",
    "rst_structure",
    "sections_from_headings",
    "token_counter",
]
