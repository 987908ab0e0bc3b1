"""Kept for compatibility: parent splitting moved to :mod:`hybrid_retrievers.text.splitting`."""

from __future__ import annotations

from .text.splitting import (
    CHILD_INDEX_KEY,
    PARENT_ID_KEY,
    START_INDEX_KEY,
    SentenceSplitter,
    Splitter,
    as_splitter,
    child_id,
    split_parents,
)

__all__ = [
    "CHILD_INDEX_KEY",
    "PARENT_ID_KEY",
    "START_INDEX_KEY",
    "SentenceSplitter",
    "Splitter",
    "as_splitter",
    "child_id",
    "split_parents",
]
