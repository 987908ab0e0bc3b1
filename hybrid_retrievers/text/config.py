"""The saved form of an analyzer: its config layout, its version, and reading it back.

An index and its queries must be analysed identically, so the analyzer's settings are
saved with the index (:meth:`Analyzer.to_config`) and checked strictly when read back
(:func:`read_config`, behind :meth:`Analyzer.from_config`): a malformed or unknown config
is refused rather than guessed at.
"""

from __future__ import annotations

from typing import Any

from .stemming import check_snowball_installed
from .tokenizers import UnknownTokenizerError, available_tokenizers

__all__ = ["ANALYZER_CONFIG_VERSION", "read_config"]

ANALYZER_CONFIG_VERSION = 3
"""Version of the :meth:`Analyzer.to_config` layout; bumped when the analysis changes.

Version 2 added the ``tokenizer`` key and CJK bigrams in the default tokenizer. A
version 1 config (no ``tokenizer``) still loads, with the version 1 split
(``tokenizer="words"``), so an index keeps analysing queries as it analysed documents.
Version 3 added ``token_pattern`` and ``normalize``; a config that uses neither is still
written as version 2.
"""

_CONFIG_KEYS_V1 = frozenset({"version", "language", "stopwords", "stemmer", "accent_folding"})
_CONFIG_KEYS_V2 = _CONFIG_KEYS_V1 | {"tokenizer"}
_CONFIG_KEYS = {1: _CONFIG_KEYS_V1, 2: _CONFIG_KEYS_V2,
                3: _CONFIG_KEYS_V2 | {"token_pattern", "normalize"}}


def read_config(config: Any) -> tuple[str, dict[str, Any]]:
    """Check a :meth:`Analyzer.to_config` dict; return the language and the other arguments.

    A version 1 config (saved before tokenizers existed) gets ``tokenizer="words"``.

    Raises:
        ValueError: For a malformed config (not a dict, unknown or missing keys, wrong
            types, an unsupported version).
        UnknownTokenizerError: When the config names a tokenizer not registered in
            this process.
        ImportError: When the config uses Snowball stemming and PyStemmer is missing.
    """
    if not isinstance(config, dict):
        raise ValueError(f"analyzer config must be a dict, got {type(config).__name__}")
    version = config.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"analyzer config 'version' must be an int, got {version!r}")
    if version not in _CONFIG_KEYS:
        raise ValueError(
            f"analyzer config version {version} is not supported (this version reads 1 "
            f"to {ANALYZER_CONFIG_VERSION}); upgrade hybrid-retrievers or rebuild the index"
        )
    expected = _CONFIG_KEYS[version]
    keys = set(config)
    if keys != expected:
        unknown, missing = sorted(keys - expected), sorted(expected - keys)
        raise ValueError(
            f"analyzer config version {version} must have exactly the keys "
            f"{sorted(expected)}; unknown: {unknown}, missing: {missing}"
        )
    tokenizer = config.get("tokenizer", "words")
    if not isinstance(tokenizer, str):
        raise ValueError(
            f"analyzer config 'tokenizer' must be a tokenizer name (str), got {tokenizer!r:.80}"
        )
    if tokenizer not in available_tokenizers():
        raise UnknownTokenizerError(
            f"this analyzer was saved with the tokenizer {tokenizer!r}, which is not "
            f"registered in this process (registered: {list(available_tokenizers())}). "
            f"Call hybrid_retrievers.text.register_tokenizer({tokenizer!r}, fn) with the "
            "same function before loading"
        )
    language = config["language"]
    if not isinstance(language, str):
        raise ValueError(f"analyzer config 'language' must be a str, got {language!r}")
    stopwords = config["stopwords"]
    if not (
        stopwords is None
        or stopwords == "default"
        or isinstance(stopwords, list) and all(isinstance(w, str) for w in stopwords)
    ):
        raise ValueError(
            f"analyzer config 'stopwords' must be 'default', null or a list of str, "
            f"got {stopwords!r:.80}"
        )
    stemmer = config["stemmer"]
    if stemmer not in ("snowball", None):
        raise ValueError(
            f"analyzer config 'stemmer' must be 'snowball' or null, got {stemmer!r:.80}"
        )
    accent_folding = config["accent_folding"]
    if not isinstance(accent_folding, bool):
        raise ValueError(
            f"analyzer config 'accent_folding' must be a bool, got {accent_folding!r}"
        )
    token_pattern = config.get("token_pattern")
    if token_pattern is not None and not isinstance(token_pattern, str):
        raise ValueError(
            f"analyzer config 'token_pattern' must be a str or null, got {token_pattern!r:.80}"
        )
    normalize = config.get("normalize", True)
    if not isinstance(normalize, bool):
        raise ValueError(f"analyzer config 'normalize' must be a bool, got {normalize!r}")
    if stemmer == "snowball":
        check_snowball_installed()
    return language, {
        "stopwords": stopwords,
        "stemmer": "default" if stemmer == "snowball" else None,
        "accent_folding": accent_folding,
        "tokenizer": tokenizer,
        "token_pattern": token_pattern,
        "normalize": normalize,
    }
