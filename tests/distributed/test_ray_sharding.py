"""Sharded BM25 and dense search on a simulated two-node Ray cluster.

One module-scoped `ray.cluster_utils.Cluster` (two nodes, one CPU each) serves every
test. Sharded results must equal a single index over the bundled Cranfield (same
ids, same order, scores within 1e-6), before and after edits; a killed shard actor
must recover, a shard that stays down must give an error naming it (or flagged
partial results), and the LangChain / LlamaIndex fusion retrievers and the core
fusion, HyDE and reranking searchers must work over sharded children unchanged.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

from hybrid_retrievers import (  # noqa: E402
    BM25Index,
    Doc,
    FusionSearcher,
    HyDESearcher,
    Reranker,
    RerankingSearcher,
    VectorIndex,
)
from hybrid_retrievers.bm25 import CollectionStats  # noqa: E402
from hybrid_retrievers.datasets import load_dataset  # noqa: E402
from hybrid_retrievers.distributed import (  # noqa: E402
    PartialHits,
    PartialResultsWarning,
    ShardedSearcher,
    ShardTimeoutError,
    ShardUnavailableError,
    build_bm25_shards,
    build_sparse_shards,
    build_vector_shards,
    encode_corpus,
    shard_of,
)
from hybrid_retrievers.hyde import HyDE  # noqa: E402
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder  # noqa: E402
from hybrid_retrievers.sparse import SparseIndex  # noqa: E402
from hybrid_retrievers.vector import EmbeddingCache  # noqa: E402

from contract import Contracted, SearcherContract  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")]

DIM = 64
EMBEDDER = functools.partial(HashingEmbedder, DIM)


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def cluster() -> Any:
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": 80 * 1024**2}
    c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    c.add_node(**node)
    ray.init(address=c.address, log_to_driver=False)
    # Workers cannot import this test module: send its functions (filters) by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def cranfield() -> tuple[list[Doc], list[str]]:
    ds = load_dataset("cranfield")
    return list(ds.corpus.values()), list(ds.queries.values())


@pytest.fixture(scope="module")
def docs(cranfield: Any) -> list[Doc]:
    return cranfield[0]


@pytest.fixture(scope="module")
def queries(cranfield: Any) -> list[str]:
    return cranfield[1]


@pytest.fixture(scope="module")
def whole_bm25(docs: list[Doc]) -> BM25Index:
    return BM25Index.from_docs(docs)


@pytest.fixture(scope="module")
def whole_dense(docs: list[Doc]) -> VectorIndex:
    return VectorIndex.from_docs(docs, embedder=HashingEmbedder(DIM))


@pytest.fixture(scope="module")
def bm25_dir(cluster: Any, docs: list[Doc], tmp_path_factory: Any) -> Path:
    """Three BM25 shards built from a JSONL file."""
    root = tmp_path_factory.mktemp("sharded")
    corpus = root / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"id": d.id, "text": d.text, "metadata": dict(d.metadata)}) + "\n")
    build_bm25_shards(corpus, root / "bm25", n_shards=3)
    return root / "bm25"


@pytest.fixture(scope="module")
def sharded_bm25(bm25_dir: Path) -> ShardedSearcher:
    with ShardedSearcher(bm25_dir) as searcher:
        yield searcher


@pytest.fixture(scope="module")
def dense_cache() -> EmbeddingCache:
    return EmbeddingCache()


@pytest.fixture(scope="module")
def dense_dir(cluster: Any, docs: list[Doc], dense_cache: EmbeddingCache,
              tmp_path_factory: Any) -> Path:
    """Three vector shards encoded with Ray Data (two encoder actors) through a cache."""
    path = tmp_path_factory.mktemp("dense") / "vec"
    build_vector_shards(docs, path, n_shards=3, embedder_factory=EMBEDDER, cache=dense_cache,
                        concurrency=2, batch_size=256)
    return path


@pytest.fixture(scope="module")
def sharded_dense(dense_dir: Path) -> ShardedSearcher:
    with ShardedSearcher(dense_dir, embedder=HashingEmbedder(DIM)) as searcher:
        yield searcher


def assert_same(got: Sequence[Any], want: Sequence[Any], tol: float = 1e-6) -> None:
    assert [h.id for h in got] == [h.id for h in want]
    assert [h.rank for h in got] == [h.rank for h in want]
    assert all(abs(a.score - b.score) <= tol for a, b in zip(got, want))


# ---------------------------------------------------------------------- equality


def test_sharded_bm25_equals_one_index(sharded_bm25: ShardedSearcher, whole_bm25: BM25Index,
                                       queries: list[str]) -> None:
    assert sharded_bm25.n_shards == 3 and len(sharded_bm25) == len(whole_bm25)
    where = ray.get([a.where.remote() for a in sharded_bm25.actors])
    alive = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    assert len({node for _, node in where}) == 2, f"shards on {where}, nodes {alive}"
    assert sharded_bm25.collection_stats == CollectionStats.of_index(whole_bm25)
    for q in queries:
        assert_same(sharded_bm25.search(q, 10), whole_bm25.search(q, 10))
    for q in queries[:20]:
        assert_same(sharded_bm25.search(q, 200), whole_bm25.search(q, 200))


def test_filters_are_pushed_down(sharded_bm25: ShardedSearcher, whole_bm25: BM25Index,
                                 queries: list[str]) -> None:
    def odd(doc: Doc) -> bool:
        return int(doc.id) % 2 == 1

    title = whole_bm25.docs[7].metadata["title"]
    for q in queries[:30]:
        assert_same(sharded_bm25.search(q, 10, filter=odd), whole_bm25.search(q, 10, filter=odd))
        assert_same(sharded_bm25.search(q, 5, filter={"title": title}),
                    whole_bm25.search(q, 5, filter={"title": title}))


@pytest.mark.parametrize("method", ["lucene", "robertson"])
def test_sharded_fielded_bm25_equals_one_fielded_index(cluster: Any, queries: list[str],
                                                       tmp_path: Path, method: str) -> None:
    """BM25F shards (title and text fields) score like one fielded index, with the build's
    weights and per-query ones, before and after edits: global N, df over all fields and
    each field's average length come from the summed statistics."""
    base = list(load_dataset("cranfield").fielded_corpus().values())[:700]
    weights = {"title": 2.0, "text": 1.0}
    build_bm25_shards(base, tmp_path / "idx", n_shards=3, fields=weights, method=method)
    whole = BM25Index.from_docs(base, fields=weights, method=method)
    per_query = {"title": 5.0, "text": 0.5}
    with ShardedSearcher(tmp_path / "idx") as sharded:
        assert sharded.collection_stats == CollectionStats.of_index(whole)
        assert set(sharded.collection_stats.field_lengths or {}) == {"title", "text"}
        for q in queries[:40]:
            assert_same(sharded.search(q, 10), whole.search(q, 10))
            assert_same(sharded.search(q, 10, field_weights=per_query),
                        whole.search(q, 10, field_weights=per_query))
        new = [Doc("n1", "flutter of a quokka panel", {"title": "quokka panels"}),
               Doc("n2", "boundary layer suction", {})]
        sharded.add_docs(new)
        whole.add_docs(new)
        sharded.delete([base[0].id, base[11].id])
        whole.delete([base[0].id, base[11].id])
        assert sharded.collection_stats == CollectionStats.of_index(whole)
        for q in queries[:20] + ["quokka panel"]:
            assert_same(sharded.search(q, 10, field_weights=per_query),
                        whole.search(q, 10, field_weights=per_query))
        with pytest.raises(ValueError, match="no field 'abstract'"):
            sharded.search("wing", 5, field_weights={"abstract": 1.0})


