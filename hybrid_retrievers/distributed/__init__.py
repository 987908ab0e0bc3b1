"""Scale out past one machine: build and serve sharded indexes on a Ray cluster.

Install with ``pip install 'hybrid-retrievers[ray]'``. Importing this package does not
import Ray; the functions and `ShardedSearcher` import it when they run.

* `build_bm25_shards` — BM25 shards built in parallel with corpus-wide statistics,
  so a sharded search scores every document exactly as one index would.
* `encode_corpus` / `build_vector_shards` — dense encoding with Ray Data
  ``map_batches`` over an actor pool (one model per actor), through an
  `EmbeddingCache` so a re-run encodes nothing twice; vector shards.
* `build_sparse_shards` — learned sparse shards (`SparseIndex`), encoded by one model
  per builder actor or split from precomputed vectors; no statistics to share, so the
  merge is exact by construction.
* `ShardedSearcher` — a `Searcher` over shard actors: scatter-gather, exact top-k
  merge, filters pushed down, routed edits, restarts, timeouts, ``asearch``.

The framework-free parts (routing, the saved layout, the merge rule, the shard
server) live in `layout` and `shard` and run without Ray; `fanout` holds the calls to
the shard actors (retries, timeouts, fault rules) that `ShardedSearcher` makes.
"""

from __future__ import annotations

from .build import (
    EncodedCorpus,
    build_bm25_shards,
    build_sparse_shards,
    build_vector_shards,
    encode_corpus,
)
from .layout import ShardedManifest, ShardHit, merge_top_k, plan_shards, shard_of
from .searcher import (
    PartialHits,
    PartialResultsWarning,
    ShardedSearcher,
    ShardTimeoutError,
    ShardUnavailableError,
)
from .shard import ShardServer

__all__ = [
    "build_bm25_shards",
    "build_sparse_shards",
    "build_vector_shards",
    "encode_corpus",
    "EncodedCorpus",
    "merge_top_k",
    "PartialHits",
    "PartialResultsWarning",
    "plan_shards",
    "ShardedManifest",
    "ShardedSearcher",
    "ShardHit",
    "shard_of",
    "ShardServer",
    "ShardTimeoutError",
    "ShardUnavailableError",
]
