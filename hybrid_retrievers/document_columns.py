"""The documents of an index stored as data: ids, texts and metadata in columns.

An index used to keep a `Doc` per document (with its own metadata dict and read-only
proxy) and an id -> position dict: about 1.9 KB of Python objects per document at 20,000
documents, once per leg of a hybrid. `DocColumns` keeps the same documents as a few
arrays instead:

* ids as one UTF-8 buffer plus offsets (`StrColumn`);
* texts as a `StrColumn` too: a list of the caller's own strings when built from a
  list (no copy of the corpus), one UTF-8 buffer plus offsets once saved or loaded (so a
  loaded index can memory-map it) or when streamed from an iterator (each batch encoded
  as it arrives, the batches joined: `DocColumns.joined`);
* metadata as one compact JSON text per document (empty: none), in a `StrColumn`. A
  document whose metadata JSON would not give back exactly (a tuple, a NaN, a custom
  object, which only an index that is never saved may hold) keeps its mapping as it is,
  beside the column;
* id -> row as a sorted array of 64-bit hashes of the ids (`IdRows`), built on first use:
  a lookup is a binary search plus one comparison, with no per-document dict;
* per metadata key a filter asks about, each document's value read from the metadata
  bytes without parsing them (`key_column`, `hybrid_retrievers.metadata_keys`), built on
  first use.

`Doc` objects are made on the way out (``table[i]``, iteration, `IdRows` lookups), so a
table is a read-only ``Sequence[Doc]``. A table never changes once built: an edit makes a
new one (`placed`, `kept`; appending concatenates buffers), so legs of a hybrid can share
one table and an edit of one leg leaves the others' as they were (copy-on-write).

Example:
    >>> table = DocColumns.from_columns(["a", "b"], ["a cat", "a dog"], [{"n": 1}, None])
    >>> table[0], table.rows.get("b"), len(table)
    (Doc(id='a', text='a cat', metadata=mappingproxy({'n': 1})), 1, 2)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from .metadata_keys import KeyColumn, MetadataKeys
from .types import Doc

__all__ = ["DocColumns", "StrColumn", "IdRows", "json_exact"]

_NO_METADATA: Mapping[str, Any] = MappingProxyType({})
_U8 = np.uint8
_ENCODE_BATCH = 65_536  # strings encoded at a time into a buffer


def _offsets(lengths: NDArray[np.integer]) -> NDArray[np.int64]:
    off = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    return off


class StrColumn(Sequence[str]):
    """An immutable column of strings: a list of str, or one UTF-8 buffer plus offsets.

    String ``i`` of the buffer form is ``buf[off[i]:off[i + 1]]`` decoded. The list form
    holds references to strings the caller already has (building copies nothing); the
    buffer form is what is saved and what a memory-mapped load reads.
    """

    __slots__ = ("_list", "_buf", "_off", "_view")

    def __init__(self, strings: list[str] | None = None, buf: NDArray[np.uint8] | None = None,
                 off: NDArray[np.int64] | None = None) -> None:
        self._list = strings
        self._buf = buf
        self._off = off
        self._view = None if buf is None else memoryview(np.ascontiguousarray(buf)).cast("B")

    @classmethod
    def encoded(cls, strings: Sequence[str], *, name: str = "strings", start: int = 0
                ) -> StrColumn:
        """``strings`` as one UTF-8 buffer plus offsets.

        Raises:
            ValueError: a string UTF-8 cannot encode (a lone surrogate), named as
                ``name[start + i]``.
        """
        if isinstance(strings, StrColumn):
            return strings if strings._list is None else cls.encoded(strings._list)
        step = _ENCODE_BATCH
        if len(strings) > step:  # (saving 10M texts: not one str of them all and its
            # bytes at once, twice the corpus, but the buffer plus one batch)
            return cls.joined([cls.encoded(strings[i:i + step], name=name, start=start + i)
                               for i in range(0, len(strings), step)])
        joined = "".join(strings)
        try:
            data = joined.encode("utf-8")
        except UnicodeEncodeError:
            bad, e = next((i, e) for i, s in enumerate(strings) if (e := _encoding_error(s)))
            raise ValueError(f"{name}[{start + bad}] cannot be encoded as UTF-8 ({e.reason}: "
                             f"{strings[bad][max(0, e.start - 20):e.start + 20]!r}); "
                             "lone surrogates are not valid Unicode text") from None
        if len(data) == len(joined):  # all ASCII: one byte per character
            lengths = np.fromiter(map(len, strings), np.int64, len(strings))
        else:
            lengths = np.fromiter((len(s) if s.isascii() else len(s.encode("utf-8"))
                                   for s in strings), np.int64, len(strings))
        return cls(buf=np.frombuffer(data, dtype=_U8), off=_offsets(lengths))

    @classmethod
    def joined(cls, columns: list[StrColumn]) -> StrColumn:
        """The strings of ``columns`` in order, as one buffer; empties ``columns``.

        Each part is dropped from the list as soon as it is copied, so joining the
        batches of a streamed build needs the result plus one batch, not twice the
        corpus (the parts must not be held elsewhere for that).
        """
        parts = [StrColumn.encoded(c) for c in columns]
        columns.clear()
        total = sum(int(p._off[-1]) for p in parts if p._off is not None)
        buf = np.empty(total, dtype=_U8)
        off = np.zeros(sum(len(p) for p in parts) + 1, dtype=np.int64)
        at = row = 0
        parts.reverse()
        while parts:
            part = parts.pop()
            assert part._buf is not None and part._off is not None
            size, n = int(part._off[-1]), part._off.size - 1
            buf[at:at + size] = part._buf[:size]
            off[row + 1:row + n + 1] = part._off[1:] + at
            at, row = at + size, row + n
            del part
        return cls(buf=buf, off=off)

    @property
    def is_buffer(self) -> bool:
        return self._list is None

    def buffers(self) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
        """The UTF-8 buffer and offsets (encoded now if the column is a list)."""
        col = StrColumn.encoded(self)
        assert col._buf is not None and col._off is not None
        return col._buf, col._off

    def __len__(self) -> int:
        if self._list is not None:
            return len(self._list)
        assert self._off is not None
        return self._off.size - 1

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if self._list is not None:
                return self._list[i]
            if step == 1:  # (the tokeniser's chunks: one offsets read for the range)
                return list(self._decoded(start, max(start, stop)))
            return [self[j] for j in range(start, stop, step)]
        if self._list is not None:
            return self._list[i]
        assert self._off is not None and self._view is not None
        n = self._off.size - 1
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"row {i} out of range for {n} strings")
        a, b = self._off[i : i + 2].tolist()
        return str(self._view[a:b], "utf-8")

    def __iter__(self) -> Iterator[str]:
        if self._list is not None:
            return iter(self._list)
        return self._decoded()

    def _decoded(self, start: int = 0, stop: int | None = None) -> Iterator[str]:
        assert self._off is not None and self._view is not None
        view = self._view
        bounds = self._off[start:None if stop is None else stop + 1].tolist()
        for a, b in zip(bounds, bounds[1:]):
            yield str(view[a:b], "utf-8")

    def many(self, rows: NDArray[np.int64]) -> list[str]:
        """The strings at ``rows`` (one offsets lookup for all of them)."""
        if self._list is not None:
            items = self._list
            return [items[r] for r in rows.tolist()]
        assert self._off is not None and self._view is not None
        view = self._view
        return [str(view[a:b], "utf-8")
                for a, b in zip(self._off[rows].tolist(), self._off[rows + 1].tolist())]

    def tolist(self) -> list[str]:
        return list(self._list) if self._list is not None else list(self._decoded())

    def concat(self, other: StrColumn) -> StrColumn:
        """This column followed by ``other``."""
        if self._list is not None and other._list is not None:
            return StrColumn(self._list + other._list)
        (a, ao), (b, bo) = self.buffers(), other.buffers()
        return StrColumn(buf=np.concatenate([a, b]), off=np.concatenate([ao, bo[1:] + ao[-1]]))

    def taken(self, rows: NDArray[np.int64]) -> StrColumn:
        """The strings at ``rows``, in that order."""
        if self._list is not None:
            items = self._list
            return StrColumn([items[r] for r in rows.tolist()])
        assert self._off is not None and self._view is not None
        starts, ends = self._off[rows], self._off[rows + 1]
        view = self._view
        data = b"".join([view[a:b] for a, b in zip(starts.tolist(), ends.tolist())])
        return StrColumn(buf=np.frombuffer(data, dtype=_U8), off=_offsets(ends - starts))

    def nbytes(self) -> int:
        """Bytes of the buffer form (0 for the list form, whose strings are the caller's)."""
        if self._list is not None:
            return 0
        assert self._buf is not None and self._off is not None
        return int(self._buf.nbytes + self._off.nbytes)


def _encoding_error(s: str) -> UnicodeEncodeError | None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return e
    return None


# ------------------------------------------------------------------ id -> row

def _hashes(strings: Iterable[str], n: int) -> NDArray[np.int64]:
    """Python's own hash of every string (cached on str objects; salted per process, so
    never saved: the lookup is rebuilt from the ids after a load)."""
    return np.fromiter(map(hash, strings), np.int64, n)


class IdRows(Mapping[str, int]):
    """id -> row of a `DocColumns`, without a per-document dict.

    The ids' 64-bit hashes sorted (8 bytes per document) and the rows in that order
    (4 or 8): a lookup hashes the id, binary-searches the hash and compares the id at
    the row it finds (hashes may collide; ids decide). Iterating yields ids in row order.
    Built from the ids in one pass (decoding them once), then kept by the table.
    """

    __slots__ = ("_ids", "_hashes", "_order")

    def __init__(self, ids: StrColumn) -> None:
        self._ids = ids
        hashes = _hashes(ids, len(ids))
        order = np.argsort(hashes, kind="stable")
        self._order = order.astype(np.int32) if len(ids) < 2**31 else order
        self._hashes = hashes[order]

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._find(key) >= 0

    def __getitem__(self, key: str) -> int:
        row = self._find(key) if isinstance(key, str) else -1
        if row < 0:
            raise KeyError(key)
        return row

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        row = self._find(key) if isinstance(key, str) else -1
        return default if row < 0 else row

    def _find(self, key: str) -> int:
        h = hash(key)
        hashes = self._hashes
        i = int(np.searchsorted(hashes, h))
        while i < hashes.size and hashes[i] == h:
            row = int(self._order[i])
            if self._ids[row] == key:
                return row
            i += 1
        return -1

    def find(self, keys: Sequence[str]) -> NDArray[np.int64]:
        """The row of each of ``keys`` (-1: not held), vectorised for many keys."""
        if len(keys) < 8:
            return np.array([self._find(k) for k in keys], dtype=np.int64)
        hashes = _hashes(keys, len(keys))
        at = np.searchsorted(self._hashes, hashes)
        found = np.full(len(keys), -1, dtype=np.int64)
        inside = at < self._hashes.size
        hit = np.zeros(len(keys), dtype=bool)
        hit[inside] = self._hashes[at[inside]] == hashes[inside]
        ids = self._ids
        for j in np.flatnonzero(hit).tolist():
            row = int(self._order[at[j]])
            found[j] = row if ids[row] == keys[j] else self._find(keys[j])
        return found

    def duplicates(self) -> list[str]:
        """Ids held by more than one row (sorted); empty when ids are unique."""
        same = np.flatnonzero(self._hashes[1:] == self._hashes[:-1])
        dupes = set()
        for i in same.tolist():
            for j in range(i + 1, self._hashes.size):
                if self._hashes[j] != self._hashes[i]:
                    break
                a = self._ids[int(self._order[i])]
                if a == self._ids[int(self._order[j])]:
                    dupes.add(a)
        return sorted(dupes)

    def nbytes(self) -> int:
        return int(self._hashes.nbytes + self._order.nbytes)


# ------------------------------------------------------------------ metadata

_EXACT_SCALARS = frozenset({str, int, bool, type(None)})


def json_exact(value: Any) -> bool:
    """Whether ``value`` loads back from JSON exactly equal and of the same types.

    str keys; str, int, bool, None, finite floats, lists and dicts as values. Not
    exact: tuples (JSON gives lists), NaN and infinities (not JSON), any other type.
    """
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t in _EXACT_SCALARS:
            continue
        if t is float:
            if v - v != 0.0:  # NaN or an infinity
                return False
        elif t is dict:
            for k, x in v.items():
                if type(k) is not str:
                    return False
                if type(x) not in _EXACT_SCALARS:
                    stack.append(x)
        elif t is list:
            stack.extend(v)
        else:
            return False
        if len(stack) > 100_000:
            return False
    return True


def _metadata_column(metadatas: Iterable[Mapping[str, Any] | None]
                     ) -> tuple[StrColumn, dict[int, Mapping[str, Any]]]:
    """Metadata as JSON texts ("" for none), and the rows whose metadata is kept as it is."""
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                             check_circular=False).encode
    blobs: list[str] = []
    extras: dict[int, Mapping[str, Any]] = {}
    for row, m in enumerate(metadatas):
        if not m:
            blobs.append("")
            continue
        plain = dict(m)
        if json_exact(plain):
            blobs.append(dumps(plain))
        else:
            blobs.append("")
            extras[row] = m if type(m) is MappingProxyType else MappingProxyType(plain)
    return StrColumn.encoded(blobs), extras


