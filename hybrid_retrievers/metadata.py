"""Copies of document metadata that share no mutable container with the original.

An index stores each document's metadata and hands the same mapping out in every `Hit`;
an adapter building a framework object from a hit (or indexing a caller's mapping) copies
it, so that editing a returned document never edits the index, nor the caller's input.
`copy_metadata` copies dicts, lists, sets and tuples recursively (cycles kept as cycles)
and shares every other value: immutable or opaque objects that ``copy.deepcopy`` might
not copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["copy_metadata", "copy_metadatas"]


def copy_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``metadata`` sharing no mutable container with it (see the module)."""
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
