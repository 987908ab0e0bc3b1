"""The inverted-index engine that `BM25Index` and `SparseIndex` both run on.

One engine, two scorers: BM25 (`hybrid_retrievers.bm25`) stores term frequencies and
scores them with `BM25Params`; learned sparse (`hybrid_retrievers.sparse`) stores float32
impacts and scores them with `ImpactScorer`. The engine knows neither index: its
functions take a snapshot, a `Scorer`, a `Backend` and the caller's buffers, so nothing
here imports `bm25` or `sparse`. Its modules, one job each:

* `postings`: one immutable index version (documents and term-major CSR postings,
  `Snapshot`) and the new versions edits make;
* `build`: the streamed build, tokenising documents into postings chunk by chunk (in
  worker processes with ``n_jobs``), with `numbering` giving terms their ids and
  `heap` giving the C heap's freed pages back after a large one;
* `scorer`: what the engine scores with (`Scorer`, `Variant`, the length norm) and the
  impact scorer (`ImpactScorer`);
* `score_cache`: idf, length norms and pruning bounds per version (`ScoreCache`), and
  the compiled kernels' metadata built from them;
* `matching`: the tuned query loop (batched scoring, MaxScore pruning, filters);
* `kernels`: the compiled numba top-k kernels (TAAT and block-max MaxScore), with
  `_numba`, `_numba_batch` and `_numba_weights` compiled on first use;
* `backend`: how queries are scored (`Backend`: numba or numpy, and the thresholds);
* `scratch`: each thread's query buffers;
* `operators`: structured queries (`hybrid_retrievers.Query`) as masks before top-k;
* `saving`: the postings' half of the on-disk format.
* `cache_saving`: the score cache's half (what computing it reads every posting for).

Example:
    >>> from hybrid_retrievers import BM25Index
    >>> from hybrid_retrievers.inverted import Backend
    >>> index = BM25Index.from_texts(["wing lift", "engine thrust"], backend=Backend("numpy"))
    >>> [hit.doc.text for hit in index.search("lift", k=1)]
    ['wing lift']
"""

from __future__ import annotations

from .backend import Backend, BackendName
from .scorer import ImpactScorer, Scorer, Variant

__all__ = ["Backend", "BackendName", "ImpactScorer", "Scorer", "Variant"]
