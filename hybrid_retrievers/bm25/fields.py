"""BM25F: documents with named fields, each length-normalised and weighted, then saturated once.

Robertson & Zaragoza (2009), *The Probabilistic Relevance Framework: BM25 and Beyond*,
§3.5 (BM25F). Per document d and term t, each field f's term frequency is normalised by
that field's length and weighted, and the weighted pseudo-frequencies are summed
*before* the saturation:

    tf̃(t, d) = Σ_f w_f · tf_f(t, d) / B_f(d),   B_f(d) = 1 − b_f + b_f · len_f(d) / avglen_f
    score(q, d) = Σ_{t ∈ q} qtf(t) · idf(t) · tfw(tf̃(t, d))

with ``tfw`` the method's saturation at norm 1 (Lucene ``x / (x + k1)``, Robertson
``x (k1 + 1) / (x + k1)``) and ``idf`` from the document frequency over all fields (a
document holding t in any field). Summing before saturating is the point: a term in the
title and the body is not counted as two independent pieces of evidence, which summing
per-field BM25 scores would do (§3.5's argument). Here ``b_f`` is the index's ``b`` for
every field.

Storage and kernels (the design): each field keeps its own raw postings (`Snapshot`, the
one postings structure, so edits, positions and saving are the same code), field "text"
being the index's main snapshot of `Doc.text`. What depends on weights, lengths and N is
derived: `combined` builds, for one weight vector, a term-major snapshot over the union
vocabulary whose float32 posting value is ``tfw(tf̃)`` (the pseudo-tf saturated), which
the engine's impact scorer (`inverted.scorer.ImpactScorer`) scores with query weights
``qtf · idf``: so the compiled kernels, MaxScore, filters and operator masks all run on
it unchanged. It costs one pass over all fields' postings (scipy's COO -> CSR sum) per
index version and weight vector, and is kept (the build-time weights, and the last few
per-query weights), so per-query weights cost a rebuild the first time they are used and
nothing after: what a tuning loop over weights wants. Positions (phrases) are kept per
field: a phrase matches within one field. Weights decide scores only: a field weighted 0
adds nothing (so a document matching only there is no hit), while operators' constraints
(`operators.admitted`: required, excluded, phrases, minimum-should-match) read every
field's own postings, weighted 0 or not. A shard of a larger corpus scores with the
corpus-wide N, df (over all fields) and per-field average lengths (`CollectionStats`
with ``field_lengths``), so fielded Ray shards score like one index. Not yet: per-field
``b_f``.

Example:
    >>> from hybrid_retrievers import BM25Index, Doc
    >>> docs = [Doc("a", "flow over a wing", {"title": "wing theory"}),
    ...         Doc("b", "wing wing rotor", {"title": "rotor"})]
    >>> index = BM25Index.from_docs(docs, fields={"title": 2.0, "text": 1.0})
    >>> [hit.id for hit in index.search("wing")]
    ['a', 'b']
    >>> [hit.id for hit in index.search("wing", field_weights={"title": 0.0})]
    ['b', 'a']
    >>> round(index.explain("wing", "a").terms[0].fields["title"]["pseudo_tf"], 3)
    1.6
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ..inverted.postings import Snapshot, live_terms, offsets
from ..inverted.scorer import length_norm
from ..types import Doc
from .params import BM25Params
from .scoring import BM25Method

if TYPE_CHECKING:
    from ..inverted.scorer import Variant


class CollectionStats(Protocol):
    """What BM25F reads of `collection_stats.CollectionStats` (a shard's corpus-wide
    statistics; not imported, since that module imports this one to count df)."""

    @property
    def df(self) -> Mapping[str, int]: ...

    def field_avg(self, field: str) -> float: ...

    def idf_for(self, vocab: Mapping[str, int], variant: Variant) -> NDArray[np.float64]: ...


__all__ = ["TEXT", "check_fields", "query_field_weights", "field_text", "union_df", "combined",
           "FieldedTerm", "FieldedExplanation", "explain_fields"]

TEXT = "text"
"""The field that is `Doc.text`; every other field's text is ``doc.metadata[name]``."""

_SATURATIONS = (BM25Method.LUCENE, BM25Method.ROBERTSON)


