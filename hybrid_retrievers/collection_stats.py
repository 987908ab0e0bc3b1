"""Kept for compatibility: corpus-wide BM25 statistics now live in `.bm25.collection_stats`."""

from __future__ import annotations

from .bm25.collection_stats import FORMAT_VERSION, CollectionStats, StatsDelta

__all__ = ["CollectionStats", "StatsDelta", "FORMAT_VERSION"]
