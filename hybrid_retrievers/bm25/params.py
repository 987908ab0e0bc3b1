"""What a `BM25Index` is configured with: its scoring parameters and its scoring backend.

`BM25Params` is the one place the BM25 defaults live and are checked (``method="lucene"``,
``k1=1.5``, ``b=0.75``, ``delta`` per variant); it is saved with an index. `BM25Backend`
says how queries are scored (compiled numba kernels or numpy) and holds the measured
thresholds that choose between the scoring paths; it is a runtime choice, never saved.

Which path scores a query (numbers measured with ``benchmarks/bm25_speed.py``):

====================  ====================================================  ==========
path                  taken when                                            module
====================  ====================================================  ==========
numba TAAT            top-k, no filter, kernels on, not `_prefer_maxscore`  kernels
numba block-max       top-k, no filter, kernels on, one long list           kernels
numba batch           `search_many` without a filter, kernels on            kernels
numpy batched         otherwise, fewer than ``batched_postings`` postings   matching
numpy MaxScore        otherwise (term at a time, pruned once it can be)     matching
====================  ====================================================  ==========

Summation order, and the one tolerance: the kernels and the numpy batched pass add a
document's term contributions in query order, so their float32 scores are bit-identical.
The numpy MaxScore path (a metadata-mapping filter, ``backend="numpy"``, or an index under
``min_docs``, for a query touching ``batched_postings`` postings or more) adds them in
impact order: its scores may differ from the other paths' by 1-3 float32 ulp (relative
difference below 1e-6), and two documents whose scores are that close may swap places.
Making that path sum in query order would mean rescoring every candidate it keeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..optional import is_available
from .scoring import DEFAULT_DELTA, IMPACT, OKAPI_EPSILON, BM25Method, Variant, get_variant

__all__ = ["BM25Params", "ImpactParams", "MAX_IMPACT", "ScoringParams", "BM25Backend",
           "params_from"]


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
        object.__setattr__(self, "k1", _check_float("k1", self.k1, low=0.0))
        object.__setattr__(self, "b", _check_float("b", self.b, low=0.0, high=1.0))
        delta = DEFAULT_DELTA.get(method, 0.0) if self.delta is None else self.delta
        object.__setattr__(self, "delta", _check_float("delta", delta, low=0.0))
        if method is BM25Method.ROBERTSON:
            epsilon = OKAPI_EPSILON if self.epsilon is None else self.epsilon
            object.__setattr__(self, "epsilon", _check_float("epsilon", epsilon, low=0.0))
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


@dataclass(frozen=True, slots=True)
class ImpactParams:
    """The impact scorer's parameters, for learned sparse indexes (`SparseIndex`): none.

    It stands where `BM25Params` stands in the engine's functions (postings, score
    cache, matching, kernels): its `variant` is `scoring.IMPACT`, whose posting weight
    is the stored float32 value and whose idf is 1, and ``b = 0`` makes every length
    norm 1, so the engine scores ``Σ_t q_w(t) · d_w(t, d)`` summed in float32 in query
    order, with no absent-term constant.

    Example:
        >>> ImpactParams().variant.method
        'impact'
    """

    method: str = "impact"
    k1: float = 0.0
    b: float = 0.0
    delta: float = 0.0

    @property
    def variant(self) -> Variant:
        """`scoring.IMPACT`."""
        return IMPACT


MAX_IMPACT = 1e15
"""The largest impact (a learned sparse weight, document or query) the impact scorer takes.

