"""BM25: a sparse inverted index whose query cost follows the query's postings.

`BM25Index` (in `hybrid_retrievers.bm25.index`) is the class users touch: a façade
holding the current snapshot and its settings, which it hands to the functions of the
modules next to it, each with one job:

* `params`: the scoring parameters (`BM25Params`) and the scoring backend
  (`BM25Backend`), with the table of scoring paths;
* `postings`: one immutable index version (documents and term-major CSR postings) and
  the new versions edits make;
* `score_cache`: idf, length norms and pruning bounds per version (`ScoreCache`), and
  the compiled kernels' metadata built from them;
* `matching`: the tuned query loop (batched scoring, MaxScore pruning);
* `kernels`: the compiled numba top-k kernels (TAAT and block-max MaxScore);
* `scratch`: each thread's query buffers;
* `operators`: structured queries (`hybrid_retrievers.Query`) as masks before top-k;
* `explanation`: per-term score explanations (`BM25Explanation`);
* `saving`: the on-disk format;
* `scoring`: the BM25 variants as pure functions (`BM25Method`);
* `collection_stats`: corpus-wide statistics (`CollectionStats`) so shards score
  like one index.
"""

from __future__ import annotations

from .collection_stats import CollectionStats
from .explanation import BM25Explanation, TermContribution
from .index import FORMAT_VERSION, BM25Index
from .params import BM25Backend, BM25Params
from .scoring import BM25Method

__all__ = ["BM25Index", "BM25Params", "BM25Backend", "FORMAT_VERSION", "BM25Method",
           "BM25Explanation", "TermContribution", "CollectionStats"]
