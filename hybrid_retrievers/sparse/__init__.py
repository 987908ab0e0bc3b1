"""Learned sparse retrieval (SPLADE and friends) on the inverted-index engine.

`SparseIndex` (in `hybrid_retrievers.sparse.index`) is the class users touch: a façade
over the engine BM25 runs on (postings, snapshots, edits, the numpy scoring loop and the
compiled TAAT / block-max MaxScore kernels), scored with the impact scorer: a score is
the dot product of the query's and the document's ``{token: weight}`` vectors. Its
modules, one job each:

* `index`: the façade (building, editing, searching, saving);
* `vectors`: checking sparse vectors (mappings, scipy CSR) and turning them into the
  engine's token chunks;
* `explanation`: per-token explanations (`SparseExplanation`);
* `saving`: the on-disk format (``kind="sparse"``);
* `cache`: `SparseEmbeddingCache`, each distinct document text encoded once per model
  (the learned-sparse twin of the dense `EmbeddingCache`, keyed the same way).
"""

from __future__ import annotations

from .cache import SparseEmbeddingCache
from .explanation import SparseExplanation, SparseTermContribution
from .index import SparseIndex
from .saving import FORMAT_VERSION

__all__ = ["SparseIndex", "SparseEmbeddingCache", "SparseExplanation", "SparseTermContribution",
           "FORMAT_VERSION"]