def test_sharded_dense_equals_one_index(sharded_dense: ShardedSearcher, whole_dense: VectorIndex,
                                        queries: list[str]) -> None:
    for q in queries:
        assert_same(sharded_dense.search(q, 10), whole_dense.search(q, 10))
    vector = HashingEmbedder(DIM).embed_query(queries[0])
    assert_same(sharded_dense.search_vector(vector, 50), whole_dense.search_vector(vector, 50))


def test_sharded_sparse_equals_one_index(cluster: Any, docs: list[Doc], queries: list[str],
                                         tmp_path: Path) -> None:
    """Each builder actor encodes its shard; no statistics are shared, and none are needed."""
    build_sparse_shards(docs, tmp_path / "sparse", n_shards=3,
                        embedder_factory=HashingSparseEmbedder)
    whole = SparseIndex.from_docs(docs, embedder=HashingSparseEmbedder())
    with ShardedSearcher(tmp_path / "sparse", embedder=HashingSparseEmbedder()) as sharded:
        assert sharded.kind == "sparse" and len(sharded) == len(whole)
        for q in queries:
            assert_same(sharded.search(q, 10), whole.search(q, 10), tol=0.0)
        vector = HashingSparseEmbedder().embed_query(queries[3])
        assert_same(sharded.search_vector(vector, 200), whole.search_vector(vector, 200), tol=0.0)
        odd = {"title": whole.docs[7].metadata["title"]}
        assert_same(sharded.search(queries[0], 5, filter=odd),
                    whole.search(queries[0], 5, filter=odd), tol=0.0)
        assert sharded.search("zzzzqqq", 10) == []


