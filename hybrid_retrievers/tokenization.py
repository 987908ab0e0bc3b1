"""The text analyzer: one object that turns text into index terms, for indexing and queries.

An index and its queries must be analysed identically, so the :class:`Analyzer` is saved
with the index (:meth:`Analyzer.to_config` / :meth:`Analyzer.from_config`) and the same
settings are restored on load.

The pipeline, in order:

1. **Normalise** (only when the text is not pure ASCII, which is the fast common case):
   Unicode NFKC (full-width letters, ligatures such as "ﬁ", superscripts become plain
   characters), then case folding (``str.casefold``: "Straße" -> "strasse"), then, when
   ``accent_folding`` is on, removal of combining diacritics ("información" -> "informacion",
   "naïve" -> "naive"). ASCII text is only lowercased.
2. **Split** (the *tokenizer*; ``"standard"`` by default) on Unicode word characters
   (letters, digits and combining marks of any script; the underscore counts as a
   separator). A run of word parts joined by single ``-``, ``.``, ``/`` or ``_`` characters
   that contains at least one digit is a *code* ("IPC-420", "3.5", "2024-01-15"): the joined
   compound is emitted first, then its parts, so both "ipc-420" and "420" match. Without a
   digit only the parts are kept ("e-mail" -> "e", "mail").

   **CJK.** Chinese, Japanese and Korean are written without spaces between words (Korean
   has spaces between phrases, with particles attached). A run of Han, Hiragana, Katakana
   or Hangul characters becomes its overlapping character bigrams, as Lucene's
   ``CJKAnalyzer`` does: "低头思故乡" -> "低头", "头思", "思故", "故乡"; a one-character run
   stays a unigram. A query then matches a document containing its words, without a
   dictionary. (A one-character query word matches only one-character runs, as in Lucene.)
   ``tokenizer="jieba"`` segments Han runs with the jieba dictionary segmenter instead (its
   search mode, which also emits the words inside long compounds; the ``cjk`` extra); Kana
   and Hangul runs stay bigrams. ``tokenizer="words"`` is the plain split without CJK
   handling (how analyzer configs of version 1 split). Any callable can be the tokenizer;
   see :func:`register_tokenizer` to make an index using it saveable.
3. **Stopwords** are removed from the parts (compounds are never removed).
4. **Stemming** of the remaining parts (compounds are never stemmed). Stems are cached per
   distinct token, and :meth:`Analyzer.tokenize_many` stems a corpus' distinct vocabulary once.
"""

from __future__ import annotations

import gc
import inspect
import logging
import re
import threading
import unicodedata
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .progress import progress
from .stopwords import available_stopword_languages, load_stopwords

__all__ = [
    "Analyzer",
    "ANALYZER_CONFIG_VERSION",
    "BUILTIN_TOKENIZERS",
    "UnknownTokenizerError",
    "available_languages",
    "available_tokenizers",
    "register_tokenizer",
    "unregister_tokenizer",
]

ANALYZER_CONFIG_VERSION = 2
"""Version of the :meth:`Analyzer.to_config` layout; bumped when the analysis changes.

Version 2 added the ``tokenizer`` key and CJK bigrams in the default tokenizer. A
version 1 config (no ``tokenizer``) still loads, with the version 1 split
(``tokenizer="words"``), so an index keeps analysing queries as it analysed documents.
"""

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

_CONFIG_KEYS_V1 = frozenset({"version", "language", "stopwords", "stemmer", "accent_folding"})
_CONFIG_KEYS = _CONFIG_KEYS_V1 | {"tokenizer"}

# Languages written (mostly) without spaces between words: accepted by name or ISO code;
# there is no Snowball stemmer nor a bundled stopword list for them, so stemmer="default"
# means no stemming (without the missing-PyStemmer warning). Their text is handled by the
# tokenizer (CJK bigrams, or jieba), whatever the language setting.
_CJK_LANGUAGES = frozenset({"chinese", "japanese", "korean"})

# Above this many cached tokens the stem cache starts afresh (bounds memory on endless
# query streams; a corpus vocabulary of this size is resolved in one batch anyway).
_MAX_CACHE = 2_000_000


def _combining_marks_class() -> str:
    """Regex class body listing combining marks (Mn, Mc, Me) of the common script blocks.

    Python's ``re`` treats marks as non-word characters, which would cut Devanagari or
    Tamil words apart (and decomposed accents with accent folding off). Scanning these
    blocks at import costs about a millisecond.
    """
    blocks = ((0x0300, 0x1DFF), (0x20D0, 0x20FF), (0xA670, 0xABFF), (0xFE20, 0xFE2F))
    runs: list[tuple[int, int]] = []
    for lo, hi in blocks:
        for cp in range(lo, hi + 1):
            if unicodedata.category(chr(cp))[0] == "M":
                if runs and runs[-1][1] == cp - 1:
                    runs[-1] = (runs[-1][0], cp)
                else:
                    runs.append((cp, cp))
    return "".join(f"\\u{a:04x}-\\u{b:04x}" if a != b else f"\\u{a:04x}" for a, b in runs)


