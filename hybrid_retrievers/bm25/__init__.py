"""BM25: a sparse inverted index whose query cost follows the query's postings.

`BM25Index` (in `hybrid_retrievers.bm25.index`) is the class users touch; the modules
next to it each do one job:

* `postings`: one immutable index version (documents and term-major CSR postings) and
  the new versions edits make;
* `statistics`: idf, length norms and pruning bounds per version, and the
  collection-statistics hook for shards;
* `matching`: the tuned query loop (batched scoring, MaxScore pruning);
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
from .scoring import BM25Method

__all__ = ["BM25Index", "FORMAT_VERSION", "BM25Method", "BM25Explanation",
           "TermContribution", "CollectionStats"]
