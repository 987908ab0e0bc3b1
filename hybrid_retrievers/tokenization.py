"""Kept for compatibility: the analyzer moved to :mod:`hybrid_retrievers.text`.

``from hybrid_retrievers.tokenization import Analyzer`` (and the other public names) keeps
working. New code imports from ``hybrid_retrievers`` or ``hybrid_retrievers.text``. The
private helpers live in the ``hybrid_retrievers.text`` module that uses them, so patch
them there (e.g. ``hybrid_retrievers.text.stemming._import_stemmer``); they are not
re-exported here, so a patch aimed at this module fails loudly instead of doing nothing.
"""

from __future__ import annotations

from .text.analyzer import Analyzer
from .text.cjk import cjk_bigrams
from .text.config import ANALYZER_CONFIG_VERSION
from .text.languages import available_languages
from .text.tokenizers import *  # the registry: register_tokenizer, BUILTIN_TOKENIZERS, ...

__all__ = [
    "ANALYZER_CONFIG_VERSION",
    "BUILTIN_TOKENIZERS",
    "Analyzer",
    "UnknownTokenizerError",
    "available_languages",
    "available_tokenizers",
    "cjk_bigrams",
    "register_tokenizer",
    "unregister_tokenizer",
]
