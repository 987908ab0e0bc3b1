"""Deterministic content ids for documents that arrive without one.

The same text and metadata always get the same id, in every process and on every
machine (never ``uuid4``), so re-indexing a corpus keeps its ids stable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["content_id"]


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
