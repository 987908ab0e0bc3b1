"""Structured queries: required, excluded and optional terms, phrases, minimum-should-match.

A plain query string is a bag of words, and stays one: operators are opt-in. A `Query`
is the structured form (for programs); ``Query.parse`` reads the operator syntax (for
people), and ``BM25Index.search(text, syntax="operators")`` parses for you.

The syntax (whitespace separates clauses):

=====================  =====================================================================
``word``               optional (*should*): scores when present
``+word``              required (*must*): every document returned contains it
``-word``              excluded (*must not*): no document returned contains it
``"a b c"``            phrase: the terms in this order, adjacent after analysis (required)
``+"a b c"``           the same (a phrase is always required)
``\\x``                 the character ``x`` taken literally: ``\\+``, ``\\-``, ``\\"``, ``\\\\``
=====================  =====================================================================

A ``+`` or ``-`` is an operator only at the start of a clause (``e-mail`` is a word).
Malformed text is a `ValueError` naming the position (0-based, in characters): an
unbalanced quote, an operator with no word after it (``+`` alone, ``+-x``), a quote
inside a word, an excluded phrase (``-"a b"``: not supported), a trailing backslash.
Text with nothing to search for (only excluded or blank clauses: ``-gamma``, ``+\\ ``,
``""``) is malformed too, for the query as a whole (no position).
``Query.parse(text, lenient=True)`` (``syntax="lenient"``) reads malformed text as a
plain bag of words instead, the only fallback, and only when asked.

Terms are analysed like documents (the index's `Analyzer`: case folding, stemming,
stopwords). A clause's text may analyse into several terms (``+U.S.`` gives ``u`` and
``s``): each is required, or each excluded; a clause of stopwords only is dropped, as
Lucene's query parser drops it (no document indexes a stopword).

Which terms score: BM25 over the optional, required and phrase terms together, each
counted as often as it occurs in the query (as in a plain query); excluded terms never
score (no returned document has them). So ``Query(should=[text])`` scores exactly like
the plain ``text``, and a required term adds its BM25 contribution like any other.

``min_should_match`` (Elasticsearch's ``minimum_should_match``): how many of the
distinct optional terms a document must contain. An int ``n`` (``-n``: all but ``n``) or
a percentage ``"75%"`` (rounded down; ``"-25%"``: all but 25%, rounded down), clamped
to ``0..number of optional terms``. Left out: 0 when the query has a required term or a
phrase (optional terms only rank), else 1 (a document must match something), as
Elasticsearch's ``bool`` query does.

Example:
    >>> q = Query.parse('+wing -rotor "boundary layer" flow')
    >>> q.must, q.must_not, q.phrases, q.should
    (('wing',), ('rotor',), ('boundary layer',), ('flow',))
    >>> Query.parse('+"heat', lenient=True).should
    ('+"heat',)
    >>> Query(should=["a", "b", "c", "d"], min_should_match="75%").min_should(4)
    3
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Query", "Syntax", "SYNTAXES", "as_query"]

Syntax = Literal["plain", "operators", "lenient"]
SYNTAXES = ("plain", "operators", "lenient")
"""How a query string is read: a bag of words, the operator syntax (errors on malformed
text), or the operator syntax falling back to a bag of words on malformed text."""

_PERCENT = re.compile(r"^(-?)(\d+)%$")


@dataclass(frozen=True, slots=True)
class Query:
    """A structured query; each field takes a str (one clause) or a sequence of str.

    Attributes:
        should: optional clauses (they score; see ``min_should_match``).
        must: required clauses: each of their terms must be in a returned document.
        must_not: excluded clauses: no returned document has any of their terms.
        phrases: phrases: their terms must appear in this order, adjacent after analysis.
        min_should_match: an int or a percentage string (see the module doc); None: 0 with
            a required term or phrase, else 1.

    Example:
        >>> Query(must="wing", should=["lift", "drag"], min_should_match=1).must
        ('wing',)
    """

    should: tuple[str, ...] = ()
    must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    min_should_match: int | str | None = None

    def __post_init__(self) -> None:
        for name in ("should", "must", "must_not", "phrases"):
            object.__setattr__(self, name, _clauses(name, getattr(self, name)))
        msm = self.min_should_match
        if msm is not None:
            if isinstance(msm, bool) or not isinstance(msm, (int, str)):
                raise TypeError(f"min_should_match must be an int, a percentage string such as "
                                f"'75%' or None, got {type(msm).__name__}: {msm!r}")
            if isinstance(msm, str) and not _PERCENT.match(msm.strip()):
                raise ValueError(f"min_should_match must be an int or a percentage such as "
                                 f"'75%' or '-25%', got {msm!r}")
        if not (self.should or self.must or self.phrases):
            raise ValueError(
                "a Query needs at least one should, must or phrases clause: excluded terms "
                f"alone would match every document with no score (got must_not={self.must_not!r})"
            )

    @property
    def is_plain(self) -> bool:
        """Whether this is a bag of words: optional clauses only, no minimum."""
        return not (self.must or self.must_not or self.phrases) and self.min_should_match is None

    def min_should(self, n_should: int, *, required: bool | None = None) -> int:
        """How many of ``n_should`` distinct optional terms a document must contain.

        ``required``: whether the query has a required term or phrase (default: whether
        it has must or phrases clauses), which decides the default (0 or 1).
        """
        if required is None:
            required = bool(self.must or self.phrases)
        msm = self.min_should_match
        if msm is None:
            wanted = 0 if required else 1
        elif isinstance(msm, int):
            wanted = msm if msm >= 0 else n_should + msm
        else:
            sign, digits = _PERCENT.match(msm.strip()).groups()  # type: ignore[union-attr]
            part = n_should * int(digits) // 100
            wanted = n_should - part if sign else part
        return max(0, min(wanted, n_should))

    @classmethod
    def parse(cls, text: str, *, lenient: bool = False,
              min_should_match: int | str | None = None) -> Query:
        """The `Query` of ``text`` in the operator syntax (module doc).

        Raises:
            TypeError: ``text`` is not a str.
            ValueError: malformed text (the message names the position, or says the
                text has nothing to search for), unless ``lenient``: then the whole text
                is one optional clause (a bag of words).
        """
        if not isinstance(text, str):
            raise TypeError(f"query must be a str, got {type(text).__name__}: {text!r:.80}")
        try:
            parts = _parse(text)
        except ValueError:
            if not lenient:
                raise
            return cls(should=(text,), min_should_match=min_should_match)
        return cls(should=tuple(parts["should"]), must=tuple(parts["must"]),
                   must_not=tuple(parts["must_not"]), phrases=tuple(parts["phrases"]),
                   min_should_match=min_should_match)


def as_query(query: str | Query, syntax: str, name: str = "query") -> Query | None:
    """``query`` as a `Query`, or None when it is a plain string read as a bag of words.

    Raises:
        TypeError: ``query`` is neither a str nor a `Query`.
        ValueError: ``syntax`` is unknown, or the text is malformed (``"operators"``).
    """
    if syntax not in SYNTAXES:
        raise ValueError(f"syntax must be one of {list(SYNTAXES)}, got {syntax!r}")
    if isinstance(query, Query):
        return query
    if not isinstance(query, str):
        raise TypeError(f"{name} must be a str or a hybrid_retrievers.Query, got "
                        f"{type(query).__name__}: {query!r:.80}")
    if not query.strip():
        raise ValueError(f"{name} must not be empty or blank, got {query!r}")
    if syntax == "plain":
        return None
    try:
        return Query.parse(query, lenient=syntax == "lenient")
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _clauses(name: str, value: str | Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    elif isinstance(value, (bytes, dict)) or not isinstance(value, Iterable):
        raise TypeError(f"Query.{name} must be a str or a sequence of str, got "
                        f"{type(value).__name__}: {value!r:.80}")
    out = tuple(value)
    for i, clause in enumerate(out):
        if not isinstance(clause, str):
            raise TypeError(f"Query.{name}[{i}] must be a str, got {type(clause).__name__}: "
                            f"{clause!r:.80}")
    return tuple(c for c in out if c.strip())


def _parse(text: str) -> dict[str, list[str]]:
    """The clauses of ``text`` by kind; ValueError naming the position of malformed text,
    or saying that it has nothing to search for (no optional, required or phrase clause
    that is not blank)."""
    out: dict[str, list[str]] = {"should": [], "must": [], "must_not": [], "phrases": []}
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start, op = i, ""
        if text[i] in "+-":
            op, i = text[i], i + 1
            if i == n or text[i].isspace():
                raise ValueError(f"operator {op!r} at position {start} has no word after it; "
                                 f"escape it as '\\{op}' to search for it literally")
            if text[i] in "+-":
                raise ValueError(f"operator {text[i]!r} at position {i} follows operator "
                                 f"{op!r}; escape one of them with a backslash")
        if text[i] == '"':
            if op == "-":
                raise ValueError(f"excluded phrase at position {start}: not supported; exclude "
                                 "its words one by one (-word) instead")
            phrase, i = _read(text, i + 1, quoted=True, start=i)
            out["phrases"].append(phrase)
        else:
            word, i = _read(text, i, quoted=False, start=start)
            out[{"+": "must", "-": "must_not", "": "should"}[op]].append(word)
    if not any(c.strip() for kind in ("should", "must", "phrases") for c in out[kind]):
        excluded = [c for c in out["must_not"] if c.strip()]
        raise ValueError(
            "nothing to search for: "
            + (f"the text only excludes {excluded!r} (-word), and excluded terms alone would "
               "match every document with no score" if excluded else "every clause is blank")
            + "; add a word or phrase to search for")
    return out


def _read(text: str, i: int, *, quoted: bool, start: int) -> tuple[str, int]:
    """The clause text from ``i`` (escapes resolved) and the index just past it."""
    chars: list[str] = []
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 == n:
                raise ValueError(f"backslash at position {i} escapes nothing (the query ends); "
                                 "write '\\\\' for a literal backslash")
            chars.append(text[i + 1])
            i += 2
            continue
        if quoted and c == '"':
            return "".join(chars), i + 1
        if not quoted and c.isspace():
            break
        if not quoted and c == '"':
            raise ValueError(f"quote at position {i} inside a word; put a space before a "
                             "phrase, or escape it as '\\\"'")
        chars.append(c)
        i += 1
    if quoted:
        raise ValueError(f"unbalanced quote: the phrase opened at position {start} is never "
                         "closed; close it, or escape it as '\\\"'")
    return "".join(chars), i
