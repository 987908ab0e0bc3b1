"""Structured queries on the postings: which documents a `Query` admits, before top-k.

`analysed` turns a `hybrid_retrievers.Query` into index terms with the index's analyzer
(`AnalysedQuery`); `admitted` turns those into a boolean mask over one snapshot's
documents: every required term present, no excluded term, every phrase in order, at
least ``min_should`` distinct optional terms. The scoring loop (`matching.ranked_matches`)
then ranks only admitted documents, so the top k is exact: a document failing the query
never takes a place in it. Masks run on the numpy path (the compiled kernels take no
mask); a query with optional terms only (`Query.is_plain`) is a plain query and keeps
the kernels.

Phrases read the snapshot's `Snapshot.tokens` (each document's term ids in order, kept
when the index is built with ``positions=True``): the candidates are the documents
holding every phrase term (a postings intersection, rarest term first); each
candidate's term sequence is then scanned for the terms at consecutive positions. The
scan costs the candidates' lengths, in slices of `PHRASE_SLICE` tokens, so memory stays
bounded. "Consecutive after analysis": stopwords are not indexed, so ``"flow of air"``
matches a document reading "flow of air" and one reading "flow air" (order is kept; a
removed stopword leaves no gap), never one reading "air flow".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..query import Query
from ..text import Analyzer
from .postings import Snapshot, offsets

__all__ = ["AnalysedQuery", "analysed", "admitted", "PHRASE_SLICE"]

PHRASE_SLICE = 1 << 20
"""Tokens of candidate documents scanned at once for a phrase (bounds the temporaries)."""


@dataclass(frozen=True, slots=True)
class AnalysedQuery:
    """A `Query` in index terms.

    ``terms`` / ``counts``: the scoring terms (optional, required and phrase terms, in
    that order, each with its number of occurrences), as a plain query's; ``should``,
    ``must``, ``must_not``: distinct terms; ``phrases``: term sequences of two or more
    terms (a one-term phrase is a required term); ``min_should``: distinct optional terms
    a document must hold (0: no constraint beyond matching a scoring term).
    """

    terms: list[str]
    counts: list[int]
    should: list[str]
    must: list[str]
    must_not: list[str]
    phrases: list[list[str]]
    min_should: int
    plain: bool


def analysed(query: Query, analyzer: Analyzer) -> AnalysedQuery:
    """``query``'s clauses through ``analyzer``, as the index sees its documents."""
    tokenize = analyzer.tokenize
    should = [t for clause in query.should for t in tokenize(clause)]
    must = [t for clause in query.must for t in tokenize(clause)]
    phrases = [tokenize(p) for p in query.phrases]
    must += [t for p in phrases if len(p) == 1 for t in p]
    phrases = [p for p in phrases if len(p) > 1]
    must_not = list(dict.fromkeys(t for clause in query.must_not for t in tokenize(clause)))
    scoring = Counter(should)
    scoring.update(must)
    for p in phrases:
        scoring.update(p)
    distinct_should = list(dict.fromkeys(should))
    return AnalysedQuery(
        list(scoring), list(scoring.values()), distinct_should, list(dict.fromkeys(must)),
        must_not, phrases,
        query.min_should(len(distinct_should), required=bool(must or phrases)),
        query.is_plain,
    )


