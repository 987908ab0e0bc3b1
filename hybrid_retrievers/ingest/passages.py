"""The passage of a document that matched a query, with the query's terms highlighted.

A whole file is one document in the index, so showing its first characters tells the
user nothing. `best_passage` slides a window of words over the text and keeps the window
that holds the most distinct query terms (ties: more occurrences, then earlier), where a
word "is" a query term when the index's own `Analyzer` maps it to one of the query's
index terms (so ``ranking`` matches the query word ``ranked`` under stemming).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..text import Analyzer

__all__ = ["best_passage", "bold", "brackets"]

_WORD = re.compile(r"\w+", re.UNICODE)


def bold(term: str) -> str:
    """ANSI bold + yellow (for terminals)."""
    return f"\033[1;33m{term}\033[0m"


def brackets(term: str) -> str:
    """Plain-text highlight (pipes, logs, files)."""
    return f"**{term}**"


def best_passage(
    text: str,
    query: str,
    analyzer: Analyzer,
    *,
    words: int = 40,
    mark: Callable[[str], str] = brackets,
) -> str:
    """The ``words``-word window of ``text`` that best matches ``query``, terms marked.

    Example:
        >>> from hybrid_retrievers import Analyzer
        >>> text = "Intro. " * 50 + "BM25 ranks documents by term statistics. " + "End. " * 50
        >>> best_passage(text, "how are documents ranked", Analyzer(), words=8)
        '… Intro. Intro. BM25 **ranks** **documents** by term statistics. …'
    """
    wanted = set(analyzer.tokenize(query))
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if not spans:
        return " ".join(text.split())
    terms: dict[str, frozenset[str]] = {}

    def hit_terms(i: int) -> frozenset[str]:
        word = text[spans[i][0]:spans[i][1]]
        found = terms.get(word)
        if found is None:
            found = terms[word] = frozenset(analyzer.tokenize(word)) & wanted
        return found

    matches = [hit_terms(i) for i in range(len(spans))]
    size = min(words, len(spans))
    best_start, best_key = 0, (-1, -1)
    step = max(1, size // 4)
    last = len(spans) - size
    for start in [*range(0, last, step), last]:
        window = matches[start:start + size]
        distinct = len(frozenset().union(*window))
        key = (distinct, sum(1 for m in window if m))
        if key > best_key:
            best_start, best_key = start, key
    # Start a little before the first match, so the match has context.
    first = next((i for i in range(best_start, best_start + size) if matches[i]), best_start)
    start = max(0, min(first - 3, len(spans) - size))
    end = start + size
    pieces, cursor = [], spans[start][0]
    for i in range(start, end):
        s, e = spans[i]
        pieces.append(text[cursor:s])
        pieces.append(mark(text[s:e]) if matches[i] else text[s:e])
        cursor = e
    tail_end = spans[end][0] if end < len(spans) else len(text)
    pieces.append(text[cursor:tail_end].rstrip())
    passage = " ".join("".join(pieces).split())
    return ("… " if start > 0 else "") + passage + (" …" if end < len(spans) else "")