_SCAN = json.JSONDecoder().scan_once


def _parse_object(blob: str) -> Any:
    """One metadata JSON text (a JSON object written by `_metadata_column`), parsed."""
    try:
        value, end = _SCAN(blob, 0)
    except StopIteration:
        raise ValueError(f"not JSON: {blob[:40]!r}") from None
    if end != len(blob):
        raise ValueError(f"extra data after the JSON object: {blob[end:end + 40]!r}")
    return value


# ------------------------------------------------------------------ the table


class DocColumns(Sequence[Doc]):
    """The documents of one index version, as columns; a read-only ``Sequence[Doc]``.

    Build it with `from_columns` (parallel lists: no `Doc` is made) or `from_docs`;
    `Doc` objects are made when read. ``rows`` (`IdRows`) maps ids to rows; ``masks``
    is the memo of equality-filter masks over these documents (shared by every index
    that shares the table). Never modified: `concat`, `placed`, `taken` and `kept`
    return new tables.

    Example:
        >>> t = DocColumns.from_columns(["x", "y"], ["one", "two"], None)
        >>> [d.id for d in t.placed(DocColumns.from_columns(["y"], ["2"], None),
        ...                         np.array([1]))], t.texts()
        (['x', 'y'], ['one', 'two'])
    """

    __slots__ = ("_ids", "_texts", "_meta", "_extras", "_rows", "_keys", "_lock", "masks",
                 "source")

    def __init__(self, ids: StrColumn, texts: StrColumn, meta: StrColumn,
                 extras: dict[int, Mapping[str, Any]] | None = None) -> None:
        if not len(ids) == len(texts) == len(meta):
            raise ValueError(f"columns of different lengths: {len(ids)} ids, {len(texts)} "
                             f"texts, {len(meta)} metadata")
        self._ids = StrColumn.encoded(ids)
        self._texts = texts
        self._meta = meta
        self._extras = extras or {}
        self._rows: IdRows | None = None
        self._keys: MetadataKeys | None = None
        self._lock = threading.Lock()
        self.masks: dict[Hashable, NDArray[np.bool_]] = {}
        # Where a loaded table was read from (its files' checksums), so that indexes
        # loaded from identical files can share it (`documents.share_documents`).
        self.source: Hashable | None = None

    @classmethod
    def from_columns(cls, ids: Sequence[str], texts: Sequence[str],
                     metadatas: Iterable[Mapping[str, Any] | None] | None) -> DocColumns:
        """A table from parallel lists (metadata None: none for any document).

        The texts are kept as they are (the caller's strings, not copied); nothing is
        checked here (see `hybrid_retrievers.documents.make_docs`).
        """
        texts = texts if isinstance(texts, StrColumn) else StrColumn(list(texts))
        if metadatas is None:
            meta, extras = StrColumn.encoded([""] * len(texts)), {}
        else:
            meta, extras = _metadata_column(metadatas)
        return cls(StrColumn.encoded(ids), texts, meta, extras)

    @classmethod
    def joined(cls, tables: list[DocColumns]) -> DocColumns:
        """The documents of ``tables`` in order, each column as one buffer; empties ``tables``.

        For a build that arrives in batches (`hybrid_retrievers.documents.make_docs` over
        an iterator): each batch's buffers are freed once copied (`StrColumn.joined`).
        """
        ids, texts, meta = [], [], []
        extras: dict[int, Mapping[str, Any]] = {}
        n = 0
        for t in tables:
            ids.append(t._ids)
            texts.append(t._texts)
            meta.append(t._meta)
            extras.update((n + r, m) for r, m in t._extras.items())
            n += len(t)
        tables.clear()
        return cls(StrColumn.joined(ids), StrColumn.joined(texts), StrColumn.joined(meta), extras)

    @classmethod
    def from_docs(cls, docs: Iterable[Doc]) -> DocColumns:
        """A table holding ``docs`` (already checked), in order."""
        if isinstance(docs, DocColumns):
            return docs
        docs = list(docs)
        return cls.from_columns([d.id for d in docs], [d.text for d in docs],
                                [d.metadata for d in docs])

    @classmethod
    def empty(cls) -> DocColumns:
        return cls.from_columns([], [], None)

    # ---------------------------------------------------------------- reading

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> Doc: ...
    @overload
    def __getitem__(self, i: slice) -> list[Doc]: ...

    def __getitem__(self, i: int | slice) -> Doc | list[Doc]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"documents are indexed by int, got {type(i).__name__}")
        i = int(i)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"document {i} out of range for {n} documents")
        return Doc(self._ids[i], self._texts[i], self.metadata(i))

    def at(self, rows: Sequence[int]) -> list[Doc]:
        """The documents at ``rows`` (search hits): one offsets lookup per column."""
        if not len(rows):
            return []
        idx = np.asarray(rows, dtype=np.int64)
        return [Doc(doc_id, text, self._metadata_of(r, blob)) for r, doc_id, text, blob in zip(
            idx.tolist(), self._ids.many(idx), self._texts.many(idx), self._meta.many(idx))]

    def __iter__(self) -> Iterator[Doc]:
        for i, (doc_id, text, m) in enumerate(zip(self._ids, self._texts, self._meta)):
            yield Doc(doc_id, text, self._metadata_of(i, m))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DocColumns) or isinstance(other, Sequence) and not isinstance(
                other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DocColumns({len(self)} documents)"

    def id(self, i: int) -> str:
        return self._ids[i]

    def text(self, i: int) -> str:
        return self._texts[i]

    def metadata(self, i: int) -> Mapping[str, Any]:
        return self._metadata_of(i, self._meta[i])

    def _metadata_of(self, i: int, blob: str) -> Mapping[str, Any]:
        if blob:
            return MappingProxyType(_parse_object(blob))
        return self._extras.get(i, _NO_METADATA) if self._extras else _NO_METADATA

    def ids(self) -> list[str]:
        return self._ids.tolist()

    def texts(self) -> list[str]:
        return self._texts.tolist()

    def metadatas(self) -> Iterator[Mapping[str, Any]]:
        """Every document's metadata in order (no `Doc` made; for filters).

        All metadata texts are parsed in one JSON call when they are ASCII (one call per
        document costs several times more).
        """
        extras = self._extras
        buf, off = self._meta.buffers()
        text = memoryview(np.ascontiguousarray(buf)).tobytes().decode("utf-8")
        if not text.isascii():  # (else byte offsets are character offsets)
            for i, blob in enumerate(self._meta):
                yield self._metadata_of(i, blob)
            return
        bounds = off.tolist()
        values = json.loads("[" + ",".join([text[a:b] or "null" for a, b in zip(
            bounds, bounds[1:])]) + "]")
        for i, value in enumerate(values):
            if value is not None:
                yield MappingProxyType(value)
            else:
                yield extras.get(i, _NO_METADATA) if extras else _NO_METADATA

    def key_column(self, key: Any) -> KeyColumn | None:
        """One metadata key's value per document, read from the metadata bytes without
        parsing them (`hybrid_retrievers.metadata_keys`), kept by this table (an edit
        makes a new table, with none); None for a key the bytes cannot mark."""
        keys = self._keys
        if keys is None:
            with self._lock:
                if self._keys is None:
                    buf, off = self._meta.buffers()
                    self._keys = MetadataKeys(buf, off, self._extras)
                keys = self._keys
        return keys.column(key)

    @property
    def columns(self) -> tuple[StrColumn, StrColumn, StrColumn, Mapping[int, Mapping[str, Any]]]:
        """ids, texts, metadata JSON texts and the rows whose metadata is not JSON-exact."""
        return self._ids, self._texts, self._meta, MappingProxyType(self._extras)

    @property
    def rows(self) -> IdRows:
        """id -> row (`IdRows`), built on first use and then kept."""
        rows = self._rows
        if rows is None:
            with self._lock:
                if self._rows is None:
                    self._rows = IdRows(self._ids)
                rows = self._rows
        return rows

    def nbytes(self) -> int:
        """Bytes of the columns' buffers and the id lookup (not list-form texts)."""
        rows = self._rows
        return (self._ids.nbytes() + self._texts.nbytes() + self._meta.nbytes()
                + (rows.nbytes() if rows is not None else 0))

    # ---------------------------------------------------------------- editing

    def concat(self, other: DocColumns) -> DocColumns:
        """This table followed by ``other``."""
        if not len(other):
            return self
        if not len(self):
            return other
        n = len(self)
        extras = dict(self._extras)
        extras.update((n + r, m) for r, m in other._extras.items())
        return DocColumns(self._ids.concat(other._ids), self._texts.concat(other._texts),
                          self._meta.concat(other._meta), extras)

    def taken(self, rows: NDArray[np.int64]) -> DocColumns:
        """The documents at ``rows``, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        extras = {}
        if self._extras:
            extras = {new: self._extras[old] for new, old in enumerate(rows.tolist())
                      if old in self._extras}
        return DocColumns(self._ids.taken(rows), self._texts.taken(rows),
                          self._meta.taken(rows), extras)

    def placed(self, new: DocColumns, rows: NDArray[np.int64] | None) -> DocColumns:
        """``new[j]`` at row ``rows[j]``: a row below ``len(self)`` replaces that document,
        the others are appended in order (``rows`` None: all appended)."""
        n = len(self)
        if rows is None or not len(new) or bool((rows >= n).all()):
            return self.concat(new)
        rows = np.asarray(rows, dtype=np.int64)
        n_out = n + int((rows >= n).sum())
        source = np.arange(n_out, dtype=np.int64)
        source[rows] = n + np.arange(len(new), dtype=np.int64)
        return self.concat(new).taken(source)

    def kept(self, alive: NDArray[np.bool_]) -> DocColumns:
        """The documents where ``alive``, in order."""
        return self.taken(np.flatnonzero(alive))