def admitted(st: Snapshot, aq: AnalysedQuery) -> NDArray[np.bool_] | None:
    """Which of ``st``'s documents pass ``aq``'s constraints; None when it has none.

    On a fielded index (``st.fields``: BM25F) a document is all its fields, whatever
    their weights: a required, excluded or optional term is present when any field holds
    it, and a phrase when one field holds it in order (a phrase never spans two fields).
    Weights decide scores only, so a field weighted 0 still counts here.

    Raises:
        ValueError: ``aq`` has a phrase and the index keeps no positions.
    """
    parts = [st, *(st.fields or {}).values()]
    if aq.phrases and any(f.tokens is None for f in parts):
        raise ValueError(
            "phrase queries need term positions, which this index does not keep; build it "
            "with positions=True (BM25Index.from_texts(..., positions=True)), or search the "
            "phrase's words without quotes"
        )
    required = bool(aq.must or aq.phrases)
    count_should = aq.min_should >= 2 or (aq.min_should == 1 and required)
    if not (required or aq.must_not or count_should):
        return None
    n = len(st.docs)
    mask = np.ones(n, dtype=bool)
    holding = {t: [_docs_of(p, p.vocab[t]) for p in parts if t in p.vocab]
               for t in {*aq.must, *aq.must_not, *(aq.should if count_should else ())}}
    if any(not holding[t] for t in aq.must):
        mask[:] = False
        return mask
    if aq.must:
        hits = np.zeros(n, dtype=np.int32)
        for term in aq.must:
            _count(hits, holding[term])
        mask &= hits == len(aq.must)
    for term in aq.must_not:
        for docs in holding[term]:
            mask[docs] = False
    if count_should:
        present = [holding[t] for t in aq.should if holding[t]]
        if len(present) < aq.min_should:
            mask[:] = False
            return mask
        hits = np.zeros(n, dtype=np.int32)
        for lists in present:
            _count(hits, lists)
        mask &= hits >= aq.min_should
    for phrase in aq.phrases:
        found = np.zeros(n, dtype=bool)
        for field in parts:
            if all(t in field.vocab for t in phrase):
                found |= _phrase_mask(field, [field.vocab[t] for t in phrase], mask)
        mask &= found
    return mask


def _count(hits: NDArray[np.int32], lists: list[NDArray[np.int32]]) -> None:
    """Add 1 to ``hits`` for each document in any of ``lists`` (one term's documents per
    field: a document counts once, however many of its fields hold the term)."""
    if len(lists) == 1:
        hits[lists[0]] += 1  # a document once per term: exact
        return
    present = np.zeros(hits.size, dtype=bool)
    for docs in lists:
        present[docs] = True
    hits += present


def _docs_of(st: Snapshot, t: int) -> NDArray[np.int32]:
    return st.post_docs[int(st.indptr[t]):int(st.indptr[t + 1])]


def _phrase_mask(st: Snapshot, ids: list[int], allowed: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Documents (among ``allowed``) whose term sequence holds ``ids`` at consecutive places."""
    assert st.tokens is not None
    out = np.zeros(len(st.docs), dtype=bool)
    by_rarity = sorted(set(ids), key=lambda t: int(st.indptr[t + 1] - st.indptr[t]))
    cand = _docs_of(st, by_rarity[0])
    cand = cand[allowed[cand]]
    for t in by_rarity[1:]:
        cand = cand[np.isin(cand, _docs_of(st, t), assume_unique=True)]
    if not cand.size:
        return out
    starts = offsets(st.doc_len)[:-1]
    lens = st.doc_len[cand].astype(np.int64)
    ends = np.cumsum(lens)
    first = 0
    while first < cand.size:
        # Candidates first..last-1: at least one, at most PHRASE_SLICE tokens beyond the first.
        base = int(ends[first - 1]) if first else 0
        last = max(first + 1, int(np.searchsorted(ends, base + PHRASE_SLICE, side="right")))
        part, part_lens = cand[first:last], lens[first:last]
        out[part[_holds(st.tokens, starts[part], part_lens, ids)]] = True
        first = last
    return out


def _holds(tokens: NDArray[np.int32], starts: NDArray[np.int64], lens: NDArray[np.int64],
           ids: list[int]) -> NDArray[np.bool_]:
    """Per document (its tokens at ``starts``, ``lens`` long): whether ``ids`` occur in a row."""
    total = int(lens.sum())
    width = len(ids)
    found = np.zeros(lens.size, dtype=bool)
    if total < width:
        return found
    local = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total, dtype=np.int64)
    seq = tokens[local]
    owner = np.repeat(np.arange(lens.size), lens)
    m = total - width + 1
    ok = owner[:m] == owner[width - 1:]
    for j, t in enumerate(ids):
        ok &= seq[j:j + m] == t
    found[owner[:m][ok]] = True
    return found
