"""Query-dependent weights: rules that look at the query and pick the fusion weights.

A `FusionSearcher` accepts ``weights=`` as a callable ``weights(query) -> sequence``
(one weight per source). `lexical_boost_rule` is the rule shipped with the package:
exact tokens such as part numbers, error codes, identifiers, numbers and quoted
phrases are where lexical (BM25) retrieval beats dense embeddings, which smear them
into near neighbours; so for such queries the lexical source gets ``boost`` times
its base weight.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from ..validation import check_weights

__all__ = ["LexicalBoostRule", "lexical_boost_rule", "EXACT_MATCH_PATTERN", "check_boost"]

EXACT_MATCH_PATTERN = re.compile(
    r"""
      "[^"]+"                              # a "quoted phrase"
    | “[^”]+”                              # a “typographic quote”
    | \b\w*\d\w*(?:[-./:]\w+)*             # a token with a digit: 3.5, 1958, IPC-420, v2
    | \b[A-Za-z]+(?:[-_][A-Za-z0-9]+)*_[A-Za-z0-9_]+   # snake_case identifier
    | \b[a-z]+[A-Z][A-Za-z0-9]*            # camelCase identifier
    | \b[A-Z]{2,}(?:-[A-Z0-9]+)+\b         # CODE-WORD
    """,
    re.VERBOSE,
)
"""What `lexical_boost_rule` treats as an exact-match query: quotes, digits, identifiers."""


@dataclass(frozen=True)
class LexicalBoostRule:
    """Weights that favour the lexical source for queries with codes, numbers or quotes.

    Calling the rule with a query returns ``base_weights``, with the entry at
    ``lexical_index`` multiplied by ``boost`` when ``pattern`` finds a match in the query.

    Example:
        >>> rule = LexicalBoostRule(lexical_index=0, boost=2.0, base_weights=(1.0, 1.0))
        >>> rule("which connector does part IPC-420 use?")
        (2.0, 1.0)
        >>> rule("how do wings generate lift")
        (1.0, 1.0)
    """

    lexical_index: int = 0
    boost: float = 2.0
    base_weights: tuple[float, ...] = (1.0, 1.0)
    pattern: re.Pattern[str] = EXACT_MATCH_PATTERN

    def __post_init__(self) -> None:
        base = check_weights(self.base_weights, _len(self.base_weights), "base_weights")
        object.__setattr__(self, "base_weights", base)
        index = self.lexical_index
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"lexical_index must be an int, got {type(index).__name__}")
        if not 0 <= index < len(base):
            raise ValueError(
                f"lexical_index must point into base_weights (0..{len(base) - 1}), got {index}"
            )
        object.__setattr__(self, "boost", check_boost(self.boost))
        if isinstance(self.pattern, str):
            object.__setattr__(self, "pattern", re.compile(self.pattern))
        elif not isinstance(self.pattern, re.Pattern):
            raise TypeError(
                f"pattern must be a regex (str or re.Pattern), got {type(self.pattern).__name__}"
            )

    def matches(self, query: str) -> bool:
        """Whether ``query`` looks like an exact-match query."""
        return self.pattern.search(query) is not None

    def __call__(self, query: str) -> tuple[float, ...]:
        if not self.matches(query):
            return self.base_weights
        out = list(self.base_weights)
        out[self.lexical_index] *= self.boost
        return tuple(out)


def lexical_boost_rule(
    lexical_index: int = 0,
    boost: float = 2.0,
    *,
    base_weights: Sequence[float] = (1.0, 1.0),
    pattern: str | re.Pattern[str] | None = None,
) -> LexicalBoostRule:
    """A `LexicalBoostRule`: pass it as ``FusionSearcher(..., weights=rule)``.

    Args:
        lexical_index: the position of the lexical (BM25) source among the searchers.
        boost: the factor applied to its weight for exact-match queries.
        base_weights: the weights for every other query (one per source).
        pattern: overrides `EXACT_MATCH_PATTERN`.
    """
    base: Any = tuple(base_weights) if _is_seq(base_weights) else base_weights
    chosen: Any = EXACT_MATCH_PATTERN if pattern is None else pattern
    return LexicalBoostRule(
        lexical_index=lexical_index, boost=boost, base_weights=base, pattern=chosen
    )


def check_boost(boost: Any) -> float:
    """A query rule's ``boost`` as a float: a finite number >= 0 (shared by
    `LexicalBoostRule` and `hybrid_retrievers.images.VisualIntentRule`)."""
    if isinstance(boost, bool) or not isinstance(boost, Real):
        raise TypeError(f"boost must be a number, got {type(boost).__name__}: {boost!r}")
    if not math.isfinite(boost) or boost < 0:
        raise ValueError(f"boost must be a finite number >= 0, got {boost!r}")
    return float(boost)


def _is_seq(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _len(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        raise TypeError(
            f"base_weights must be a list of numbers, got {type(value).__name__}"
        ) from None
