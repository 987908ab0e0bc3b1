"""Documents of an index: building validated `Doc` objects, and keeping them in order.

Every index builds documents the same way (`make_docs`, `check_docs`), so ids,
content-id fallbacks and their error messages are identical for BM25, dense and any
other index. Every index also keeps them the same way: a `DocTable` (documents in
index order, id -> position, the filter-mask memo) is the document half of an index
snapshot, and `DocumentAccess` gives an index over such a snapshot its read-only
``len``/``in``/``get``/``ids``/``docs``. Every index edits them the same way too:
`EditableIndex` writes ``add``/``add_docs``/``upsert``/``upsert_docs``/``delete`` once
(checks, writer lock, snapshot swap) over the hooks where the indexes differ.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Iterator, Mapping, Set, Sized
from itertools import islice
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .document_columns import DocColumns, IdRows, StrColumn
from .filters import cached_equality_mask, filter_mask
from .ids import content_id
from .types import Doc, MetadataFilter
from .validation import check_id_list, check_keywords, check_str_items, keyword_names

__all__ = ["make_docs", "check_docs", "check_new_ids", "check_texts_argument", "check_unicode",
           "check_content", "DocTable", "DocumentAccess", "EditableIndex", "share_documents"]

class DocTable:
    """The documents of one index version: in index order, by id, and their filter masks.

    Never modified once published (an edit builds a new table). Index snapshots subclass
    it and add their own arrays (postings, vectors) next to ``docs``, a `DocColumns`
    (documents as columns, `Doc` objects made when read) that several snapshots may
    share: the legs of one hybrid hold the same one.

    Fields: ``docs`` (index order); ``positions`` (id -> position, `IdRows`) and
    ``masks`` (the equality-mask memo of `hybrid_retrievers.filters.cached_equality_mask`)
    are the table's.
    """

    __slots__ = ("docs",)

    def __init__(self, docs: DocColumns | Iterable[Doc]) -> None:
        self.docs = DocColumns.from_docs(docs)

    @property
    def positions(self) -> IdRows:
        return self.docs.rows

    @property
    def masks(self) -> dict[Hashable, NDArray[np.bool_]]:
        return self.docs.masks

    def __len__(self) -> int:
        return len(self.docs)

    def get(self, doc_id: str) -> Doc:
        """The document with ``doc_id``, or a KeyError naming it."""
        row = self.docs.rows.get(doc_id)
        if row is None:
            raise KeyError(f"document {doc_id!r} is not in the index")
        return self.docs[row]

    def check_new(self, docs: DocColumns) -> None:
        """Refuse documents whose id this table holds (`add` semantics)."""
        check_new_ids(docs, self.docs.rows, "use upsert() to replace them, or delete them first")

    def upsert_rows(self, docs: DocColumns) -> NDArray[np.int64]:
        """Where an upsert puts each of ``docs``: a held id keeps its position, a new id
        gets the next free one, in order (ties still go to the earlier document)."""
        rows = self.docs.rows.find(docs.ids()) if len(self.docs) else np.full(
            len(docs), -1, dtype=np.int64)
        new = rows < 0
        rows[new] = len(self.docs) + np.arange(int(new.sum()), dtype=np.int64)
        return rows

    def kept_after_delete(self, ids: list[str]) -> NDArray[np.bool_] | None:
        """Which positions survive deleting ``ids``; ``None`` when ``ids`` is empty.

        Raises:
            KeyError: some id is unknown (then nothing may be deleted).
        """
        rows = self.docs.rows.find(ids) if len(self.docs) else np.full(len(ids), -1)
        unknown = [ids[j] for j in np.flatnonzero(rows < 0).tolist()]
        if unknown:
            raise KeyError(f"{len(unknown)} id(s) not in the index: {unknown[:5]}")
        if not ids:
            return None
        alive = np.ones(len(self.docs), dtype=bool)
        alive[rows] = False
        return alive

    def equality_mask(self, filter: Any) -> NDArray[np.bool_]:
        """The read-only mask of an equality filter, memoised for this version."""
        return cached_equality_mask(filter, self.docs, self.masks)

    def filter_mask(self, filter: MetadataFilter) -> NDArray[np.bool_]:
        """Which documents pass ``filter`` (a predicate is called once per document)."""
        return filter_mask(filter, self.docs, self.masks)


class DocumentAccess:
    """Read-only document access for an index whose ``_state`` is a `DocTable`.

    Each call reads the current snapshot once, so it never mixes two versions.
    """

    __slots__ = ()
    _state: DocTable

    def __len__(self) -> int:
        return len(self._state)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._state.positions

    def get(self, doc_id: str) -> Doc:
        """The stored document with ``doc_id``."""
        return self._state.get(doc_id)

    @property
    def ids(self) -> list[str]:
        """Document ids in index order."""
        return self._state.docs.ids()

    @property
    def docs(self) -> DocColumns:
        """Documents in index order: a read-only ``Sequence[Doc]`` (`DocColumns`) of this
        version, which later edits leave as it is."""
        return self._state.docs


class EditableIndex(DocumentAccess):
    """The editing methods of an index over `DocTable` snapshots, written once.

    `add`, `add_docs`, `upsert`, `upsert_docs` and `delete` behave alike on every index:
    an edit is all-or-nothing (a bad document, a clashing id or an unknown id to delete
    leaves the index as it was), and a search running meanwhile sees the index before it
    or after it, never a mix. The slow part of an edit, the *payload* (a model's vectors),
    is computed before the writer lock is taken; under it the ids are checked against
    the current snapshot, a new snapshot is built off to the side (`_written`,
    `_deleted`) and published with one reference swap. Writers are serialised by
    ``_lock``; readers never take it.

    An index gives three hooks, and the names of its own edit options:

    * ``_payload(docs, show_progress, **options)``: what `_written` needs of ``docs``
      beyond the documents, computed outside the lock (vectors, or for BM25 the
      tokenising settings: token ids depend on the snapshot written, so texts are
      tokenised under the lock).
    * ``_written(state, docs, payload, rows)``: a new snapshot, ``state`` with ``docs``
      added (``rows`` None) or upserted (``docs[j]`` at position ``rows[j]``, see
      `DocTable.upsert_rows`); ``state`` is left as it was.
    * ``_deleted(state, alive)``: a new snapshot of ``state``'s documents where ``alive``.
    * ``_edit_options``: keywords of ``_payload`` besides ``show_progress`` (`BM25Index`:
      ``n_jobs``); any other keyword is a TypeError naming it before any work.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> index = BM25Index.from_texts(["a cat", "a dog"], ids=["c", "d"])
        >>> index.add(["a bird"], ids=["b"]), index.upsert(["a black cat"], ids=["c"])
        (['b'], ['c'])
        >>> index.delete(["d"]); index.ids, index.get("c").text
        (['c', 'b'], 'a black cat')
    """

    __slots__ = ()
    _lock: threading.RLock
    _edit_options: ClassVar[frozenset[str]] = frozenset()

    def add(self, texts: Iterable[str], ids: Iterable[str] | None = None,
            metadatas: Iterable[Mapping[str, Any] | None] | None = None, *,
            show_progress: bool = False, **options: Any) -> list[str]:
        """Add texts and return their ids; an id already in the index is an error.

        Missing ids become content ids (`make_docs`), numbered past those the index
        holds. ``options``: the index's own (`BM25Index`: ``n_jobs``).
        """
        self._check_options("add", options)
        docs = make_docs(texts, ids, metadatas, taken=self._state.positions)
        return self.add_docs(docs, show_progress=show_progress, **options)

    def add_docs(
        self, docs: Iterable[Doc], *, show_progress: bool = False, **options: Any
    ) -> list[str]:
        """Add `Doc` objects and return their ids; an id already in the index is an error."""
        self._check_options("add_docs", options)
        docs = check_docs(docs)
        self._state.check_new(docs)  # before the payload, which may take a model's time
        return self._write(docs, self._payload(docs, show_progress, **options), upsert=False)

    def upsert(self, texts: Iterable[str], ids: Iterable[str] | None = None,
               metadatas: Iterable[Mapping[str, Any] | None] | None = None, *,
               show_progress: bool = False, **options: Any) -> list[str]:
        """Insert or replace: existing ids get the new text and metadata in place.

        A replaced document keeps its position (so ties still go to the earlier
        document); new ids are appended. The index is then exactly one built from the
        resulting documents (for BM25: the same N, avgdl and idf, so the same scores).
        Without ids, content ids are used, so upserting an unchanged text (and metadata)
        replaces it with itself.
        """
        self._check_options("upsert", options)
        return self.upsert_docs(make_docs(texts, ids, metadatas), show_progress=show_progress,
                                **options)

    def upsert_docs(
        self, docs: Iterable[Doc], *, show_progress: bool = False, **options: Any
    ) -> list[str]:
        """`upsert` for `Doc` objects."""
        self._check_options("upsert_docs", options)
        docs = check_docs(docs)
        return self._write(docs, self._payload(docs, show_progress, **options), upsert=True)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; if any id is unknown nothing is removed (KeyError)."""
        ids = check_id_list(ids)
        with self._lock:
            state = self._state
            alive = state.kept_after_delete(ids)
            if alive is not None:
                self._state = self._deleted(state, alive)

    def _write(self, docs: DocColumns, payload: Any, *, upsert: bool) -> list[str]:
        """Publish checked ``docs`` with their ``payload``; return their ids. Under the
        lock, against the snapshot being replaced: an add refuses held ids, an upsert
        finds each document's row."""
        with self._lock:
            state = self._state
            if not upsert:
                state.check_new(docs)
            if docs:
                rows = state.upsert_rows(docs) if upsert else None
                self._state = self._written(state, docs, payload, rows)
        return docs.ids()

    def _check_options(self, method: str, options: Mapping[str, Any]) -> None:
        """Refuse keywords neither ``method`` nor this index's payload takes, naming them."""
        if options:
            check_keywords(f"{type(self).__name__}.{method}", options,
                           keyword_names(getattr(type(self), method)) | self._edit_options)

    def _payload(self, docs: DocColumns, show_progress: bool, **options: Any) -> Any:
        raise NotImplementedError

    def _written(self, state: Any, docs: DocColumns, payload: Any,
                 rows: NDArray[np.int64] | None) -> DocTable:
        raise NotImplementedError

    def _deleted(self, state: Any, alive: NDArray[np.bool_]) -> DocTable:
        raise NotImplementedError


def share_documents(indexes: Iterable[Any]) -> None:
    """Give indexes just loaded from identical saved documents one `DocColumns` table.

    Tables read from files with the same checksums (`DocColumns.source`) hold the same
    documents, so all but the first are dropped. Only for indexes no reader has seen yet
    (a fusion's legs while it is loaded): it replaces their snapshots' table in place.
    """
    seen: dict[Hashable, DocColumns] = {}
    for index in indexes:
        state = getattr(index, "_state", None)
        if not isinstance(state, DocTable) or state.docs.source is None:
            continue
        table = seen.setdefault(state.docs.source, state.docs)
        if table is not state.docs:
            state.docs = table
            for field in (getattr(state, "fields", None) or {}).values():
                field.docs = table


def make_docs(
    texts: Iterable[str],
    ids: Iterable[str] | None,
    metadatas: Iterable[Mapping[str, Any] | None] | None,
    taken: Mapping[str, Any] | None = None,
) -> DocColumns:
    """Documents from parallel lists; missing (or None) ids become content ids.

    They come back as a `DocColumns` table: no `Doc` is made per document, and the
    texts are the caller's strings (not copied).

    Identical texts get the same content id, so the second and later copies (in
    input order, or of a text already in ``taken``) get ``#2``, ``#3``... suffixes:
    still deterministic, and no document is lost as a duplicate.

    ``texts`` given as an iterator (a generator: anything iterable without a length) is
    read `STREAM_BATCH` at a time, and each batch's texts and ids are encoded into the
    table's UTF-8 buffers at once (the layout a loaded table has), so a corpus streamed
    into a build is never held as Python strings. ``ids`` and ``metadatas`` may then be
    iterators too, read in step. The table is the same as from lists.
    """
    if isinstance(texts, Iterable) and not isinstance(texts, (Sized, str)):
        return _streamed_docs(iter(texts), ids, metadatas, taken)
    texts = check_texts_argument(texts, paired=ids is not None or metadatas is not None)
    metas = [None] * len(texts) if metadatas is None else list(metadatas)
    if len(metas) != len(texts):
        raise ValueError(f"got {len(texts)} texts but {len(metas)} metadatas; pass one per text")
    if metadatas is not None:
        _check_metadatas(metas)
    _check_contents(texts, metas)
    if ids is None:
        given: list[str | None] = [None] * len(texts)
    else:
        given = _ids_column(ids)
        if len(given) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(given)} ids; pass one id per text")
        _check_ids_unicode(given)
    # A None id means "content id for this one"; given ids are never rewritten.
    used = {i for i in given if i is not None}
    id_list = []
    for i, t, m in zip(given, texts, metas):
        id_list.append(_unused_id(content_id(t, m), used, taken) if i is None else i)
    return DocColumns.from_columns(id_list, texts, None if metadatas is None else metas)


