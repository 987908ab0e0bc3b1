"""BM25: a sparse inverted index whose query cost follows the query's postings.

`BM25Index` (in `hybrid_retrievers.bm25.index`) is the class users touch: a façade
holding the current snapshot and its settings, which it hands to the inverted-index
engine (`hybrid_retrievers.inverted`: postings, score cache, matching, compiled
kernels, operators, the scoring `Backend`) and to the BM25 modules next to it, each
with one job:

* `params`: the scoring parameters (`BM25Params`), BM25's scorer for the engine;
* `scoring`: the BM25 variants as pure functions (`BM25Method`);
* `fields`: BM25F, several weighted fields per document;
* `collection_stats`: corpus-wide statistics (`CollectionStats`) so shards score
  like one index;
* `explanation`: per-term score explanations (`BM25Explanation`);
* `saving`: the on-disk format (the BM25 manifest; the postings are the engine's).

How queries are scored (numpy or the compiled kernels, and the thresholds that choose) is
the engine's: `hybrid_retrievers.inverted.Backend`.
"""

from __future__ import annotations

from .collection_stats import CollectionStats
from .explanation import BM25Explanation, TermContribution
from .index import FORMAT_VERSION, BM25Index
from .params import BM25Params
from .scoring import BM25Method

__all__ = ["BM25Index", "BM25Params", "FORMAT_VERSION", "BM25Method",
           "BM25Explanation", "TermContribution", "CollectionStats"]
