"""One metadata key's values over a column of metadata JSON texts, read from the raw bytes.

A `DocColumns` keeps every document's metadata as one JSON object text in a UTF-8 buffer.
An equality filter (``{"lang": "de"}``) needs one key's value per document; parsing every
text for it costs several times more than the filter did when documents were dicts.
`KeyColumn` finds the key in the buffer instead, with one regular-expression pass and no
JSON parse per document, and factorises what follows it: ``codes[row]`` is the index of
the row's value in ``values`` (each distinct value parsed once), `ABSENT` when the row
certainly lacks the key, `UNSURE` when only parsing the row can tell.

Why reading the bytes is exact (never a wrong answer, only rows sent to the parser). In a
JSON text without a backslash, a ``"`` always opens or closes a string, and a string is
its characters as they are. So, for a key free of ``"``, ``\\``, control characters and
JSON's structural characters ``,:[]{}``, the bytes ``"key"`` followed by optional
whitespace and ``:`` occur exactly where that key is a key (a match that began at a
closing quote would hold one of ``,:]}``); when the text has a single ``{`` (no nested
object) every such key is the object's own; and the value token that follows (a string
without escapes, a number, ``true``, ``false``, ``null``) parses alone to what the whole
text would give. Every other row is `UNSURE`: one holding a backslash, a nested object
that holds the key, the key twice (JSON keeps the last), a list or object value, a token
that does not parse, and the rows whose metadata is not in the buffer (not JSON-exact).
A key with a character outside those rules gets no column (the caller parses).

Example:
    >>> import numpy as np
    >>> texts = [b'{"lang":"de","n":1}', b'', b'{"lang":"en"}', b'{"x":{"lang":"de"}}']
    >>> buf = np.frombuffer(b"".join(texts), dtype=np.uint8)
    >>> off = np.cumsum([0] + [len(t) for t in texts])
    >>> column = MetadataKeys(buf, off, unsure_rows=()).column("lang")
    >>> column.values, column.codes.tolist()
    (['de', 'en'], [0, -1, 1, -2])
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["ABSENT", "UNSURE", "KeyColumn", "MetadataKeys", "MAX_CACHED_KEYS",
           "MAX_CACHED_VALUES"]

ABSENT = -1
"""``codes`` value: the document's metadata certainly has no such key."""
UNSURE = -2
"""``codes`` value: only parsing the document's metadata can tell."""
MAX_CACHED_KEYS = 32
"""Key columns kept per table; the cache is emptied when it is full."""
MAX_CACHED_VALUES = 1 << 16
"""A key with more distinct values is read again per filter rather than kept."""

_BACKSLASH, _OPEN_BRACE = 0x5C, 0x7B
_UNSAFE_KEY = re.compile(r'[",:\[\]{}\\\x00-\x1f]')
_WS = rb"[ \t\n\r]*"
_TOKEN = rb'("[^"\\]*"|-?[0-9][0-9.eE+-]*|true|false|null)?'
_UNPARSED = object()


class KeyColumn:
    """One key's value per row: ``values[codes[row]]``, or `ABSENT` / `UNSURE`.

    ``values`` holds each distinct value once, parsed as the whole text would give it
    (``1`` and ``1.0`` stay two values; the caller compares each with its ``==``).
    """

    __slots__ = ("codes", "values")

    def __init__(self, codes: NDArray[np.int32], values: list[Any]) -> None:
        self.codes = codes
        self.values = values

    def matching(self, test: Any, absent: bool) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
        """``(mask, unsure rows)``: the rows whose value passes ``test(value) -> bool``
        (each distinct value tested once; rows without the key pass when ``absent``),
        and the rows left to the caller."""
        passed = np.fromiter((bool(test(v)) for v in self.values), bool, len(self.values))
        lookup = np.concatenate([passed, np.array([False, absent])])  # UNSURE, ABSENT
        return lookup[self.codes], np.flatnonzero(self.codes == UNSURE)