STREAM_BATCH = 65_536
"""Documents that `make_docs` reads, checks and encodes at a time from an iterator."""


def _streamed_docs(
    texts: Iterator[Any],
    ids: Iterable[str | None] | None,
    metadatas: Iterable[Mapping[str, Any] | None] | None,
    taken: Mapping[str, Any] | None,
) -> DocColumns:
    """`make_docs` over an iterator of texts: batch after batch checked as `make_docs`
    checks lists, encoded, and the batches' buffers joined (`DocColumns.joined`)."""
    if ids is not None:
        _refuse_bad_ids_argument(ids)
    id_it = None if ids is None else iter(ids)
    meta_it = None if metadatas is None else iter(metadatas)
    tables: list[DocColumns] = []
    pending: list[NDArray[np.bool_]] = []  # rows whose id is a content id, per batch
    n = 0
    while batch := check_str_items(islice(texts, STREAM_BATCH), "texts", start=n):
        metas: list[Any] = [None] * len(batch)
        if meta_it is not None:
            metas = _in_step(meta_it, "metadatas", batch, n, texts)
            _check_metadatas(metas, n)
        _check_contents(batch, metas, n)
        given: list[Any] = [None] * len(batch)
        if id_it is not None:
            given = _in_step(id_it, "ids", batch, n, texts)
            _check_id_types(given, n)
            _check_ids_unicode(given, n)
        missing = np.fromiter((i is None for i in given), bool, len(given))
        if missing.any():  # the base content id now; suffixes once every given id is known
            given = [content_id(t, m) if i is None else i
                     for i, t, m in zip(given, batch, metas)]
        pending.append(missing)
        tables.append(DocColumns.from_columns(
            StrColumn.encoded(given, name="ids", start=n),
            StrColumn.encoded(batch, name="texts", start=n),
            None if meta_it is None else metas))
        n += len(batch)
        del batch, given, metas
    for it, what in ((meta_it, "metadatas"), (id_it, "ids")):
        if it is not None and (rest := _count(it)):
            raise ValueError(f"got {n} texts but {n + rest} {what}; pass one per text")
    docs = DocColumns.joined(tables)
    rows = np.concatenate(pending) if pending else np.zeros(0, bool)
    return _content_ids_settled(docs, rows, taken) if rows.any() else docs


