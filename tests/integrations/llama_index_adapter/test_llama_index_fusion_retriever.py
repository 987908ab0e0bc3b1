"""Tests for `llama_index_hybrid_retrievers.FusionRetriever` and `HybridRetriever`.

Agreement with the core `FusionSearcher` (the single source of truth) and with LlamaIndex's
own ``QueryFusionRetriever`` in RRF mode (same inputs, its 0-based rank constant), real
concurrency of ``retrieve`` and ``aretrieve``, per-child query bundles, weights, modes,
provenance on copied nodes, immutability, callbacks and ``RetrieverQueryEngine`` with
``MockLLM``.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

import llama_index_hybrid_retrievers
from hybrid_retrievers import BM25Index, FusionSearcher, VectorIndex
from hybrid_retrievers.fusion import lexical_boost_rule
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from llama_index_hybrid_retrievers import (
    BM25Retriever,
    DenseRetriever,
    FusionRetriever,
    HybridRetriever,
)

from concurrency import Meeting
from corpora import CORPUS, QUERIES, WING_QUERY

DIM = 256


@pytest.fixture
def nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def hybrid(nodes: list[TextNode]) -> HybridRetriever:
    return HybridRetriever.from_defaults(nodes=nodes, embed_model=HashingEmbedder(dimension=DIM))


def _children(hybrid: HybridRetriever, top_k: int = 20, **options: Any) -> list[BaseRetriever]:
    """The hybrid's two core indexes, each behind its LlamaIndex retriever."""
    return [BM25Retriever(hybrid.bm25, similarity_top_k=top_k, **options),
            DenseRetriever(hybrid.dense, similarity_top_k=top_k, **options)]


def _ids(results: list[NodeWithScore]) -> list[str]:
    return [r.node.node_id for r in results]


class ListRetriever(BaseRetriever):
    """Returns fixed (node, score) pairs; records its calls; optionally waits at a
    `Meeting` (so it answers only while its siblings are retrieving too)."""

    def __init__(self, pairs: list[tuple[str, float | None]],
                 meeting: Meeting | None = None) -> None:
        self.nodes = [TextNode(id_=i, text=f"text of {i}") for i, _ in pairs]
        self.scores = [s for _, s in pairs]
        self.meeting = meeting
        self.calls: list[str] = []
        self.threads: list[int] = []
        self.bundles: list[QueryBundle] = []
        super().__init__()

    def _results(self) -> list[NodeWithScore]:
        return [NodeWithScore(node=n, score=s) for n, s in zip(self.nodes, self.scores)]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("sync")
        self.threads.append(threading.get_ident())
        self.bundles.append(query_bundle)
        if self.meeting is not None:
            self.meeting.wait()
        return self._results()

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("async")
        if self.meeting is not None:
            await self.meeting.await_()
        return self._results()


def _pairs(*ids: str) -> list[tuple[str, float | None]]:
    return [(i, float(len(ids) - pos)) for pos, i in enumerate(ids)]


# ------------------------------------------------------------------ building


def test_package_exports() -> None:
    assert {"FusionRetriever", "HybridRetriever"} <= set(llama_index_hybrid_retrievers.__all__)
    assert llama_index_hybrid_retrievers.FusionRetriever is FusionRetriever


def test_hybrid_equals_core_fusion_searcher(hybrid: HybridRetriever) -> None:
    assert isinstance(hybrid.bm25, BM25Index) and isinstance(hybrid.dense, VectorIndex)
    core = FusionSearcher([hybrid.bm25, hybrid.dense], names=["bm25", "dense"])
    # The same indexes behind LlamaIndex retrievers, fused by a FusionRetriever.
    fused = FusionRetriever(_children(hybrid), names=["bm25", "dense"], similarity_top_k=4)
    for query in QUERIES:
        hits = core.search(query, 4)
        for results in (hybrid.retrieve(query), fused.retrieve(query)):
            assert _ids(results) == [h.id for h in hits]
            assert [r.score for r in results] == [h.score for h in hits]
            assert [r.node.metadata["fusion"] for r in results] == [
                h.explanation["fusion"] for h in hits
            ]


