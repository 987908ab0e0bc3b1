"""How the engine scores queries: compiled numba kernels or numpy, and the thresholds.

`Backend` is a runtime choice of a `BM25Index` or a `SparseIndex`, never saved: the
results are the same on every backend, only the speed changes.

Which path scores a query (numbers measured with ``benchmarks/bm25_speed.py``):

====================  ====================================================  ==========
path                  taken when                                            module
====================  ====================================================  ==========
numba TAAT            top-k, no filter, kernels on, not `_long_list_rule`   kernels
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

from dataclasses import dataclass
from typing import Literal

from ..optional import is_available
from ..validation import check_number

__all__ = ["Backend", "BackendName", "Strategy"]


BackendName = Literal["auto", "numba", "numpy"]
Strategy = Literal["auto", "taat", "maxscore"]


@dataclass(frozen=True, slots=True)
class Backend:
    """How an index on the engine scores queries: numba kernels or numpy, and the thresholds.

    ``BM25Index(backend=...)``, ``SparseIndex(backend=...)`` (and their ``load``) take a
    name or this value; a name
    is ``Backend(name)``. The results are the same on every backend and with every
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
            ``"maxscore"`` (block-max MaxScore) or ``"auto"`` (`kernels._long_list_rule`).
        maxscore_min_postings: with ``strategy="auto"``, postings the longest list needs
            before MaxScore is considered.
        stored_weights_df: posting lists this long or longer keep each posting's float32
            weight, which TAAT streams beside the document instead of looking it up (at
            1M documents these lists hold 31% of the postings, 54 MiB, and 96% of those
            Cranfield queries touch; streaming a weight saves the norm-code lookup a
            shorter list's posting pays). Set it above the corpus size to store none.
        taat_chunk_docs: documents per chunk of TAAT's dense accumulation, so the
            accumulator being written (256 KiB by default) stays in a core's L2 cache; at
            1M documents the kernel took 0.56 / 0.86 ms median / p95 in chunks against
            1.04 / 1.54 in one pass. Set it above the corpus size for one pass.
        taat_dense_ratio: a TAAT query with at least one posting per ``taat_dense_ratio``
            documents takes that dense path (its cost: a scan of every document plus
            each posting; the whole median query of bm25_speed's corpus took 0.89 ms
            at 1M, ``benchmarks/bm25_query_compare.py``); a sparser one reads its
            postings back, two random accesses each, which cost 5-10 ns apiece on a busy
            machine. At 1M documents (bm25_speed's corpus and queries, load ~15 on 2
            cores) 16 instead of 4 took the kernel's median from 2.11 to 1.78 ms;
            results are the same.
        batch_cells: result slots (queries x k) one batched kernel call fills at most; a
            larger `search_many` batch is cut into several calls.
        batched_postings: on the numpy path, queries touching fewer postings are scored
            in one batched pass: per-term numpy calls and pruning checks would cost more.
        dense_scan: on the numpy path, a query with at least one posting per
            ``dense_scan`` documents scans its accumulator instead of reading it back
            posting by posting.

    Example:
        >>> Backend("numba", strategy="maxscore").strategy
        'maxscore'
        >>> Backend("gpu")
        Traceback (most recent call last):
        ...
        ValueError: backend must be one of ['auto', 'numba', 'numpy'], got 'gpu'
    """

    name: BackendName = "auto"
    min_docs: int = 5000
    strategy: Strategy = "auto"
    maxscore_min_postings: int = 4096
    stored_weights_df: int = 8192
    taat_chunk_docs: int = 65536
    taat_dense_ratio: int = 16
    batch_cells: int = 1 << 22
    batched_postings: int = 65_536
    dense_scan: int = 8

    def __post_init__(self) -> None:
        _check_choice("backend", self.name, ("auto", "numba", "numpy"))
        _check_choice("strategy", self.strategy, ("auto", "taat", "maxscore"))
        for name, low in (("min_docs", 0), ("maxscore_min_postings", 0),
                          ("stored_weights_df", 1), ("taat_chunk_docs", 1),
                          ("taat_dense_ratio", 1), ("batch_cells", 1),
                          ("batched_postings", 0), ("dense_scan", 0)):
            value = getattr(self, name)
            check_number(value, f"Backend.{name}", low=low, integer=True)
        if self.name == "numba" and not is_available("numba"):
            raise ImportError(
                "backend='numba' needs numba, which is not installed: pip install numba, "
                "or pass backend='auto' (numba when installed) or backend='numpy'"
            )

    @classmethod
    def of(cls, backend: BackendName | Backend) -> Backend:
        """``backend`` as a `Backend`: a name becomes ``Backend(name)``."""
        if isinstance(backend, Backend):
            return backend
        if not isinstance(backend, str):
            raise TypeError(f"backend must be 'auto', 'numba', 'numpy' or a Backend, got "
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
