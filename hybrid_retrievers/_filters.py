"""Metadata equality filters: one mask computation and one cache key for every index.

`BM25Index` and `VectorIndex` accept ``filter={"field": value, ...}`` and keep each
filter's corpus-wide mask per index version, so repeating a filter costs one lookup.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .validation import check_filter_values
from .types import Doc

__all__ = ["filter_key", "equality_mask", "cached_equality_mask", "MAX_CACHED_MASKS"]

_MISSING = object()
MAX_CACHED_MASKS = 64
"""Equality masks kept per index version; the cache is emptied when it is full."""


def filter_key(filter: Mapping[Any, Any]) -> Hashable | None:
    """A cache key for an equality filter, or ``None`` when it must not be cached.

    Two filters get the same key exactly when they have the same keys and, per key,
    values of the same type that compare equal (so they select the same documents).
    Keying by ``repr`` would not do: unequal values can share a repr (a dataclass
    field with ``repr=False``). A filter with an unhashable value (a list, a dict)
    has no key; its mask is computed per search.

    Example:
        >>> filter_key({"a": 1}) == filter_key({"a": 1}) != filter_key({"a": True})
        True
        >>> filter_key({"tags": ["x"]}) is None
        True
    """
    try:
        return frozenset((field, type(value), value) for field, value in filter.items())
    except TypeError:
        return None


def equality_mask(filter: Mapping[Any, Any], docs: Sequence[Doc]) -> NDArray[np.bool_]:
    """Which ``docs`` have every ``filter`` key in their metadata, with an equal value."""
    items = list(filter.items())
    return np.fromiter(
        (all(d.metadata.get(f, _MISSING) == v for f, v in items) for d in docs),
        bool,
        len(docs),
    )


def cached_equality_mask(
    filter: Any, docs: Sequence[Doc], cache: dict[Hashable, NDArray[np.bool_]]
) -> NDArray[np.bool_]:
    """`equality_mask` of ``filter`` over ``docs``, memoised in ``cache`` by `filter_key`.

    ``cache`` must belong to exactly this ``docs`` (one index version): a mask is only
    valid for the documents it was computed over. The returned mask is read-only.

    Raises:
        TypeError: ``filter`` is not a mapping.
    """
    if not isinstance(filter, Mapping):
        raise TypeError(
            "filter must be a mapping of metadata equalities or a callable(Doc) -> bool, "
            f"got {type(filter).__name__}"
        )
    check_filter_values(filter)
    key = filter_key(filter)
    mask = None if key is None else cache.get(key)
    if mask is None:
        mask = equality_mask(filter, docs)
        mask.flags.writeable = False
        if key is not None:
            if len(cache) >= MAX_CACHED_MASKS:
                cache.clear()
            cache[key] = mask
    return mask