@pytest.mark.parametrize(("bm25", "sparse", "found"), [
    (False, None, ["NoneType", "VectorIndex", "NoneType"]),
    (False, HashingSparseEmbedder(), ["NoneType", "VectorIndex", "SparseIndex"]),
    (None, None, ["BM25Index", "VectorIndex", "NoneType"]),
])
def test_legs_are_found_by_name_whichever_are_built(nodes: list[TextNode], bm25: Any,
                                                    sparse: Any, found: list[str]) -> None:
    # Issue 44: .bm25/.dense were the first and second child, so without the BM25 leg
    # .bm25 was the VectorIndex and .dense the SparseIndex.
    hybrid = HybridRetriever.from_defaults(nodes=nodes, embed_model=HashingEmbedder(DIM),
                                           bm25=bm25, sparse=sparse)
    assert [type(leg).__name__ for leg in (hybrid.bm25, hybrid.dense, hybrid.sparse)] == found


def test_depth_is_resolved_per_call(hybrid: HybridRetriever) -> None:
    core = FusionSearcher([hybrid.bm25, hybrid.dense], names=["bm25", "dense"])
    hybrid.similarity_top_k = 30  # the children are asked max(30, 20), not a frozen 20
    assert _ids(hybrid.retrieve(WING_QUERY)) == [h.id for h in core.search(WING_QUERY, 30)]


def test_from_defaults_settings(nodes: list[TextNode]) -> None:
    hybrid = HybridRetriever.from_defaults(
        nodes=iter(nodes), embed_model=HashingEmbedder(dimension=DIM), similarity_top_k=2,
        fetch_k=6, weights=[2, 1], mode="relative_score", bm25={"k1": 1.2},
        dense={"metric": "dot"}, names=["lex", "vec"], filters={"topic": "aero"},
    )
    plan = hybrid.searcher.plan
    assert hybrid.similarity_top_k == 2 and plan.weights == (2.0, 1.0)
    assert plan.mode.value == "relative_score" and plan.names == ("lex", "vec")
    assert plan.fetch_k == 6
    lexical, dense = hybrid.searcher.leg("lex"), hybrid.searcher.leg("vec")
    assert lexical.k1 == 1.2 and dense.metric == "dot"
    assert hybrid.bm25 is None and hybrid.dense is None  # legs go by the names given
    results = hybrid.retrieve(WING_QUERY)
    assert len(results) == 2 and {r.node.metadata["topic"] for r in results} == {"aero"}


