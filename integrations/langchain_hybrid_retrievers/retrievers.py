"""Kept for compatibility: `BM25Retriever` lives in ``bm25.py`` (this module held only it)."""

from __future__ import annotations

from .bm25 import BM25Retriever

__all__ = ["BM25Retriever"]
