"""Sparse score explanations: each matching token's query weight, document weight and
contribution, which sum to the score.

`SparseExplanation` is what `SparseIndex.explain` returns (and, as a dict, what
``hit.explanation["sparse"]`` holds); `explain` computes one from a snapshot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..inverted.postings import Snapshot

__all__ = ["SparseTermContribution", "SparseExplanation", "explain"]


@dataclass(frozen=True, slots=True)
class SparseTermContribution:
    """One query token's share of a score: ``contribution = query_weight · doc_weight``.

    BM25's `TermContribution` does not fit: it explains idf, tf and length, which an
    impact score has none of. Weights are the float32 values the index scores with.
    """

    token: str
    query_weight: float
    doc_weight: float
    contribution: float


@dataclass(frozen=True, slots=True)
class SparseExplanation:
    """Why ``doc_id`` scored ``score``: the dot product of the query's and the document's
    sparse vectors over the tokens they share (``terms``, in query order).

    ``score`` is the float64 sum of the contributions; the index's float32 score equals
    it within float32 rounding (relative 1e-6 for a few hundred terms).
    """

    query: str | None
    doc_id: str
    score: float
    terms: tuple[SparseTermContribution, ...]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy (for metadata, logs or notebooks)."""
        return asdict(self)

    def __str__(self) -> str:
        rows = [f"{self.doc_id}  score={self.score:.4f}  (sparse dot product)",
                f"  {'token':<18}{'query':>9}{'doc':>9}{'contrib':>10}"]
        for t in self.terms:
            rows.append(f"  {t.token[:18]:<18}{t.query_weight:>9.4f}{t.doc_weight:>9.4f}"
                        f"{t.contribution:>10.4f}")
        return "\n".join(rows)


def explain(st: Snapshot, query: str | None, tokens: list[str], weights: list[float],
            pos: int) -> SparseExplanation:
    """The explanation of the document at position ``pos`` of ``st`` for a query vector.

    Only the tokens the document holds are listed (a token it lacks contributes 0).
    """
    rows = []
    for token, qw in zip(tokens, weights):
        t = st.vocab.get(token)
        if t is None:
            continue
        lo, hi = int(st.indptr[t]), int(st.indptr[t + 1])
        docs = st.post_docs[lo:hi]
        j = int(np.searchsorted(docs, pos))
        if j >= docs.size or docs[j] != pos:
            continue
        q = float(np.float32(qw))
        d = float(st.post_tf[lo + j])
        rows.append(SparseTermContribution(token, q, d, q * d))
    return SparseExplanation(query=query, doc_id=st.docs[pos].id,
                             score=sum(r.contribution for r in rows), terms=tuple(rows))