A score is a float32 sum of products of two impacts, and float32 ends at 3.4e38: a
document weight of 3e38 times a query weight of 10 would be ``inf``, and ties would
hide the ranking. At most 1e15 each, a product is at most 1e30, so a sum stays finite
for any query of fewer than 340 million tokens. Learned weights are far below it
(SPLADE's are single digits; quantised impacts fit a byte); larger ones are refused
with an error naming the vector and the token (`sparse.vectors`), and in a saved index
(`_integrity.check_postings`)."""


ScoringParams = BM25Params | ImpactParams
"""What the engine's functions score with: BM25's parameters or the impact scorer's."""


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


Backend = Literal["auto", "numba", "numpy"]
Strategy = Literal["auto", "taat", "maxscore"]


@dataclass(frozen=True, slots=True)
class BM25Backend:
    """How a `BM25Index` scores queries: compiled numba kernels or numpy, and the thresholds.

    ``BM25Index(backend=...)`` (and `BM25Index.load`) take a name or this value; a name
    is ``BM25Backend(name)``. The results are the same on every backend and with every
    threshold (same documents, float32 scores and tie order); only the speed changes.
    The defaults are the ones measured fastest (commit log, ``benchmarks/bm25_speed.py``).

    Attributes:
        name: ``"auto"`` (the kernels for indexes of ``min_docs`` documents or more when
            numba is installed, else numpy), ``"numba"`` (the kernels at every size;
            numba must be installed) or ``"numpy"`` (never the kernels).
        min_docs: with ``"auto"``, smaller indexes keep the numpy path: it takes ~0.1 ms
            there, while the first kernel use in a process imports numba and loads the
            compiled kernels (~1 s). At 10k and 100k documents TAAT was about 2x and 2.5x
            faster than numpy at the median (~9x at p95 for 100k).
        strategy: which kernel takes a query: ``"taat"`` (exhaustive term at a time),
            ``"maxscore"`` (block-max MaxScore) or ``"auto"`` (`kernels._prefer_maxscore`).
        maxscore_min_postings: with ``strategy="auto"``, postings the longest list needs
            before MaxScore is considered.
        stored_weights_df: posting lists this long or longer keep each posting's float32
            weight, which TAAT streams beside the document instead of looking it up (at
            1M documents these lists hold 31% of the postings, 54 MiB, and 96% of those
            Cranfield queries touch; a posting costs ~0.8 ns instead of ~1.2 ns). Set it
            above the corpus size to store none.
        taat_chunk_docs: documents per chunk of TAAT's dense accumulation, so the
            accumulator being written (256 KiB by default) stays in a core's L2 cache; at
            1M documents the kernel took 0.56 / 0.86 ms median / p95 in chunks against
            1.04 / 1.54 in one pass. Set it above the corpus size for one pass.
        batch_cells: result slots (queries x k) one batched kernel call fills at most; a
            larger `search_many` batch is cut into several calls.
        batched_postings: on the numpy path, queries touching fewer postings are scored
            in one batched pass: per-term numpy calls and pruning checks would cost more.
        dense_scan: on the numpy path, a query with at least one posting per
            ``dense_scan`` documents scans its accumulator instead of reading it back
            posting by posting.

    Example:
        >>> BM25Backend("numba", strategy="maxscore").strategy
        'maxscore'
        >>> BM25Backend("gpu")
        Traceback (most recent call last):
        ...
        ValueError: backend must be one of ['auto', 'numba', 'numpy'], got 'gpu'
    """

    name: Backend = "auto"
    min_docs: int = 5000
    strategy: Strategy = "auto"
    maxscore_min_postings: int = 4096
    stored_weights_df: int = 8192
    taat_chunk_docs: int = 65536
    batch_cells: int = 1 << 22
    batched_postings: int = 65_536
    dense_scan: int = 8

    def __post_init__(self) -> None:
        _check_choice("backend", self.name, ("auto", "numba", "numpy"))
        _check_choice("strategy", self.strategy, ("auto", "taat", "maxscore"))
        for name, low in (("min_docs", 0), ("maxscore_min_postings", 0),
                          ("stored_weights_df", 1), ("taat_chunk_docs", 1), ("batch_cells", 1),
                          ("batched_postings", 0), ("dense_scan", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"BM25Backend.{name} must be an int >= {low}, got {value!r}")
        if self.name == "numba" and not is_available("numba"):
            raise ImportError(
                "backend='numba' needs numba, which is not installed: pip install numba, "
                "or pass backend='auto' (numba when installed) or backend='numpy'"
            )

    @classmethod
    def of(cls, backend: Backend | BM25Backend) -> BM25Backend:
        """``backend`` as a `BM25Backend`: a name becomes ``BM25Backend(name)``."""
        if isinstance(backend, BM25Backend):
            return backend
        if not isinstance(backend, str):
            raise TypeError(f"backend must be 'auto', 'numba', 'numpy' or a BM25Backend, got "
                            f"{type(backend).__name__}: {backend!r}")
        return cls(backend)  # type: ignore[arg-type]

    def uses_kernels(self, n_docs: int) -> bool:
        """Whether the compiled kernels may score queries on ``n_docs`` documents.

        They also need numba (``"numba"`` checked it at construction; with ``"auto"`` and
        no numba they decline every query) and contributions >= 0 (`kernels`).
        """
        return self.name == "numba" or (self.name == "auto" and n_docs >= self.min_docs)


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def _check_float(name: str, value: Any, *, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}: {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value
