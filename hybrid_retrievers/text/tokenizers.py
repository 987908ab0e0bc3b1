"""Tokenizers: the built-in ones, a registry of user ones, and what a tokenizer spec means.

The tokenizer is the split step of the analysis. ``"standard"`` (the default) is the
word split with CJK runs as bigrams; ``"jieba"`` is standard with Chinese segmented by
jieba; ``"words"`` is the plain word split without CJK handling (how analyzer configs of
version 1 split). Any callable can be the tokenizer; :func:`register_tokenizer` gives it a
name, so an index using it can be saved and loaded. `callable_name` is how error messages
and reprs name a user's callable (a tokenizer, or a stemmer).
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .cjk import _HAS_CJK, _jieba, _split_mixed, cjk_bigrams
from .normalization import _ascii_needs_regex, _ASCII_TABLE, _Normalizer, _split

__all__ = [
    "BUILTIN_TOKENIZERS",
    "UnknownTokenizerError",
    "available_tokenizers",
    "register_tokenizer",
    "unregister_tokenizer",
]


def callable_name(func: Any) -> str:
    """The qualified name of ``func``, or its type's name when it has none."""
    return getattr(func, "__qualname__", None) or type(func).__name__


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
        >>> from hybrid_retrievers.text import Analyzer
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
                f"a tokenizer is already registered as {name!r} ({callable_name(current)}); "
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


# -- splitters (what a tokenizer spec turns into) -------------------------------------------


class _StandardSplitter:
    """The ``"standard"`` tokenizer: the word split, with CJK runs as bigrams."""

    __slots__ = ("normalize", "segment")

    def __init__(self, normalize: _Normalizer, segment: Callable[[str], list[str]] = cjk_bigrams
                 ) -> None:
        self.normalize = normalize
        self.segment = segment

    def split(self, text: str) -> list[str]:
        if text.isascii():  # no CJK in ASCII: the same fast path as the plain word split
            if _ascii_needs_regex(text) is None:
                return text.translate(_ASCII_TABLE).split()
            return _split(text.lower())
        text = self.normalize(text)
        if _HAS_CJK(text) is None:
            return _split(text)
        return _split_mixed(text, self.segment)


class _CustomSplitter:
    """A user tokenizer: called on the normalised text; blank tokens are dropped."""

    __slots__ = ("normalize", "fn")

    def __init__(self, normalize: Callable[[str], str],
                 fn: Callable[[str], Iterable[str]]) -> None:
        self.normalize = normalize
        self.fn = fn

    def split(self, text: str) -> list[str]:
        tokens = self.fn(self.normalize(text))
        if isinstance(tokens, str) or not isinstance(tokens, Iterable):
            raise TypeError(
                f"tokenizer {callable_name(self.fn)} must return an iterable of str (e.g. a "
                f"list of tokens), got {type(tokens).__name__}: {tokens!r:.80}"
            )
        out = []
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(
                    f"tokenizer {callable_name(self.fn)} must return str tokens, got "
                    f"{type(token).__name__}: {token!r:.80}"
                )
            token = token.strip()
            if token:
                out.append(token)
        return out

class _PatternSplitter:
    """``token_pattern``: every match of the regex in the normalised text is a token (the
    one group's text when the pattern has a group), as scikit-learn's and bm25s's
    ``token_pattern`` do."""

    __slots__ = ("normalize", "findall")

    def __init__(self, normalize: Callable[[str], str], pattern: re.Pattern[str]) -> None:
        self.normalize = normalize
        self.findall = pattern.findall

    def split(self, text: str) -> list[str]:
        return [t for t in self.findall(self.normalize(text)) if t]


def compile_token_pattern(token_pattern: Any) -> re.Pattern[str]:
    """``token_pattern`` compiled; `TypeError` for a non-str, `ValueError` for a bad regex
    or one with more than one group (which group would be the token?)."""
    if not isinstance(token_pattern, str):
        raise TypeError(f"token_pattern must be a regular expression (str), got "
                        f"{type(token_pattern).__name__}: {token_pattern!r:.80}")
    try:
        pattern = re.compile(token_pattern)
    except re.error as exc:
        raise ValueError(f"token_pattern {token_pattern!r:.80} is not a valid regular "
                         f"expression: {exc}") from None
    if pattern.groups > 1:
        raise ValueError(f"token_pattern must have at most one group (the token), got "
                         f"{pattern.groups} in {token_pattern!r:.80}; use (?:...) for the others")
    return pattern


def resolve_tokenizer(
    tokenizer: Any, normalize: Callable[[str], str], token_pattern: str | None = None
) -> tuple[Any, Callable[[str], list[str]]]:
    """The tokenizer as given (a name or a callable) and the split function it means;
    a ``token_pattern`` replaces the ``"standard"`` split by its matches."""
    if token_pattern is not None:
        if tokenizer != "standard":
            raise ValueError(f"pass tokenizer= or token_pattern=, not both; got tokenizer="
                             f"{tokenizer!r:.60} and token_pattern={token_pattern!r:.60}")
        return tokenizer, _PatternSplitter(normalize, compile_token_pattern(token_pattern)).split
    if isinstance(tokenizer, str) and tokenizer in BUILTIN_TOKENIZERS and \
            not isinstance(normalize, _Normalizer):
        raise ValueError(f"normalize=False needs a callable (or registered) tokenizer or a "
                         f"token_pattern: the built-in tokenizer {tokenizer!r} normalises "
                         "as it splits")
    if isinstance(tokenizer, str):
        if tokenizer == "standard":
            return tokenizer, _StandardSplitter(normalize).split
        if tokenizer == "words":
            return tokenizer, normalize.split
        if tokenizer == "jieba":
            return tokenizer, _StandardSplitter(normalize, _jieba()).split
        with _TOKENIZERS_LOCK:
            fn = _TOKENIZERS.get(tokenizer)
        if fn is None:
            raise ValueError(
                f"tokenizer must be one of {list(available_tokenizers())} (register others "
                f"with register_tokenizer(name, fn)) or a callable, got {tokenizer!r:.80}"
            )
        return tokenizer, _CustomSplitter(normalize, fn).split
    if callable(tokenizer):
        return tokenizer, _CustomSplitter(normalize, tokenizer).split
    raise TypeError(
        f"tokenizer must be a name such as 'standard' or 'jieba', or a callable text -> "
        f"iterable of str, got {type(tokenizer).__name__}: {tokenizer!r:.80}"
    )
