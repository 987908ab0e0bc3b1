"""Kept for compatibility: the candidate machinery moved to `hybrid_retrievers.fusion.candidates`."""

from __future__ import annotations

from ..validation import (  # noqa: F401 (names this module used to re-export)
    check_count,
    check_k_rrf,
    check_names,
    check_weights,
    parse_enum,
)
from .candidates import (  # noqa: F401
    Candidate,
    Dedup,
    Entry,
    check_limit,
    check_rankings,
    emit,
    gather,
    normalized_text_hash,
)

__all__ = ["Dedup", "normalized_text_hash"]