def _unused_id(base: str, used: set[str], taken: Mapping[str, Any] | None) -> str:
    """``base``, else ``base#2``, ``base#3``...: the first in neither ``used`` nor
    ``taken`` (a content id of a repeated text), added to ``used``."""
    i, n = base, 1
    while i in used or (taken is not None and i in taken):
        n += 1
        i = f"{base}#{n}"
    used.add(i)
    return i


def _in_step(items: Iterator[Any], what: str, batch: list[str], n: int,
             texts: Iterator[Any]) -> list[Any]:
    """The ``what`` (ids or metadatas) of the ``batch`` of texts after the first ``n``."""
    out = list(islice(items, len(batch)))
    if len(out) < len(batch):
        raise ValueError(f"got {n + len(batch) + _count(texts)} texts but {n + len(out)} "
                         f"{what}; pass one per text")
    return out


def _count(items: Iterator[Any]) -> int:
    return sum(1 for _ in items)


def _content_ids_settled(docs: DocColumns, content: NDArray[np.bool_],
                         taken: Mapping[str, Any] | None) -> DocColumns:
    """``docs`` whose ``content`` rows hold base content ids, with the ``#2``, ``#3``...
    suffixes `make_docs` gives (after every given id and ``taken``): the same ids as
    from lists."""
    ids = docs.columns[0]
    flags = content.tolist()
    used = {i for i, generated in zip(ids, flags) if not generated}
    renamed: dict[int, str] = {}
    for row, (base, generated) in enumerate(zip(ids, flags)):
        if generated and (i := _unused_id(base, used, taken)) != base:
            renamed[row] = i
    if not renamed:
        return docs
    id_list = ids.tolist()
    for row, i in renamed.items():
        id_list[row] = i
    _, texts, meta, extras = docs.columns
    return DocColumns(StrColumn.encoded(id_list), texts, meta, dict(extras))