def check_fields(fields: Any, name: str = "fields",
                 known: Mapping[str, float] | None = None) -> dict[str, float]:
    """``fields`` as ``{name: weight}`` (weights finite, >= 0, not all 0); a clear error else.

    With ``known`` (the index's fields), names must be among them (per-query weights);
    fields left out keep their ``known`` weight.
    """
    if not isinstance(fields, Mapping) or not fields:
        raise TypeError(f"{name} must be a non-empty mapping of field name to weight, such "
                        f"as {{'title': 2.0, 'text': 1.0}}, got {type(fields).__name__}: "
                        f"{fields!r:.80}")
    out = dict(known) if known is not None else {}
    for field, weight in fields.items():
        if not isinstance(field, str) or not field:
            raise TypeError(f"{name}: field names must be non-empty str, got {field!r}")
        if known is not None and field not in known:
            raise ValueError(f"{name}: the index has no field {field!r}; its fields are "
                             f"{sorted(known)}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not (
                math.isfinite(weight) and weight >= 0):
            raise ValueError(f"{name}[{field!r}] must be a finite number >= 0, got {weight!r}")
        out[field] = float(weight)
    if known is None and TEXT not in out:
        raise ValueError(f"{name} must include {TEXT!r} (the document text; weight 0 to "
                         f"leave it unscored), got {sorted(out)}")
    if not any(out.values()):
        raise ValueError(f"{name}: at least one weight must be above 0, got {out}")
    return out


def query_field_weights(fields: Mapping[str, float] | None,
                        field_weights: Any) -> dict[str, float]:
    """One query's field weights on an index with build-time weights ``fields`` (``None``:
    built without fields, an error): ``fields`` with ``field_weights``'s entries over them
    (``None``: ``fields`` as they are); checked by `check_fields`."""
    if fields is None:
        raise ValueError("field_weights needs an index built with fields= (BM25F), e.g. "
                         "BM25Index.from_docs(docs, fields={'title': 2.0, 'text': 1.0})")
    if field_weights is None:
        return dict(fields)
    return check_fields(field_weights, "field_weights", known=fields)


def field_text(doc: Doc, field: str) -> str:
    """``doc``'s text for ``field``: `Doc.text` for "text", else its metadata value ("" when
    absent)."""
    if field == TEXT:
        return doc.text
    value = doc.metadata.get(field, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"document {doc.id!r}: field {field!r} (metadata[{field!r}]) must be a "
                        f"str, got {type(value).__name__}")
    return value


def check_method(params: BM25Params) -> None:
    if BM25Method.parse(params.method) not in _SATURATIONS:
        raise ValueError(f"fields (BM25F) are scored with method 'lucene' or 'robertson', got "
                         f"{BM25Method.parse(params.method).value!r}: BM25L/BM25+'s shifted "
                         "weights have no BM25F form in Robertson & Zaragoza 2009")


def _parts(main: Snapshot) -> dict[str, Snapshot]:
    assert main.fields is not None
    return {TEXT: main, **main.fields}


def _avglen(name: str, st: Snapshot, stats: CollectionStats | None) -> float:
    """Field ``name``'s average length: the collection's (a shard) or ``st``'s own."""
    return st.avgdl if stats is None else stats.field_avg(name)


def _union(main: Snapshot) -> tuple[dict[str, int], dict[str, NDArray[np.int64]]]:
    """The union vocabulary of all fields, and per field each posting's row in it."""
    parts = _parts(main)
    vocab: dict[str, int] = {}
    for st in parts.values():
        for t in st.vocab:
            vocab.setdefault(t, len(vocab))
    rows = {}
    for name, st in parts.items():
        remap = np.empty(len(st.vocab), dtype=np.int64)
        for t, i in st.vocab.items():
            remap[i] = vocab[t]
        rows[name] = np.repeat(remap, np.diff(st.indptr))
    return vocab, rows


def _df(main: Snapshot, vocab: dict[str, int],
        rows: Mapping[str, NDArray[np.int64]]) -> NDArray[np.int64]:
    import scipy.sparse as sp  # a core dependency, loaded on the first fielded search

    parts = _parts(main)
    if not any(r.size for r in rows.values()):
        return np.zeros(len(vocab), dtype=np.int64)
    any_field = sp.csr_matrix((np.ones(sum(r.size for r in rows.values())),
                               (np.concatenate(list(rows.values())),
                                np.concatenate([parts[f].post_docs for f in rows]))),
                              shape=(len(vocab), len(main.docs)))
    any_field.sum_duplicates()
    return np.diff(any_field.indptr).astype(np.int64)


def union_df(main: Snapshot) -> tuple[dict[str, int], NDArray[np.int64]]:
    """The union vocabulary of a fielded snapshot's fields and each term's document
    frequency over all fields (documents holding the term in any field: BM25F's df)."""
    vocab, rows = _union(main)
    return vocab, _df(main, vocab, rows)


