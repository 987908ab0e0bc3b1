"""Tests for `langchain_hybrid_retrievers.FusionRetriever` and `HybridRetriever`.

LangChain's standard `RetrieversIntegrationTests`, agreement with the core
`FusionSearcher` / `fuse` (the single source of truth), concurrency of the sync and async
paths, callback wiring, id-based identity (where LangChain's ``EnsembleRetriever``
merges by text), weights, modes, ``fetch_k`` forwarding, provenance and immutability.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from typing import Any
from uuid import UUID

import pytest
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    BaseCallbackHandler,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

import langchain_hybrid_retrievers
from hybrid_retrievers import BM25Index, FusionSearcher, VectorIndex
from hybrid_retrievers.fusion import default_fetch_k, fuse, lexical_boost_rule
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from langchain_hybrid_retrievers import (
    BM25Retriever,
    DenseRetriever,
    FusionRetriever,
    HybridRetriever,
    ScoredVectorStoreRetriever,
)
from langchain_hybrid_retrievers._convert import document_to_hit

from concurrency import Meeting
from corpora import CORPUS, QUERIES, WING_QUERY

DIM = 256


@pytest.fixture
def documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def hybrid(documents: list[Document]) -> HybridRetriever:
    return HybridRetriever.from_documents(documents, HashingEmbedder(dimension=DIM))


@pytest.fixture
def fused(hybrid: HybridRetriever) -> FusionRetriever:
    """The same BM25 + dense pair as LangChain retrievers under a `FusionRetriever`, asking
    them for as many candidates as the hybrid asks its legs (max(k, 20) for k <= 20)."""
    return FusionRetriever(retrievers=_children(hybrid), names=["bm25", "dense"],
                           fetch_k=default_fetch_k(1))


def _children(hybrid: HybridRetriever) -> list[BaseRetriever]:
    """The hybrid's two core indexes, each behind its LangChain retriever."""
    return [BM25Retriever(index=hybrid.bm25), DenseRetriever(index=hybrid.dense)]


def _ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


class ListRetriever(BaseRetriever):
    """Returns a fixed list of documents; records what it was asked; optionally waits at a
    `Meeting` (so it answers only while its siblings are retrieving too)."""

    docs: list[Document]
    meeting: Any = None
    calls: list[dict[str, Any]] = []
    threads: list[int] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        self.calls.append({"query": query, "k": k})
        self.threads.append(threading.get_ident())
        if self.meeting is not None:
            self.meeting.wait()
        return list(self.docs if k is None else self.docs[:k])

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        self.calls.append({"query": query, "k": k, "async": True})
        if self.meeting is not None:
            await self.meeting.await_()
        return list(self.docs if k is None else self.docs[:k])


class NoKRetriever(BaseRetriever):
    """A third-party retriever whose search takes other arguments, but no ``k``."""

    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, filter: Any = None
    ) -> list[Document]:
        return list(self.docs)


def _docs(*ids: str, scores: list[float] | None = None) -> list[Document]:
    out = []
    for pos, i in enumerate(ids):
        meta = {} if scores is None else {"score": scores[pos]}
        out.append(Document(id=i, page_content=f"text of {i}", metadata=meta))
    return out


def _in_memory_retriever(documents: list[Document], k: int = 4) -> BaseRetriever:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(documents)
    return store.as_retriever(search_kwargs={"k": k})


# --------------------------------------------------------------------- standard


class TestFusionRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard suite over our BM25 and a LangChain in-memory vector store."""

    @property
    def retriever_constructor(self) -> type[FusionRetriever]:
        return FusionRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        docs = [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]
        return {"retrievers": [BM25Retriever.from_documents(docs), _in_memory_retriever(docs)]}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY


class TestHybridRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[HybridRetriever]:
        return HybridRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        docs = [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]
        built = HybridRetriever.from_documents(docs, HashingEmbedder(dimension=DIM))
        return {"searcher": built.searcher}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY


def test_package_exports() -> None:
    assert {"FusionRetriever", "HybridRetriever"} <= set(langchain_hybrid_retrievers.__all__)
    assert langchain_hybrid_retrievers.FusionRetriever is FusionRetriever


# ------------------------------------------------------------ same as the core


def test_hybrid_equals_core_fusion_searcher(hybrid: HybridRetriever,
                                           fused: FusionRetriever) -> None:
    assert isinstance(hybrid.bm25, BM25Index) and isinstance(hybrid.dense, VectorIndex)
    assert hybrid.bm25.ids == hybrid.dense.ids
    core = FusionSearcher([hybrid.bm25, hybrid.dense], names=["bm25", "dense"])
    for query in QUERIES:
        for k in (1, 4, 12):
            hits = core.search(query, k)
            # The hybrid (one core searcher) and a FusionRetriever over the same indexes
            # behind LangChain retrievers give the core's answer.
            for docs in (hybrid.invoke(query, k=k), fused.invoke(query, k=k)):
                assert _ids(docs) == [h.id for h in hits]
                assert [d.metadata["score"] for d in docs] == [h.score for h in hits]
                assert [d.metadata["rank"] for d in docs] == list(range(1, len(docs) + 1))
                assert [d.metadata["fusion"] for d in docs] == [
                    h.explanation["fusion"] for h in hits
                ]


@pytest.mark.parametrize(("bm25", "sparse", "found"), [
    (False, None, ["NoneType", "VectorIndex", "NoneType"]),
    (False, HashingSparseEmbedder(), ["NoneType", "VectorIndex", "SparseIndex"]),
    (None, None, ["BM25Index", "VectorIndex", "NoneType"]),
])
def test_legs_are_found_by_name_whichever_are_built(documents: list[Document], bm25: Any,
                                                    sparse: Any, found: list[str]) -> None:
    # Issue 44: .bm25/.dense were the first and second child, so without the BM25 leg
    # .bm25 was the VectorIndex and .dense the SparseIndex.
    hybrid = HybridRetriever.from_documents(documents, HashingEmbedder(dimension=DIM),
                                            bm25=bm25, sparse=sparse)
    assert [type(leg).__name__ for leg in (hybrid.bm25, hybrid.dense, hybrid.sparse)] == found


def test_provenance_records_each_child_rank_and_score(hybrid: HybridRetriever) -> None:
    fetch = default_fetch_k(4)
    lexical, dense = _children(hybrid)
    per_child = {"bm25": lexical.invoke(WING_QUERY, k=fetch),
                 "dense": dense.invoke(WING_QUERY, k=fetch)}
    docs = hybrid.invoke(WING_QUERY)
    assert len(docs) == 4
    for doc in docs:
        fusion = doc.metadata["fusion"]
        assert fusion["mode"] == "rrf" and fusion["k_rrf"] == 60
        assert fusion["score"] == doc.metadata["score"]
        total = 0.0
        for source in fusion["sources"]:
            child_docs = per_child[source["source"]]
            child = child_docs[source["rank"] - 1]
            assert child.id == doc.id == source["id"]
            assert source["score"] == child.metadata["score"]
            assert source["contribution"] == pytest.approx(1 / (60 + source["rank"]))
            total += source["contribution"]
        assert total == pytest.approx(doc.metadata["score"])
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_score_mode_equals_core_fuse_on_the_same_lists() -> None:
    a = _docs("x", "y", "z", scores=[9.0, 5.0, 1.0])
    b = _docs("y", "w", scores=[0.8, 0.6])
    fusion = FusionRetriever(
        retrievers=[ListRetriever(docs=a), ListRetriever(docs=b)], mode="relative_score",
        weights=[1.0, 2.0], k=10,
    )
    docs = fusion.invoke("q")
    hits = fuse(
        [[document_to_hit(d, i) for i, d in enumerate(lst, 1)] for lst in (a, b)],
        "relative_score", weights=[1.0, 2.0],
    )
    assert _ids(docs) == [h.id for h in hits] == ["y", "x", "w", "z"]
    assert [d.metadata["score"] for d in docs] == [h.score for h in hits]


@pytest.mark.parametrize("mode", ["rrf", "relative_score", "dist_based_score", "zscore",
                                  "raw", "mean", "combsum", "combmnz"])
def test_every_mode_runs_and_per_call_mode_overrides(hybrid: HybridRetriever, mode: str) -> None:
    docs = hybrid.invoke(WING_QUERY, mode=mode)
    assert len(docs) == 4 and docs[0].metadata["fusion"]["mode"] == mode
    assert hybrid.searcher.plan.mode.value == "rrf"  # the override did not stick
    fixed = FusionRetriever(retrievers=_children(hybrid), mode=mode, fetch_k=default_fetch_k(4))
    assert _ids(fixed.invoke(WING_QUERY)) == _ids(docs)


def test_score_mode_needs_scores_and_says_so(documents: list[Document]) -> None:
    # A vector store's plain as_retriever() reports no scores: fine for RRF only.
    fusion = FusionRetriever(
        retrievers=[BM25Retriever.from_documents(documents), _in_memory_retriever(documents)]
    )
    assert len(fusion.invoke(WING_QUERY)) == 4
    provenance = fusion.invoke(WING_QUERY, k=12)
    vector_sources = [s for d in provenance for s in d.metadata["fusion"]["sources"]
                      if s["index"] == 1]
    assert vector_sources and all(s["score"] is None for s in vector_sources)
    # Score modes ask the store for its relevance scores; InMemoryVectorStore has none.
    with pytest.raises(ValueError, match=r"InMemoryVectorStore defines no relevance.*"
                                         r"mode='rrf'.*score_method='raw'"):
        fusion.invoke(WING_QUERY, mode="relative_score")
    # A child that is not a vector store and reports no score is refused by name.
    unscored = FusionRetriever(retrievers=[BM25Retriever.from_documents(documents),
                                           ListRetriever(docs=documents[:2])])
    with pytest.raises(ValueError, match=r"relative_score.*retriever_2.*mode='rrf'"):
        unscored.invoke(WING_QUERY, mode="relative_score")


class _RelevanceStore(InMemoryVectorStore):
    """An in-memory store with a relevance function, as most real stores have."""

    def _select_relevance_score_fn(self) -> Any:
        return lambda cosine: (cosine + 1.0) / 2.0


class TestScoredVectorStoreRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard suite over a store with relevance scores."""

    @property
    def retriever_constructor(self) -> type[ScoredVectorStoreRetriever]:
        return ScoredVectorStoreRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        store = _RelevanceStore(DeterministicFakeEmbedding(size=16))
        store.add_documents([Document(id=i, page_content=t, metadata=dict(m))
                             for i, t, m in CORPUS])
        return {"vectorstore": store}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY

    @property
    def num_results_arg_name(self) -> str:
        return "k"


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_score_fusion_reads_a_vector_store_s_scores(
    documents: list[Document], asynchronous: bool
) -> None:
    store = _RelevanceStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(documents)
    fusion = FusionRetriever(
        retrievers=[BM25Retriever.from_documents(documents),
                    store.as_retriever(search_kwargs={"k": 3})],
        mode="relative_score", k=12, fetch_k=5,
    )
    docs = await fusion.ainvoke(WING_QUERY) if asynchronous else fusion.invoke(WING_QUERY)
    sources = [s for d in docs for s in d.metadata["fusion"]["sources"] if s["index"] == 1]
    expected = dict((d.id, (score + 1) / 2) for d, score in
                    store.similarity_search_with_score(WING_QUERY, k=5))
    assert len(sources) == 5  # fetch_k reached the store
    assert {s["id"]: pytest.approx(s["score"]) for s in sources} == expected
    # The raw-score escape hatch for stores without a relevance function.
    raw = ScoredVectorStoreRetriever(vectorstore=InMemoryVectorStore(
        DeterministicFakeEmbedding(size=16)), score_method="raw")
    raw.vectorstore.add_documents(documents)
    assert all(isinstance(d.metadata["score"], float) for d in raw.invoke(WING_QUERY, k=2))