def check_texts_argument(texts: Any, *, paired: bool = False, name: str = "texts") -> list[str]:
    """``texts`` as a list of str, or a TypeError naming ``name`` and the fix.

    Refused: None and non-iterables; a single str or bytes; a mapping (iterating a dict
    yields its keys, which would be indexed as the texts); a set when ids or metadatas are
    given (``paired``): a set has no order to pair them by. Any other iterable is read once.
    """
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of str, not a single str; wrap it in a list")
    if isinstance(texts, Mapping):
        raise TypeError(
            f"{name} must be a list of str, got a {type(texts).__name__} (its keys would be "
            f"indexed as the texts); for an id -> text dict pass {name}=list(d.values()), "
            "ids=list(d.keys())"
        )
    if texts is None or isinstance(texts, (bytes, bytearray)) or not isinstance(texts, Iterable):
        raise TypeError(
            f"{name} must be a list of str, got {type(texts).__name__}: {texts!r:.80}"
        )
    if paired and isinstance(texts, Set):
        raise TypeError(
            f"{name} is a {type(texts).__name__}, which has no order, so ids/metadatas "
            f"cannot be paired with it; pass a list (e.g. sorted({name}))"
        )
    return check_str_items(texts, name)


def _refuse_bad_ids_argument(ids: Any) -> None:
    if isinstance(ids, (str, bytes, Mapping)) or not isinstance(ids, Iterable):
        raise TypeError(
            f"ids must be a list of str (None for a content id), got "
            f"{type(ids).__name__}: {ids!r:.80}"
            + ("; wrap a single id in a list" if isinstance(ids, str) else "")
        )


