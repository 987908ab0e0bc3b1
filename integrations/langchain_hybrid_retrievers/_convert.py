"""Conversions between core `Doc` / `Hit` and LangChain `Document`, written once.

Every function returns new objects: the caller's documents and the index's stored
metadata are never edited.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from numbers import Real
from typing import Any

from langchain_core.documents import Document

from hybrid_retrievers.integration import content_id, copy_metadata, copy_metadatas, make_docs
from hybrid_retrievers.types import Doc, Hit

RANK_KEY = "rank"
"""Metadata key under which a returned `Document` carries its 1-based rank."""

Metadatas = Iterable[Mapping[str, Any]] | None
"""``from_texts`` / ``add_texts``: one metadata mapping per text (copied), or ``None``."""

Ids = Iterable[str | None] | None
"""``from_texts`` / ``add_texts``: one id per text (``None``: a deterministic content id),
or ``None`` for content ids throughout."""


def _check_document(document: Any, position: int) -> Document:
    if not isinstance(document, Document):
        raise TypeError(
            f"documents[{position}] must be a langchain_core.documents.Document, got "
            f"{type(document).__name__}: {document!r:.80}; use from_texts() for raw strings"
        )
    return document


def documents_to_columns(
    documents: Iterable[Document],
) -> tuple[list[str], list[str | None], list[dict[str, Any]]]:
    """Split documents into the core's parallel ``(texts, ids, metadatas)`` lists
    (``Document.id`` kept, ``None`` for a content id; metadata copied)."""
    if isinstance(documents, (str, Document)):
        raise TypeError(
            "documents must be a list of Document, got a single "
            f"{type(documents).__name__}; wrap it in a list"
        )
    docs = [_check_document(d, i) for i, d in enumerate(documents)]
    texts = [d.page_content for d in docs]
    metadatas = [copy_metadata(d.metadata) for d in docs]
    # A None id asks the core for a content id (with its rule for repeated texts).
    return texts, [d.id for d in docs], metadatas


def hit_to_document(hit: Hit, score_key: str,
                    extra: Mapping[str, Any] | None = None) -> Document:
    """A new `Document` for a core `Hit`: a copy of the stored metadata (`copy_metadata`),
    then the score (a Python float) under ``score_key``, the 1-based rank under ``"rank"``
    and the ``extra`` keys (a retriever's provenance), overwriting same-named keys in
    the copy only."""
    metadata = copy_metadata(hit.doc.metadata)
    metadata[score_key] = float(hit.score)
    metadata[RANK_KEY] = int(hit.rank)
    if extra:
        metadata.update(extra)
    return Document(id=hit.doc.id, page_content=hit.doc.text, metadata=metadata)


def documents_to_docs(documents: Iterable[Document]) -> list[Doc]:
    """`documents_to_columns` as core `Doc` objects (content ids for ``id=None``)."""
    return make_docs(*documents_to_columns(documents))


def with_metadata(document: Document, updates: Mapping[str, Any]) -> Document:
    """A new `Document` like ``document``, its metadata copied and then ``updates`` set."""
    metadata = copy_metadata(document.metadata)
    metadata.update(updates)
    return Document(id=document.id, page_content=document.page_content, metadata=metadata)


def doc_to_document(doc: Doc) -> Document:
    """A core `Doc` as a new `Document` (id kept, metadata copied)."""
    return Document(id=doc.id, page_content=doc.text, metadata=copy_metadata(doc.metadata))


def document_to_doc(document: Document) -> Doc:
    """A LangChain `Document` as a core `Doc` (metadata shared): ``Document.id``, else the
    content id of its text (text only: retrievers agree on an id-less text's id)."""
    doc_id = document.id if document.id is not None else content_id(document.page_content)
    return Doc(str(doc_id), document.page_content, document.metadata)


FUSION_KEY = "fusion"
"""Metadata key under which a fused `Document` carries its provenance (see
`hybrid_retrievers.fusion` for the keys of the mapping)."""

SCORE_KEYS = ("score", "relevance_score")
"""Metadata keys read, in order, as a framework retriever's score (after the caller's own)."""


def document_score(metadata: Mapping[str, Any], score_keys: Sequence[str]) -> float | None:
    """The first real number (not a bool) among ``metadata[key]`` for ``key`` in
    ``score_keys``; ``None`` when no key holds one."""
    for key in score_keys:
        value = metadata.get(key)
        if isinstance(value, Real) and not isinstance(value, bool):
            return float(value)
    return None


def document_to_hit(
    document: Document, position: int, score_keys: Sequence[str] = SCORE_KEYS
) -> Hit:
    """Any LangChain retriever's output `Document` as a core `Hit`, to fuse it: id as for
    `document_to_doc`, score the first number under ``score_keys`` (else ``None``), rank
    ``position`` (1-based), and a nested fusion's provenance kept as the explanation."""
    if not isinstance(document, Document):
        raise TypeError(
            f"retrievers must return Document objects, got {type(document).__name__}: "
            f"{document!r:.80}"
        )
    metadata = document.metadata
    nested = metadata.get(FUSION_KEY)
    explanation = {FUSION_KEY: nested} if isinstance(nested, Mapping) else {}
    return Hit(document_to_doc(document),
               document_score(metadata, score_keys),  # type: ignore[arg-type]  # None: no score
               position, explanation)


def check_score_key(value: str, reserved: str | None = None) -> str:
    """A retriever's ``score_key``: non-empty, not ``"rank"`` and not ``reserved`` (another
    key the retriever writes, such as ``"hyde"``); else `ValueError`."""
    if reserved is not None and value == reserved:
        raise ValueError(f"score_key must differ from {reserved!r}, got {value!r}")
    if not value:
        raise ValueError("score_key must be a non-empty string, got ''; e.g. 'score'")
    if value == RANK_KEY:
        raise ValueError(
            f"score_key must differ from {RANK_KEY!r} (the rank's metadata key), "
            f"got {value!r}; use e.g. 'similarity'"
        )
    return value