def test_sharded_sparse_from_vectors_equals_one_index(cluster: Any, docs: list[Doc],
                                                      queries: list[str], tmp_path: Path) -> None:
    """Precomputed vectors (mappings, or a CSR matrix with its vocabulary) are split by id."""
    import scipy.sparse as sp

    emb = HashingSparseEmbedder()
    vectors = emb.embed_documents([d.text for d in docs])
    vocab = sorted({t for v in vectors for t in v})
    column = {t: j for j, t in enumerate(vocab)}
    rows = np.repeat(np.arange(len(vectors)), [len(v) for v in vectors])
    cols = [column[t] for v in vectors for t in v]
    weights = [w for v in vectors for w in v.values()]
    matrix = sp.csr_matrix((weights, (rows, cols)), shape=(len(vectors), len(vocab)))
    whole = SparseIndex.from_docs(docs, embedder=emb)
    for name, given in [("maps", {"vectors": vectors}),
                        ("csr", {"vectors": matrix, "vocabulary": vocab})]:
        build_sparse_shards(docs, tmp_path / name, n_shards=3, **given)
        with ShardedSearcher(tmp_path / name, embedder=emb) as sharded:
            assert len(sharded) == len(whole)
            for q in queries[:5]:
                assert_same(sharded.search(q, 10), whole.search(q, 10), tol=0.0)


def test_encoding_rerun_is_served_by_the_cache(dense_dir: Path, docs: list[Doc],
                                               dense_cache: EmbeddingCache,
                                               whole_dense: VectorIndex) -> None:
    model_id = HashingEmbedder(DIM).model_id
    assert dense_cache.size(model_id) == len({d.text for d in docs})
    again = encode_corpus(docs[:300], EMBEDDER, cache=dense_cache, batch_size=100)
    assert again.encoded == 0 and again.model_id == model_id
    assert [d.id for d in again.docs] == [d.id for d in docs[:300]]
    np.testing.assert_allclose(again.vectors, whole_dense.vectors[:300], atol=1e-6)
    fresh = encode_corpus([{"id": "x", "text": "an unseen text about hypersonic wakes"}],
                          EMBEDDER, cache=dense_cache)
    assert fresh.encoded == 1


class _SlowFirstBatch(HashingEmbedder):
    """Takes a second over the batch holding the corpus's first text, so that the other
    encoder actor finishes the later batches first."""

    def embed_documents(self, texts: Sequence[str]) -> Any:
        if any(t.startswith("first ") for t in texts):
            time.sleep(1.0)
        return super().embed_documents(texts)


def test_encoding_keeps_corpus_order_when_batches_finish_out_of_order(cluster: Any) -> None:
    rows = [{"id": f"d{i}", "text": f"{'first' if i == 0 else 'later'} text number {i}"}
            for i in range(40)]
    enc = encode_corpus(rows, functools.partial(_SlowFirstBatch, DIM), concurrency=2,
                        batch_size=5)
    assert [d.id for d in enc.docs] == [r["id"] for r in rows]
    np.testing.assert_array_equal(enc.vectors, HashingEmbedder(DIM).embed_documents(
        [r["text"] for r in rows]))


def test_asearch_awaits_shards_concurrently(sharded_bm25: ShardedSearcher,
                                            whole_bm25: BM25Index, queries: list[str]) -> None:
    async def run() -> list[Any]:
        return await asyncio.gather(*(sharded_bm25.asearch(q, 10) for q in queries[:20]))

    for q, hits in zip(queries[:20], asyncio.run(run())):
        assert_same(hits, whole_bm25.search(q, 10))


