"""Tests for `llama_index_hybrid_retrievers.DenseRetriever` and `LlamaIndexEmbedder`.

Covers construction from nodes and from a docstore, `QueryBundle.embedding` and
``custom_embedding_strs`` (so LlamaIndex's own `HyDEQueryTransform` works, checked against
LlamaIndex's own `VectorStoreIndex` retriever), filters, async, persistence, caching,
`RetrieverQueryEngine` / `TransformQueryEngine` with `MockLLM`, and that inputs are never
mutated. Rankings come from `HashingEmbedder` (lexical-ish, deterministic) wrapped as a
LlamaIndex `BaseEmbedding`; LlamaIndex's `MockEmbedding` (one constant vector) is used only
where rankings do not matter.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.indices.query.query_transform import HyDEQueryTransform
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine, TransformQueryEngine
from llama_index.core.retrievers import TransformRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from pydantic import PrivateAttr

import llama_index_hybrid_retrievers
from hybrid_retrievers.persistence import current_files
from hybrid_retrievers import Doc
from hybrid_retrievers.vector import EmbeddingCache
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.vector import VectorIndex
from llama_index_hybrid_retrievers import DenseRetriever, LlamaIndexEmbedder

from corpora import CORPUS, QUERIES, WING_QUERY

DIM = 256


class HashingLlamaEmbedding(BaseEmbedding):
    """A LlamaIndex `BaseEmbedding` over `HashingEmbedder` that records its calls."""

    _inner: HashingEmbedder = PrivateAttr()
    _queries: list[str] = PrivateAttr(default_factory=list)
    _async_queries: list[str] = PrivateAttr(default_factory=list)
    _texts_embedded: int = PrivateAttr(default=0)

    def __init__(self, dimension: int = DIM, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", f"hashing-{dimension}")
        super().__init__(**kwargs)
        self._inner = HashingEmbedder(dimension=dimension)

    @classmethod
    def class_name(cls) -> str:
        return "HashingLlamaEmbedding"

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._texts_embedded += len(texts)
        return self._inner.embed_documents(texts).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        self._queries.append(query)
        return self._inner.embed_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        self._async_queries.append(query)
        await asyncio.sleep(0)
        return self._inner.embed_query(query).tolist()


class ThreadRecordingEmbedder(HashingEmbedder):
    """A core embedder (no async methods) that records the thread of each query."""

    def __init__(self) -> None:
        super().__init__(dimension=DIM)
        self.query_threads: list[int] = []

    def embed_query(self, text: str) -> Any:
        self.query_threads.append(threading.get_ident())
        return super().embed_query(text)


@pytest.fixture
def nodes() -> list[TextNode]:
    """The corpus as TextNodes with ids (fresh objects per test)."""
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def embed_model() -> HashingLlamaEmbedding:
    return HashingLlamaEmbedding()


@pytest.fixture
def retriever(nodes: list[TextNode], embed_model: HashingLlamaEmbedding) -> DenseRetriever:
    return DenseRetriever.from_defaults(nodes=nodes, embed_model=embed_model)


def _ids(results: list[NodeWithScore]) -> list[str]:
    return [r.node.node_id for r in results]


def _pairs(results: list[NodeWithScore]) -> list[tuple[str, float | None]]:
    return [(r.node.node_id, r.score) for r in results]


def _hit_pairs(hits: list[Any]) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in hits]


def _mean_query_vector(strs: list[str]) -> np.ndarray:
    inner = HashingEmbedder(dimension=DIM)
    return np.mean([inner.embed_query(s) for s in strs], axis=0)


# ------------------------------------------------------------------- building


def test_package_exports() -> None:
    # Other modules add exports too: check ours are there rather than the whole list.
    assert {"DenseRetriever", "LlamaIndexEmbedder"} <= set(llama_index_hybrid_retrievers.__all__)
    assert llama_index_hybrid_retrievers.DenseRetriever is DenseRetriever


def test_from_nodes_returns_original_nodes_with_core_scores(
    retriever: DenseRetriever, nodes: list[TextNode]
) -> None:
    assert isinstance(retriever.index.embedder, LlamaIndexEmbedder)
    by_id = {n.node_id: n for n in nodes}
    for query in QUERIES:
        results = retriever.retrieve(query)
        assert _pairs(results) == _hit_pairs(retriever.index.search(query, k=4))
        assert all(isinstance(r, NodeWithScore) for r in results)
        assert all(r.node is by_id[r.node.node_id] for r in results)
    assert sorted(_ids(retriever.retrieve(WING_QUERY))[:3]) == ["aero-1", "aero-3", "aero-4"]
    assert _ids(retriever.retrieve("soil compost plant roots"))[0] == "garden-2"


def test_llama_index_model_and_core_embedder_rank_identically(
    retriever: DenseRetriever, nodes: list[TextNode]
) -> None:
    core = DenseRetriever.from_defaults(nodes=nodes, embed_model=HashingEmbedder(dimension=DIM))
    assert isinstance(core.index.embedder, HashingEmbedder)
    for query in QUERIES:
        a, b = retriever.retrieve(query), core.retrieve(query)
        assert _ids(a) == _ids(b)
        np.testing.assert_allclose([r.score for r in a], [r.score for r in b], atol=1e-6)


def test_from_docstore_equals_from_nodes(nodes: list[TextNode]) -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    emb = HashingEmbedder(dimension=DIM)
    from_store = DenseRetriever.from_defaults(
        docstore=docstore, embed_model=emb, similarity_top_k=3
    )
    from_nodes = DenseRetriever.from_defaults(nodes=nodes, embed_model=emb, similarity_top_k=3)
    assert sorted(from_store.index.ids) == sorted(n.node_id for n in nodes)
    for query in QUERIES:
        assert _pairs(from_store.retrieve(query)) == _pairs(from_nodes.retrieve(query))


def test_from_defaults_needs_exactly_one_source_and_a_model(nodes: list[TextNode]) -> None:
    emb = HashingEmbedder(dimension=DIM)
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    with pytest.raises(ValueError, match="neither"):
        DenseRetriever.from_defaults(embed_model=emb)
    with pytest.raises(ValueError, match="both"):
        DenseRetriever.from_defaults(nodes=nodes, docstore=docstore, embed_model=emb)
    with pytest.raises(ValueError, match="empty corpus"):
        DenseRetriever.from_defaults(nodes=[], embed_model=emb)
    with pytest.raises(TypeError, match="nodes"):
        DenseRetriever.from_defaults(
            nodes=["plain text"], embed_model=emb  # type: ignore[list-item]
        )
    with pytest.raises(TypeError, match="embed_model"):
        DenseRetriever.from_defaults(nodes=nodes)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="embed_model must be"):
        DenseRetriever.from_defaults(nodes=nodes, embed_model=None)
    with pytest.raises(TypeError, match="index"):
        DenseRetriever(nodes)  # type: ignore[arg-type]
    bare = VectorIndex.from_vectors(np.eye(3, dtype=np.float32), ids=["a", "b", "c"])
    with pytest.raises(ValueError, match="embedder"):
        DenseRetriever(bare)


def test_settings_are_passed_to_the_core(nodes: list[TextNode]) -> None:
    cache = EmbeddingCache()
    retriever = DenseRetriever.from_defaults(
        nodes=nodes, embed_model=HashingEmbedder(dimension=DIM), metric="dot", cache=cache,
        batch_size=5, similarity_top_k=2,
    )
    assert retriever.index.metric == "dot" and retriever.index.cache is cache
    assert len(cache) == len(CORPUS)
    assert _pairs(retriever.retrieve("wings")) == _hit_pairs(retriever.index.search("wings", 2))


def test_cache_avoids_re_embedding(nodes: list[TextNode]) -> None:
    cache, model = EmbeddingCache(), HashingLlamaEmbedding()
    first = DenseRetriever.from_defaults(nodes=nodes, embed_model=model, cache=cache)
    embedded = model._texts_embedded
    assert embedded == len(CORPUS)
    second = DenseRetriever.from_defaults(nodes=nodes, embed_model=model, cache=cache)
    assert model._texts_embedded == embedded  # no model call for seen texts
    assert cache.model_ids == ["HashingLlamaEmbedding(hashing-256)"]
    assert _pairs(first.retrieve(WING_QUERY)) == _pairs(second.retrieve(WING_QUERY))


def test_indexed_text_excludes_metadata() -> None:
    node = TextNode(id_="n", text="Lift on a wing.", metadata={"source": "zeppelin manual"})
    other = TextNode(id_="m", text="A zeppelin manual.")
    retriever = DenseRetriever.from_defaults(
        nodes=[node, other], embed_model=HashingEmbedder(dimension=DIM)
    )
    assert retriever.index.get("n").text == node.get_content(metadata_mode=MetadataMode.NONE)
    assert _ids(retriever.retrieve("zeppelin manual"))[0] == "m"
    assert _ids(retriever.retrieve("wing lift"))[0] == "n"


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_similarity_top_k_is_a_clear_value_error(nodes: list[TextNode], bad: int) -> None:
    with pytest.raises(ValueError, match="similarity_top_k must be >= 1"):
        DenseRetriever.from_defaults(nodes=nodes, embed_model=MockEmbedding(embed_dim=4),
                                     similarity_top_k=bad)


def test_similarity_top_k_is_validated_on_assignment(retriever: DenseRetriever) -> None:
    with pytest.raises(TypeError, match="similarity_top_k"):
        retriever.similarity_top_k = True  # type: ignore[assignment]
    with pytest.raises(ValueError, match="similarity_top_k"):
        retriever.similarity_top_k = 0
    retriever.similarity_top_k = 2
    assert len(retriever.retrieve(WING_QUERY)) == 2
    retriever.similarity_top_k = 50
    assert len(retriever.retrieve(WING_QUERY)) == len(CORPUS)


def test_mock_embedding_returns_similarity_top_k_nodes(nodes: list[TextNode]) -> None:
    retriever = DenseRetriever.from_defaults(
        nodes=nodes, embed_model=MockEmbedding(embed_dim=8), similarity_top_k=3
    )
    assert retriever.index.dimension == 8
    results = retriever.retrieve("anything")
    assert len(results) == 3 and len(set(_ids(results))) == 3


# ------------------------------------------------------------ LlamaIndexEmbedder


def test_llama_index_embedder_converts_to_float32() -> None:
    emb = LlamaIndexEmbedder(HashingLlamaEmbedding(dimension=32))
    assert emb.dimension is None  # not probed at construction
    docs = emb.embed_documents(["a cat", "a dog"])
    assert docs.dtype == np.float32 and docs.shape == (2, 32) and docs.flags.c_contiguous
    assert emb.dimension == 32
    query = emb.embed_query("a cat")
    assert query.dtype == np.float32 and query.shape == (32,)
    np.testing.assert_allclose(query, docs[0], atol=1e-7)
    np.testing.assert_allclose(emb.embed_queries(["a cat", "a dog"]), docs, atol=1e-7)
    assert asyncio.run(emb.aembed_queries(["a cat"])).shape == (1, 32)


def test_llama_index_embedder_model_id_and_dimension() -> None:
    model = HashingLlamaEmbedding()
    assert LlamaIndexEmbedder(model).model_id == "HashingLlamaEmbedding(hashing-256)"
    assert LlamaIndexEmbedder(model, model_id="mine").model_id == "mine"
    mock = MockEmbedding(embed_dim=8)  # model_name is LlamaIndex's "unknown"
    assert LlamaIndexEmbedder(mock).model_id is None
    assert LlamaIndexEmbedder(mock).dimension == 8
    with pytest.raises(ValueError, match="model_id"):
        DenseRetriever.from_defaults(
            nodes=[TextNode(text="a")], embed_model=mock, cache=EmbeddingCache()
        )


def test_llama_index_embedder_rejects_bad_input_and_output() -> None:
    with pytest.raises(TypeError, match="BaseEmbedding"):
        LlamaIndexEmbedder(HashingEmbedder())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model_id"):
        LlamaIndexEmbedder(MockEmbedding(embed_dim=4), model_id="")
    with pytest.raises(ValueError, match="dimension"):
        LlamaIndexEmbedder(MockEmbedding(embed_dim=4), dimension=-2)
    wrong = LlamaIndexEmbedder(MockEmbedding(embed_dim=4), dimension=6)
    with pytest.raises(ValueError, match="6-d"):
        wrong.embed_query("a")
    with pytest.raises(TypeError, match="single str"):
        LlamaIndexEmbedder(MockEmbedding(embed_dim=4)).embed_documents(
            "abc"  # type: ignore[arg-type]
        )


# ------------------------------------------------------------------ filters


def test_mapping_and_callable_filters(nodes: list[TextNode]) -> None:
    emb = HashingEmbedder(dimension=DIM)
    by_map = DenseRetriever.from_defaults(
        nodes=nodes, embed_model=emb, similarity_top_k=10, filters={"topic": "cooking"}
    )
    results = by_map.retrieve("the bread")
    assert len(results) == 3 and {r.node.metadata["topic"] for r in results} == {"cooking"}

    seen: list[Any] = []

    def recent_aero(doc: Doc) -> bool:
        seen.append(doc)
        return doc.metadata["topic"] == "aero" and doc.metadata["year"] >= 2000

    by_fn = DenseRetriever.from_defaults(
        nodes=nodes, embed_model=emb, similarity_top_k=10, filters=recent_aero
    )
    assert sorted(_ids(by_fn.retrieve(WING_QUERY))) == ["aero-4", "aero-5"]
    assert seen and all(isinstance(d, Doc) for d in seen)


def test_llama_index_metadata_filters(nodes: list[TextNode]) -> None:
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="topic", value="aero"),
            MetadataFilter(key="year", value=1965, operator=FilterOperator.GT),
        ]
    )
    retriever = DenseRetriever.from_defaults(
        nodes=nodes, embed_model=HashingEmbedder(dimension=DIM), similarity_top_k=10,
        filters=filters,
    )
    assert retriever.filters is filters
    want = retriever.index.search(
        WING_QUERY, 10, filter=lambda d: d.metadata["topic"] == "aero" and d.metadata["year"] > 1965
    )
    assert _pairs(retriever.retrieve(WING_QUERY)) == _hit_pairs(want)
    assert sorted(_ids(retriever.retrieve(WING_QUERY))) == ["aero-3", "aero-4", "aero-5"]


def test_bad_filter_kind_is_a_type_error(nodes: list[TextNode]) -> None:
    with pytest.raises(TypeError, match="filter"):
        DenseRetriever.from_defaults(
            nodes=nodes, embed_model=MockEmbedding(embed_dim=4), filters=42  # type: ignore[arg-type]
        )


# ------------------------------------------------------------ query bundles


def test_query_bundle_embedding_is_searched_without_calling_the_model(
    retriever: DenseRetriever, embed_model: HashingLlamaEmbedding
) -> None:
    vector = HashingEmbedder(dimension=DIM).embed_documents([CORPUS[6][1]])[0].tolist()
    bundle = QueryBundle(query_str="ignored for dense search", embedding=vector)
    results = retriever.retrieve(bundle)
    assert _ids(results)[0] == "bread-2"
    assert results[0].score == pytest.approx(1.0, abs=1e-5)
    assert _pairs(results) == _hit_pairs(retriever.index.search_vector(vector, 4))
    assert embed_model._queries == []


def test_custom_embedding_strs_are_embedded_and_averaged(
    retriever: DenseRetriever, embed_model: HashingLlamaEmbedding
) -> None:
    strs = ["bread dough yeast", "soil compost plant roots"]
    bundle = QueryBundle(query_str=WING_QUERY, custom_embedding_strs=list(strs))
    results = retriever.retrieve(bundle)
    assert embed_model._queries == strs  # query_str itself is not embedded
    want = retriever.index.search_vector(_mean_query_vector(strs), 4)
    assert _ids(results) == [h.id for h in want]
    np.testing.assert_allclose([r.score for r in results], [h.score for h in want], atol=1e-6)
    assert {"garden-2", "bread-1"} <= set(_ids(results))
    assert bundle.embedding is None and bundle.custom_embedding_strs == strs  # not mutated


def test_bad_custom_embedding_strs_are_clear_errors(retriever: DenseRetriever) -> None:
    with pytest.raises(ValueError, match="custom_embedding_strs"):
        retriever.retrieve(QueryBundle(query_str=WING_QUERY, custom_embedding_strs=[]))
    with pytest.raises(ValueError, match=r"custom_embedding_strs\[1\]"):
        retriever.retrieve(QueryBundle(query_str=WING_QUERY, custom_embedding_strs=["a", " "]))


def test_blank_query_is_a_clear_error(retriever: DenseRetriever) -> None:
    with pytest.raises(ValueError, match="query"):
        retriever.retrieve("   ")


def test_hyde_query_transform_with_transform_retriever(
    nodes: list[TextNode], embed_model: HashingLlamaEmbedding
) -> None:
    retriever = DenseRetriever.from_defaults(nodes=nodes, embed_model=embed_model)
    hyde = HyDEQueryTransform(llm=MockLLM(), include_original=True)
    results = TransformRetriever(retriever, hyde).retrieve(WING_QUERY)
    # MockLLM echoes its prompt: the "hypothetical document" is the HyDE prompt.
    strs = hyde.run(WING_QUERY).embedding_strs
    assert len(strs) == 2 and strs[1] == WING_QUERY and WING_QUERY in strs[0]
    assert embed_model._queries == strs
    want = retriever.index.search_vector(_mean_query_vector(strs), 4)
    assert _ids(results) == [h.id for h in want]

    # LlamaIndex's own vector retriever, same model and nodes, same transform: same ranking.
    plain = [TextNode(id_=i, text=t) for i, t, _ in CORPUS]  # no metadata in embed text
    theirs_index = VectorStoreIndex(plain, embed_model=HashingLlamaEmbedding())
    theirs = TransformRetriever(theirs_index.as_retriever(similarity_top_k=4), hyde)
    theirs_results = theirs.retrieve(WING_QUERY)
    assert _ids(theirs_results) == _ids(results)
    np.testing.assert_allclose(
        [r.score for r in theirs_results], [r.score for r in results], atol=1e-5
    )


def test_same_ranking_as_llama_index_vector_store_index(nodes: list[TextNode]) -> None:
    plain = [TextNode(id_=i, text=t) for i, t, _ in CORPUS]
    ours = DenseRetriever.from_defaults(nodes=plain, embed_model=HashingLlamaEmbedding())
    theirs = VectorStoreIndex(plain, embed_model=HashingLlamaEmbedding()).as_retriever(
        similarity_top_k=4
    )
    for query in QUERIES:
        a, b = ours.retrieve(query), theirs.retrieve(query)
        # Ties (zero similarity) may be ordered differently; compare the positive part.
        pos = [r for r in b if r.score and r.score > 1e-6]
        assert _ids(a)[: len(pos)] == _ids(pos)
        np.testing.assert_allclose(
            [r.score for r in a[: len(pos)]], [r.score for r in pos], atol=1e-5
        )


def test_hyde_inside_transform_query_engine(
    retriever: DenseRetriever, embed_model: HashingLlamaEmbedding
) -> None:
    hyde = HyDEQueryTransform(llm=MockLLM(), include_original=True)
    engine = TransformQueryEngine(
        RetrieverQueryEngine.from_args(retriever, llm=MockLLM()), query_transform=hyde
    )
    response = engine.query(WING_QUERY)
    strs = hyde.run(WING_QUERY).embedding_strs
    want = retriever.index.search_vector(_mean_query_vector(strs), 4)
    assert [s.node.node_id for s in response.source_nodes] == [h.id for h in want]
    assert embed_model._queries == strs
    assert isinstance(str(response), str)


# ------------------------------------------------------------------ immutability


def test_inputs_are_not_mutated(nodes: list[TextNode]) -> None:
    before = [n.model_dump() for n in nodes]
    retriever = DenseRetriever.from_defaults(nodes=nodes, embed_model=HashingLlamaEmbedding())
    first = retriever.retrieve(WING_QUERY)
    second = retriever.retrieve(WING_QUERY)
    assert [n.model_dump() for n in nodes] == before
    assert all(n.embedding is None for n in nodes)
    assert all(a is not b for a, b in zip(first, second))  # new NodeWithScore each call
    first[0].score = -1.0
    assert retriever.retrieve(WING_QUERY)[0].score == second[0].score
    nodes[0].metadata["topic"] = "edited"
    assert retriever.index.get(nodes[0].node_id).metadata["topic"] == "aero"


# ------------------------------------------------------------------ async


@pytest.mark.asyncio
async def test_aretrieve_matches_retrieve(retriever: DenseRetriever) -> None:
    for query in QUERIES:
        assert _pairs(await retriever.aretrieve(query)) == _pairs(retriever.retrieve(query))
    vector = HashingEmbedder(dimension=DIM).embed_query(WING_QUERY).tolist()
    for bundle in (
        QueryBundle(query_str=WING_QUERY),
        QueryBundle(query_str="x", embedding=vector),
        QueryBundle(query_str="x", custom_embedding_strs=["bread dough", "wing lift"]),
    ):
        assert _pairs(await retriever.aretrieve(bundle)) == _pairs(retriever.retrieve(bundle))
    gathered = await asyncio.gather(*(retriever.aretrieve(q) for q in QUERIES))
    assert [_pairs(r) for r in gathered] == [_pairs(retriever.retrieve(q)) for q in QUERIES]


@pytest.mark.asyncio
async def test_aretrieve_awaits_the_model_and_searches_in_a_worker_thread(
    retriever: DenseRetriever, embed_model: HashingLlamaEmbedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    search_vector = VectorIndex.search_vector

    def spy(self: VectorIndex, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return search_vector(self, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "search_vector", spy)
    assert len(await retriever.aretrieve(WING_QUERY)) == 4
    await retriever.aretrieve(QueryBundle(query_str="x", custom_embedding_strs=["a b", "c d"]))
    assert embed_model._async_queries == [WING_QUERY, "a b", "c d"]
    assert embed_model._queries == []  # the sync path was not used
    assert len(threads) == 2 and threading.get_ident() not in threads


@pytest.mark.asyncio
async def test_aretrieve_runs_a_sync_embedder_in_a_worker_thread(nodes: list[TextNode]) -> None:
    emb = ThreadRecordingEmbedder()
    retriever = DenseRetriever.from_defaults(nodes=nodes, embed_model=emb)
    assert len(await retriever.aretrieve(WING_QUERY)) == 4
    assert emb.query_threads and emb.query_threads[0] != threading.get_ident()


@pytest.mark.asyncio
async def test_aretrieve_blank_query_fails_before_the_model(
    retriever: DenseRetriever, embed_model: HashingLlamaEmbedding
) -> None:
    with pytest.raises(ValueError, match="query"):
        await retriever.aretrieve("  ")
    assert embed_model._async_queries == []


# ------------------------------------------------------------------ persistence


def test_persist_round_trip(tmp_path: Path, nodes: list[TextNode]) -> None:
    retriever = DenseRetriever.from_defaults(
        nodes=nodes, embed_model=HashingLlamaEmbedding(), metric="dot", similarity_top_k=3
    )
    retriever.persist(tmp_path / "dense")
    loaded = DenseRetriever.from_persist_dir(
        tmp_path / "dense", embed_model=HashingLlamaEmbedding(), similarity_top_k=3
    )
    assert loaded.index.metric == "dot"
    assert loaded.index.model_id == "HashingLlamaEmbedding(hashing-256)"
    by_id = {n.node_id: n for n in nodes}
    for query in QUERIES:
        want = retriever.retrieve(query)
        got = loaded.retrieve(query)
        assert _pairs(got) == _pairs(want)
        for r in got:
            assert isinstance(r.node, TextNode)
            original = by_id[r.node.node_id]
            assert r.node.text == original.text
            assert r.node.metadata == original.metadata
    assert not list((tmp_path / "dense").rglob("*.pkl"))
    # VectorIndex.load reads the index folder: the index format belongs to the core.
    with pytest.warns(UserWarning, match="built with model"):  # same vectors, other name
        core = VectorIndex.load(current_files(tmp_path / "dense") / "index", HashingEmbedder(dimension=DIM))
    assert [h.id for h in core.search(WING_QUERY, 3)] == _ids(loaded.retrieve(WING_QUERY))


def test_from_persist_dir_checks_dimension_and_directory(
    tmp_path: Path, retriever: DenseRetriever
) -> None:
    retriever.persist(tmp_path / "dense")
    with pytest.raises(ValueError, match="8-d"):
        DenseRetriever.from_persist_dir(tmp_path / "dense", embed_model=MockEmbedding(embed_dim=8))
    with pytest.raises(ValueError):
        DenseRetriever.from_persist_dir(
            tmp_path / "missing", embed_model=MockEmbedding(embed_dim=8)
        )


# ------------------------------------------------------------------ query engine


def test_inside_retriever_query_engine(retriever: DenseRetriever) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(WING_QUERY)
    hits = retriever.index.search(WING_QUERY, k=4)
    assert [(s.node.node_id, s.score) for s in response.source_nodes] == _hit_pairs(hits)
    assert isinstance(str(response), str)


@pytest.mark.asyncio
async def test_inside_async_retriever_query_engine(retriever: DenseRetriever) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = await engine.aquery(WING_QUERY)
    hits = retriever.index.search(WING_QUERY, k=4)
    assert [(s.node.node_id, s.score) for s in response.source_nodes] == _hit_pairs(hits)


def test_callback_manager_sees_retrieve_events(nodes: list[TextNode]) -> None:
    debug = LlamaDebugHandler()
    retriever = DenseRetriever.from_defaults(
        nodes=nodes, embed_model=HashingEmbedder(dimension=DIM),
        callback_manager=CallbackManager([debug]),
    )
    results = retriever.retrieve(WING_QUERY)
    pairs = debug.get_event_pairs(CBEventType.RETRIEVE)
    assert len(pairs) == 1
    assert [n.node.node_id for n in pairs[0][1].payload["nodes"]] == _ids(results)


def test_vector_index_is_the_core_index_argument(retriever: DenseRetriever) -> None:
    core = retriever.vector_index
    assert core is retriever.index
    expected = _ids(retriever.retrieve(WING_QUERY))
    assert _ids(DenseRetriever(core).retrieve(WING_QUERY)) == expected
    assert _ids(DenseRetriever(vector_index=core).retrieve(WING_QUERY)) == expected
    with pytest.raises(TypeError, match="vector_index"):
        DenseRetriever(index=core)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"'index' \(pass the core index as vector_index="):
        DenseRetriever(core, index=core)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="vector_index must be a hybrid_retrievers.VectorIndex"):
        DenseRetriever(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must have an embedder"):
        DenseRetriever(VectorIndex(dimension=4))