_MARKS = _combining_marks_class()
# One "word character": \w plus combining marks. The underscore is matched here (so a
# single character class keeps the hot loop fast) and treated as a separator afterwards.
_W = f"[\\w{_MARKS}]"
_PART = f"(?:[^\\W_]|[{_MARKS}])+"
# Chunks: word runs joined by single - . / characters (underscore is already inside).
_CHUNK_RE = re.compile(f"{_W}+(?:[-./]{_W}+)*")
# Strict form used on the rare chunks holding an underscore or a joiner.
_STRICT_RE = re.compile(f"{_PART}(?:[-./_]{_PART})*")
_JOINER_SPLIT = re.compile(r"[-./_]").split
_HAS_JOINER = re.compile(r"[-./_]").search
_HAS_DIGIT = re.compile(r"\d").search

# Combining diacritics removed by accent folding (after NFD). Limited to the diacritic
# blocks: stripping every mark would destroy Indic vowel signs and viramas.
_ACCENT_TABLE = {
    cp: None
    for lo, hi in ((0x0300, 0x036F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF),
                   (0xFE20, 0xFE2F))
    for cp in range(lo, hi + 1)
}  # fmt: skip

# ASCII fast path: lowercase, and every non-alphanumeric character becomes a space, so
# str.split (much cheaper than re.findall) yields the tokens. Only valid when the text
# has no underscore and no joiner between two alphanumerics (no code to keep whole).
_ASCII_TABLE = str.maketrans(
    {c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128)}
)
_ASCII_NEEDS_REGEX = re.compile(r"[A-Za-z0-9][-./][A-Za-z0-9]|_").search

_warned_no_stemmer = False


def available_languages() -> tuple[str, ...]:
    """Return every language name the :class:`Analyzer` accepts, sorted.

    These are the Snowball languages (extended by whatever the installed PyStemmer
    reports) plus the languages with a bundled stopword list.
    """
    names = set(_SNOWBALL_LANGUAGES) | set(available_stopword_languages()) | _CJK_LANGUAGES
    stemmer_mod = _import_stemmer()
    if stemmer_mod is not None:
        names.update(a for a in stemmer_mod.algorithms() if a != "porter")
    return tuple(sorted(names))


def _import_stemmer() -> Any:
    try:
        import Stemmer  # PyStemmer, optional: the "stem" extra
    except ImportError:
        return None
    return Stemmer


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