@pytest.fixture(scope="class")
def contracted(cluster: Any, tmp_path_factory: Any) -> Contracted:
    """`ShardedSearcher` over two BM25 shards of the contract's corpus (tests/contract.py)."""
    ray.cloudpickle.register_pickle_by_value(sys.modules["contract"])  # its filter predicates
    opened: list[ShardedSearcher] = []

    def build(docs: Sequence[Doc]) -> ShardedSearcher:
        path = tmp_path_factory.mktemp("contract") / "bm25"
        build_bm25_shards(docs, path, n_shards=2)
        opened.append(ShardedSearcher(path))
        return opened[-1]

    yield Contracted(build, lexical=True)
    for searcher in opened:
        searcher.close()


class TestShardedSearcherContract(SearcherContract):
    """The contract every core searcher keeps, for the Ray-sharded one."""


# ---------------------------------------------------------------------- edits


@pytest.mark.parametrize("kind", ["bm25", "vector", "sparse"])
def test_edits_keep_sharded_equal_to_one_index(cluster: Any, docs: list[Doc],
                                               queries: list[str], tmp_path: Path,
                                               kind: str) -> None:
    base = docs[:600]
    if kind == "bm25":
        build_bm25_shards(ray.data.from_items([{"id": d.id, "text": d.text} for d in base]),
                          tmp_path / "idx", n_shards=2)
        whole: Any = BM25Index.from_docs([Doc(d.id, d.text) for d in base])
    elif kind == "sparse":
        build_sparse_shards([Doc(d.id, d.text) for d in base], tmp_path / "idx", n_shards=2,
                            vectors=HashingSparseEmbedder().embed_documents(
                                [d.text for d in base]))
        whole = SparseIndex.from_docs([Doc(d.id, d.text) for d in base],
                                      embedder=HashingSparseEmbedder())
    else:
        vectors = HashingEmbedder(DIM).embed_documents([d.text for d in base])
        build_vector_shards([Doc(d.id, d.text) for d in base], tmp_path / "idx", n_shards=2,
                            vectors=vectors)
        whole = VectorIndex.from_docs([Doc(d.id, d.text) for d in base],
                                      embedder=HashingEmbedder(DIM))
    new = [("n1", "supersonic flutter of a quokka panel"), ("n2", "boundary layer suction"),
           ("n3", "quokka quokka heat transfer"), (base[5].id + "x", "wing lift")]
    gone = [base[0].id, base[17].id, base[599].id, "n2"]
    embedder: Any = HashingSparseEmbedder() if kind == "sparse" else HashingEmbedder(DIM)
    with ShardedSearcher(tmp_path / "idx", embedder=embedder) as sharded:
        assert sharded.add([t for _, t in new], ids=[i for i, _ in new]) == [i for i, _ in new]
        whole.add([t for _, t in new], ids=[i for i, _ in new])
        sharded.delete(gone)
        whole.delete(gone)
        with pytest.raises(ValueError, match="already in the index"):
            sharded.add(["dup", "ok"], ids=[base[3].id, "fresh"])
        with pytest.raises(KeyError, match="not in the index"):
            sharded.delete(["n1", "no-such-id"])
        assert len(sharded) == len(whole)
        if kind == "bm25":
            assert sharded.collection_stats == CollectionStats.of_index(whole)
        for q in queries[:60] + ["quokka flutter", "suction"]:
            assert_same(sharded.search(q, 10), whole.search(q, 10))
    # Edits were saved: a new searcher over the same folder answers the same.
    with ShardedSearcher(tmp_path / "idx", embedder=embedder) as reopened:
        assert len(reopened) == len(whole)
        for q in queries[:20] + ["quokka flutter"]:
            assert_same(reopened.search(q, 10), whole.search(q, 10))


