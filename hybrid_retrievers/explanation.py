"""Score explanations: what each query term contributed to a document's BM25 score."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["TermContribution", "Explanation"]


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
class Explanation:
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
