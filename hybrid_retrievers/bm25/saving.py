"""Saving and loading a `BM25Index`: one directory, no pickle, nothing trusted on load.

`write` puts one snapshot, its parameters and its analyzer into a directory; `read`
checks and reads them back (`BM25Index.save` / `BM25Index.load` call them). The layout (see
`hybrid_retrievers.persistence`): the documents as arrays
(`hybrid_retrievers.persistence.documents`; ``docs.jsonl`` before), ``vocabulary.json``
(terms in term-id order), the postings as ``.npy`` arrays (``postings_indptr``, ``postings_docs``,
``postings_tf``, ``doc_lengths``) and a checksummed manifest with the BM25 parameters
and the analyzer's configuration; an index with positions adds ``positions.npy`` (each
document's term ids in order, `Snapshot.tokens`) and ``"positions": true`` in the
manifest (readers before positions ignore both). The postings half (`write_postings` /
`read_postings`) is the engine's (`hybrid_retrievers.inverted.saving`), which the learned
sparse index (`hybrid_retrievers.sparse`) saves the same way. So is the score cache's
(`hybrid_retrievers.inverted.cache_saving`: ``score_*.npy`` and the manifest's
``"score_cache"``, which readers before it ignore): what computing the cache reads every
posting for, so a memory-mapped index reads only its queries' postings. A fielded index
saves none (its BM25F view is built from every field's postings on load).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..inverted.backend import Backend
from ..inverted.cache_saving import read_score_cache, write_score_cache
from ..inverted.postings import Snapshot
from ..inverted.saving import read_postings, write_postings
from ..inverted.score_cache import CorpusStatistics
from ..persistence import IndexFormatError, IndexReader, IndexWriter
from ..text import Analyzer
from .fields import check_fields
from .params import BM25Params
from .scoring import BM25Method

__all__ = ["FORMAT_VERSION", "write", "read", "read_fields"]

FORMAT_VERSION = 2
"""The newest format this release reads. Version 2 adds the methods ``textbook`` and
``atire`` as ATIRE (release 0.1.0 read the name ``atire`` as ``lucene``): an index
scored by either is written as version 2, so 0.1.0 refuses it rather than scoring it
differently; every other index is still written as version 1, readable by 0.1.0."""

_V2_METHODS = frozenset({BM25Method.TEXTBOOK, BM25Method.ATIRE})


def write(directory: Path, st: Snapshot, params: BM25Params, analyzer: Analyzer,
          fields: Mapping[str, float] | None = None, *,
          stats: CorpusStatistics | None = None, backend: Backend | None = None) -> None:
    """Write the index files and their manifest into an existing empty directory.

    A fielded index (BM25F) writes each field other than "text" into a sub-directory
    ``field-<i>`` (its postings, in the same layout), bound by the manifest's checksums,
    and the build-time weights as ``"fields"``. Any other index writes its score cache
    (`write_score_cache`, under its own statistics whatever ``stats`` the index scores
    with; the kernels' metadata for ``backend``).
    """
    w = IndexWriter(directory)
    counts = write_postings(w, st)
    extra: dict[str, object] = {}
    if fields is None:
        extra.update(write_score_cache(w, st, params, stats, backend or Backend()))
    else:
        assert st.fields is not None
        extra["fields"] = dict(fields)
        for i, name in enumerate(_extra_fields(fields)):
            sub = IndexWriter(w.subdirectory(f"field-{i}"))
            field = st.fields[name]
            field_extra: dict[str, object] = {}
            if field.tokens is not None:
                sub.array("positions", field.tokens)
                field_extra["positions"] = True
            sub.manifest(FIELD_KIND, FORMAT_VERSION, {"name": name, **field_extra,
                                                      **write_postings(sub, field)})
            w.bind(f"field-{i}")
    if st.tokens is not None:
        w.array("positions", st.tokens)
        extra["positions"] = True
    # Version 2 where an older reader would score differently (a method it knows by
    # another meaning, or fields it would ignore); every other index stays readable by 0.1.0.
    version = 2 if BM25Method.parse(params.method) in _V2_METHODS or fields is not None else 1
    w.manifest("bm25", version,
               {"params": params.as_dict(), "analyzer": analyzer.to_config(), **counts,
                **extra})


def read(
    r: IndexReader, *, mmap: bool = False, verify: bool = False,
    backend: Backend | None = None,
) -> tuple[Snapshot, BM25Params, Analyzer]:
    """The snapshot, parameters and analyzer of a saved index; nothing trusted unchecked.

    Every file read into memory is checksummed, and the manifest (parameters
    included) is covered by a checksum too. The postings are checked (`read_postings`),
    and so is the saved score cache, which the snapshot gets when it applies
    (`read_score_cache`; ``backend``: the loading index's).

    Raises:
        IndexFormatError: anything missing, corrupt, inconsistent or invalid.
    """
    where = r.where()
    saved = r.field("params", dict)
    if r.manifest.get("format_version") == 1 and str(saved.get("method")).lower() == "atire":
        raise IndexFormatError(
            f"{where}: a format-1 index names method 'atire', which release 0.1.0 read as "
            "'lucene' and this release reads as ATIRE (ln(N/df) idf, k1 + 1 factor): its "
            "scores would change silently. Rebuild it, or edit its manifest's method to "
            "'lucene' (what 0.1.0 scored it with)")
    try:
        analyzer = Analyzer.from_config(r.field("analyzer", dict))
        params = BM25Params(**{k: saved[k] for k in ("method", "k1", "b", "delta")},
                            epsilon=saved.get("epsilon"))
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{where}: invalid parameters in manifest ({exc})") from None
    state = read_postings(r, mmap=mmap, verify=verify)
    if r.manifest.get("positions", False) is not False:
        if r.field("positions", bool) is not True:
            raise IndexFormatError(f"{where}: 'positions' must be true when present")
        state.tokens = _read_positions(r, state, full=not mmap or verify)
    if "fields" not in r.manifest:
        read_score_cache(r, state, params, backend or Backend(), mmap=mmap, verify=verify)
    return state, params, analyzer


FIELD_KIND = "bm25-field"


def _extra_fields(fields: Mapping[str, float]) -> list[str]:
    return [name for name in fields if name != "text"]


def read_fields(r: IndexReader, st: Snapshot, *, mmap: bool = False,
                verify: bool = False) -> dict[str, float] | None:
    """A fielded index's weights, its fields' snapshots attached to ``st``; None without."""
    if "fields" not in r.manifest:
        return None
    where = r.where()
    weights = r.field("fields", dict)
    try:
        weights = check_fields(weights)
    except (TypeError, ValueError) as exc:
        raise IndexFormatError(f"{where}: invalid 'fields' in manifest ({exc})") from None
    st.fields = {}
    ids = st.docs.ids()
    for i, name in enumerate(_extra_fields(weights)):
        sub = r.subdir(f"field-{i}", kind=FIELD_KIND, max_version=FORMAT_VERSION)
        if sub.manifest.get("name") != name:
            raise IndexFormatError(f"{where}/field-{i}: holds field "
                                   f"{sub.manifest.get('name')!r}, expected {name!r}")
        part = read_postings(sub, mmap=mmap, verify=verify)
        if part.docs.ids() != ids:
            raise IndexFormatError(f"{where}/field-{i}: its documents are not the index's")
        if (sub.manifest.get("positions", False) is True) != (st.tokens is not None):
            raise IndexFormatError(f"{where}/field-{i}: keeps positions only where the index "
                                   "does not (or the reverse)")
        tokens = (_read_positions(sub, part, full=not mmap or verify)
                  if st.tokens is not None else None)
        st.fields[name] = Snapshot(st.docs, part.vocab, part.indptr, part.post_docs,
                                   part.post_tf, part.doc_len, tokens=tokens)
    return weights


def _read_positions(r: IndexReader, st: Snapshot, *, full: bool) -> NDArray[np.int32]:
    """``positions.npy``, checked: one term id per indexed token, in the vocabulary, and
    (``full``) each term as often as its postings count it."""
    where = r.where("positions.npy")
    total = int(st.doc_len.astype(np.int64).sum())
    tokens = r.array("positions", dtype_kind="i", ndim=1, length=total)
    n_terms = len(st.vocab)
    if tokens.size and (int(tokens.min()) < 0 or int(tokens.max()) >= n_terms):
        raise IndexFormatError(f"{where}: term ids must lie in 0..{n_terms - 1}")
    if full and st.post_tf.size:
        per_term = np.add.reduceat(st.post_tf.astype(np.int64), st.indptr[:-1])
        if not np.array_equal(np.bincount(tokens, minlength=n_terms), per_term):
            raise IndexFormatError(f"{where}: the positions disagree with the postings' term "
                                   "frequencies")
    return tokens.astype(np.int32, copy=False)