def test_build_errors_are_the_original_exceptions(cluster: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate"):
        build_bm25_shards([Doc("a", "wing"), Doc("a", "lift")], tmp_path / "dup", n_shards=2)
    with pytest.raises(ValueError, match="empty corpus"):
        build_bm25_shards([], tmp_path / "empty", n_shards=2)
    with pytest.raises(FileExistsError, match="not a sharded index"):
        (tmp_path / "taken").mkdir()
        (tmp_path / "taken" / "notes.txt").write_text("mine")
        build_bm25_shards([Doc("a", "wing")], tmp_path / "taken", n_shards=1)


# ---------------------------------------------------------------------- faults


def _slow(doc: Doc) -> bool:
    time.sleep(0.002)
    return True


def test_killed_shard_actor_recovers_mid_run(bm25_dir: Path, whole_bm25: BM25Index,
                                             queries: list[str]) -> None:
    with ShardedSearcher(bm25_dir, max_restarts=2) as sharded:
        victim = sharded.actors[1]
        pid_before = ray.get(victim.ping.remote())
        # A kill while queries stream in: every answer is still complete and exact.
        for i, q in enumerate(queries[:30]):
            if i == 10:
                ray.kill(victim, no_restart=False)
            assert_same(sharded.search(q, 10), whole_bm25.search(q, 10))
        assert ray.get(victim.ping.remote()) != pid_before
        # A kill while a query is running inside the shard: the call is retried once.
        result: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: result.update(
            hits=sharded.search("flow", 10, filter=_slow)))
        worker.start()
        time.sleep(0.3)
        ray.kill(sharded.actors[1], no_restart=False)
        worker.join(60)
        assert_same(result["hits"], whole_bm25.search("flow", 10))


def test_unavailable_shard_gives_clear_error_or_flagged_partial(
    bm25_dir: Path, whole_bm25: BM25Index, queries: list[str]
) -> None:
    with ShardedSearcher(bm25_dir, max_restarts=0) as sharded:
        ray.kill(sharded.actors[0], no_restart=True)
        with pytest.raises(ShardUnavailableError, match=r"#0 \(.*shard-00000\)") as err:
            sharded.search(queries[0], 10)
        assert err.value.shards == (0,)
        with pytest.raises(ShardUnavailableError, match="shard-00000"):
            asyncio.run(sharded.asearch(queries[0], 10))
        with pytest.raises(ShardUnavailableError, match="shard-00000"):
            sharded.delete([d.id for d in whole_bm25.docs if shard_of(d.id, 3) == 0][:1])
        with pytest.warns(PartialResultsWarning, match="2 of 3 shards"):
            partial = sharded.search(queries[0], 10, allow_partial=True)
        assert isinstance(partial, PartialHits) and partial.partial
        assert partial.missing_shards == (0,)
        assert all(h.explanation["missing_shards"] == [0] for h in partial)
        survivors = [h for h in whole_bm25.search(queries[0], 1400)
                     if shard_of(h.id, 3) != 0][:10]
        assert [h.id for h in partial] == [h.id for h in survivors]


def test_per_call_timeout(bm25_dir: Path) -> None:
    with ShardedSearcher(bm25_dir) as sharded:
        with pytest.raises(ShardTimeoutError, match="did not answer within 0.05s") as err:
            sharded.search("flow", 10, filter=_slow, timeout=0.05)
        assert len(err.value.shards) >= 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PartialResultsWarning)
            got = sharded.search("flow", 10, filter=_slow, timeout=0.05, allow_partial=True)
        assert isinstance(got, PartialHits) and got.partial


# ---------------------------------------------------------------------- composition


class _OverlapScorer:
    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return np.array([len(set(q.lower().split()) & set(p.lower().split())) + len(p) * 1e-6
                         for q, p in pairs], dtype=np.float32)


def test_core_searchers_compose_over_shards(sharded_bm25: ShardedSearcher,
                                            sharded_dense: ShardedSearcher,
                                            whole_bm25: BM25Index, whole_dense: VectorIndex,
                                            queries: list[str]) -> None:
    hyde = HyDE(lambda q: f"A passage about {q}", HashingEmbedder(DIM))
    pairs = [
        (FusionSearcher([sharded_bm25, sharded_dense], names=["bm25", "dense"]),
         FusionSearcher([whole_bm25, whole_dense], names=["bm25", "dense"])),
        (FusionSearcher([sharded_bm25, sharded_dense], mode="relative_score"),
         FusionSearcher([whole_bm25, whole_dense], mode="relative_score")),
        (HyDESearcher(hyde, sharded_dense, expand=sharded_bm25),
         HyDESearcher(hyde, whole_dense, expand=whole_bm25)),
        (RerankingSearcher(sharded_bm25, Reranker(_OverlapScorer(), top_n=5)),
         RerankingSearcher(whole_bm25, Reranker(_OverlapScorer(), top_n=5))),
    ]
    for sharded, local in pairs:
        for q in queries[:8]:
            assert_same(sharded.search(q, 5), local.search(q, 5))


