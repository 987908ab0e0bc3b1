"""What a `BM25Index` is configured with: its scoring parameters, `BM25Params`.

`BM25Params` is the one place the BM25 defaults live and are checked (``method="lucene"``,
``k1=1.5``, ``b=0.75``, ``delta`` per variant); it is saved with an index, and it is the
engine's scorer for BM25 (`hybrid_retrievers.inverted.scorer.Scorer`). How queries are
scored (compiled numba kernels or numpy) is the engine's runtime choice,
`hybrid_retrievers.inverted.Backend`, never saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..inverted.scorer import Variant
from ..validation import check_number
from .scoring import DEFAULT_DELTA, OKAPI_EPSILON, BM25Method, get_variant

__all__ = ["BM25Params", "params_from"]


@dataclass(frozen=True, slots=True)
class BM25Params:
    """The BM25 variant and its parameters; checked once, here, and immutable.

    ``method`` is ``"lucene"`` (default), ``"textbook"`` (Lucene before version 8: with
    the ``k1 + 1`` factor), ``"robertson"`` (alias ``"okapi"``), ``"atire"`` (Trotman et
    al. 2014), ``"bm25l"`` or ``"bm25+"`` (a `BM25Method` after construction; the formulas
    are in `hybrid_retrievers.bm25.scoring`). ``k1`` (>= 0) saturates term
    frequency, ``b`` (0..1) scales length normalisation ``1 - b + b·|d|/avgdl``, and
    ``delta`` (>= 0) is BM25L's / BM25+'s shift; ``None`` takes the variant's default
    (`scoring.DEFAULT_DELTA`: 0.5 for BM25L, 1.0 for BM25+, 0 for the others; Lv & Zhai
    2011). ``epsilon`` (>= 0, Robertson only; ``None``: 0.25) floors negative Robertson
    idfs at ``epsilon`` times the mean idf, as ``rank_bm25.BM25Okapi(epsilon=)`` does
    (`scoring.idf_robertson`); it is ``None`` for the other variants, which have no floor.
    Two values that score alike compare equal.

    ``k1 = 0`` is accepted (term frequency ignored: every matching term weighs 1, or
    ``1 + delta`` for BM25+), and every scoring path agrees on it; with BM25L it makes
    every posting weigh exactly what an absent term does, so all matching documents tie.
    BM25L refuses ``k1 = delta = 0``, where its absent-term weight is 0/0.

    Example:
        >>> BM25Params("bm25+", k1=1.2)
        BM25Params(method=<BM25Method.BM25PLUS: 'bm25+'>, k1=1.2, b=0.75, delta=1.0, epsilon=None)
        >>> BM25Params("okapi", epsilon=0.1).epsilon
        0.1
        >>> BM25Params(b=1.5)
        Traceback (most recent call last):
        ...
        ValueError: b must be between 0.0 and 1.0, got 1.5
    """

    method: BM25Method | str = BM25Method.LUCENE
    k1: float = 1.5
    b: float = 0.75
    delta: float | None = None
    epsilon: float | None = None

    def __post_init__(self) -> None:
        method = BM25Method.parse(self.method)
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "k1", check_number(self.k1, "k1", low=0.0))
        object.__setattr__(self, "b", check_number(self.b, "b", low=0.0, high=1.0))
        delta = DEFAULT_DELTA.get(method, 0.0) if self.delta is None else self.delta
        object.__setattr__(self, "delta", check_number(delta, "delta", low=0.0))
        if method is BM25Method.ROBERTSON:
            epsilon = OKAPI_EPSILON if self.epsilon is None else self.epsilon
            object.__setattr__(self, "epsilon", check_number(epsilon, "epsilon", low=0.0))
        elif self.epsilon is not None:
            raise ValueError(
                f"epsilon is the floor of negative Robertson idfs (method='robertson', alias "
                f"'okapi'); method {method.value!r} has none, got epsilon={self.epsilon!r}"
            )
        if method is BM25Method.BM25L and self.k1 == 0 and self.delta == 0:
            raise ValueError(
                "bm25l needs k1 > 0 or delta > 0, got k1=0.0 and delta=0.0: its weight of an "
                "absent term, (k1 + 1)·delta / (k1 + delta) (Lv & Zhai 2011), is 0/0 there; "
                "pass delta=0.5 (the default) or a k1 above 0"
            )

    @property
    def variant(self) -> Variant:
        """The idf and tf-weight functions of ``method``."""
        return get_variant(self.method, self.epsilon)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready ``{"method", "k1", "b", "delta"}`` (what a saved index's manifest
        holds), with ``"epsilon"`` when it is not the default (older releases read the rest)."""
        out = {"method": BM25Method.parse(self.method).value, "k1": self.k1, "b": self.b,
               "delta": self.delta}
        if self.epsilon is not None and self.epsilon != OKAPI_EPSILON:
            out["epsilon"] = self.epsilon
        return out


def params_from(
    params: BM25Params | None,
    *,
    method: BM25Method | str | None = None,
    k1: float | None = None,
    b: float | None = None,
    delta: float | None = None,
    epsilon: float | None = None,
) -> BM25Params:
    """`BM25Index`'s rule: either a `BM25Params` value or the separate keywords, never both.

    Keywords left out (None) take `BM25Params`'s defaults.

    Raises:
        TypeError: ``params`` is not a `BM25Params`, or it comes with a keyword.
    """
    keywords = {name: value for name, value in
                (("method", method), ("k1", k1), ("b", b), ("delta", delta),
                 ("epsilon", epsilon)) if value is not None}
    if params is None:
        return BM25Params(**keywords)
    if not isinstance(params, BM25Params):
        raise TypeError(f"params must be a BM25Params or None, got {type(params).__name__}: "
                        f"{params!r}")
    if keywords:
        raise TypeError(
            f"pass the BM25 parameters either as params= or as keywords, not both; got "
            f"params={params!r} and {sorted(keywords)}: fold them in with "
            f"dataclasses.replace(params, ...)"
        )
    return params
