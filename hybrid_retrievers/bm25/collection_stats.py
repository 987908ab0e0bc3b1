"""Corpus-wide BM25 statistics, so that shards score exactly like one index.

A BM25 score depends on three corpus-wide numbers besides the document itself: the
number of documents N, the average document length avgdl and each term's document
frequency df. A shard that used its own N, avgdl and df would rank its documents
sensibly but give them scores that differ from a single index over the whole corpus,
so merging shards' top-k lists would be wrong. `CollectionStats` holds the global
values; it is built per shard (`CollectionStats.of_index`), summed by a reduce step
(`CollectionStats.merge`), and handed to each shard with
`BM25Index.set_collection_stats`, after which that shard's scores are the ones the
single index would give (same idf, same length norm).

Statistics are additive: ``of(A ∪ B) = of(A) + of(B)`` and ``of(A \\ B) = of(A) - of(B)``
for disjoint document sets, so an edit on one shard updates the global statistics by
the difference of that shard's statistics before and after (`CollectionStats.diff`).
Terms whose global df falls to 0 are dropped, so the vocabulary (and Robertson's mean
idf floor) is what a rebuild would have.

A fielded (BM25F, `hybrid_retrievers.bm25.fields`) index's statistics are N, each term's
df over all fields (documents holding it in any field, as BM25F's idf counts it) and
each field's total length (``field_lengths``, so avglen_f = total_f / N): all additive,
so fielded shards merge and edit the same way.

Example:
    >>> from hybrid_retrievers import BM25Index
    >>> a = BM25Index.from_texts(["wing lift", "wing drag"], ids=["1", "2"])
    >>> b = BM25Index.from_texts(["flat plate lift"], ids=["3"])
    >>> total = CollectionStats.merge([CollectionStats.of_index(a), CollectionStats.of_index(b)])
    >>> total.n_docs, total.df["lift"]
    (3, 2)
    >>> a.set_collection_stats(total)
    >>> whole = BM25Index.from_texts(["wing lift", "wing drag", "flat plate lift"],
    ...                              ids=["1", "2", "3"])
    >>> a.search("lift")[0].score == whole.search("lift")[0].score
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from ..persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index
from ..validation import check_number

if TYPE_CHECKING:
    from ..inverted.postings import Snapshot
    from ..inverted.scorer import Variant


class _HoldsSnapshot(Protocol):
    """What `CollectionStats.of_index` reads: an index's current snapshot (`BM25Index`)."""

    _state: Snapshot

__all__ = ["CollectionStats"]

FORMAT_VERSION = 1


