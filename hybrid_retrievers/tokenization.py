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
2. **Split** on Unicode word characters (letters, digits and combining marks of any script;
   the underscore counts as a separator). A run of word parts joined by single ``-``, ``.``,
   ``/`` or ``_`` characters that contains at least one digit is a *code* ("IPC-420", "3.5",
   "2024-01-15"): the joined compound is emitted first, then its parts, so both "ipc-420" and
   "420" match. Without a digit only the parts are kept ("e-mail" -> "e", "mail").
3. **Stopwords** are removed from the parts (compounds are never removed).
4. **Stemming** of the remaining parts (compounds are never stemmed). Stems are cached per
   distinct token, and :meth:`Analyzer.tokenize_many` stems a corpus' distinct vocabulary once.
"""

from __future__ import annotations

import gc
import re
import threading
import unicodedata
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .stopwords import available_stopword_languages, load_stopwords

__all__ = ["Analyzer", "ANALYZER_CONFIG_VERSION", "available_languages"]

ANALYZER_CONFIG_VERSION = 1
"""Version of the :meth:`Analyzer.to_config` layout; bumped when the analysis changes."""

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
}  # fmt: skip

_CONFIG_KEYS = frozenset({"version", "language", "stopwords", "stemmer", "accent_folding"})

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
_warned_no_tqdm = False


def available_languages() -> tuple[str, ...]:
    """Return every language name the :class:`Analyzer` accepts, sorted.

    These are the Snowball languages (extended by whatever the installed PyStemmer
    reports) plus the languages with a bundled stopword list.
    """
    names = set(_SNOWBALL_LANGUAGES) | set(available_stopword_languages())
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
    if name in _SNOWBALL_LANGUAGES:  # the common case, without importing PyStemmer
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

    Raises:
        TypeError: For arguments of the wrong kind.
        ValueError: For an unknown language or a language PyStemmer cannot stem.

    Example:
        >>> Analyzer(stemmer=None).tokenize("The IPC-420 pumps, naïve café")
        ['ipc-420', 'ipc', '420', 'pumps', 'naive', 'cafe']
        >>> Analyzer(stopwords=None, stemmer=None).tokenize("To be or not")
        ['to', 'be', 'or', 'not']

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

    def _resolve_stemmer(self, stemmer: Any) -> tuple[Any, Callable[[list[str]], list[str]] | None]:
        global _warned_no_stemmer
        if stemmer is None:
            return None, None
        if isinstance(stemmer, str):
            if stemmer != "default":
                raise ValueError(
                    f"stemmer must be 'default', None or a callable str -> str, got {stemmer!r}"
                )
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
        tokens = self._normalize.split(text)
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
            iterator = _progress(texts)
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
        split = self._normalize.split
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

        Raises:
            ValueError: When the stemmer is a custom callable (code cannot be saved).
        """
        if callable(self._stemmer_spec):
            raise ValueError(
                f"an Analyzer with a custom callable stemmer ({self._stemmer_spec!r:.60}) "
                "cannot be saved: code is not serialisable. Use stemmer='default' (Snowball) "
                "or stemmer=None, or rebuild the index with the same callable after loading"
            )
        # The resolved words are saved, not "default": an index must analyse queries
        # exactly as it analysed documents, even if a later release edits a bundled list.
        stopwords = None if self._stopwords_spec is None else sorted(self.stopwords)
        return {
            "version": ANALYZER_CONFIG_VERSION,
            "language": self._language,
            "stopwords": stopwords,
            "stemmer": self._stemmer_spec,
            "accent_folding": self._accent_folding,
        }

    @classmethod
    def from_config(cls, config: Any) -> Analyzer:
        """Rebuild an analyzer from :meth:`to_config` output.

        Raises:
            ValueError: For a malformed config (not a dict, unknown or missing keys, wrong
                types, an unsupported version).
            ImportError: When the config uses Snowball stemming and PyStemmer is missing
                (analysing queries without it would not match the index).
        """
        if not isinstance(config, dict):
            raise ValueError(f"analyzer config must be a dict, got {type(config).__name__}")
        keys = set(config)
        if keys != _CONFIG_KEYS:
            unknown, missing = sorted(keys - _CONFIG_KEYS), sorted(_CONFIG_KEYS - keys)
            raise ValueError(
                f"analyzer config must have exactly the keys {sorted(_CONFIG_KEYS)}; "
                f"unknown: {unknown}, missing: {missing}"
            )
        version = config["version"]
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValueError(f"analyzer config 'version' must be an int, got {version!r}")
        if version != ANALYZER_CONFIG_VERSION:
            raise ValueError(
                f"analyzer config version {version} is not supported (this version reads "
                f"{ANALYZER_CONFIG_VERSION}); upgrade hybrid-retrievers or rebuild the index"
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
        )

    # -- dunder --------------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return (self._language, self.stopwords, self._stemmer_spec, self._accent_folding)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Analyzer):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        try:
            return hash(self._key())
        except TypeError:  # an unhashable callable stemmer
            return hash(self._key()[:2] + (id(self._stemmer_spec), self._accent_folding))

    def __repr__(self) -> str:
        spec = self._stopwords_spec
        if isinstance(spec, frozenset):
            words = sorted(spec)
            stop = repr(words) if len(words) <= 8 else f"<{len(words)} custom words>"
        else:
            stop = repr(spec)
        stem = self._stemmer_spec
        stem_text = repr(stem) if stem is None or isinstance(stem, str) else _callable_name(stem)
        return (
            f"Analyzer(language={self._language!r}, stopwords={stop}, "
            f"stemmer={stem_text}, accent_folding={self._accent_folding})"
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


def _progress(texts: Iterable[str]) -> Iterable[str]:
    global _warned_no_tqdm
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if not _warned_no_tqdm:
            _warned_no_tqdm = True
            warnings.warn(
                "show_progress=True needs tqdm, which is not installed; install it with: "
                "pip install 'hybrid-retrievers[progress]'",
                UserWarning,
                stacklevel=3,
            )
        return texts
    total = len(texts) if hasattr(texts, "__len__") else None  # type: ignore[arg-type]
    return tqdm(texts, total=total, desc="Tokenizing", unit="doc")
