"""Kept for compatibility: the stopword lists moved to :mod:`hybrid_retrievers.text.stopwords`."""

from __future__ import annotations

from .text.stopwords import available_stopword_languages, load_stopwords, stopwords_source

__all__ = ["available_stopword_languages", "load_stopwords", "stopwords_source"]
