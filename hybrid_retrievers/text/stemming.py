"""Stemming: the Snowball stemmers through the optional PyStemmer, or a user callable.

PyStemmer (the ``stem`` extra) is imported only when an analyzer asks for Snowball
stemming, so importing the package needs no optional dependency. Without it,
``stemmer="default"`` means no stemming, with a one-time warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from .cjk import _CJK_LANGUAGES
from .tokenizers import callable_name

__all__: list[str] = []  # internal to hybrid_retrievers.text; the Analyzer is the API

_warned_no_stemmer = False


def _import_stemmer() -> Any:
    try:
        import Stemmer  # PyStemmer, optional: the "stem" extra
    except ImportError:
        return None
    return Stemmer


def snowball_algorithms() -> frozenset[str]:
    """The Snowball algorithms the installed PyStemmer offers (none without PyStemmer)."""
    module = _import_stemmer()
    return frozenset() if module is None else frozenset(module.algorithms())


def check_snowball_installed() -> None:
    """Raise ImportError, naming the ``stem`` extra, when PyStemmer is missing.

    Loading an index built with Snowball stemming needs it: analysing queries without
    stemming would not match the index.
    """
    if _import_stemmer() is None:
        raise ImportError(
            "this index was built with Snowball stemming, which needs the optional "
            "dependency 'Stemmer' (PyStemmer). Install it with: "
            "pip install 'hybrid-retrievers[stem]'"
        )


def resolve_stemmer(
    stemmer: Any, language: str
) -> tuple[Any, Callable[[list[str]], list[str]] | None]:
    """The stemmer as recorded (``"snowball"``, ``None`` or the callable) and its batch form.

    The batch form maps a list of words to their stems (``None``: no stemming). The
    missing-PyStemmer warning points at the caller of ``Analyzer(...)``.
    """
    global _warned_no_stemmer
    if stemmer is None:
        return None, None
    if isinstance(stemmer, str):
        if stemmer != "default":
            raise ValueError(
                f"stemmer must be 'default', None or a callable str -> str, got {stemmer!r}"
            )
        if language in _CJK_LANGUAGES:
            return None, None  # no Snowball stemmer exists for these; nothing to warn about
        module = _import_stemmer()
        if module is None:
            if not _warned_no_stemmer:
                _warned_no_stemmer = True
                warnings.warn(
                    "PyStemmer is not installed, so the Analyzer does not stem; install "
                    "it with: pip install 'hybrid-retrievers[stem]' (or pass stemmer=None "
                    "to silence this warning)",
                    UserWarning,
                    stacklevel=3,
                )
            return None, None
        if language not in module.algorithms():
            raise ValueError(
                f"stemmer='default' needs a Snowball stemmer for language "
                f"{language!r}, which the installed PyStemmer lacks; pass "
                f"stemmer=None or a callable"
            )
        snowball = module.Stemmer(language)
        snowball.maxCacheSize = 0  # we cache per distinct token ourselves
        return "snowball", snowball.stemWords
    if callable(stemmer):
        return stemmer, _batch_of(stemmer)
    raise TypeError(
        f"stemmer must be 'default', None or a callable str -> str, got "
        f"{type(stemmer).__name__}: {stemmer!r:.80}"
    )


def _batch_of(stem: Callable[[str], str]) -> Callable[[list[str]], list[str]]:
    """Wrap a per-word stemmer as a batch one that checks it returns str."""

    def batch(words: list[str]) -> list[str]:
        out = []
        for word in words:
            result = stem(word)
            if not isinstance(result, str):
                raise TypeError(
                    f"stemmer must return a str, but {callable_name(stem)} returned "
                    f"{type(result).__name__}: {result!r:.80} for {word!r}"
                )
            out.append(result)
        return out

    return batch