# ------------------------------------------------------------------ identity


def test_identity_is_the_id_not_the_text() -> None:
    # Two documents with the same text and different ids (a text indexed twice, say as
    # a chunk and as a summary): both are kept. LangChain's EnsembleRetriever merges them.
    same = "The same sentence, indexed twice."
    a = [Document(id="chunk-1", page_content=same), Document(id="other", page_content="x")]
    b = [Document(id="summary-1", page_content=same)]
    children = [ListRetriever(docs=a), ListRetriever(docs=b)]
    ours = FusionRetriever(retrievers=children, k=10).invoke("q")
    assert sorted(_ids(ours)) == ["chunk-1", "other", "summary-1"]
    theirs = EnsembleRetriever(retrievers=children, weights=[0.5, 0.5]).invoke("q")
    assert len(theirs) == 2  # merged by page_content
    by_content = FusionRetriever(retrievers=children, k=10, dedup="content").invoke("q")
    assert _ids(by_content) == ["chunk-1", "other"]
    merged = by_content[0].metadata["fusion"]["sources"]
    assert [(s["id"], s["rank"]) for s in merged] == [("chunk-1", 1), ("summary-1", 1)]


def test_documents_without_ids_get_a_content_id_of_their_text() -> None:
    a = [Document(page_content="alpha", metadata={"score": 3.0})]
    b = [Document(page_content="alpha", metadata={"score": 0.1})]  # other metadata
    docs = FusionRetriever(retrievers=[ListRetriever(docs=a), ListRetriever(docs=b)]).invoke("q")
    assert len(docs) == 1 and len(docs[0].metadata["fusion"]["sources"]) == 2
    assert docs[0].id == document_to_hit(a[0], 1).id