class MetadataKeys:
    """The `KeyColumn`s of one metadata buffer, built on first use and kept.

    ``buf`` and ``off``: the UTF-8 JSON texts and their offsets (``""``: no metadata);
    ``unsure_rows``: rows whose metadata is kept beside the buffer. The buffer never
    changes (a table is immutable; an edit makes a new table with new `MetadataKeys`).
    """

    def __init__(self, buf: NDArray[np.uint8], off: NDArray[np.int64],
                 unsure_rows: Iterable[int]) -> None:
        self._buf = np.ascontiguousarray(buf)
        self._off = np.asarray(off, dtype=np.int64)
        self._extra_rows = np.fromiter(unsure_rows, np.int64)
        self._layout: tuple[NDArray[np.bool_], NDArray[np.bool_]] | None = None
        self._columns: dict[str, KeyColumn] = {}
        self._lock = threading.Lock()

    def column(self, key: Any) -> KeyColumn | None:
        """``key``'s column, or None when its bytes cannot be trusted to mark it (a key
        that is not a str, or holds a quote, backslash, control or structural character)."""
        if type(key) is not str or _UNSAFE_KEY.search(key):
            return None
        column = self._columns.get(key)
        if column is None:
            column = self._build(key)
            if len(column.values) <= MAX_CACHED_VALUES:
                with self._lock:
                    if len(self._columns) >= MAX_CACHED_KEYS:
                        self._columns.clear()
                    self._columns[key] = column
        return column

    def _rows_of(self, positions: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.searchsorted(self._off, positions, side="right") - 1

    def _flags(self) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Per row: (holds a backslash, holds a nested object), computed once."""
        if self._layout is None:
            n = self._off.size - 1
            escaped = np.zeros(n, dtype=bool)
            escaped[self._rows_of(np.flatnonzero(self._buf == _BACKSLASH))] = True
            braces = np.bincount(self._rows_of(np.flatnonzero(self._buf == _OPEN_BRACE)),
                                 minlength=n)
            self._layout = escaped, braces > 1
        return self._layout

    def _build(self, key: str) -> KeyColumn:
        escaped, nested = self._flags()
        n = escaped.size
        codes = np.full(n, ABSENT, dtype=np.int32)
        try:
            name = key.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: only an escape can spell it
            name = None
        values: list[Any] = []
        if name is not None and n:
            pattern = re.compile(b'"' + re.escape(name) + b'"' + _WS + b":" + _WS + _TOKEN)
            found = [(m.span(), m[1]) for m in pattern.finditer(memoryview(self._buf))]
            if found:
                spans = np.fromiter((p for span, _ in found for p in span), np.int64,
                                    2 * len(found)).reshape(-1, 2)
                rows = self._rows_of(spans[:, 0])
                index: dict[bytes | None, int] = {}
                tokens = np.fromiter((index.setdefault(t, len(index)) for _, t in found),
                                     np.int32, len(found))
                parsed = _parse_tokens(list(index))
                bad = np.array([v is _UNPARSED for v in parsed], dtype=bool)
                codes[rows] = tokens
                once = np.bincount(rows, minlength=n) == 1
                unsure = np.zeros(n, dtype=bool)
                past_end = spans[:, 1] > self._off[rows + 1]  # only in a text that is not JSON
                unsure[rows] = ~once[rows] | nested[rows] | bad[tokens] | past_end
                codes[unsure] = UNSURE
                # Renumber to the parsed values (dropping the unparsed ones).
                keep = [i for i, v in enumerate(parsed) if v is not _UNPARSED]
                remap = np.full(len(parsed), UNSURE, dtype=np.int32)
                remap[keep] = np.arange(len(keep), dtype=np.int32)
                sure = codes >= 0
                codes[sure] = remap[codes[sure]]
                values = [parsed[i] for i in keep]
        codes[escaped] = UNSURE
        codes[self._extra_rows] = UNSURE
        return KeyColumn(codes, values)


def _parse_tokens(tokens: list[bytes | None]) -> list[Any]:
    """Each value token as the JSON parser gives it (`_UNPARSED`: none, or malformed):
    all in one parse (each token is a whole JSON value, so ``[t1,t2,...]`` holds exactly
    them), or one at a time when that fails."""
    present = [t for t in tokens if t is not None]
    try:
        values = json.loads(b"[" + b",".join(present) + b"]")
    except ValueError:
        return [_parse_token(t) for t in tokens]
    if len(values) != len(present):  # pragma: no cover - each token is one value
        return [_parse_token(t) for t in tokens]
    it = iter(values)
    return [_UNPARSED if t is None else next(it) for t in tokens]


def _parse_token(token: bytes | None) -> Any:
    """A value token as the JSON parser gives it, or `_UNPARSED` (none, or malformed)."""
    if token is None:
        return _UNPARSED
    try:
        return json.loads(token)
    except ValueError:
        return _UNPARSED
