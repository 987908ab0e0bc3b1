"""Kept for compatibility: the analyzer moved to :mod:`hybrid_retrievers.text`.

``from hybrid_retrievers.tokenization import Analyzer`` (and the other public names) keeps
working. New code imports from ``hybrid_retrievers`` or ``hybrid_retrievers.text``; the
private helpers live in the ``hybrid_retrievers.text`` modules that use them (patch them
there, e.g. ``hybrid_retrievers.text.stemming._import_stemmer``).
"""

from __future__ import annotations

from .text.analyzer import Analyzer
from .text.cjk import cjk_bigrams
from .text.config import ANALYZER_CONFIG_VERSION
from .text.languages import available_languages
from .text.tokenizers import (
    BUILTIN_TOKENIZERS,
    UnknownTokenizerError,
    available_tokenizers,
    register_tokenizer,
    unregister_tokenizer,
)

__all__ = [
    "Analyzer",
    "ANALYZER_CONFIG_VERSION",
    "BUILTIN_TOKENIZERS",
    "UnknownTokenizerError",
    "available_languages",
    "available_tokenizers",
    "cjk_bigrams",
    "register_tokenizer",
    "unregister_tokenizer",
]
