"""Text: the analyzer that turns text into index terms, stopword lists, and splitting.

An index and its queries must be analysed identically, so the :class:`Analyzer` is saved
with the index (:meth:`Analyzer.to_config` / :meth:`Analyzer.from_config`) and the same
settings are restored on load. The pipeline, in order, and where each step lives:

1. **Normalise** (:mod:`.normalization`): NFKC, case folding and, when ``accent_folding``
   is on, removal of combining diacritics; ASCII text is only lowercased.
2. **Split** (the *tokenizer*, :mod:`.tokenizers`; ``"standard"`` by default) on Unicode
   word characters, keeping codes such as "IPC-420" whole as well as in parts
   (:mod:`.normalization`). Chinese, Japanese and Korean runs become overlapping character
   bigrams, or jieba words with ``tokenizer="jieba"`` (:mod:`.cjk`). ``"words"`` is the
   plain split without CJK handling (how analyzer configs of version 1 split). Any
   callable can be the tokenizer; see :func:`register_tokenizer` to make an index using it
   saveable.
3. **Stopwords** (:mod:`.stopwords`, the bundled lists) are removed from the parts
   (compounds are never removed).
4. **Stemming** (:mod:`.stemming`, Snowball through the optional PyStemmer) of the
   remaining parts (compounds are never stemmed). Stems are cached per distinct token,
   and :meth:`Analyzer.tokenize_many` stems a corpus' distinct vocabulary once.

:mod:`.languages` says which languages are accepted, :mod:`.config` reads a saved analyzer
config, :mod:`.analyzer` holds the :class:`Analyzer` and its cache. :mod:`.splitting`
cuts parent documents into child chunks (sentence packing, child ids) for parent/child
retrieval.
"""

from __future__ import annotations

from .analyzer import Analyzer
from .cjk import cjk_bigrams
from .config import ANALYZER_CONFIG_VERSION
from .languages import available_languages
from .splitting import (
    CHILD_INDEX_KEY,
    PARENT_ID_KEY,
    START_INDEX_KEY,
    SentenceSplitter,
    Splitter,
    as_splitter,
    child_id,
    split_parents,
)
from .stopwords import available_stopword_languages, load_stopwords, stopwords_source
from .tokenizers import (
    BUILTIN_TOKENIZERS,
    UnknownTokenizerError,
    available_tokenizers,
    register_tokenizer,
    unregister_tokenizer,
)

__all__ = [
    "ANALYZER_CONFIG_VERSION",
    "BUILTIN_TOKENIZERS",
    "CHILD_INDEX_KEY",
    "PARENT_ID_KEY",
    "START_INDEX_KEY",
    "Analyzer",
    "SentenceSplitter",
    "Splitter",
    "UnknownTokenizerError",
    "as_splitter",
    "available_languages",
    "available_stopword_languages",
    "available_tokenizers",
    "child_id",
    "cjk_bigrams",
    "load_stopwords",
    "register_tokenizer",
    "split_parents",
    "stopwords_source",
    "unregister_tokenizer",
]