class _Normalizer:
    """NFKC + case folding (+ accent folding) of one string; picklable-free plain object."""

    __slots__ = ("accent_folding",)

    def __init__(self, accent_folding: bool) -> None:
        self.accent_folding = accent_folding

    def split(self, text: str) -> list[str]:
        """Normalise and split ``text`` (the tokens before stopwords and stemming)."""
        if text.isascii() and _ASCII_NEEDS_REGEX(text) is None:
            return text.translate(_ASCII_TABLE).split()
        return _split(self(text))

    def __call__(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        text = unicodedata.normalize("NFKC", text).casefold()
        if self.accent_folding:
            text = unicodedata.normalize("NFD", text).translate(_ACCENT_TABLE)
            text = unicodedata.normalize("NFC", text)
        return text


def _split(text: str) -> list[str]:
    """Split normalised text into tokens: parts, with codes' compounds before their parts."""
    chunks = _CHUNK_RE.findall(text)
    # Fast path: plain words only (isalnum is False for anything holding a joiner,
    # an underscore or a combining mark, which then takes the careful path).
    for chunk in chunks:
        if not chunk.isalnum():
            break
    else:
        return chunks
    out: list[str] = []
    append = out.append
    for chunk in chunks:
        if chunk.isalnum():
            append(chunk)
            continue
        for piece in _STRICT_RE.findall(chunk):
            parts = _JOINER_SPLIT(piece)
            if len(parts) > 1 and _HAS_DIGIT(piece):
                append(piece)
            out.extend(parts)
    return out


# -- CJK ----------------------------------------------------------------------------------

# The scripts Lucene's CJKBigramFilter bigrams (Han, Hiragana, Katakana, Hangul), as code
# point ranges of letters (not punctuation: "・" U+30FB and "゠" U+30A0 separate words).
# Matched after NFKC, so half-width Katakana and compatibility ideographs are already
# folded into these blocks.
_HAN = ("\u3005\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf\u4e00-\u9fff"
        "\uf900-\ufaff\U00020000-\U0003ffff")
_KANA = ("\u3041-\u3096\u3099\u309a\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff"
         "\u31f0-\u31ff\uff66-\uff9f\U0001aff0-\U0001b16f")
_HANGUL = ("\u1100-\u11ff\u3131-\u318e\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff"
           "\uffa0-\uffdc")
_CJK_CLASS = f"[{_HAN}{_KANA}{_HANGUL}]"
_HAS_CJK = re.compile(_CJK_CLASS).search
# Splitting with a capturing group alternates non-CJK text (even items) and CJK runs (odd).
_CJK_RUNS = re.compile(f"({_CJK_CLASS}+)").split
_HAN_RUNS = re.compile(f"([{_HAN}]+)").split


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a one-character run is its unigram.

    Example:
        >>> cjk_bigrams("故乡"), cjk_bigrams("低头思故乡"), cjk_bigrams("霜")
        (['故乡'], ['低头', '头思', '思故', '故乡'], ['霜'])
    """
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _split_mixed(text: str, segment: Callable[[str], list[str]]) -> list[str]:
    """Split normalised text holding CJK: other text as usual, each CJK run by ``segment``."""
    out: list[str] = []
    for i, piece in enumerate(_CJK_RUNS(text)):
        if i % 2:
            out.extend(segment(piece))
        elif piece:
            out.extend(_split(piece))
    return out


class _StandardSplitter:
    """The ``"standard"`` tokenizer: the word split, with CJK runs as bigrams."""

    __slots__ = ("normalize", "segment")

    def __init__(self, normalize: _Normalizer, segment: Callable[[str], list[str]] = cjk_bigrams
                 ) -> None:
        self.normalize = normalize
        self.segment = segment

    def split(self, text: str) -> list[str]:
        if text.isascii():  # no CJK in ASCII: the same fast path as the plain word split
            if _ASCII_NEEDS_REGEX(text) is None:
                return text.translate(_ASCII_TABLE).split()
            return _split(text.lower())
        text = self.normalize(text)
        if _HAS_CJK(text) is None:
            return _split(text)
        return _split_mixed(text, self.segment)


class _JiebaSegmenter:
    """Han runs through a private jieba ``Tokenizer`` (search mode); other CJK as bigrams.

    A private instance, so words a program adds to jieba's global dictionary do not change
    what a saved index means; its dictionary loads on first use (about a second).
    """

    def __init__(self) -> None:
        from .optional import require

        jieba = require("jieba", extra="cjk", feature="Analyzer(tokenizer='jieba')")
        self._tokenizer = jieba.Tokenizer()
        self._ready = False
        self._lock = threading.Lock()

    def _cut(self, run: str) -> list[str]:
        if not self._ready:
            with self._lock:
                if not self._ready:
                    log = logging.getLogger("jieba")
                    level = log.level
                    log.setLevel(logging.WARNING)  # jieba prints its loading steps at DEBUG
                    try:
                        self._tokenizer.initialize()
                    finally:
                        log.setLevel(level)
                    self._ready = True
        return [w for w in self._tokenizer.cut_for_search(run, HMM=True) if w.strip()]

    def __call__(self, run: str) -> list[str]:
        out: list[str] = []
        for i, piece in enumerate(_HAN_RUNS(run)):
            if i % 2:
                out.extend(self._cut(piece))
            elif piece:
                out.extend(cjk_bigrams(piece))
        return out


_jieba_segmenter: _JiebaSegmenter | None = None
_jieba_lock = threading.Lock()


def _jieba() -> _JiebaSegmenter:
    global _jieba_segmenter
    with _jieba_lock:
        if _jieba_segmenter is None:
            _jieba_segmenter = _JiebaSegmenter()
        return _jieba_segmenter


class _CustomSplitter:
    """A user tokenizer: called on the normalised text; blank tokens are dropped."""

    __slots__ = ("normalize", "fn")

    def __init__(self, normalize: _Normalizer, fn: Callable[[str], Iterable[str]]) -> None:
        self.normalize = normalize
        self.fn = fn

    def split(self, text: str) -> list[str]:
        tokens = self.fn(self.normalize(text))
        if isinstance(tokens, str) or not isinstance(tokens, Iterable):
            raise TypeError(
                f"tokenizer {_callable_name(self.fn)} must return an iterable of str (e.g. a "
                f"list of tokens), got {type(tokens).__name__}: {tokens!r:.80}"
            )
        out = []
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(
                    f"tokenizer {_callable_name(self.fn)} must return str tokens, got "
                    f"{type(token).__name__}: {token!r:.80}"
                )
            token = token.strip()
            if token:
                out.append(token)
        return out


# -- tokenizer registry ---------------------------------------------------------------------

BUILTIN_TOKENIZERS: tuple[str, ...] = ("standard", "words", "jieba")
"""Tokenizer names that always exist: ``"standard"`` (word split + CJK bigrams, the
default), ``"words"`` (word split only: the version 1 analysis) and ``"jieba"`` (standard,
with Chinese segmented by jieba: ``pip install 'hybrid-retrievers[cjk]'``)."""

_TOKENIZERS: dict[str, Callable[[str], Iterable[str]]] = {}
_TOKENIZERS_LOCK = threading.Lock()
_TOKENIZER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")


class UnknownTokenizerError(LookupError):
    """A saved analyzer names a tokenizer that is not registered in this process."""


def register_tokenizer(
    name: str, tokenizer: Callable[[str], Iterable[str]], *, replace: bool = False
) -> Callable[[str], Iterable[str]]:
    """Register ``tokenizer`` under ``name``, so analyzers using it can be saved and loaded.

    Code is never saved with an index: the analyzer config records only the name, and
    `Analyzer.from_config` (so ``BM25Index.load``) looks it up here. Register the same
    function under the same name before loading, e.g. at import of your module.

    Args:
        name: Letters, digits and ``_ . : -`` (up to 100 characters), e.g.
            ``"myapp.thai"``; not one of `BUILTIN_TOKENIZERS`.
        tokenizer: A callable ``text -> iterable of str``. It receives the normalised text
            (NFKC, case folding and, when on, accent folding); its tokens then go through
            stopwords and stemming. Blank tokens are dropped.
        replace: Allow replacing a tokenizer already registered under ``name`` (an index
            saved with the old one would be analysed with the new one after loading).

    Returns:
        ``tokenizer``, so this works as a decorator helper:
        ``tok = register_tokenizer("x", tok)``.

    Raises:
        TypeError: ``name`` is not a str or ``tokenizer`` is not callable.
        ValueError: a malformed or built-in name, or a name taken (without ``replace``).

    Example:
        >>> register_tokenizer("doctest.whitespace", str.split, replace=True)  # doctest: +ELLIPSIS
        <method 'split' of 'str' objects>
        >>> Analyzer(tokenizer="doctest.whitespace", stemmer=None).tokenize("Wings, lift")
        ['wings,', 'lift']
        >>> Analyzer(tokenizer=str.split, stemmer=None).to_config()["tokenizer"]
        'doctest.whitespace'
    """
    if not isinstance(name, str):
        raise TypeError(f"tokenizer name must be a str, got {type(name).__name__}: {name!r:.80}")
    if not callable(tokenizer):
        raise TypeError(
            f"tokenizer must be a callable text -> iterable of str, got "
            f"{type(tokenizer).__name__}: {tokenizer!r:.80}"
        )
    if name in BUILTIN_TOKENIZERS:
        raise ValueError(f"tokenizer name {name!r} is built in; choose another name")
    if _TOKENIZER_NAME.fullmatch(name) is None:
        raise ValueError(
            f"tokenizer name must be 1-100 letters, digits or '_.:-' (starting with a letter "
            f"or digit), got {name!r:.80}"
        )
    with _TOKENIZERS_LOCK:
        current = _TOKENIZERS.get(name)
        if current is not None and not _same(current, tokenizer) and not replace:
            raise ValueError(
                f"a tokenizer is already registered as {name!r} ({_callable_name(current)}); "
                "pass replace=True to replace it, or choose another name"
            )
        _TOKENIZERS[name] = tokenizer
    return tokenizer


def unregister_tokenizer(name: str) -> None:
    """Remove a registered tokenizer (analyzers already built keep using it).

    Raises:
        KeyError: ``name`` is not registered.
    """
    with _TOKENIZERS_LOCK:
        if name not in _TOKENIZERS:
            raise KeyError(f"no tokenizer is registered as {name!r}")
        del _TOKENIZERS[name]


def available_tokenizers() -> tuple[str, ...]:
    """The tokenizer names usable now: the built-in ones, then the registered ones, sorted."""
    with _TOKENIZERS_LOCK:
        return BUILTIN_TOKENIZERS + tuple(sorted(_TOKENIZERS))


def _registered_name(fn: Any) -> str | None:
    """The name ``fn`` is registered under (the first, sorted), if any."""
    with _TOKENIZERS_LOCK:
        names = sorted(n for n, f in _TOKENIZERS.items() if _same(f, fn))
    return names[0] if names else None


def _same(a: Any, b: Any) -> bool:
    """Identity, or equality for bound methods (``obj.cut`` is a new object each time)."""
    if a is b:
        return True
    try:
        return inspect.ismethod(a) and inspect.ismethod(b) and bool(a == b)
    except Exception:  # an exotic __eq__
        return False


class Analyzer:
    """Normalises, splits, removes stopwords and stems text, the same way for index and query.

    Args:
        language: A Snowball language name (``"english"``, ``"spanish"``, ...; see
            :func:`available_languages`) or an ISO 639-1 code (``"en"``, ``"es"``, ``"fr"``,
            ``"de"``), normalised to the full name. Picks the default stopwords and stemmer.
        stopwords: ``"default"`` for the language's bundled list (English: NLTK's
            179-word list; Spanish, French, German, Portuguese, Italian, Dutch: Snowball's lists;
            a language without a bundled list gets none), an iterable of words (folded like the
            text, so ``"está"`` matches "esta" under accent folding), or ``None`` for none.
            Stopwords are matched against word parts, before stemming.
        stemmer: ``"default"`` for the Snowball stemmer of the language via PyStemmer (when
            PyStemmer is not installed: no stemming, with a one-time warning), ``None`` for no
            stemming, or any callable ``str -> str``. A callable cannot be saved with
            :meth:`to_config`.
        accent_folding: Remove combining diacritics after NFKC and case folding
            ("café" -> "cafe"). On by default; it also folds "ñ" -> "n", "й" -> "и".
        tokenizer: How normalised text is split into tokens: ``"standard"`` (the default:
            word split, codes, and CJK runs as overlapping bigrams), ``"jieba"`` (standard,
            with Chinese segmented by the jieba dictionary: the ``cjk`` extra),
            ``"words"`` (word split without CJK handling), the name of a tokenizer
            registered with :func:`register_tokenizer`, or any callable
            ``text -> iterable of str`` (it gets the normalised text; stopwords and
            stemming still apply to its tokens). A callable can be saved with
            :meth:`to_config` only when it is registered (under any name).

    The languages ``"chinese"``, ``"japanese"`` and ``"korean"`` (``zh``, ``ja``, ``ko``)
    are accepted: they have no Snowball stemmer and no bundled stopwords, so
    ``stemmer="default"`` means no stemming for them. CJK text is split by the tokenizer
    whatever the language, so a mixed corpus needs no setting.

    Raises:
        TypeError: For arguments of the wrong kind.
        ValueError: For an unknown language or tokenizer name, or a language PyStemmer
            cannot stem.
        ImportError: For ``tokenizer="jieba"`` without jieba installed.

    Example:
        >>> Analyzer(stemmer=None).tokenize("The IPC-420 pumps, naïve café")
        ['ipc-420', 'ipc', '420', 'pumps', 'naive', 'cafe']
        >>> Analyzer(stopwords=None, stemmer=None).tokenize("To be or not")
        ['to', 'be', 'or', 'not']
        >>> Analyzer().tokenize("举头望明月")
        ['举头', '头望', '望明', '明月']

    The analyzer is safe to share between threads: its stem cache only grows by atomic
    dict updates, and calls into PyStemmer (not thread-safe) are serialised by a lock.
    """

    def __init__(
        self,
        language: str = "english",
        *,
        stopwords: str | Iterable[str] | None = "default",
        stemmer: str | Callable[[str], str] | None = "default",
        accent_folding: bool = True,
        tokenizer: str | Callable[[str], Iterable[str]] = "standard",
    ) -> None:
        if not isinstance(accent_folding, bool):
            raise TypeError(
                f"accent_folding must be True or False, got "
                f"{type(accent_folding).__name__}: {accent_folding!r}"
            )
        self._language = _resolve_language(language)
        self._accent_folding = accent_folding
        self._normalize = _Normalizer(accent_folding)
        self._stopwords_spec, self._stopwords = self._resolve_stopwords(stopwords)
        self._stemmer_spec, self._stem_batch = self._resolve_stemmer(stemmer)
        self._tokenizer_spec, self._split = self._resolve_tokenizer(tokenizer)
        # Nothing to remove or stem: split tokens are final and the cache is not needed.
        self._identity = not self._stopwords and self._stem_batch is None
        self._cache: dict[str, str] = {}
        self._stem_lock = threading.Lock()

    # -- construction helpers ------------------------------------------------------------

    def _resolve_stopwords(self, stopwords: Any) -> tuple[Any, frozenset[str]]:
        if stopwords is None:
            return None, frozenset()
        if isinstance(stopwords, str):
            if stopwords == "default":
                words = load_stopwords(self._language)
                return "default", frozenset(self._normalize(w) for w in words)
            raise ValueError(
                f"stopwords must be 'default', None or an iterable of words, got the string "
                f"{stopwords!r}; to use one stopword pass a list: stopwords=[{stopwords!r}]"
            )
        if isinstance(stopwords, (bytes, dict)) or not isinstance(stopwords, Iterable):
            raise TypeError(
                f"stopwords must be 'default', None or an iterable of str, got "
                f"{type(stopwords).__name__}: {stopwords!r:.80}"
            )
        folded = set()
        for i, word in enumerate(stopwords):
            if not isinstance(word, str):
                raise TypeError(
                    f"stopwords[{i}] must be a str, got {type(word).__name__}: {word!r:.80}"
                )
            word = self._normalize(word.strip())
            if word:
                folded.add(word)
        words = frozenset(folded)
        return words, words

    def _resolve_tokenizer(self, tokenizer: Any) -> tuple[Any, Callable[[str], list[str]]]:
        """The tokenizer as given (a name or a callable) and the split function it means."""
        if isinstance(tokenizer, str):
            if tokenizer == "standard":
                return tokenizer, _StandardSplitter(self._normalize).split
            if tokenizer == "words":
                return tokenizer, self._normalize.split
            if tokenizer == "jieba":
                return tokenizer, _StandardSplitter(self._normalize, _jieba()).split
            with _TOKENIZERS_LOCK:
                fn = _TOKENIZERS.get(tokenizer)
            if fn is None:
                raise ValueError(
                    f"tokenizer must be one of {list(available_tokenizers())} (register others "
                    f"with register_tokenizer(name, fn)) or a callable, got {tokenizer!r:.80}"
                )
            return tokenizer, _CustomSplitter(self._normalize, fn).split
        if callable(tokenizer):
            return tokenizer, _CustomSplitter(self._normalize, tokenizer).split
        raise TypeError(
            f"tokenizer must be a name such as 'standard' or 'jieba', or a callable text -> "
            f"iterable of str, got {type(tokenizer).__name__}: {tokenizer!r:.80}"
        )

    def _resolve_stemmer(self, stemmer: Any) -> tuple[Any, Callable[[list[str]], list[str]] | None]:
        global _warned_no_stemmer
        if stemmer is None:
            return None, None
        if isinstance(stemmer, str):
            if stemmer != "default":
                raise ValueError(
                    f"stemmer must be 'default', None or a callable str -> str, got {stemmer!r}"
                )
            if self._language in _CJK_LANGUAGES:
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
            if self._language not in module.algorithms():
                raise ValueError(
                    f"stemmer='default' needs a Snowball stemmer for language "
                    f"{self._language!r}, which the installed PyStemmer lacks; pass "
                    f"stemmer=None or a callable"
                )
            snowball = module.Stemmer(self._language)
            snowball.maxCacheSize = 0  # we cache per distinct token ourselves
            return "snowball", snowball.stemWords
        if callable(stemmer):
            return stemmer, _batch_of(stemmer)
        raise TypeError(
            f"stemmer must be 'default', None or a callable str -> str, got "
            f"{type(stemmer).__name__}: {stemmer!r:.80}"
        )

    # -- public properties ---------------------------------------------------------------

    @property
    def language(self) -> str:
        """The full language name (ISO codes are resolved)."""
        return self._language

    @property
    def stopwords(self) -> frozenset[str]:
        """The folded stopwords in effect (empty when none)."""
        return self._stopwords

    @property
    def stemmer(self) -> str | Callable[[str], str] | None:
        """``"snowball"``, ``None`` (no stemming) or the custom callable."""
        return self._stemmer_spec

    @property
    def accent_folding(self) -> bool:
        """Whether combining diacritics are removed."""
        return self._accent_folding

    @property
    def tokenizer(self) -> str | Callable[[str], Iterable[str]]:
        """The tokenizer's name (``"standard"``, ``"jieba"``, a registered name) or callable."""
        return self._tokenizer_spec

    # -- analysis ------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """Return ``text`` normalised (NFKC, case folding, accent folding) but not split."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}: {text!r:.80}")
        return self._normalize(text)

    def tokenize(self, text: str) -> list[str]:
        """Return the index terms of ``text``, exactly as the index sees them.

        Args:
            text: Any string (an empty or blank one gives ``[]``).

        Raises:
            TypeError: When ``text`` is not a str.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}: {text!r:.80}")
        tokens = self._split(text)
        if self._identity or not tokens:
            return tokens
        cache = self._cache
        missing = [t for t in set(tokens) if t not in cache]
        if missing:
            cache = self._learn(missing)
        get = cache.get
        return [s for s in map(get, tokens) if s]

    def tokenize_many(
        self, texts: Iterable[str], *, show_progress: bool = False
    ) -> list[list[str]]:
        """Tokenise many texts; equal to ``[tokenize(t) for t in texts]``, but faster.

        Every text is split first, then the distinct vocabulary is resolved (stopwords,
        one batched Snowball ``stemWords`` call) once, then each text is mapped.

        Args:
            texts: An iterable of str (not a single str).
            show_progress: Show a tqdm progress bar over the texts (needs tqdm: the
                ``progress`` extra; without it a one-time warning is given).

        Raises:
            TypeError: When ``texts`` is a str or not iterable, or an item is not a str
                (the message gives its position).
        """
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
            raise TypeError(
                f"texts must be an iterable of str, got {type(texts).__name__}; "
                "use tokenize() for a single text"
            )
        iterator: Iterable[Any] = texts
        if show_progress:
            iterator = progress(texts, show=True, desc="Tokenizing", unit="doc")
        # Building ~10^5 small lists triggers many cyclic-GC passes that find nothing
        # (lists of str cannot form cycles); pausing the collector halves the run time.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._tokenize_all(iterator)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _tokenize_all(self, iterator: Iterable[Any]) -> list[list[str]]:
        split = self._split
        token_lists: list[list[str]] = []
        vocab: set[str] = set()
        update = vocab.update
        for i, text in enumerate(iterator):
            if not isinstance(text, str):
                raise TypeError(
                    f"texts[{i}] must be a str, got {type(text).__name__}: {text!r:.80}"
                )
            tokens = split(text)
            token_lists.append(tokens)
            if not self._identity:
                update(tokens)
        if self._identity:
            return token_lists
        cache = self._cache
        missing = [t for t in vocab if t not in cache]
        if missing:
            cache = self._learn(missing)
        get = cache.get
        return [[s for s in map(get, tokens) if s] for tokens in token_lists]

    def _learn(self, missing: list[str]) -> dict[str, str]:
        """Resolve tokens not yet cached; return a dict that holds all of them.

        A stopword maps to ``""`` (dropped), a compound to itself, a part to its stem.
        The returned dict is the one to read from: when the cache is full a fresh one is
        swapped in, and readers still holding the old one stay consistent.
        """
        resolved: dict[str, str] = {}
        to_stem: list[str] = []
        stop = self._stopwords
        for token in missing:
            if _HAS_JOINER(token):
                resolved[token] = token  # a code's compound: never stopped nor stemmed
            elif token in stop:
                resolved[token] = ""
            else:
                to_stem.append(token)
        if to_stem:
            if self._stem_batch is None:
                resolved.update(zip(to_stem, to_stem))
            else:
                with self._stem_lock:
                    stems = self._stem_batch(to_stem)
                resolved.update(zip(to_stem, stems))
        cache = self._cache
        if len(cache) + len(resolved) > _MAX_CACHE:
            cache = dict(resolved)
            self._cache = cache
        else:
            cache.update(resolved)
        return cache

    # -- persistence ---------------------------------------------------------------------

    def to_config(self) -> dict[str, Any]:
        """Return the settings as a JSON-serialisable dict, to save with an index.

        ``stemmer`` records what is actually done: ``"snowball"`` or ``None`` (also when
        ``"default"`` fell back to no stemming because PyStemmer is missing).
        ``tokenizer`` records a name: a built-in one, or the name a callable tokenizer is
        registered under (:func:`register_tokenizer`).

        Raises:
            ValueError: When the stemmer is a custom callable, or the tokenizer a callable
                that is not registered (code cannot be saved).
        """
        if callable(self._stemmer_spec):
            raise ValueError(
                f"an Analyzer with a custom callable stemmer ({self._stemmer_spec!r:.60}) "
                "cannot be saved: code is not serialisable. Use stemmer='default' (Snowball) "
                "or stemmer=None, or rebuild the index with the same callable after loading"
            )
        tokenizer = self._tokenizer_spec
        if callable(tokenizer):
            name = _registered_name(tokenizer)
            if name is None:
                raise ValueError(
                    f"an Analyzer with an unregistered tokenizer callable "
                    f"({_callable_name(tokenizer)}) cannot be saved: code is not serialisable. "
                    "Register it first with hybrid_retrievers.register_tokenizer('a-name', fn) "
                    "(and again, under the same name, before loading), or use a built-in "
                    f"tokenizer {list(BUILTIN_TOKENIZERS)}"
                )
            tokenizer = name
        # The resolved words are saved, not "default": an index must analyse queries
        # exactly as it analysed documents, even if a later release edits a bundled list.
        stopwords = None if self._stopwords_spec is None else sorted(self.stopwords)
        return {
            "version": ANALYZER_CONFIG_VERSION,
            "language": self._language,
            "stopwords": stopwords,
            "stemmer": self._stemmer_spec,
            "accent_folding": self._accent_folding,
            "tokenizer": tokenizer,
        }

    @classmethod
    def from_config(cls, config: Any) -> Analyzer:
        """Rebuild an analyzer from :meth:`to_config` output.

        A version 1 config (saved before tokenizers existed) gets ``tokenizer="words"``:
        the split it was built with, so queries match its index as before (CJK text
        stays whole words there; rebuild the index to get CJK bigrams).

        Raises:
            ValueError: For a malformed config (not a dict, unknown or missing keys, wrong
                types, an unsupported version).
            UnknownTokenizerError: When the config names a tokenizer not registered in
                this process (register it with :func:`register_tokenizer` first).
            ImportError: When the config uses Snowball stemming and PyStemmer is missing,
                or the jieba tokenizer and jieba is missing (analysing queries without
                them would not match the index).
        """
        if not isinstance(config, dict):
            raise ValueError(f"analyzer config must be a dict, got {type(config).__name__}")
        version = config.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValueError(f"analyzer config 'version' must be an int, got {version!r}")
        if version not in (1, ANALYZER_CONFIG_VERSION):
            raise ValueError(
                f"analyzer config version {version} is not supported (this version reads 1 "
                f"and {ANALYZER_CONFIG_VERSION}); upgrade hybrid-retrievers or rebuild the index"
            )
        expected = _CONFIG_KEYS_V1 if version == 1 else _CONFIG_KEYS
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
        if tokenizer not in BUILTIN_TOKENIZERS:
            with _TOKENIZERS_LOCK:
                known = tokenizer in _TOKENIZERS
            if not known:
                raise UnknownTokenizerError(
                    f"this analyzer was saved with the tokenizer {tokenizer!r}, which is not "
                    f"registered in this process (registered: {list(available_tokenizers())}). "
                    f"Call hybrid_retrievers.register_tokenizer({tokenizer!r}, fn) with the "
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
        if stemmer == "snowball" and _import_stemmer() is None:
            raise ImportError(
                "this index was built with Snowball stemming, which needs the optional "
                "dependency 'Stemmer' (PyStemmer). Install it with: "
                "pip install 'hybrid-retrievers[stem]'"
            )
        return cls(
            language,
            stopwords=stopwords,
            stemmer="default" if stemmer == "snowball" else None,
            accent_folding=accent_folding,
            tokenizer=tokenizer,
        )

    # -- dunder --------------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return (self._language, self.stopwords, self._stemmer_spec, self._accent_folding,
                self._tokenizer_spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Analyzer):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        try:
            return hash(self._key())
        except TypeError:  # an unhashable callable stemmer or tokenizer
            return hash(self._key()[:2] + (self._accent_folding,))

    def __repr__(self) -> str:
        spec = self._stopwords_spec
        if isinstance(spec, frozenset):
            words = sorted(spec)
            stop = repr(words) if len(words) <= 8 else f"<{len(words)} custom words>"
        else:
            stop = repr(spec)
        stem = self._stemmer_spec
        stem_text = repr(stem) if stem is None or isinstance(stem, str) else _callable_name(stem)
        tok = self._tokenizer_spec
        tok_text = "" if tok == "standard" else (
            f", tokenizer={tok!r}" if isinstance(tok, str) else f", tokenizer={_callable_name(tok)}"
        )
        return (
            f"Analyzer(language={self._language!r}, stopwords={stop}, "
            f"stemmer={stem_text}, accent_folding={self._accent_folding}{tok_text})"
        )


def _batch_of(stem: Callable[[str], str]) -> Callable[[list[str]], list[str]]:
    """Wrap a per-word stemmer as a batch one that checks it returns str."""

    def batch(words: list[str]) -> list[str]:
        out = []
        for word in words:
            result = stem(word)
            if not isinstance(result, str):
                raise TypeError(
                    f"stemmer must return a str, but {_callable_name(stem)} returned "
                    f"{type(result).__name__}: {result!r:.80} for {word!r}"
                )
            out.append(result)
        return out

    return batch


def _callable_name(func: Any) -> str:
    return getattr(func, "__qualname__", None) or type(func).__name__
