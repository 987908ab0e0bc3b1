"""How error messages and reprs name a user's callable (a stemmer or a tokenizer)."""

from __future__ import annotations

from typing import Any


def callable_name(func: Any) -> str:
    """The qualified name of ``func``, or its type's name when it has none."""
    return getattr(func, "__qualname__", None) or type(func).__name__