def test_fusion_beats_ensemble_retriever_on_final_top_k(hybrid: HybridRetriever) -> None:
    ensemble = EnsembleRetriever(retrievers=_children(hybrid), weights=[0.5, 0.5])
    assert len(ensemble.invoke(WING_QUERY)) > 4  # no final top-k
    assert len(hybrid.invoke(WING_QUERY)) == 4


# ------------------------------------------------------------------ weights


def test_zero_weight_child_is_not_invoked() -> None:
    a, b = ListRetriever(docs=_docs("x", "y")), ListRetriever(docs=_docs("z"))
    fusion = FusionRetriever(retrievers=[a, b], weights=[1, 0])
    assert _ids(fusion.invoke("q")) == ["x", "y"]
    assert len(a.calls) == 1 and b.calls == []
    assert _ids(fusion.invoke("q", weights=[0, 1])) == ["z"]  # per-call override
    assert fusion.weights == (1.0, 0.0)


def test_weights_change_the_order() -> None:
    a, b = ListRetriever(docs=_docs("x", "y")), ListRetriever(docs=_docs("y", "x"))
    fusion = FusionRetriever(retrievers=[a, b])
    assert _ids(fusion.invoke("q")) == ["x", "y"]  # tie: first appearance
    assert _ids(fusion.invoke("q", weights=[1, 3])) == ["y", "x"]
    first = fusion.invoke("q", weights=[1, 3])[0].metadata["fusion"]["sources"]
    assert [s["weight"] for s in first] == [1.0, 3.0]


def test_callable_weights_see_the_query(hybrid: HybridRetriever) -> None:
    rule = lexical_boost_rule(0, boost=3.0)
    fusion = FusionRetriever(retrievers=_children(hybrid), weights=rule)
    coded = fusion.invoke("wing lift 1958")[0].metadata["fusion"]["sources"]
    plain = fusion.invoke(WING_QUERY)[0].metadata["fusion"]["sources"]
    assert {s["index"]: s["weight"] for s in coded} == {0: 3.0, 1: 1.0}
    assert {s["weight"] for s in plain} == {1.0}


def test_bad_arguments_are_clear_errors(hybrid: HybridRetriever) -> None:
    children = _children(hybrid)
    with pytest.raises(ValidationError, match="one weight per source"):
        FusionRetriever(retrievers=children, weights=[1.0])
    with pytest.raises(ValidationError, match="at least one weight > 0"):
        FusionRetriever(retrievers=children, weights=[0, 0])
    with pytest.raises(ValidationError, match="mode must be one of"):
        FusionRetriever(retrievers=children, mode="borda")
    with pytest.raises(ValidationError, match="k_rrf"):
        FusionRetriever(retrievers=children, k_rrf=-1)
    with pytest.raises(ValidationError, match="fetch_k must be >= 1"):
        FusionRetriever(retrievers=children, fetch_k=0)
    with pytest.raises(ValidationError, match="names must be unique"):
        FusionRetriever(retrievers=children, names=["a", "a"])
    with pytest.raises(ValidationError, match="at least one retriever"):
        FusionRetriever(retrievers=[])
    with pytest.raises(TypeError, match="wrap a single retriever in a list"):
        FusionRetriever(retrievers=children[0])
    with pytest.raises(ValidationError, match="score_key"):
        FusionRetriever(retrievers=children, score_key="fusion")
    with pytest.raises(TypeError, match="searcher must be a hybrid_retrievers.FusionSearcher"):
        HybridRetriever(searcher=hybrid.bm25)
    with pytest.raises(ValidationError, match="score_key"):
        HybridRetriever(searcher=hybrid.searcher, score_key="fusion")
    with pytest.raises(TypeError, match="bm25 must be a mapping"):
        HybridRetriever.from_texts(["a"], HashingEmbedder(dimension=DIM), bm25=1.2)
    with pytest.raises(ValueError, match="k must be >= 1"):
        hybrid.invoke(WING_QUERY, k=0)  # 0 is not replaced by the default
    with pytest.raises(ValueError, match="query"):
        hybrid.invoke("  ")
    with pytest.raises(ValueError, match=r"weights\(query\)"):
        FusionRetriever(retrievers=children, weights=lambda q: [1.0]).invoke(WING_QUERY)
    with pytest.raises(ValueError, match="mode must be one of"):
        hybrid.invoke(WING_QUERY, mode="nope")


