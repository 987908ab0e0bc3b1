"""Parsing an LLM's ranking answer: lenient, and honest about what it repaired.

`parse_ranking` turns text such as ``"[2] > [1] > [3]"`` (or ``"2, 1, 3"``, or prose
around numbers) into a full permutation; `RankingParse` says whether the answer was
clean (``"ok"``), usable after repairs (``"repaired"``) or unusable (``"fallback"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["RankingParse", "parse_ranking"]


@dataclass(frozen=True, slots=True)
class RankingParse:
    """What `parse_ranking` made of an LLM's answer.

    Attributes:
        order: A full permutation of ``range(n)`` (0-based candidate positions), best first.
        status: ``"ok"``, ``"repaired"`` or ``"fallback"`` (see `hybrid_retrievers.rerank`).
        problems: Human-readable notes on what was ignored or appended (empty when ok).
    """

    order: tuple[int, ...]
    status: str
    problems: tuple[str, ...]

    @property
    def detail(self) -> str:
        return "; ".join(self.problems)


_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w]|\.\d)")
# Numbers joined only by separators: "2 > 1 > 3", "2, 1, 3", "2 -> 1", "3 1 2".
_RUN = re.compile(r"\d+(?:\s*(?:>|,|;|\||/|->|=>|→|≻)?\s*\d+)+")
# A line-start list marker ("1. ", "2) ", "- ") before text that has another number in it.
_LIST_MARKER = re.compile(r"(?m)^[ \t]*(?:\d+[.):]|[-*•])[ \t]+(?=[^\n]*\d)")


def parse_ranking(text: Any, n: int) -> RankingParse:
    """Turn an LLM's answer into a full order of ``n`` candidates numbered ``1..n``.

    Lenient by design, because models rarely answer exactly as asked:

    1. list markers at line starts (``"1. [3]"``, ``"- Passage 2"``) are ignored;
    2. bracketed numbers (``"[2] > [1] > [3]"``) are used when there are any; otherwise the
       longest run of numbers joined only by separators (``"2, 1, 3"``, ``"2 > 1 > 3"``);
       otherwise every standalone number in the text (``"Passage 2, then passage 1"``);
    3. out-of-range numbers and repeats are ignored, and candidates never mentioned are
       appended in their original order.

    The status is ``"ok"`` for a clean permutation, ``"repaired"`` when step 3 had work to
    do, and ``"fallback"`` (original order) when no candidate number was found at all.

    Example:
        >>> parse_ranking("Sure! The ranking is [3] > [1] > [3] > [9]", 4).order
        (2, 0, 1, 3)
        >>> parse_ranking("3, 1, 2", 3).status
        'ok'
    """
    n = int(n)
    identity = tuple(range(n))
    if not isinstance(text, str):
        return RankingParse(identity, "fallback",
                            (f"the LLM returned {type(text).__name__}, not text",))
    if not text.strip():
        return RankingParse(identity, "fallback", ("the LLM returned an empty answer",))
    cleaned = _LIST_MARKER.sub("", text)
    found = _BRACKETED.findall(cleaned)
    if not found:
        runs = [_NUMBER.findall(m.group(0)) for m in _RUN.finditer(cleaned)]
        best = max(runs, key=len, default=[])
        found = best if len(best) >= 2 else _NUMBER.findall(cleaned)
    numbers = [_candidate_number(x) for x in found]
    order: list[int] = []
    seen: set[int] = set()
    out_of_range: list[int | str] = []
    repeated: list[int] = []
    for number in numbers:
        if isinstance(number, str) or not 1 <= number <= n:
            out_of_range.append(number)
        elif number in seen:
            repeated.append(number)
        else:
            seen.add(number)
            order.append(number - 1)
    snippet = " ".join(text.split())
    snippet = snippet if len(snippet) <= 120 else snippet[:117] + "..."
    if not order:
        reason = (f"no candidate number (1..{n}) in the LLM's answer {snippet!r}; "
                  "kept the original order")
        return RankingParse(identity, "fallback", (reason,))
    problems = []
    if out_of_range:
        problems.append(f"ignored out-of-range numbers {_join(out_of_range)} (valid: 1..{n})")
    if repeated:
        problems.append(f"ignored repeated numbers {_join(repeated)}")
    missing = [i for i in identity if i + 1 not in seen]
    if missing:
        problems.append(f"appended unranked candidates {_join(i + 1 for i in missing)} "
                        "in their original order")
        order.extend(missing)
    return RankingParse(tuple(order), "repaired" if problems else "ok", tuple(problems))


def _join(numbers: Any) -> str:
    return ", ".join(str(x) for x in numbers)


_MAX_DIGITS = 12


def _candidate_number(digits: str) -> int | str:
    """The int of a matched digit string, or a short description of one too long to be
    a candidate number. Python refuses ``int()`` of strings over 4,300 digits, and a
    model (or a passage it echoes) may produce one: such a number is simply out of range.
    """
    significant = digits.lstrip("0") or "0"
    if len(significant) <= _MAX_DIGITS:
        return int(significant)
    return f"{significant[:6]}...({len(significant)} digits)"