def test_langchain_fusion_over_sharded_children(sharded_bm25: ShardedSearcher,
                                                sharded_dense: ShardedSearcher,
                                                whole_bm25: BM25Index,
                                                whole_dense: VectorIndex,
                                                queries: list[str]) -> None:
    from langchain_hybrid_retrievers import (
        BM25Retriever,
        DenseRetriever,
        FusionRetriever,
        SearcherRetriever,
    )

    sharded = FusionRetriever(
        retrievers=[SearcherRetriever(searcher=sharded_bm25), SearcherRetriever(
            searcher=sharded_dense)], names=["bm25", "dense"], k=5)
    local = FusionRetriever(retrievers=[BM25Retriever(index=whole_bm25),
                                        DenseRetriever(index=whole_dense)],
                            names=["bm25", "dense"], k=5)
    for q in queries[:5]:
        got, want = sharded.invoke(q), local.invoke(q)
        assert [d.id for d in got] == [d.id for d in want]
        assert [d.metadata["score"] for d in got] == pytest.approx(
            [d.metadata["score"] for d in want], abs=1e-9)
        agot = asyncio.run(sharded.ainvoke(q, k=3))
        assert [d.id for d in agot] == [d.id for d in want[:3]]
    child = SearcherRetriever(searcher=sharded_bm25, k=3)
    assert [d.metadata["rank"] for d in child.invoke(queries[0])] == [1, 2, 3]


def test_llama_index_fusion_over_sharded_children(sharded_bm25: ShardedSearcher,
                                                  sharded_dense: ShardedSearcher,
                                                  whole_bm25: BM25Index,
                                                  whole_dense: VectorIndex,
                                                  queries: list[str]) -> None:
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from llama_index_hybrid_retrievers import (
        BM25Retriever,
        DenseRetriever,
        FusionRetriever,
        SearcherRetriever,
    )

    sharded = FusionRetriever([SearcherRetriever(sharded_bm25, similarity_top_k=20),
                               SearcherRetriever(sharded_dense, similarity_top_k=20)],
                              similarity_top_k=5, names=["bm25", "dense"])
    local = FusionRetriever([BM25Retriever(whole_bm25, similarity_top_k=20),
                             DenseRetriever(whole_dense, similarity_top_k=20)],
                            similarity_top_k=5, names=["bm25", "dense"])
    for q in queries[:5]:
        got, want = sharded.retrieve(q), local.retrieve(q)
        assert [n.node.node_id for n in got] == [n.node.node_id for n in want]
        assert [n.score for n in got] == pytest.approx([n.score for n in want], abs=1e-9)
        agot = asyncio.run(sharded.aretrieve(q))
        assert [n.node.node_id for n in agot] == [n.node.node_id for n in want]
    response = RetrieverQueryEngine.from_args(sharded, llm=MockLLM()).query(queries[0])
    assert [n.node.node_id for n in response.source_nodes] == \
        [n.node.node_id for n in local.retrieve(queries[0])]


# LangChain's standard retriever suite over a HybridRetriever whose core fusion's children
# are sharded.
_SHARDED: dict[str, ShardedSearcher] = {}

try:
    from langchain_tests.integration_tests import RetrieversIntegrationTests
except ImportError:  # pragma: no cover - langchain-tests is in the test extra
    RetrieversIntegrationTests = object  # type: ignore[assignment,misc]


class TestShardedHybridRetrieverStandard(RetrieversIntegrationTests):  # type: ignore[misc]
    @pytest.fixture(autouse=True)
    def _shards(self, sharded_bm25: ShardedSearcher, sharded_dense: ShardedSearcher) -> None:
        _SHARDED.update(bm25=sharded_bm25, dense=sharded_dense)

    @property
    def retriever_constructor(self) -> type:
        from langchain_hybrid_retrievers import HybridRetriever

        return HybridRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"searcher": FusionSearcher([_SHARDED["bm25"], _SHARDED["dense"]],
                                           names=["bm25", "dense"])}

    @property
    def retriever_query_example(self) -> str:
        return "what is the lift of a flat plate at supersonic speed"