def test_child_errors_name_the_child() -> None:
    def boom(query: str) -> list[Document]:
        raise RuntimeError("index offline")

    fusion = FusionRetriever(
        retrievers=[ListRetriever(docs=_docs("x")), RunnableLambda(boom)], names=["ok", "es"]
    )
    with pytest.raises(RuntimeError, match="index offline") as info:
        fusion.invoke("q")
    assert any("retriever_2 ('es')" in note for note in info.value.__notes__)
    bad = FusionRetriever(retrievers=[RunnableLambda(lambda q: [3])])  # strings are read
    with pytest.raises(TypeError, match="Document"):
        bad.invoke("q")


# ------------------------------------------------------------------ k and fetch_k


def test_per_call_k_and_final_top_k(hybrid: HybridRetriever) -> None:
    assert len(hybrid.invoke(WING_QUERY)) == 4
    assert len(hybrid.invoke(WING_QUERY, k=2)) == 2
    assert _ids(hybrid.invoke(WING_QUERY, k=2)) == _ids(hybrid.invoke(WING_QUERY))[:2]
    assert len(hybrid.invoke(WING_QUERY, k=50)) == len(CORPUS)  # dense returns all
    assert hybrid.k == 4


def test_fetch_k_reaches_children_that_take_k() -> None:
    takes_k = ListRetriever(docs=_docs(*"abcdefghij"))
    no_k = NoKRetriever(docs=_docs("z", "a"))
    fusion = FusionRetriever(retrievers=[takes_k, no_k], k=2)
    fusion.invoke("q")
    assert takes_k.calls[-1]["k"] is None  # its own k, as EnsembleRetriever asks it
    fusion.invoke("q", fetch_k=3)
    assert takes_k.calls[-1]["k"] == 3
    FusionRetriever(retrievers=[takes_k], fetch_k=5).invoke("q", k=1)
    assert takes_k.calls[-1]["k"] == 5
    FusionRetriever(retrievers=[takes_k], pass_fetch_k=False, fetch_k=5).invoke("q")
    assert takes_k.calls[-1]["k"] is None
    FusionRetriever(retrievers=[takes_k], pass_fetch_k=True).invoke("q", k=2)
    assert takes_k.calls[-1]["k"] == default_fetch_k(2) == 20  # max(k, 20)
    with pytest.raises(TypeError, match="'k'"):  # passing k to it would fail
        FusionRetriever(retrievers=[no_k], pass_fetch_k=True).invoke("q")


@pytest.mark.asyncio
async def test_fetch_k_reaches_children_async() -> None:
    takes_k = ListRetriever(docs=_docs(*"abcdef"))
    fusion = FusionRetriever(retrievers=[takes_k, NoKRetriever(docs=_docs("z"))], fetch_k=4)
    docs = await fusion.ainvoke("q")
    assert takes_k.calls[-1] == {"query": "q", "k": 4, "async": True}
    assert len(docs) == 4


def test_vector_store_retriever_receives_fetch_k(documents: list[Document]) -> None:
    vector = _in_memory_retriever(documents, k=2)
    fusion = FusionRetriever(retrievers=[vector], k=3, fetch_k=6)
    docs = fusion.invoke(WING_QUERY)
    assert len(docs) == 3
    assert max(s["rank"] for d in fusion.invoke(WING_QUERY, k=6)
               for s in d.metadata["fusion"]["sources"]) == 6


# ------------------------------------------------------------------ concurrency


def _meeting_pair(meeting: Meeting | None = None) -> list[ListRetriever]:
    """Two children; with ``meeting``, each answers only while the other is retrieving too."""
    return [ListRetriever(docs=_docs("a", "b"), meeting=meeting),
            ListRetriever(docs=_docs("b", "c"), meeting=meeting)]


