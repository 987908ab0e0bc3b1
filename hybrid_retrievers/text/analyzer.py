"""The :class:`Analyzer`: one object that turns text into index terms, for indexing and queries.

It runs the pipeline described in :mod:`hybrid_retrievers.text` (normalise, split,
stopwords, stemming) and caches the result per distinct token, so a corpus' vocabulary is
stopped and stemmed once (:meth:`Analyzer.tokenize_many` resolves it in one batch). Its
settings are saved with an index (:meth:`Analyzer.to_config` / :meth:`Analyzer.from_config`)
so queries are analysed exactly as the documents were.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..gcpause import paused_gc
from ..progress import progress
from .config import ANALYZER_CONFIG_VERSION, read_config
from .languages import _resolve_language
from .normalization import _HAS_JOINER, _Normalizer, _Unchanged
from .stemming import resolve_stemmer
from .stopwords import load_stopwords
from .tokenizers import BUILTIN_TOKENIZERS, _registered_name, callable_name, resolve_tokenizer

__all__ = ["Analyzer"]

# The most tokens the stem cache keeps between calls. When a call would grow it past
# this, the cache starts afresh with that call's distinct tokens (the ones in use now): a
# least-recently-used policy at the granularity of a call. A build that tokenises in
# chunks holds the bound off until it ends (`Analyzer._building`), so each token of its
# corpus is resolved once, and then keeps the first _MAX_CACHE tokens it learned: in
# Zipfian text the first seen are the frequent ones. 2**16 tokens (a few MiB, the key
# strings being shared with the index vocabulary) cover ~99% of the running text of an
# English corpus, so repeated builds and queries keep their hits, while an index no
# longer carries a second copy of its whole vocabulary (18 MiB per 100k documents with
# the previous bound of 2,000,000).
_MAX_CACHE = 1 << 16


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
        token_pattern: A regular expression whose matches in the normalised text are the
            tokens (the group's text when it has one group), instead of the tokenizer's
            split: scikit-learn's and bm25s's ``token_pattern`` (theirs default to
            ``r"(?u)\\b\\w\\w+\\b"``, words of two or more characters). Saved as data.
        normalize: ``False`` hands the text to the tokenizer (a callable or registered
            one, or ``token_pattern``) exactly as given: no NFKC, case or accent folding,
            and stopwords are matched as given. For a tokenizer that does its own
            normalisation, such as LangChain's ``preprocess_func`` (``str.split`` there).

    Single characters are kept (the default, as Lucene's ``EnglishAnalyzer`` keeps them;
    bm25s and scikit-learn drop them only as a side effect of their two-character token
    pattern). What each choice costs, measured with BM25 defaults (issue 34):

    * keeping them costs a little on prose, where "e" and "g" from "e.g.", "u" and "s"
      from "U.S." and list labels match unrelated documents: dropping single letters
      gives nDCG@10 0.3805 -> 0.3818 on Cranfield (14 queries up, 6 down, paired t
      p = 0.04) and 0.4125 -> 0.4193 on CISI (5 up, 2 down, p = 0.14); letters and
      digits 0.3812 (p = 0.59) and 0.4188 (p = 0.21);
    * dropping them deletes content that queries name: "vitamin c", "hepatitis b",
      "plan b", "type 2 diabetes", "windows 7", a variable "x". NLTK's list already
      drops a, i, s, t, d, m, o, y.

    The default keeps them: the gains come from the two collections the stopword list
    was already chosen on, one of them is not significant, and the losses fall on
    queries that name the character on purpose. To drop them, add them as stopwords
    (saved with the index like any list): ``Analyzer(stopwords=[*Analyzer().stopwords,
    *string.ascii_lowercase])`` (``+ string.digits`` for digits too). An index saved
    with either choice keeps it: the resolved stopword list is saved, never the word
    "default".

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
        token_pattern: str | None = None,
        normalize: bool = True,
    ) -> None:
        for name, flag in (("accent_folding", accent_folding), ("normalize", normalize)):
            if not isinstance(flag, bool):
                raise TypeError(
                    f"{name} must be True or False, got {type(flag).__name__}: {flag!r}"
                )
        self._language = _resolve_language(language)
        self._accent_folding = accent_folding
        self._normalize: Any = _Normalizer(accent_folding) if normalize else _Unchanged()
        self._stopwords_spec, self._stopwords = self._resolve_stopwords(stopwords)
        self._stemmer_spec, self._stem_batch = resolve_stemmer(stemmer, self._language)
        self._tokenizer_spec, self._split = resolve_tokenizer(tokenizer, self._normalize,
                                                              token_pattern)
        self._token_pattern = token_pattern
        self._normalizes = normalize
        # Codes ("ipc-420") are the standard split's compounds, never stopped or stemmed;
        # a token_pattern's matches are plain tokens (as in bm25s and scikit-learn).
        self._compound = (lambda token: None) if token_pattern is not None else _HAS_JOINER
        # Nothing to remove or stem: split tokens are final and the cache is not needed.
        self._identity = not self._stopwords and self._stem_batch is None
        self._cache: dict[str, str] = {}
        self._stem_lock = threading.Lock()
        self._holds = 0  # builds in progress that hold the cache bound off

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

    @property
    def token_pattern(self) -> str | None:
        """The regular expression whose matches are the tokens (``None``: the tokenizer's)."""
        return self._token_pattern

    @property
    def normalizes(self) -> bool:
        """Whether text is normalised before it is split (``normalize=``)."""
        return self._normalizes

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
        used = set(tokens)
        missing = [t for t in used if t not in cache]
        if missing:
            cache = self._learn(missing, used, cache)
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
        with paused_gc():  # ~10^5 small lists: collector passes would find nothing
            return self._tokenize_all(iterator)

    def _tokenize_all(self, iterator: Iterable[Any]) -> list[list[str]]:
        token_lists = self._split_all(iterator)
        if self._identity:
            return token_lists
        get = self._resolver(set(itertools.chain.from_iterable(token_lists))).get
        return [[s for s in map(get, tokens) if s] for tokens in token_lists]

    def _split_all(self, iterator: Iterable[Any]) -> list[list[str]]:
        """Each text split into raw tokens (before stopwords and stemming)."""
        split = self._split
        token_lists: list[list[str]] = []
        for i, text in enumerate(iterator):
            if not isinstance(text, str):
                raise TypeError(
                    f"texts[{i}] must be a str, got {type(text).__name__}: {text!r:.80}"
                )
            token_lists.append(split(text))
        return token_lists

    def _resolver(self, distinct: Collection[str]) -> dict[str, str]:
        """A dict taking every raw token of ``distinct`` to its term (``""``: a stopword)."""
        cache = self._cache
        missing = [t for t in distinct if t not in cache]
        if missing:
            cache = self._learn(missing, distinct, cache)
        return cache

    def _learn(
        self, missing: list[str], used: Collection[str], checked: dict[str, str]
    ) -> dict[str, str]:
        """Resolve ``missing`` (``used`` tokens not in ``checked``); return a dict of all ``used``.

        A stopword maps to ``""`` (dropped), a compound to itself, a part to its stem.
        The returned dict is the one to read from: when the cache is full a fresh one
        (``used``, as far as it fits) is swapped in, and readers still holding the old
        one stay consistent.
        """
        resolved: dict[str, str] = {}
        to_stem: list[str] = []
        stop = self._stopwords
        for token in missing:
            if self._compound(token):
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
        if cache is checked and (self._holds or len(cache) + len(resolved) <= _MAX_CACHE):
            cache.update(resolved)
            return cache
        # Full (or swapped by another thread): answer this call from its own tokens and
        # keep those that fit.
        resolved.update((t, checked[t]) for t in used if t not in resolved)
        self._cache = resolved if len(resolved) <= _MAX_CACHE else dict(
            itertools.islice(resolved.items(), _MAX_CACHE))
        return resolved

    @contextmanager
    def _building(self) -> Iterator[None]:
        """Hold the cache bound off while a build tokenises its corpus in several calls.

        Within, every token learned stays cached (each is resolved once per build); at
        the end the cache keeps its first `_MAX_CACHE` tokens (see there).
        """
        with self._stem_lock:
            self._holds += 1
        try:
            yield
        finally:
            with self._stem_lock:
                self._holds -= 1
                cache = self._cache
                if not self._holds and len(cache) > _MAX_CACHE:
                    self._cache = dict(itertools.islice(cache.items(), _MAX_CACHE))

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
                    f"({callable_name(tokenizer)}) cannot be saved: code is not serialisable. "
                    "Register it first with hybrid_retrievers.text.register_tokenizer('a-name', fn) "
                    "(and again, under the same name, before loading), or use a built-in "
                    f"tokenizer {list(BUILTIN_TOKENIZERS)}"
                )
            tokenizer = name
        # The resolved words are saved, not "default": an index must analyse queries
        # exactly as it analysed documents, even if a later release edits a bundled list.
        stopwords = None if self._stopwords_spec is None else sorted(self.stopwords)
        config = {
            "version": 2,
            "language": self._language,
            "stopwords": stopwords,
            "stemmer": self._stemmer_spec,
            "accent_folding": self._accent_folding,
            "tokenizer": tokenizer,
        }
        # Version 3 only when a version 3 setting is used, so releases reading version 2
        # still load every other index.
        if self._token_pattern is not None or not self._normalizes:
            config.update(version=ANALYZER_CONFIG_VERSION, token_pattern=self._token_pattern,
                          normalize=self._normalizes)
        return config

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
        language, options = read_config(config)
        return cls(language, **options)

    # -- dunder --------------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return (self._language, self.stopwords, self._stemmer_spec, self._accent_folding,
                self._tokenizer_spec, self._token_pattern, self._normalizes)

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
        stem_text = repr(stem) if stem is None or isinstance(stem, str) else callable_name(stem)
        tok = self._tokenizer_spec
        tok_text = "" if tok == "standard" else (
            f", tokenizer={tok!r}" if isinstance(tok, str) else f", tokenizer={callable_name(tok)}"
        )
        if self._token_pattern is not None:
            tok_text += f", token_pattern={self._token_pattern!r}"
        if not self._normalizes:
            tok_text += ", normalize=False"
        return (
            f"Analyzer(language={self._language!r}, stopwords={stop}, "
            f"stemmer={stem_text}, accent_folding={self._accent_folding}{tok_text})"
        )
