"""Normalisation and the word split: the first two steps of the analysis.

**Normalise** (only when the text is not pure ASCII, which is the fast common case):
Unicode NFKC (full-width letters, ligatures such as "ﬁ", superscripts become plain
characters), then case folding (``str.casefold``: "Straße" -> "strasse"), then, when
``accent_folding`` is on, removal of combining diacritics ("información" -> "informacion",
"naïve" -> "naive"). ASCII text is only lowercased.

**Split** on Unicode word characters (letters, digits and combining marks of any script;
the underscore counts as a separator). A run of word parts joined by single ``-``, ``.``,
``/`` or ``_`` characters that contains at least one digit is a *code* ("IPC-420", "3.5",
"2024-01-15"): the joined compound is emitted first, then its parts, so both "ipc-420" and
"420" match. Without a digit only the parts are kept ("e-mail" -> "e", "mail").

These are the hot loops of indexing: ASCII text takes a ``str.translate`` + ``str.split``
fast path, and the regexes are compiled once at import.
"""

from __future__ import annotations

import re
import unicodedata

__all__: list[str] = []  # internal to hybrid_retrievers.text; the Analyzer is the API


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
_ASCII_JOINED = re.compile(r"[A-Za-z0-9][-./][A-Za-z0-9]|_").search


def _ascii_needs_regex(text: str) -> re.Match[str] | None:
    """A match where ASCII ``text`` holds an underscore or a joined code (``a-1``, ``x.y``).

    ``in`` scans for one character at C speed; the regex, which tries every position,
    runs only on texts holding one of the four characters at all.
    """
    if "_" in text or "-" in text or "." in text or "/" in text:
        return _ASCII_JOINED(text)
    return None


class _Normalizer:
    """NFKC + case folding (+ accent folding) of one string; picklable-free plain object."""

    __slots__ = ("accent_folding",)

    def __init__(self, accent_folding: bool) -> None:
        self.accent_folding = accent_folding

    def split(self, text: str) -> list[str]:
        """Normalise and split ``text`` (the tokens before stopwords and stemming)."""
        if text.isascii() and _ascii_needs_regex(text) is None:
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


class _Unchanged:
    """The normaliser of ``Analyzer(normalize=False)``: the text as given (no NFKC, case
    or accent folding), for a tokenizer that does its own normalisation."""

    __slots__ = ()
    accent_folding = False

    def __call__(self, text: str) -> str:
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