def test_bad_arguments_are_clear_errors(hybrid: HybridRetriever) -> None:
    children = _children(hybrid)
    with pytest.raises(TypeError, match="wrap a single retriever in a list"):
        FusionRetriever(children[0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"retrievers\[1\]"):
        FusionRetriever([children[0], "bm25"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one retriever"):
        FusionRetriever([])
    with pytest.raises(ValueError, match="one weight per source"):
        FusionRetriever(children, weights=[1])
    with pytest.raises(ValueError, match="mode must be one of"):
        FusionRetriever(children, mode="reciprocal")
    with pytest.raises(ValueError, match="similarity_top_k must be >= 1"):
        FusionRetriever(children, similarity_top_k=0)
    with pytest.raises(ValueError, match="k_rrf"):
        FusionRetriever(children, k_rrf=-1)
    with pytest.raises(TypeError, match="searcher must be a hybrid_retrievers.FusionSearcher"):
        HybridRetriever(hybrid.bm25)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dense must be a mapping"):
        HybridRetriever.from_defaults(nodes=[TextNode(text="x")],
                                      embed_model=HashingEmbedder(dimension=DIM), dense=1)
    with pytest.raises(ValueError, match="exactly one of nodes="):
        HybridRetriever.from_defaults(embed_model=HashingEmbedder(dimension=DIM))
    with pytest.raises(ValueError, match="similarity_top_k must be >= 1"):
        hybrid.similarity_top_k = 0
    with pytest.raises(ValueError, match=r"weights\(query\)"):
        FusionRetriever(children, weights=lambda q: [1, 1, 1]).retrieve(WING_QUERY)


# ------------------------------------------------------- vs QueryFusionRetriever


def test_rrf_equals_query_fusion_retriever_up_to_its_k(hybrid: HybridRetriever) -> None:
    # QueryFusionRetriever's RRF is 1 / (60 + 0-based rank), i.e. k_rrf=59 with our
    # 1-based ranks; its ties go to first appearance, ours to the best rank first.
    theirs = QueryFusionRetriever(
        _children(hybrid), mode="reciprocal_rerank", num_queries=1, llm=MockLLM(),
        similarity_top_k=12, use_async=False,
    )
    ours = FusionRetriever(_children(hybrid), k_rrf=59, similarity_top_k=12)
    for query in QUERIES:
        a, b = ours.retrieve(query), theirs.retrieve(query)
        assert len(a) == len(b)
        ours_scores = {r.node.node_id: r.score for r in a}
        their_scores = {r.node.node_id: r.score for r in b}
        assert ours_scores.keys() == their_scores.keys()
        for node_id, score in ours_scores.items():
            assert score == pytest.approx(their_scores[node_id], rel=1e-12)
        assert [round(r.score, 12) for r in a] == [round(r.score, 12) for r in b]


def test_weights_count_in_rrf_unlike_query_fusion_retriever() -> None:
    # The installed llama-index-core (0.14.25) ignores retriever_weights in RRF; its newest
    # version applies them, as ours does (test_llama_index_query_variants.py).
    children = [ListRetriever(_pairs("x", "y")), ListRetriever(_pairs("y", "x"))]
    plain = QueryFusionRetriever(children, mode="reciprocal_rerank", num_queries=1,
                                 llm=MockLLM(), use_async=False)
    weighted = QueryFusionRetriever(children, mode="reciprocal_rerank", num_queries=1,
                                    llm=MockLLM(), use_async=False, retriever_weights=[1, 3])
    assert [r.score for r in plain.retrieve("q")] == [r.score for r in weighted.retrieve("q")]
    assert _ids(FusionRetriever(children).retrieve("q")) == ["x", "y"]
    assert _ids(FusionRetriever(children, weights=[1, 3]).retrieve("q")) == ["y", "x"]


def test_children_results_are_not_mutated_unlike_query_fusion_retriever(
    hybrid: HybridRetriever, nodes: list[TextNode],
) -> None:
    before = copy.deepcopy(nodes)
    results = hybrid.retrieve(WING_QUERY)
    assert [n.metadata for n in nodes] == [n.metadata for n in before]
    by_id = {n.node_id: n for n in nodes}
    for r in results:
        original = by_id[r.node.node_id]
        assert r.node is not original and "fusion" not in original.metadata
        assert r.node.text == original.text and r.node.metadata["topic"] == original.metadata[
            "topic"]
    # A child's own NodeWithScore keeps its score.
    child = ListRetriever(_pairs("x", "y"))
    first = child.retrieve("q")
    kept = first[0]
    FusionRetriever([child]).retrieve("q")
    assert kept.score == 2.0


# ---------------------------------------------------------------- provenance


def test_provenance_on_a_copied_node_never_reaches_prompts(hybrid: HybridRetriever) -> None:
    results = hybrid.retrieve(WING_QUERY)
    for r in results:
        fusion = r.node.metadata["fusion"]
        assert fusion["score"] == r.score and fusion["mode"] == "rrf"
        assert {s["source"] for s in fusion["sources"]} <= {"bm25", "dense"}
        assert "fusion" in r.node.excluded_llm_metadata_keys
        assert "fusion" in r.node.excluded_embed_metadata_keys
        assert "best_rank" not in r.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "topic" in r.node.get_content(metadata_mode=MetadataMode.LLM)
    bm25 = _children(hybrid)[0].retrieve(WING_QUERY)
    top = results[0].node.metadata["fusion"]["sources"]
    lexical = next(s for s in top if s["source"] == "bm25")
    assert bm25[lexical["rank"] - 1].node.node_id == results[0].node.node_id
    assert bm25[lexical["rank"] - 1].score == lexical["score"]


def test_identity_is_the_node_id_and_content_dedup_is_opt_in() -> None:
    a, b = ListRetriever(_pairs("chunk")), ListRetriever(_pairs("summary"))
    b.nodes = [TextNode(id_="summary", text="text of chunk")]  # same text, other id
    assert sorted(_ids(FusionRetriever([a, b]).retrieve("q"))) == ["chunk", "summary"]
    assert _ids(FusionRetriever([a, b], dedup="content").retrieve("q")) == ["chunk"]


# ---------------------------------------------------------------- weights, modes


def test_zero_weight_child_is_not_called() -> None:
    a, b = ListRetriever(_pairs("x")), ListRetriever(_pairs("z"))
    assert _ids(FusionRetriever([a, b], weights=[0, 1]).retrieve("q")) == ["z"]
    assert a.calls == [] and b.calls == ["sync"]


def test_callable_weights_see_the_query(hybrid: HybridRetriever) -> None:
    fusion = FusionRetriever(_children(hybrid), weights=lexical_boost_rule(0, boost=3.0))
    coded = fusion.retrieve("wing lift 1958")[0].node.metadata["fusion"]["sources"]
    assert {s["index"]: s["weight"] for s in coded} == {0: 3.0, 1: 1.0}


@pytest.mark.parametrize("mode", ["relative_score", "dist_based_score", "zscore", "combmnz"])
def test_score_modes(hybrid: HybridRetriever, mode: str) -> None:
    results = FusionRetriever(_children(hybrid), mode=mode,
                              similarity_top_k=4).retrieve(WING_QUERY)
    assert len(results) == 4 and results[0].node.metadata["fusion"]["mode"] == mode
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)


def test_score_mode_needs_scores_and_says_so() -> None:
    unscored = ListRetriever([("x", None), ("y", None)])
    assert _ids(FusionRetriever([unscored]).retrieve("q")) == ["x", "y"]  # RRF: fine
    with pytest.raises(ValueError, match=r"relative_score.*retrievers\[0\].*mode='rrf'"):
        FusionRetriever([unscored], mode="relative_score").retrieve("q")


# ---------------------------------------------------------------- concurrency


def _meeting_pair(meeting: Meeting | None = None) -> list[ListRetriever]:
    """Two children; with ``meeting``, each answers only while the other is retrieving too."""
    return [ListRetriever(_pairs("a", "b"), meeting), ListRetriever(_pairs("b", "c"), meeting)]


def test_retrieve_runs_children_concurrently() -> None:
    children = _meeting_pair(Meeting(2))  # run one after the other, they never meet
    results = FusionRetriever(children, similarity_top_k=3).retrieve("q")
    assert _ids(results) == ["b", "a", "c"]
    assert children[0].threads[-1] == threading.get_ident()
    assert children[1].threads[-1] != threading.get_ident()


def test_max_workers_one_runs_children_in_turn() -> None:
    children = _meeting_pair()
    results = FusionRetriever(children, similarity_top_k=3, max_workers=1).retrieve("q")
    assert _ids(results) == ["b", "a", "c"]
    assert children[0].threads == children[1].threads == [threading.get_ident()]


@pytest.mark.asyncio
async def test_aretrieve_gathers_children() -> None:
    children = _meeting_pair(Meeting(2))
    results = await FusionRetriever(children, similarity_top_k=3).aretrieve("q")
    assert _ids(results) == ["b", "a", "c"]
    assert [c.calls for c in children] == [["async"], ["async"]]


@pytest.mark.asyncio
async def test_aretrieve_matches_retrieve(hybrid: HybridRetriever) -> None:
    for query in QUERIES:
        sync, asynchronous = hybrid.retrieve(query), await hybrid.aretrieve(query)
        assert _ids(sync) == _ids(asynchronous)
        assert [r.score for r in sync] == [r.score for r in asynchronous]


def test_each_child_gets_its_own_query_bundle(nodes: list[TextNode]) -> None:
    # LlamaIndex's vector retriever writes the query embedding into its bundle: two
    # vector indexes with different models must not see each other's vector.
    small = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8)).as_retriever()
    large = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=16)).as_retriever()
    recorder = ListRetriever(_pairs("aero-1"))
    bundle = QueryBundle(WING_QUERY)
    results = FusionRetriever([small, large, recorder], similarity_top_k=3).retrieve(bundle)
    assert len(results) == 3
    assert bundle.embedding is None  # the caller's bundle is untouched
    assert recorder.bundles[-1] is not bundle and recorder.bundles[-1].query_str == WING_QUERY


