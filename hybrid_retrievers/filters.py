"""Metadata filters: what ``filter=`` means, for every index and for fusion.

A filter is a mapping of metadata equalities (``{"field": value, ...}``: a document
passes when every key is in its metadata with an equal value) or a predicate
``callable(Doc) -> bool``. `BM25Index` and `VectorIndex` turn a filter into a mask over
one index version's documents and memoise equality masks per version, so repeating a
filter costs one lookup; `combine_filters` joins a fixed filter with a per-call one.
Over a `DocColumns` table an equality filter reads each key's values from the metadata
bytes (`DocColumns.key_column`, kept per table): each distinct value is compared once
and only the documents the bytes leave unsure are parsed, with the same ``==``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .document_columns import DocColumns
from .types import Doc, MetadataFilter
from .validation import check_filter_values

__all__ = ["passes", "check_filter", "combine_filters", "filter_key", "equality_mask",
           "cached_equality_mask", "filter_mask", "MAX_CACHED_MASKS"]

_MISSING = object()
MAX_CACHED_MASKS = 64
"""Equality masks kept per index version; the cache is emptied when it is full."""


def passes(filter: MetadataFilter, doc: Doc) -> bool:
    """Whether ``doc`` passes ``filter`` (a mapping of equalities or a predicate)."""
    if isinstance(filter, Mapping):
        return all(doc.metadata.get(f, _MISSING) == v for f, v in filter.items())
    return bool(filter(doc))


def check_filter(filter: Any, name: str = "filter") -> None:
    """Refuse anything but None, a mapping or a callable, naming ``name``."""
    if filter is not None and not isinstance(filter, Mapping) and not callable(filter):
        raise TypeError(
            f"{name} must be a mapping of metadata equalities, a callable(Doc) -> bool or "
            f"None, got {type(filter).__name__}"
        )


def combine_filters(
    first: MetadataFilter | None, second: MetadataFilter | None
) -> MetadataFilter | None:
    """A filter that keeps what both keep.

    Two mappings without conflicting keys merge into one mapping (so an index can still
    use its cached equality masks); anything else becomes a predicate that applies both
    (a mapping keeps a document when every key is present in its metadata and equal).

    Example:
        >>> combine_filters({"type": "image"}, {"lang": "en"})
        {'type': 'image', 'lang': 'en'}
    """
    if first is None:
        return second
    if second is None:
        return first
    if isinstance(first, Mapping) and isinstance(second, Mapping):
        conflict = any(key in first and first[key] != value for key, value in second.items())
        if not conflict:
            return {**first, **second}

    def both(doc: Doc) -> bool:
        return passes(first, doc) and passes(second, doc)

    return both


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
    if isinstance(docs, DocColumns):
        mask = _key_columns_mask(items, docs)
        if mask is not None:
            return mask
        # A `DocColumns` table gives its metadata without making a `Doc` per document.
        metadatas = docs.metadatas()
    else:
        metadatas = (d.metadata for d in docs)
    return np.fromiter(
        (all(m.get(f, _MISSING) == v for f, v in items) for m in metadatas),
        bool,
        len(docs),
    )


def _key_columns_mask(items: list[tuple[Any, Any]],
                      docs: DocColumns) -> NDArray[np.bool_] | None:
    """`equality_mask` over a table through its key columns (`DocColumns.key_column`):
    each distinct value of a key is compared once, and only the rows a column leaves
    unsure are parsed; the same ``==`` as a document at a time, so the same answer.
    None when a key has no column."""
    columns = [docs.key_column(field) for field, _ in items]
    if any(column is None for column in columns):
        return None
    mask = np.ones(len(docs), dtype=bool)
    unsure = []
    for (_, value), column in zip(items, columns):
        assert column is not None
        passed, rows = column.matching(lambda x, v=value: x == v, bool(_MISSING == value))
        mask &= passed
        unsure.append(rows)
    if unsure:
        for row in np.unique(np.concatenate(unsure)).tolist():
            m = docs.metadata(row)
            mask[row] = all(m.get(f, _MISSING) == v for f, v in items)
    return mask


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


def filter_mask(
    filter: Any, docs: Sequence[Doc], cache: dict[Hashable, NDArray[np.bool_]]
) -> NDArray[np.bool_]:
    """Which ``docs`` pass ``filter``: a predicate is called per document, an equality
    mapping goes through `cached_equality_mask` (``cache`` as there)."""
    if callable(filter) and not isinstance(filter, Mapping):
        return np.fromiter((bool(filter(d)) for d in docs), bool, len(docs))
    return cached_equality_mask(filter, docs, cache)