class CollectionStats:
    """N, total document length and per-term document frequencies of a corpus.

    Immutable: arithmetic returns new objects. ``df`` never holds a zero count.

    Args:
        n_docs: number of documents.
        total_length: sum of the documents' token counts (avgdl = total / N).
        df: term -> number of documents containing it (in any field, for BM25F).
        field_lengths: a fielded index's field -> sum of that field's token counts
            (``"text"`` included); None without fields.
    """

    __slots__ = ("_n_docs", "_total_length", "_df", "_field_lengths", "_idf_cache")

    def __init__(self, n_docs: int, total_length: int, df: Mapping[str, int],
                 field_lengths: Mapping[str, int] | None = None) -> None:
        for name, value in (("n_docs", n_docs), ("total_length", total_length)):
            check_number(value, name, low=0, integer=True)
        clean = {str(t): int(c) for t, c in df.items() if c != 0}
        negative = [t for t, c in clean.items() if c < 0 or c > n_docs]
        if negative:
            raise ValueError(
                f"document frequencies must lie in 0..n_docs={n_docs}; {len(negative)} term(s) "
                f"do not, e.g. {negative[:3]} (were statistics subtracted that were never added?)"
            )
        self._n_docs = int(n_docs)
        self._total_length = int(total_length)
        self._df: dict[str, int] = clean
        self._field_lengths = None if field_lengths is None else _check_lengths(field_lengths)
        self._idf_cache: dict[str, tuple[dict[str, int], NDArray[np.float64]]] = {}

    # ------------------------------------------------------------------ building

    @classmethod
    def of_index(cls, index: _HoldsSnapshot) -> CollectionStats:
        """The statistics of one index's own documents (its local N, lengths and df)."""
        # Reads BM25Index's term-major postings: a term's df is its posting count.
        st = index._state  # one snapshot, so the three numbers agree under concurrent edits
        total = int(np.asarray(st.doc_len, dtype=np.int64).sum())
        if st.fields is not None:  # BM25F: df over all fields, and each field's length
            from .fields import TEXT, union_df

            vocab, counts = union_df(st)
            lengths = {TEXT: total, **{f: int(np.asarray(fs.doc_len, dtype=np.int64).sum())
                                       for f, fs in st.fields.items()}}
            return cls(len(st.docs), total, dict(zip(vocab, counts.tolist())), lengths)
        df_counts = np.diff(st.indptr).tolist()
        df = {t: df_counts[i] for t, i in st.vocab.items()}
        return cls(len(st.docs), total, df)

    @classmethod
    def merge(cls, parts: Iterable[CollectionStats]) -> CollectionStats:
        """The statistics of the union of disjoint document sets (the reduce step)."""
        n = total = 0
        df: dict[str, int] = {}
        lengths: dict[str, int] | None = None
        for i, part in enumerate(parts):
            if not isinstance(part, CollectionStats):
                raise TypeError(f"merge takes CollectionStats objects, got {type(part).__name__}")
            n += part._n_docs
            total += part._total_length
            for t, c in part._df.items():
                df[t] = df.get(t, 0) + c
            lengths = part._field_lengths if i == 0 else _add_lengths(lengths, part._field_lengths)
        return cls(n, total, df, lengths)

    def apply(self, delta: StatsDelta) -> CollectionStats:
        """These statistics after an edit described by ``delta``."""
        df = dict(self._df)
        for t, c in delta.df.items():
            df[t] = df.get(t, 0) + c
        return CollectionStats(self._n_docs + delta.n_docs,
                               self._total_length + delta.total_length, df,
                               _add_lengths(self._field_lengths, delta.field_lengths))

    @staticmethod
    def diff(before: CollectionStats, after: CollectionStats) -> StatsDelta:
        """What an edit changed: ``after - before`` (counts may be negative)."""
        df = {t: c - before._df.get(t, 0) for t, c in after._df.items()}
        for t, c in before._df.items():
            if t not in after._df:
                df[t] = -c
        lengths = None if after._field_lengths is None else _add_lengths(
            after._field_lengths, {f: -c for f, c in (before._field_lengths or {}).items()})
        return StatsDelta(after._n_docs - before._n_docs,
                          after._total_length - before._total_length,
                          {t: c for t, c in df.items() if c}, lengths)

    # ------------------------------------------------------------------ reading

    @property
    def n_docs(self) -> int:
        """Number of documents N."""
        return self._n_docs

    @property
    def total_length(self) -> int:
        """Sum of document lengths (tokens)."""
        return self._total_length

    @property
    def avgdl(self) -> float:
        """Average document length (0 for an empty corpus)."""
        return self._total_length / self._n_docs if self._n_docs else 0.0

    @property
    def df(self) -> Mapping[str, int]:
        """Term -> document frequency (a read-only view is not enforced; do not edit)."""
        return self._df

    @property
    def field_lengths(self) -> Mapping[str, int] | None:
        """A fielded index's field -> total length (None without fields; do not edit)."""
        return self._field_lengths

    def field_avg(self, field: str) -> float:
        """The average length of ``field`` over all N documents (BM25F's avglen_f)."""
        if self._field_lengths is None or field not in self._field_lengths:
            raise ValueError(f"these collection statistics have no field {field!r}; their "
                             f"fields are {sorted(self._field_lengths or {})}")
        return self._field_lengths[field] / self._n_docs if self._n_docs else 0.0

    def __len__(self) -> int:
        return len(self._df)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CollectionStats):
            return NotImplemented
        return (self._n_docs, self._total_length, self._df, self._field_lengths) == (
            other._n_docs, other._total_length, other._df, other._field_lengths)

    def __repr__(self) -> str:
        return (f"CollectionStats(n_docs={self._n_docs}, avgdl={self.avgdl:.2f}, "
                f"terms={len(self._df)})")

    def idf_for(self, vocab: Mapping[str, int], variant: Variant) -> NDArray[np.float64]:
        """Global idf of each term of a shard's vocabulary (``term -> row``), by row.

        The idf is computed over the whole global vocabulary (Robertson's floor is a
        mean over it), then gathered for the shard's terms.

        Raises:
            ValueError: a shard term these statistics do not know (they are stale).
        """
        key = (variant.method.value, variant.epsilon)
        cached = self._idf_cache.get(key)
        if cached is None:
            terms = list(self._df)
            dfs = np.fromiter(self._df.values(), dtype=np.float64, count=len(terms))
            idf = variant.idf(dfs, self._n_docs) if dfs.size else dfs
            cached = ({t: i for i, t in enumerate(terms)}, np.asarray(idf, dtype=np.float64))
            self._idf_cache[key] = cached
        rows, idf = cached
        out = np.empty(len(vocab), dtype=np.float64)
        missing = []
        for term, i in vocab.items():
            j = rows.get(term)
            if j is None:
                missing.append(term)
            else:
                out[i] = idf[j]
        if missing:
            raise ValueError(
                f"the collection statistics do not cover {len(missing)} term(s) of this index, "
                f"e.g. {missing[:3]}; they are stale: recompute them after editing a shard"
            )
        return out

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write to directory ``path`` atomically (JSON + ``.npy``, no pickle)."""
        with atomic_index_dir(path) as tmp:
            w = IndexWriter(tmp)
            w.json("terms", list(self._df))
            w.array("df", np.fromiter(self._df.values(), dtype=np.int64, count=len(self._df)))
            w.manifest("collection-stats", FORMAT_VERSION,
                       {"n_docs": self._n_docs, "total_length": self._total_length,
                        "n_terms": len(self._df), "field_lengths": self._field_lengths})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CollectionStats:
        """Read statistics written by `save`, validating every file."""
        def read(r: IndexReader) -> CollectionStats:
            n_terms = r.field("n_terms", int)
            terms = r.json("terms")
            if not isinstance(terms, list) or len(terms) != n_terms or not all(
                isinstance(t, str) for t in terms
            ) or len(set(terms)) != n_terms:
                raise IndexFormatError(f"{path}: terms.json must list {n_terms} distinct terms")
            df = r.array("df", dtype_kind="iu", ndim=1, length=n_terms)
            lengths = r.manifest.get("field_lengths")  # absent in files without fields
            try:
                if lengths is not None and not isinstance(lengths, dict):
                    raise ValueError(f"field_lengths must be a mapping, got {lengths!r:.60}")
                return cls(r.field("n_docs", int), r.field("total_length", int),
                           dict(zip(terms, df.tolist())), lengths)
            except (TypeError, ValueError) as exc:
                raise IndexFormatError(f"{path}: {exc}") from None

        return read_index(path, kind="collection-stats", max_version=FORMAT_VERSION, read=read)


def _check_lengths(lengths: Mapping[str, int]) -> dict[str, int]:
    """``field_lengths`` as a dict of non-empty str -> int >= 0, or a clear error."""
    out = {}
    for f, c in lengths.items():
        if not isinstance(f, str) or not f or isinstance(c, bool) or not isinstance(
                c, (int, np.integer)) or c < 0:
            raise ValueError(f"field_lengths must map field names to non-negative ints, got "
                             f"{f!r}: {c!r}")
        out[f] = int(c)
    return out


def _add_lengths(a: Mapping[str, int] | None, b: Mapping[str, int] | None) -> dict[str, int] | None:
    """Per-field lengths summed; both None (no fields) or both over the same fields."""
    if a is None and b is None:
        return None
    if a is None or b is None or set(a) != set(b):
        raise ValueError(f"cannot combine statistics over different fields: "
                         f"{None if a is None else sorted(a)} and {None if b is None else sorted(b)}"
                         " (shards built with and without fields, or with other fields?)")
    return {f: a[f] + b[f] for f in a}


class StatsDelta:
    """A change to `CollectionStats` (counts may be negative): what one edit did."""

    __slots__ = ("n_docs", "total_length", "df", "field_lengths")

    def __init__(self, n_docs: int, total_length: int, df: Mapping[str, int],
                 field_lengths: Mapping[str, int] | None = None) -> None:
        self.n_docs = int(n_docs)
        self.total_length = int(total_length)
        self.df: dict[str, int] = dict(df)
        self.field_lengths = None if field_lengths is None else dict(field_lengths)

    @classmethod
    def total(cls, deltas: Iterable[StatsDelta],
              fields: Iterable[str] | None = None) -> StatsDelta:
        """The sum of several shards' edits (``fields``: the statistics' field names)."""
        out = cls(0, 0, {}, None if fields is None else {f: 0 for f in fields})
        for d in deltas:
            out.n_docs += d.n_docs
            out.total_length += d.total_length
            for t, c in d.df.items():
                out.df[t] = out.df.get(t, 0) + c
            out.field_lengths = _add_lengths(out.field_lengths, d.field_lengths)
        return out

    def __repr__(self) -> str:
        return f"StatsDelta(n_docs={self.n_docs:+d}, terms={len(self.df)})"

