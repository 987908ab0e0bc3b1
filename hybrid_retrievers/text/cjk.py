"""Chinese, Japanese and Korean text: character bigrams, and jieba segmentation of Han runs.

Chinese, Japanese and Korean are written without spaces between words (Korean has spaces
between phrases, with particles attached). A run of Han, Hiragana, Katakana or Hangul
characters becomes its overlapping character bigrams, as Lucene's ``CJKAnalyzer`` does:
"低头思故乡" -> "低头", "头思", "思故", "故乡"; a one-character run stays a unigram. A query
then matches a document containing its words, without a dictionary. (A one-character
query word matches only one-character runs, as in Lucene.)

``tokenizer="jieba"`` segments Han runs with the jieba dictionary segmenter instead (its
search mode, which also emits the words inside long compounds; the ``cjk`` extra); Kana
and Hangul runs stay bigrams.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable

from .normalization import _split

__all__ = ["cjk_bigrams"]

# Languages written (mostly) without spaces between words: accepted by name or ISO code;
# there is no Snowball stemmer nor a bundled stopword list for them, so stemmer="default"
# means no stemming (without the missing-PyStemmer warning). Their text is handled by the
# tokenizer (CJK bigrams, or jieba), whatever the language setting.
_CJK_LANGUAGES = frozenset({"chinese", "japanese", "korean"})

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


class _JiebaSegmenter:
    """Han runs through a private jieba ``Tokenizer`` (search mode); other CJK as bigrams.

    A private instance, so words a program adds to jieba's global dictionary do not change
    what a saved index means; its dictionary loads on first use (about a second).
    """

    def __init__(self) -> None:
        from ..optional import require

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
    """The one shared jieba segmenter of this process, built on first use."""
    global _jieba_segmenter
    with _jieba_lock:
        if _jieba_segmenter is None:
            _jieba_segmenter = _JiebaSegmenter()
        return _jieba_segmenter
