"""Conversions between core `Doc` / `Hit` and LangChain `Document`.

Kept apart from the retriever so the mapping of ids, metadata and scores is written
down once. Every function returns new objects: the caller's documents and the
index's stored metadata are never edited.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from numbers import Real
from typing import Any

from langchain_core.documents import Document

from hybrid_retrievers.ids import content_id
from hybrid_retrievers.types import Doc, Hit

__all__ = [
    "FUSION_KEY",
    "RANK_KEY",
    "SCORE_KEYS",
    "check_score_key",
    "copy_metadata",
    "copy_metadatas",
    "document_score",
    "document_to_hit",
    "documents_to_columns",
    "hit_to_document",
]

RANK_KEY = "rank"
"""Metadata key under which a returned `Document` carries its 1-based rank."""


def copy_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``metadata`` that shares no mutable container with it.

    Dicts, lists, sets and tuples are copied recursively (cycles are kept as cycles);
    other values are shared, as they are immutable or opaque objects (a model, a date)
    that ``copy.deepcopy`` might not even copy. So editing a nested value of a returned
    document never edits the index or the caller's input.
    """
    out = dict(metadata)
    for value in out.values():
        if not isinstance(value, _SCALARS):  # a container somewhere: copy it all
            return _copy_value(metadata, {})  # type: ignore[no-any-return]
    return out


_SCALARS = (str, int, float, bool, type(None))


def copy_metadatas(
    metadatas: Iterable[Mapping[str, Any] | None] | None,
) -> list[Any] | None:
    """`copy_metadata` of each mapping (``None`` entries and a ``None`` list are kept)."""
    if metadatas is None:
        return None
    return [m if not isinstance(m, Mapping) else copy_metadata(m) for m in metadatas]


def _copy_value(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, _SCALARS):
        return value
    seen = memo.get(id(value))
    if seen is not None:
        return seen
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        memo[id(value)] = out
        out.update((k, _copy_value(v, memo)) for k, v in value.items())
        return out
    if isinstance(value, list):
        items: list[Any] = []
        memo[id(value)] = items
        items.extend(_copy_value(v, memo) for v in value)
        return items
    if isinstance(value, tuple):
        return type(value)(*(_copy_value(v, memo) for v in value)) if hasattr(
            value, "_fields") else tuple(_copy_value(v, memo) for v in value)
    if isinstance(value, (set, frozenset)):
        return type(value)(_copy_value(v, memo) for v in value)
    return value


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
    """Split documents into the core's parallel ``(texts, ids, metadatas)`` lists.

    ``Document.id`` is kept; a document without one gets the core's deterministic
    content id (with its ``#n`` rule for repeated texts).
    Metadata is copied (`copy_metadata`), so later edits to the caller's documents,
    nested values included, do not leak in.

    Raises:
        TypeError: if ``documents`` is a single document or holds a non-`Document`.
    """
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


def hit_to_document(hit: Hit, score_key: str) -> Document:
    """Convert a core `Hit` into a new `Document` carrying its score and rank.

    The returned metadata is a fresh dict (`copy_metadata`): the stored metadata, then ``score_key``
    set to the hit's score (BM25, cosine..., as a Python float) and ``"rank"`` set
    to the 1-based rank. Those two keys overwrite same-named keys of the stored
    metadata in the returned copy only.
    """
    metadata = copy_metadata(hit.doc.metadata)
    metadata[score_key] = float(hit.score)
    metadata[RANK_KEY] = int(hit.rank)
    return Document(id=hit.doc.id, page_content=hit.doc.text, metadata=metadata)


FUSION_KEY = "fusion"
"""Metadata key under which a fused `Document` carries its provenance (see
`hybrid_retrievers.fusion` for the keys of the mapping)."""

SCORE_KEYS = ("score", "relevance_score")
"""Metadata keys read, in order, as a framework retriever's score (after the caller's own)."""


def document_score(metadata: Mapping[str, Any], score_keys: Sequence[str]) -> float | None:
    """The first real-number value among ``metadata[key]`` for ``key`` in ``score_keys``.

    Booleans and non-numbers are skipped; ``None`` when no key holds a number.
    """
    for key in score_keys:
        value = metadata.get(key)
        if isinstance(value, Real) and not isinstance(value, bool):
            return float(value)
    return None


def document_to_hit(
    document: Document, position: int, score_keys: Sequence[str] = SCORE_KEYS
) -> Hit:
    """Convert any LangChain retriever's output `Document` into a core `Hit`.

    Used to fuse the output of retrievers this package does not own (vector-store
    retrievers, Elasticsearch...), so the rules are written down once:

    * id: ``Document.id``; a document without one gets ``content_id(page_content)``
      (text only: two retrievers returning the same id-less text with different
      per-retriever metadata, such as their own scores, still agree on the id);
    * score: the first number under ``score_keys`` in the metadata, else ``None``
      (rank-based fusion does not need it; score fusion refuses such lists);
    * rank: ``position`` (1-based, the document's place in the retriever's list);
    * explanation: ``{"fusion": ...}`` when the metadata carries a nested fusion's
      provenance under `FUSION_KEY`, so it is kept in the outer provenance.

    Raises:
        TypeError: if ``document`` is not a `Document`.
    """
    if not isinstance(document, Document):
        raise TypeError(
            f"retrievers must return Document objects, got {type(document).__name__}: "
            f"{document!r:.80}"
        )
    metadata = document.metadata
    doc_id = document.id if document.id is not None else content_id(document.page_content)
    nested = metadata.get(FUSION_KEY)
    explanation = {FUSION_KEY: nested} if isinstance(nested, Mapping) else {}
    return Hit(
        Doc(str(doc_id), document.page_content, metadata),
        document_score(metadata, score_keys),  # type: ignore[arg-type]  # None: no score
        position,
        explanation,
    )


def check_score_key(value: str, reserved: str | None = None) -> str:
    """Validate a retriever's ``score_key`` field: non-empty and not the rank's key.

    Shared by every LangChain retriever of this package, so the rule and its message
    are written once. ``reserved`` is another metadata key the retriever writes (its
    explanation's, such as ``"hyde"``), which the score must not overwrite either.

    Raises:
        ValueError: for ``""``, ``"rank"`` or ``reserved``.
    """
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
