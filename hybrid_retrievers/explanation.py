"""Kept for compatibility: BM25 explanations live in `hybrid_retrievers.bm25.explanation`."""

from __future__ import annotations

from .bm25.explanation import BM25Explanation, Explanation, TermContribution

__all__ = ["TermContribution", "BM25Explanation", "Explanation"]