def _ids_column(ids: Any) -> list[str | None]:
    """Given ids as a list of str-or-None (None: content id), or a TypeError naming ``ids``."""
    _refuse_bad_ids_argument(ids)
    given = list(ids)
    _check_id_types(given)
    return given


# `make_docs`' per-document checks, over the whole lists or one streamed batch (``start``:
# the batch's first row, so that errors name the row in the whole argument).

def _check_metadatas(metas: list[Any], start: int = 0) -> None:
    for i, m in enumerate(metas):
        if m is not None and not isinstance(m, Mapping):
            raise TypeError(f"metadatas[{start + i}] must be a mapping or None, got "
                            f"{type(m).__name__}")


def _check_contents(texts: list[str], metas: list[Any], start: int = 0) -> None:
    for i, (t, m) in enumerate(zip(texts, metas)):
        # Before content ids are hashed: they encode the text and metadata as UTF-8.
        if m or not t.isascii():  # (an ASCII text alone has nothing to check)
            check_content(None, t, m, f"texts[{start + i}] / metadatas[{start + i}]")


def _check_id_types(given: list[Any], start: int = 0) -> None:
    for i, item in enumerate(given):
        if item is not None and not isinstance(item, str):
            raise TypeError(f"ids[{start + i}] must be a str or None, got "
                            f"{type(item).__name__}: {item!r:.80}")


def _check_ids_unicode(given: list[Any], start: int = 0) -> None:
    for i, item in enumerate(given):
        if isinstance(item, str) and not item.isascii():
            check_unicode(item, "", None, f"ids[{start + i}]")


def check_docs(docs: Iterable[Doc]) -> DocColumns:
    """``docs`` as a `DocColumns` table with unique ids and content `check_content` accepts.

    A `DocColumns` (from `make_docs` or another index) holds checked content already, so
    only its ids' uniqueness is checked; `Doc` objects are checked one by one.
    """
    if isinstance(docs, DocColumns):
        _refuse_duplicates(docs.rows.duplicates())
        return docs
    docs = list(docs)
    for i, d in enumerate(docs):
        if not isinstance(d, Doc):
            raise TypeError(f"docs[{i}] must be a hybrid_retrievers.Doc, got {type(d).__name__}")
        if d.metadata or not d.text.isascii() or not d.id.isascii():  # else nothing to check
            check_content(d.id, d.text, d.metadata, f"document {d.id!r}")
    ids = [d.id for d in docs]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dupes: list[str] = []
        for doc_id in ids:
            if doc_id in seen:
                dupes.append(doc_id)
            seen.add(doc_id)
        _refuse_duplicates(dupes)
    return DocColumns.from_columns(ids, [d.text for d in docs], [d.metadata for d in docs])


