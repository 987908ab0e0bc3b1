"""Deterministic content ids for documents that arrive without one.

The same text and metadata always get the same id, in every process and on every
machine (never ``uuid4``), so re-indexing a corpus keeps its ids stable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["content_id", "is_content_id"]


def content_id(text: str, metadata: Mapping[str, Any] | None = None) -> str:
    """Return a 32-hex-digit id derived from ``text`` and ``metadata``.

    Example:
        >>> content_id("hello") == content_id("hello")
        True
        >>> len(content_id("hello"))
        32
    """
    payload = text if not metadata else text + "\x00" + json.dumps(
        metadata, sort_keys=True, default=str, ensure_ascii=False
    )
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=16).hexdigest()


def is_content_id(doc_id: str, text: str, metadata: Mapping[str, Any] | None = None) -> bool:
    """Whether ``doc_id`` is the content id this package gives ``text`` / ``metadata``
    when they arrive without an id: `content_id`, or it with the ``#2``, ``#3``...
    suffix that later copies of the same text and metadata get (`make_docs`).

    So an adapter can hand back "no id" for a document that was given none (as
    LangChain's ``BM25Retriever`` does) while the index keeps its stable content id;
    the answer needs no extra state, and survives a save and load.

    Example:
        >>> is_content_id(content_id("hello"), "hello"), is_content_id("a1", "hello")
        (True, False)
        >>> is_content_id(content_id("hello") + "#2", "hello")
        True
    """
    base = content_id(text, dict(metadata) if metadata else None)  # a stored Doc's is a proxy
    if doc_id == base:
        return True
    suffix = doc_id[len(base) + 1:] if doc_id.startswith(base + "#") else ""
    return suffix.isascii() and suffix.isdigit() and not suffix.startswith("0")