def combined(main: Snapshot, weights: Mapping[str, float], params: BM25Params,
             stats: CollectionStats | None = None,
             ) -> tuple[Snapshot, dict[str, int], NDArray[np.float32], NDArray[np.int64]]:
    """The BM25F snapshot for ``weights`` (posting value ``tfw(tf̃)``; its vocabulary the
    terms with a posting under these weights), and the union vocabulary of all fields with
    each term's idf (float32) and document frequency over all fields. With ``stats`` (a
    shard), N, df and the fields' average lengths are the collection's."""
    import scipy.sparse as sp  # a core dependency, loaded on the first fielded search

    parts = _parts(main)
    vocab, rows_of = _union(main)
    n = len(main.docs)
    weighted = []
    for name, st in parts.items():
        w = weights.get(name, 0.0)
        if st.post_docs.size and w > 0:
            norm = length_norm(st.doc_len.astype(np.float64), _avglen(name, st, stats),
                               params.b)
            weighted.append((rows_of[name], st.post_docs, w * st.post_tf / norm[st.post_docs]))
    shape = (len(vocab), n)
    if stats is None:
        df = _df(main, vocab, rows_of)
        idf = params.variant.idf(df.astype(np.float64), n).astype(np.float32)
    else:
        df = np.fromiter((stats.df.get(t, 0) for t in vocab), dtype=np.int64, count=len(vocab))
        idf = stats.idf_for(vocab, params.variant).astype(np.float32)
    if weighted:
        m = sp.csr_matrix((np.concatenate([v for _, _, v in weighted]),
                           (np.concatenate([r for r, _, _ in weighted]),
                            np.concatenate([d for _, d, _ in weighted]))), shape=shape)
        m.sum_duplicates()
        m.eliminate_zeros()
        m.sort_indices()
        pseudo = m.data
        values = params.variant.tfw(pseudo, np.ones_like(pseudo), params.k1, params.delta)
        indptr, docs = m.indptr.astype(np.int64), m.indices.astype(np.int32)
    else:
        values, indptr, docs = np.zeros(0), np.zeros(len(vocab) + 1, np.int64), np.zeros(0, np.int32)
    doc_terms = np.bincount(docs, minlength=n).astype(np.int32)
    # Terms found only in fields weighted 0 have no posting here: the engine needs none empty.
    view_vocab, view_df = live_terms(vocab, np.diff(indptr))
    view = Snapshot(main.docs, view_vocab, offsets(view_df), docs, values.astype(np.float32),
                    doc_terms)
    return view, vocab, idf, df


@dataclass(frozen=True, slots=True)
class FieldedTerm:
    """One query term in a BM25F score: per field its tf, length, norm and weighted share.

    ``fields[name] = {"tf", "length", "avg_length", "norm", "weight", "pseudo_tf"}``
    (``pseudo_tf = weight · tf / norm``); ``pseudo_tf`` is their sum and
    ``contribution = query_count · idf · tfw(pseudo_tf)``.
    """

    term: str
    query_count: int
    df: int
    idf: float
    pseudo_tf: float
    fields: dict[str, dict[str, float]]
    contribution: float


@dataclass(frozen=True, slots=True)
class FieldedExplanation:
    """Why ``doc_id`` scored ``score`` under BM25F: per term, per field (they sum to it)."""

    query: str
    doc_id: str
    method: str
    k1: float
    b: float
    weights: dict[str, float]
    score: float
    terms: tuple[FieldedTerm, ...]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return asdict(self)


def explain_fields(main: Snapshot, weights: Mapping[str, float], params: BM25Params,
                   idf: NDArray[np.float32], vocab: Mapping[str, int], query: str,
                   terms: list[str], counts: list[int], pos: int,
                   df: NDArray[np.integer],
                   stats: CollectionStats | None = None) -> FieldedExplanation:
    """The BM25F explanation of the document at ``pos``, recomputed in float64 (with
    ``stats``, the fields' average lengths are the collection's)."""
    parts = _parts(main)
    rows = []
    for term, c in zip(terms, counts):
        per: dict[str, dict[str, float]] = {}
        total = 0.0
        for name, st in parts.items():
            t = st.vocab.get(term)
            tf = 0
            if t is not None:
                lo, hi = int(st.indptr[t]), int(st.indptr[t + 1])
                j = int(np.searchsorted(st.post_docs[lo:hi], pos))
                if j < hi - lo and st.post_docs[lo + j] == pos:
                    tf = int(st.post_tf[lo + j])
            length = int(st.doc_len[pos])
            avg = _avglen(name, st, stats)
            norm = float(length_norm(np.float64(length), avg, params.b))
            w = float(weights.get(name, 0.0))
            share = w * tf / norm if tf else 0.0
            total += share
            per[name] = {"tf": tf, "length": length, "avg_length": avg, "norm": norm,
                         "weight": w, "pseudo_tf": share}
        u = vocab.get(term)
        term_idf = float(idf[u]) if u is not None else 0.0
        sat = float(params.variant.tfw(np.float64(total), np.float64(1.0), params.k1,
                                       params.delta)) if total else 0.0
        rows.append(FieldedTerm(term, c, int(df[u]) if u is not None else 0, term_idf, total,
                                per, c * term_idf * sat))
    return FieldedExplanation(query, main.docs[pos].id, BM25Method.parse(params.method).value,
                              params.k1, params.b, dict(weights),
                              sum(r.contribution for r in rows), tuple(rows))