def test_child_errors_name_the_child() -> None:
    class Broken(ListRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            raise RuntimeError("index offline")

    fusion = FusionRetriever([ListRetriever(_pairs("x")), Broken([])], names=["ok", "bad"])
    with pytest.raises(RuntimeError, match="index offline") as info:
        fusion.retrieve("q")
    assert any("retrievers[1] ('bad')" in note for note in info.value.__notes__)


# ---------------------------------------------------------------- frameworks


def test_callback_manager_sees_the_fusion_and_child_retrieve_events(
    nodes: list[TextNode],
) -> None:
    debug = LlamaDebugHandler()
    manager = CallbackManager([debug])
    hybrid = HybridRetriever.from_defaults(
        nodes=nodes, embed_model=HashingEmbedder(dimension=DIM), callback_manager=manager
    )
    hybrid.retrieve(WING_QUERY)
    assert len(debug.get_event_pairs(CBEventType.RETRIEVE)) == 1  # one core searcher
    debug.flush_event_logs()
    FusionRetriever(_children(hybrid, callback_manager=manager),
                    callback_manager=manager).retrieve(WING_QUERY)
    assert len(debug.get_event_pairs(CBEventType.RETRIEVE)) == 3  # fusion + two children


def test_inside_retriever_query_engine(hybrid: HybridRetriever) -> None:
    engine = RetrieverQueryEngine.from_args(hybrid, llm=MockLLM())
    response = engine.query(WING_QUERY)
    assert _ids(response.source_nodes) == _ids(hybrid.retrieve(WING_QUERY))
    # MockLLM echoes its prompt: the node texts and metadata are in it, provenance is not.
    prompt = str(response)
    assert "angle of attack" in prompt and "topic: aero" in prompt
    assert "fusion" not in prompt and "best_rank" not in prompt


@pytest.mark.asyncio
async def test_inside_async_retriever_query_engine(hybrid: HybridRetriever) -> None:
    engine = RetrieverQueryEngine.from_args(hybrid, llm=MockLLM())
    response = await engine.aquery(WING_QUERY)
    assert _ids(response.source_nodes) == _ids(await hybrid.aretrieve(WING_QUERY))


def test_nested_fusion(hybrid: HybridRetriever) -> None:
    outer = FusionRetriever([hybrid, _children(hybrid, 4)[0]], names=["hybrid", "bm25"],
                            similarity_top_k=4)
    results = outer.retrieve(WING_QUERY)
    assert len(results) == 4
    assert {s["source"] for r in results for s in r.node.metadata["fusion"]["sources"]} <= {
        "hybrid", "bm25"}
    inner = next(s for s in results[0].node.metadata["fusion"]["sources"]
                 if s["source"] == "hybrid")
    assert inner["explanation"]["fusion"]["mode"] == "rrf"
    assert {s["source"] for s in inner["explanation"]["fusion"]["sources"]} <= {"bm25", "dense"}
