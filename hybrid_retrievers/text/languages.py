"""The languages an :class:`~hybrid_retrievers.text.Analyzer` accepts, by name or ISO code.

A language picks the default stopwords and stemmer. The valid names are the Snowball
languages (kept as data, so they do not depend on whether PyStemmer is installed, and
extended by whatever the installed PyStemmer reports), the languages with a bundled
stopword list, and Chinese, Japanese and Korean.
"""

from __future__ import annotations

from typing import Any

from .cjk import _CJK_LANGUAGES
from .stemming import snowball_algorithms
from .stopwords import available_stopword_languages

__all__ = ["available_languages"]

# Snowball algorithms that are languages (PyStemmer 2.2 ships these). Kept as data so the
# set of valid languages does not depend on whether PyStemmer happens to be installed.
_SNOWBALL_LANGUAGES = frozenset(
    {
        "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish",
        "french", "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian",
        "lithuanian", "nepali", "norwegian", "portuguese", "romanian", "russian", "serbian",
        "spanish", "swedish", "tamil", "turkish", "yiddish",
    }
)  # fmt: skip

# ISO 639-1 codes accepted as aliases (normalised to the full name).
_ISO_639_1 = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish",
    "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
    "zh": "chinese", "ja": "japanese", "ko": "korean",
}  # fmt: skip


def available_languages() -> tuple[str, ...]:
    """Return every language name the :class:`Analyzer` accepts, sorted.

    These are the Snowball languages (extended by whatever the installed PyStemmer
    reports) plus the languages with a bundled stopword list.
    """
    names = set(_SNOWBALL_LANGUAGES) | set(available_stopword_languages()) | _CJK_LANGUAGES
    names.update(a for a in snowball_algorithms() if a != "porter")
    return tuple(sorted(names))


def _resolve_language(language: Any) -> str:
    if not isinstance(language, str):
        raise TypeError(
            f"language must be a str such as 'english' or 'en', got "
            f"{type(language).__name__}: {language!r}"
        )
    name = language.strip().lower()
    name = _ISO_639_1.get(name, name)
    if name in _SNOWBALL_LANGUAGES or name in _CJK_LANGUAGES:  # without importing PyStemmer
        return name
    valid = available_languages()
    if name not in valid:
        raise ValueError(
            f"language must be one of {', '.join(valid)} (or an ISO 639-1 code such as "
            f"'en', 'es', 'fr', 'de'), got {language!r}"
        )
    return name