def _refuse_duplicates(dupes: list[str]) -> None:
    if dupes:
        raise ValueError(
            f"duplicate document ids: {sorted(set(dupes))[:5]}; ids must be unique "
            "(omit ids to get content ids)"
        )


def check_new_ids(docs: Iterable[Doc] | DocColumns, taken: Mapping[str, Any], fix: str) -> None:
    """Refuse documents whose id an index already holds; ``fix`` says what to do instead."""
    ids = docs.ids() if isinstance(docs, DocColumns) else [d.id for d in docs]
    if isinstance(taken, IdRows):
        clash = [ids[j] for j in np.flatnonzero(taken.find(ids) >= 0).tolist()] if len(
            taken) else []
    else:
        clash = [i for i in ids if i in taken]
    if clash:
        raise ValueError(f"{len(clash)} id(s) already in the index: {clash[:5]}; {fix}")


def check_content(
    doc_id: str | None, text: str, metadata: Mapping[Any, Any] | None, what: str
) -> None:
    """Refuse what could not be hashed or saved later, naming the document.

    Checked at build time so that an index never holds a document that `save`, content
    ids or the embedding cache would choke on: lone surrogates (not valid Unicode; they
    cannot be encoded as UTF-8) in the id, text or metadata, and metadata keys that are
    not strings at any depth (JSON would turn ``1`` into ``"1"``, so ``{1: .., "1": ..}``
    would lose a value and filters would stop matching after a save). Other metadata
    values are checked when saving, because an index that is never saved may hold any
    value (see `IndexWriter.docs`).

    Raises:
        ValueError: a lone surrogate.
        TypeError: a metadata key that is not a str.
    """
    _check_unicode_and_keys(doc_id, text, metadata, what, keys=True)


def check_unicode(
    doc_id: str | None, text: str, metadata: Mapping[Any, Any] | None, what: str
) -> None:
    """Refuse lone surrogates (``"\\ud800"``) in an id, a text or metadata strings."""
    _check_unicode_and_keys(doc_id, text, metadata, what, keys=False)


_SCALARS = frozenset({int, float, bool, type(None)})


def _check_unicode_and_keys(
    doc_id: str | None, text: str, metadata: Mapping[Any, Any] | None, what: str, *, keys: bool
) -> None:
    # Fast paths first: this runs once per document at build time.
    if doc_id is not None and not doc_id.isascii():
        _check_str(doc_id, f"the id of {what}")
    if not text.isascii():
        _check_str(text, f"the text of {what}")
    if not metadata:
        return
    nested = []
    for k, v in metadata.items():
        if type(k) is str:
            if not k.isascii():
                _check_str(k, f"the metadata of {what}")
        elif keys:
            _bad_key(k, what)
        tv = type(v)
        if tv is str:
            if not v.isascii():
                _check_str(v, f"the metadata of {what}")
        elif tv not in _SCALARS:
            nested.append(v)
    seen: set[int] = set()
    while nested:
        value = nested.pop()
        if isinstance(value, str):
            if not value.isascii():
                _check_str(value, f"the metadata of {what}")
            continue
        if not isinstance(value, (Mapping, list, tuple)) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, Mapping):
            for k, v in value.items():
                if not isinstance(k, str):
                    if keys:
                        _bad_key(k, what)
                else:
                    nested.append(k)
                nested.append(v)
        else:
            nested.extend(value)


def _bad_key(key: Any, what: str) -> None:
    raise TypeError(
        f"metadata of {what} has the {type(key).__name__} key {key!r}; metadata keys must "
        f"be str (JSON, used to save indexes, would turn it into {str(key)!r} and could "
        "merge it with another key)"
    )


def _check_str(value: str, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{where} holds a lone surrogate {value[exc.start]!r} at position {exc.start}, "
            "which is not valid Unicode (it cannot be encoded as UTF-8, hashed or saved); "
            "decode bytes with errors='replace' or remove it"
        ) from None