def test_sync_children_run_concurrently() -> None:
    children = _meeting_pair(Meeting(2))  # run one after the other, they never meet
    fusion = FusionRetriever(retrievers=children)
    docs = fusion.invoke("q")
    assert _ids(docs) == ["b", "a", "c"]
    assert children[0].threads[-1] == threading.get_ident()  # first child: this thread
    assert children[1].threads[-1] != threading.get_ident()


def test_max_concurrency_one_runs_children_in_turn() -> None:
    children = _meeting_pair()
    docs = FusionRetriever(retrievers=children).invoke("q", config={"max_concurrency": 1})
    assert _ids(docs) == ["b", "a", "c"]
    assert children[0].threads == children[1].threads == [threading.get_ident()]


@pytest.mark.asyncio
async def test_async_children_are_gathered() -> None:
    children = _meeting_pair(Meeting(2))
    fusion = FusionRetriever(retrievers=children)
    docs = await fusion.ainvoke("q")
    assert _ids(docs) == ["b", "a", "c"]
    assert all(c.calls[-1].get("async") for c in children)  # their own async path


@pytest.mark.asyncio
async def test_ainvoke_matches_invoke(hybrid: HybridRetriever) -> None:
    for query in QUERIES:
        sync, asynchronous = hybrid.invoke(query, k=5), await hybrid.ainvoke(query, k=5)
        assert _ids(sync) == _ids(asynchronous)
        assert [d.metadata for d in sync] == [d.metadata for d in asynchronous]


def test_batch_and_abatch(hybrid: HybridRetriever) -> None:
    batched = hybrid.batch(QUERIES)
    assert [_ids(b) for b in batched] == [_ids(hybrid.invoke(q)) for q in QUERIES]
    abatched = asyncio.run(hybrid.abatch(QUERIES))
    assert [_ids(b) for b in abatched] == [_ids(b) for b in batched]


# ------------------------------------------------------------------ callbacks


class RunRecorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID,
                           parent_run_id: UUID | None = None, tags: list[str] | None = None,
                           metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        with self.lock:
            self.starts.append({"run_id": run_id, "parent": parent_run_id,
                                "tags": list(tags or []), "name": kwargs.get("name"),
                                "metadata": dict(metadata or {})})


def _check_tree(recorder: RunRecorder) -> None:
    roots = [s for s in recorder.starts if s["parent"] is None]
    assert len(roots) == 1 and roots[0]["name"] == "FusionRetriever"
    children = [s for s in recorder.starts if s["parent"] == roots[0]["run_id"]]
    assert sorted(s["name"] for s in children) == ["BM25Retriever", "DenseRetriever"]
    assert {t for s in children for t in s["tags"] if t.startswith("retriever_")} == {
        "retriever_1", "retriever_2"}
    assert all("outer" in s["tags"] and s["metadata"].get("user") == "u1" for s in children)


def test_child_runs_are_children_of_the_fusion_run(fused: FusionRetriever) -> None:
    recorder = RunRecorder()
    fused.invoke(WING_QUERY, config={"callbacks": [recorder], "tags": ["outer"],
                                     "metadata": {"user": "u1"}})
    assert len(recorder.starts) == 3
    _check_tree(recorder)


def test_hybrid_is_one_run_without_child_runs(hybrid: HybridRetriever) -> None:
    """The documented trade-off: one core searcher, so no retriever_1/retriever_2 runs."""
    recorder = RunRecorder()
    hybrid.invoke(WING_QUERY, config={"callbacks": [recorder], "tags": ["outer"]})
    assert [(s["name"], s["parent"]) for s in recorder.starts] == [("HybridRetriever", None)]


@pytest.mark.asyncio
async def test_async_child_runs_are_children_of_the_fusion_run(fused: FusionRetriever) -> None:
    recorder = RunRecorder()
    await fused.ainvoke(WING_QUERY, config={"callbacks": [recorder], "tags": ["outer"],
                                            "metadata": {"user": "u1"}})
    assert len(recorder.starts) == 3
    _check_tree(recorder)


def test_inside_an_lcel_chain(hybrid: HybridRetriever, fused: FusionRetriever) -> None:
    for retriever, runs in ((fused, 3), (hybrid, 1)):  # FusionRetriever: and its two children
        recorder = RunRecorder()
        chain = retriever | RunnableLambda(lambda docs: [d.id for d in docs])
        ids = chain.invoke(WING_QUERY, config={"callbacks": [recorder]})
        assert ids == _ids(hybrid.invoke(WING_QUERY))
        assert len(recorder.starts) == runs


