"""Dense retrieval: `VectorIndex`, its embedding cache and its approximate backend.

Where things live (one job per module):

* `index` - `VectorIndex`, the facade: its state and every public method;
* `editing` - add / upsert / delete as new copy-on-write snapshots (`snapshot`);
* `search` - query checks and the kernel chosen per query block;
* `queries` - query vectors in batches, async, or several texts as one;
* `kernels` - exact top-k: blocked matrix products, re-scored one fixed way;
* `ann`, `flat_faiss` - the optional faiss backends (HNSW graph, flat kernel);
* `embedding` - texts to vectors (`embed_texts`), each distinct text once
  (`EmbeddingCache`; its learned-sparse twin is `hybrid_retrievers.sparse.SparseEmbeddingCache`);
* `saving` - the on-disk format.

Concurrency: a search reads one immutable snapshot (matrix rows ``0..n-1``, documents,
ANN graph, filter masks), so edits never tear it; see `VectorIndex`.
"""

from __future__ import annotations

from .ann import FaissHNSW, HNSWConfig
from .embedding import DEFAULT_BATCH_SIZE, EmbeddingCache, embed_texts, embedder_identity, text_key
from .index import FORMAT_VERSION, METRICS, VectorIndex

__all__ = ["VectorIndex", "METRICS", "FORMAT_VERSION", "EmbeddingCache", "embed_texts",
           "embedder_identity", "text_key", "DEFAULT_BATCH_SIZE", "HNSWConfig", "FaissHNSW"]
