"""HybridRetriever / FusionRetriever save and load in both frameworks (one shared format)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from hybrid_retrievers.persistence import current_files
from hybrid_retrievers.models import HashingEmbedder  # noqa: E402
from hybrid_retrievers.persistence import IndexFormatError  # noqa: E402

TEXTS = ["wings generate lift at low speed", "cats sleep all day long",
         "lift and drag of swept wings", "bread dough rises overnight",
         "boundary layer transition on wings"]
IDS = ["a", "b", "c", "d", "e"]
QUERY = "wing lift"


def test_langchain_hybrid_and_nested_fusion_round_trip(tmp_path: Path) -> None:
    from langchain_hybrid_retrievers import BM25Retriever, FusionRetriever, HybridRetriever

    emb = HashingEmbedder(dimension=64)
    hybrid = HybridRetriever.from_texts(TEXTS, embedding=emb, ids=IDS, k=3, weights=[2, 1])
    hybrid.save_local(tmp_path / "hybrid")
    # save_local is FusionSearcher.save: query-time fields (k...) are given to load_local.
    loaded = HybridRetriever.load_local(tmp_path / "hybrid", embedding=emb, k=3)
    assert isinstance(loaded, HybridRetriever) and loaded.k == 3
    assert loaded.searcher.plan.weights == (2.0, 1.0)
    assert [d.id for d in loaded.invoke(QUERY)] == [d.id for d in hybrid.invoke(QUERY)]
    assert loaded.invoke(QUERY)[0].metadata == hybrid.invoke(QUERY)[0].metadata

    nested = FusionRetriever(retrievers=[hybrid, BM25Retriever.from_texts(TEXTS[:3], ids=IDS[:3])],
                             names=["hybrid", "small"], mode="relative_score", k=2)
    nested.save_local(tmp_path / "nested")
    again = FusionRetriever.load_local(tmp_path / "nested", embedding=emb, k=4)
    assert again.k == 4 and again.names == ["hybrid", "small"]
    assert [d.id for d in again.invoke(QUERY, k=2)] == [d.id for d in nested.invoke(QUERY)]

    with pytest.raises(ValueError, match="embedding="):
        HybridRetriever.load_local(tmp_path / "hybrid")
    with pytest.raises(IndexFormatError, match="holds a 'bm25' index, not 'fusion'"):
        HybridRetriever.load_local(current_files(tmp_path / "hybrid") / "child_0", embedding=emb)


def test_langchain_fusion_of_a_foreign_retriever_refuses_to_save(tmp_path: Path) -> None:
    from langchain_core.retrievers import BaseRetriever

    from langchain_hybrid_retrievers import BM25Retriever, FusionRetriever

    class Other(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return []

    fused = FusionRetriever(retrievers=[BM25Retriever.from_texts(TEXTS), Other()])
    with pytest.raises(TypeError, match="cannot save child 1 \\(Other\\)"):
        fused.save_local(tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_llama_index_hybrid_round_trip_and_cross_framework(tmp_path: Path) -> None:
    from llama_index.core.schema import TextNode

    from langchain_hybrid_retrievers import HybridRetriever as LCHybrid
    from llama_index_hybrid_retrievers import HybridRetriever

    emb = HashingEmbedder(dimension=64)
    nodes = [TextNode(id_=i, text=t) for i, t in zip(IDS, TEXTS)]
    hybrid = HybridRetriever.from_defaults(nodes=nodes, embed_model=emb, similarity_top_k=3)
    hybrid.persist(tmp_path / "li")
    loaded = HybridRetriever.from_persist_dir(tmp_path / "li", embed_model=emb)
    assert loaded.similarity_top_k == 3 and loaded.searcher.fetch_k is None  # per call
    expected = [n.node.node_id for n in hybrid.retrieve(QUERY)]
    assert [n.node.node_id for n in loaded.retrieve(QUERY)] == expected
    # The LangChain adapter reads the same folder, and the other way round.
    # (A bare FusionSearcher folder keeps no query-time settings: k is given again.)
    lc = LCHybrid.load_local(tmp_path / "li", embedding=emb, k=3)
    assert [d.id for d in lc.invoke(QUERY)] == expected
    lc.save_local(tmp_path / "lc")
    back = HybridRetriever.from_persist_dir(tmp_path / "lc", embed_model=emb,
                                            similarity_top_k=3)
    assert [n.node.node_id for n in back.retrieve(QUERY)] == expected
    with pytest.raises(ValueError, match="embed_model="):
        HybridRetriever.from_persist_dir(tmp_path / "li")


def test_llama_index_fusion_with_a_hybrid_child_round_trips(tmp_path: Path) -> None:
    from llama_index.core.schema import TextNode

    from hybrid_retrievers import FusionSearcher
    from llama_index_hybrid_retrievers import BM25Retriever, FusionRetriever, HybridRetriever

    emb = HashingEmbedder(dimension=64)
    nodes = [TextNode(id_=i, text=t) for i, t in zip(IDS, TEXTS)]
    hybrid = HybridRetriever.from_defaults(nodes=nodes, embed_model=emb, similarity_top_k=3)
    nested = FusionRetriever([hybrid, BM25Retriever.from_defaults(nodes=nodes[:3])],
                             names=["hybrid", "small"], similarity_top_k=2)
    nested.persist(tmp_path / "nested")
    again = FusionRetriever.from_persist_dir(tmp_path / "nested", embed_model=emb)
    assert isinstance(again.retrievers[0], HybridRetriever)
    assert again.retrievers[0].similarity_top_k == 3 and again.names == ("hybrid", "small")
    expected = [n.node.node_id for n in nested.retrieve(QUERY)]
    assert [n.node.node_id for n in again.retrieve(QUERY)] == expected
    # The core reads the same folder (each child's index under its index_dir).
    core = FusionSearcher.load(tmp_path / "nested", emb)
    assert [h.id for h in core.search(QUERY, 2, fetch_k=3)] == expected


def test_a_nested_bm25_and_sparse_hybrid_loads_without_a_dense_model(tmp_path: Path) -> None:
    # A nested fusion child is checked by its own loader against the legs it has: a
    # BM25 + sparse hybrid inside a fusion needs the sparse model only.
    from hybrid_retrievers import BM25Index, FusionSearcher
    from hybrid_retrievers.models import HashingSparseEmbedder
    from langchain_hybrid_retrievers import FusionRetriever

    sparse = HashingSparseEmbedder()
    lexical = FusionSearcher.hybrid(TEXTS, None, ids=IDS, sparse=sparse)
    outer = FusionSearcher([lexical, BM25Index.from_texts(TEXTS[:3], ids=IDS[:3])])
    outer.save(tmp_path / "outer")
    expected = [hit.id for hit in outer.search(QUERY, k=3)]

    core = FusionSearcher.load(tmp_path / "outer", sparse_embedder=sparse)
    assert [hit.id for hit in core.search(QUERY, k=3)] == expected
    loaded = FusionRetriever.load_local(tmp_path / "outer", sparse_embedding=sparse, k=3)
    assert [d.id for d in loaded.invoke(QUERY)] == expected
    with pytest.raises(ValueError, match="sparse_embedding="):
        FusionRetriever.load_local(tmp_path / "outer", k=3)