# ------------------------------------------------------------------ nesting


def test_nested_fusion_keeps_the_inner_provenance(hybrid: HybridRetriever) -> None:
    outer = FusionRetriever(retrievers=[hybrid, _children(hybrid)[0]], names=["hybrid", "bm25"])
    docs = outer.invoke(WING_QUERY)
    sources = docs[0].metadata["fusion"]["sources"]
    inner = next(s for s in sources if s["source"] == "hybrid")
    assert inner["explanation"]["fusion"]["mode"] == "rrf"
    assert {s["source"] for s in inner["explanation"]["fusion"]["sources"]} <= {"bm25", "dense"}


# ------------------------------------------------------------------ immutability


def test_children_documents_are_not_mutated() -> None:
    a = _docs("x", "y", scores=[2.0, 1.0])
    before = copy.deepcopy(a)
    fusion = FusionRetriever(retrievers=[ListRetriever(docs=a)], score_key="fused")
    docs = fusion.invoke("q")
    assert a == before
    assert docs[0] is not a[0] and docs[0].metadata["fused"] != 2.0
    assert docs[0].metadata["score"] == 2.0  # the child's own score stays, under its key
    docs[0].metadata["edited"] = True
    assert "edited" not in fusion.invoke("q")[0].metadata


# ------------------------------------------------------------------ HybridRetriever


def test_from_texts_equals_from_documents(documents: list[Document]) -> None:
    emb = HashingEmbedder(dimension=DIM)
    by_docs = HybridRetriever.from_documents(documents, emb, k=3)
    by_texts = HybridRetriever.from_texts(
        [d.page_content for d in documents], emb, [d.metadata for d in documents],
        [d.id for d in documents], k=3,
    )
    for query in QUERIES:
        assert _ids(by_docs.invoke(query)) == _ids(by_texts.invoke(query))
        assert len(by_docs.invoke(query)) == 3


def test_hybrid_settings_are_passed_on(documents: list[Document]) -> None:
    hybrid = HybridRetriever.from_documents(
        documents, HashingEmbedder(dimension=DIM), k=2, weights=[2, 1],
        mode="relative_score", fetch_k=7, bm25={"k1": 1.2, "b": 0.5}, dense={"metric": "dot"},
        tags=["hy"], names=["lex", "vec"],
    )
    plan = hybrid.searcher.plan
    assert hybrid.k == 2 and plan.fetch_k == 7 and plan.mode.value == "relative_score"
    assert plan.weights == (2.0, 1.0) and plan.names == ("lex", "vec")
    lexical, dense = hybrid.searcher.leg("lex"), hybrid.searcher.leg("vec")
    assert lexical.k1 == 1.2 and dense.metric == "dot" and hybrid.tags == ["hy"]
    assert hybrid.bm25 is None and hybrid.dense is None  # legs go by the names given
    docs = hybrid.invoke(WING_QUERY)
    assert len(docs) == 2 and {s["source"] for s in docs[0].metadata["fusion"]["sources"]} \
        <= {"lex", "vec"}


def test_hybrid_without_ids_gets_the_same_content_ids_in_both_indexes() -> None:
    texts = ["wing lift", "bread dough", "wing lift"]
    hybrid = HybridRetriever.from_texts(texts, HashingEmbedder(dimension=DIM))
    assert hybrid.bm25.ids == hybrid.dense.ids
    assert len(set(hybrid.bm25.ids)) == 3


def test_hybrid_edits_reach_both_indexes(hybrid: HybridRetriever) -> None:
    added = hybrid.add_documents([Document(id="new", page_content="wing lift wing lift flaps")])
    assert added == ["new"] and "new" in hybrid.bm25 and "new" in hybrid.dense
    assert "new" in _ids(hybrid.invoke("flaps"))
    with pytest.raises(ValueError):  # already indexed: nothing is added
        hybrid.add_texts(["other text", "again"], ids=["other", "new"])
    assert "other" not in hybrid.bm25 and "other" not in hybrid.dense
    with pytest.raises(KeyError, match="missing"):
        hybrid.delete(["new", "missing"])
    assert "new" in hybrid.bm25
    hybrid.delete(["new"])
    assert "new" not in hybrid.bm25 and "new" not in hybrid.dense
