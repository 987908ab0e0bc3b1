"""Argument checks shared by every searcher, with messages that name the fix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["check_k", "check_query", "check_queries"]


def check_k(k: Any, name: str = "k") -> int:
    """Return ``k`` as an int, or raise naming the parameter, the rule and the value."""
    if isinstance(k, bool) or not isinstance(k, (int,)) and not _is_integer_like(k):
        raise TypeError(f"{name} must be a positive int, got {type(k).__name__}: {k!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"{name} must be >= 1, got {k}; ask for at least one result")
    return k


def _is_integer_like(value: Any) -> bool:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a core dependency
        return False
    return isinstance(value, np.integer)


def check_query(query: Any, name: str = "query") -> str:
    """Return ``query`` if it is a non-blank string, else raise a clear error."""
    if not isinstance(query, str):
        raise TypeError(f"{name} must be a str, got {type(query).__name__}: {query!r:.80}")
    if not query.strip():
        raise ValueError(f"{name} must not be empty or blank, got {query!r}")
    return query


def check_queries(queries: Any) -> list[str]:
    """Validate a batch of queries; the error names the position of a bad one."""
    if isinstance(queries, str) or not isinstance(queries, Sequence):
        raise TypeError(
            f"queries must be a list of str, got {type(queries).__name__}; "
            "use search() for a single query"
        )
    return [check_query(q, name=f"queries[{i}]") for i, q in enumerate(queries)]
