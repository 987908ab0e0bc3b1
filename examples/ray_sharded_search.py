"""Sharded BM25 + dense search on a local two-node Ray cluster, fused like local indexes.

Starts a simulated cluster (`ray.cluster_utils.Cluster`: two nodes in this machine),
builds three BM25 shards with corpus-wide statistics and three vector shards
(encoded with Ray Data through an `EmbeddingCache`), serves them with
`ShardedSearcher` and checks that a sharded search returns exactly what one local
index returns, also after an edit and inside `FusionSearcher`.

Run: ``pip install 'hybrid-retrievers[ray]'`` then ``python examples/ray_sharded_search.py``.
On a real cluster, call ``ray.init(address="auto")`` instead of starting `Cluster`,
and write the shards to a path every node can read.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from hybrid_retrievers import BM25Index, FusionSearcher, VectorIndex
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.distributed import (
    ShardedSearcher,
    build_bm25_shards,
    build_vector_shards,
)
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.vector import EmbeddingCache


def main() -> None:
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        docs = list(load_dataset("cranfield").corpus.values())
        root = Path(tempfile.mkdtemp())
        build_bm25_shards(docs, root / "bm25", n_shards=3)
        build_vector_shards(docs, root / "dense", n_shards=3, cache=EmbeddingCache(),
                            embedder_factory=functools.partial(HashingEmbedder, 256),
                            concurrency=2)

        bm25 = ShardedSearcher(root / "bm25")
        dense = ShardedSearcher(root / "dense", embedder=HashingEmbedder(256))
        local_bm25 = BM25Index.from_docs(docs)
        local_dense = VectorIndex.from_docs(docs, embedder=HashingEmbedder(256))

        query = "heat transfer in a laminar boundary layer"
        for hit in bm25.search(query, k=3):
            print(f"{hit.rank}. {hit.id:5} {hit.score:.4f} shard {hit.explanation['shard']}")
        assert [h.id for h in bm25.search(query, 10)] == \
            [h.id for h in local_bm25.search(query, 10)]

        bm25.add(["laminar boundary layer heat transfer on a quokka"], ids=["new"])
        local_bm25.add(["laminar boundary layer heat transfer on a quokka"], ids=["new"])
        assert [h.id for h in bm25.search(query, 10)] == \
            [h.id for h in local_bm25.search(query, 10)]

        sharded_hybrid = FusionSearcher([bm25, dense], names=["bm25", "dense"])
        local_hybrid = FusionSearcher([local_bm25, local_dense], names=["bm25", "dense"])
        got = sharded_hybrid.search(query, 5)
        assert [h.id for h in got] == [h.id for h in local_hybrid.search(query, 5)]
        print("hybrid over shards:", [h.id for h in got])
        bm25.close()
        dense.close()
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
