"""BM25 score explanations: what each query term contributed to a document's score.

`BM25Explanation` is what `BM25Index.explain` returns (and, as a dict, what
``hit.explanation["bm25"]`` holds); `explain` computes one from a snapshot, its score
cache and the parameters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..inverted.postings import Snapshot
from ..inverted.score_cache import ScoreCache
from ..inverted.scorer import length_norm
from .params import BM25Params
from .scoring import BM25Method

__all__ = ["TermContribution", "BM25Explanation", "explain"]


@dataclass(frozen=True, slots=True)
class TermContribution:
    """One query term's share of a score.

    ``contribution = query_count · idf · tf_weight(tf, doc_length)``; a term missing
    from the vocabulary has ``df == 0`` and contributes 0.
    """

    term: str
    query_count: int
    df: int
    idf: float
    tf: int
    doc_length: int
    avg_doc_length: float
    contribution: float


@dataclass(frozen=True, slots=True)
class BM25Explanation:
    """Why ``doc_id`` scored ``score`` for ``query``: the contributions sum to the score."""

    query: str
    doc_id: str
    method: str
    k1: float
    b: float
    delta: float
    score: float
    terms: tuple[TermContribution, ...]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy (for metadata, logs or notebooks)."""
        return asdict(self)

    def __str__(self) -> str:
        head = (
            f"{self.doc_id}  score={self.score:.4f}  ({self.method}, k1={self.k1}, b={self.b}"
            + (f", delta={self.delta}" if self.delta else "")
            + ")"
        )
        rows = [f"  {'term':<18}{'qtf':>4}{'df':>7}{'idf':>8}{'tf':>5}{'len':>6}{'contrib':>10}"]
        for t in self.terms:
            rows.append(
                f"  {t.term[:18]:<18}{t.query_count:>4}{t.df:>7}{t.idf:>8.3f}{t.tf:>5}"
                f"{t.doc_length:>6}{t.contribution:>10.4f}"
            )
        return "\n".join([head, *rows])


def explain(
    st: Snapshot, cache: ScoreCache, params: BM25Params, query: str, terms: list[str],
    counts: list[int], pos: int,
) -> BM25Explanation:
    """The explanation of the document at position ``pos`` of ``st`` for the query terms.

    Recomputed in float64 from the postings with the statistics a search uses:
    ``cache``'s idf and avgdl, and its collection statistics when set (they hold the
    df, and the idf of terms only other shards hold).
    """
    v = params.variant
    k1, delta = params.k1, params.delta
    dl = int(st.doc_len[pos])
    avgdl = cache.avgdl
    norm = float(length_norm(np.float64(dl), avgdl, params.b))
    rows = []
    for term, c in zip(terms, counts):
        t = st.vocab.get(term)
        if t is None:
            # A term only other shards hold still has an idf (collection statistics).
            idf = cache.global_idf(term, params)
            weight = 0.0
            if idf and v.absent is not None:
                weight = float(v.absent(k1, delta))
            rows.append(TermContribution(term, c, cache.df_of(term, 0), idf, 0, dl, avgdl,
                                         c * idf * weight))
            continue
        lo, hi = int(st.indptr[t]), int(st.indptr[t + 1])
        docs = st.post_docs[lo:hi]
        j = int(np.searchsorted(docs, pos))
        tf = int(st.post_tf[lo + j]) if j < docs.size and docs[j] == pos else 0
        if tf == 0:
            weight = 0.0 if v.absent is None else float(v.absent(k1, delta))
        else:
            weight = float(v.tfw(np.float64(tf), np.float64(norm), k1, delta))
        idf = float(cache.idf[t])
        rows.append(TermContribution(term, c, cache.df_of(term, hi - lo), idf, tf, dl, avgdl,
                                     c * idf * weight))
    return BM25Explanation(
        query=query, doc_id=st.docs[pos].id, method=BM25Method.parse(params.method).value,
        k1=params.k1, b=params.b, delta=params.delta,
        score=sum(r.contribution for r in rows), terms=tuple(rows),
    )
