"""Tests for `llama_index_hybrid_retrievers.BM25Retriever`.

Covers construction from nodes and from a docstore, persistence, async, filters,
LlamaIndex's `RetrieverQueryEngine` with `MockLLM`, and that inputs are never
mutated. Every ranking is compared with the core `BM25Index`.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

import llama_index_hybrid_retrievers
from hybrid_retrievers.persistence import current_files
from hybrid_retrievers import Analyzer, BM25Index, Doc
from llama_index_hybrid_retrievers import BM25Retriever

from corpora import CORPUS, QUERIES, WING_QUERY



@pytest.fixture
def nodes() -> list[TextNode]:
    """The corpus as TextNodes with ids (fresh objects per test)."""
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def retriever(nodes: list[TextNode]) -> BM25Retriever:
    return BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=4)


def _ids(results: list[NodeWithScore]) -> list[str]:
    return [r.node.node_id for r in results]


def _pairs(results: list[NodeWithScore]) -> list[tuple[str, float | None]]:
    return [(r.node.node_id, r.score) for r in results]


# ------------------------------------------------------------------- building


def test_package_exports() -> None:
    assert {"BM25Retriever", "__version__"} <= set(llama_index_hybrid_retrievers.__all__)
    assert isinstance(llama_index_hybrid_retrievers.__version__, str)


def test_from_nodes_returns_original_nodes_with_core_scores(
    retriever: BM25Retriever, nodes: list[TextNode]
) -> None:
    by_id = {n.node_id: n for n in nodes}
    for query in QUERIES:
        results = retriever.retrieve(query)
        hits = retriever.index.search(query, k=4)
        assert _pairs(results) == [(h.id, h.score) for h in hits]
        assert all(isinstance(r, NodeWithScore) for r in results)
        assert all(r.node is by_id[r.node.node_id] for r in results)
    assert len(retriever.retrieve(WING_QUERY)) == 4


def test_from_docstore_equals_from_nodes(nodes: list[TextNode]) -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    from_store = BM25Retriever.from_defaults(docstore=docstore, similarity_top_k=3)
    from_nodes = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    assert sorted(from_store.index.ids) == sorted(n.node_id for n in nodes)
    for query in QUERIES:
        assert _pairs(from_store.retrieve(query)) == _pairs(from_nodes.retrieve(query))


def test_from_defaults_needs_exactly_one_source(nodes: list[TextNode]) -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    with pytest.raises(ValueError, match="exactly one of nodes=, docstore=, index= or bm25_index=, got none"):
        BM25Retriever.from_defaults()
    with pytest.raises(ValueError, match="got 2"):
        BM25Retriever.from_defaults(nodes=nodes, docstore=docstore)
    with pytest.raises(ValueError, match="empty corpus"):
        BM25Retriever.from_defaults(nodes=[])
    with pytest.raises(TypeError, match="nodes"):
        BM25Retriever.from_defaults(nodes=["plain text"])  # type: ignore[list-item]
    # The original's first argument is the nodes: built, as there.
    assert BM25Retriever(nodes).index.ids == BM25Retriever(nodes=nodes).index.ids
    with pytest.raises(TypeError, match="bm25_index must be a hybrid_retrievers.BM25Index"):
        BM25Retriever(object())  # type: ignore[arg-type]


def test_bm25_settings_are_passed_to_the_core(nodes: list[TextNode]) -> None:
    analyzer = Analyzer(stemmer=None)
    retriever = BM25Retriever.from_defaults(
        nodes=nodes, analyzer=analyzer, k1=1.2, b=0.5, method="bm25+", delta=0.5,
        similarity_top_k=2,
    )
    index = retriever.index
    assert (index.k1, index.b, index.delta) == (1.2, 0.5, 0.5)
    assert index.analyzer.to_config() == analyzer.to_config()
    assert _pairs(retriever.retrieve("wings")) == [(h.id, h.score) for h in index.search("wings", 2)]


def test_indexed_text_excludes_metadata_with_metadata_mode_none() -> None:
    node = TextNode(id_="n", text="Lift on a wing.", metadata={"source": "zeppelin manual"})
    retriever = BM25Retriever.from_defaults(nodes=[node], metadata_mode=MetadataMode.NONE)
    assert retriever.index.get("n").text == node.get_content(metadata_mode=MetadataMode.NONE)
    assert retriever.retrieve("zeppelin") == []
    assert _ids(retriever.retrieve("wing")) == ["n"]


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_similarity_top_k_is_a_clear_value_error(nodes: list[TextNode], bad: int) -> None:
    with pytest.raises(ValueError, match="similarity_top_k must be >= 1"):
        BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=bad)


def test_similarity_top_k_is_validated_on_assignment(retriever: BM25Retriever) -> None:
    with pytest.raises(TypeError, match="similarity_top_k"):
        retriever.similarity_top_k = True  # type: ignore[assignment]
    with pytest.raises(ValueError, match="similarity_top_k"):
        retriever.similarity_top_k = 0
    retriever.similarity_top_k = 2
    assert len(retriever.retrieve(WING_QUERY)) == 2


# ------------------------------------------------------------------ filters


def test_mapping_and_callable_filters(nodes: list[TextNode]) -> None:
    by_map = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10, filters={"topic": "cooking"})
    results = by_map.retrieve("the bread")
    assert results and {r.node.metadata["topic"] for r in results} == {"cooking"}

    seen: list[Any] = []

    def recent(doc: Doc) -> bool:
        seen.append(doc)
        return doc.metadata["year"] >= 2000

    by_fn = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10, filters=recent)
    assert _ids(by_fn.retrieve(WING_QUERY)) == ["aero-4"]
    assert seen and all(isinstance(d, Doc) for d in seen)


def test_llama_index_metadata_filters(nodes: list[TextNode]) -> None:
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="topic", value="aero"),
            MetadataFilter(key="year", value=1965, operator=FilterOperator.GT),
        ]
    )
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10, filters=filters)
    assert retriever.filters is filters
    want = retriever.index.search(
        WING_QUERY, 10, filter=lambda d: d.metadata["topic"] == "aero" and d.metadata["year"] > 1965
    )
    assert _pairs(retriever.retrieve(WING_QUERY)) == [(h.id, h.score) for h in want]
    assert sorted(_ids(retriever.retrieve(WING_QUERY))) == ["aero-3", "aero-4"]


def test_bad_filter_kind_is_a_type_error(nodes: list[TextNode]) -> None:
    with pytest.raises(TypeError, match="filter"):
        BM25Retriever.from_defaults(nodes=nodes, filters=42)  # type: ignore[arg-type]


# ------------------------------------------------------------------ immutability


def test_inputs_are_not_mutated(nodes: list[TextNode]) -> None:
    before = [n.model_dump() for n in nodes]
    retriever = BM25Retriever.from_defaults(nodes=nodes)
    first = retriever.retrieve(WING_QUERY)
    second = retriever.retrieve(WING_QUERY)
    assert [n.model_dump() for n in nodes] == before
    assert all(a is not b for a, b in zip(first, second))  # new NodeWithScore each call
    first[0].score = -1.0
    assert retriever.retrieve(WING_QUERY)[0].score == second[0].score
    nodes[0].metadata["topic"] = "edited"
    assert retriever.index.get(nodes[0].node_id).metadata["topic"] == "aero"


# ------------------------------------------------------------------ async


@pytest.mark.asyncio
async def test_aretrieve_matches_retrieve(retriever: BM25Retriever) -> None:
    for query in QUERIES:
        assert _pairs(await retriever.aretrieve(query)) == _pairs(retriever.retrieve(query))
    bundle = QueryBundle(query_str=WING_QUERY)
    assert _pairs(await retriever.aretrieve(bundle)) == _pairs(retriever.retrieve(bundle))
    gathered = await asyncio.gather(*(retriever.aretrieve(q) for q in QUERIES))
    assert [_pairs(r) for r in gathered] == [_pairs(retriever.retrieve(q)) for q in QUERIES]


@pytest.mark.asyncio
async def test_aretrieve_searches_in_a_worker_thread(
    retriever: BM25Retriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    search = BM25Index.search

    def spy(self: BM25Index, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return search(self, *args, **kwargs)

    monkeypatch.setattr(BM25Index, "search", spy)
    assert len(await retriever.aretrieve(WING_QUERY)) == 4
    assert threads and threads[0] != threading.get_ident()


# ------------------------------------------------------------------ persistence


def test_persist_round_trip(tmp_path: Path, nodes: list[TextNode]) -> None:
    analyzer = Analyzer(stemmer=None)
    retriever = BM25Retriever.from_defaults(
        nodes=nodes, analyzer=analyzer, method="bm25l", k1=1.1, b=0.6, similarity_top_k=3
    )
    retriever.persist(tmp_path / "bm25")
    loaded = BM25Retriever.from_persist_dir(tmp_path / "bm25", similarity_top_k=3)
    assert loaded.index.analyzer.to_config() == retriever.index.analyzer.to_config()
    assert loaded.index.analyzer.to_config() == analyzer.to_config()
    assert (loaded.index.method, loaded.index.k1, loaded.index.b, loaded.index.delta) == (
        retriever.index.method, retriever.index.k1, retriever.index.b, retriever.index.delta
    )
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
    # BM25Index.load reads the index folder: the index format belongs to the core.
    core = BM25Index.load(current_files(tmp_path / "bm25") / "index")
    assert [h.id for h in core.search(WING_QUERY, 3)] == _ids(loaded.retrieve(WING_QUERY))


def test_from_persist_dir_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        BM25Retriever.from_persist_dir(tmp_path / "missing")


# ------------------------------------------------------------------ query engine


def test_inside_retriever_query_engine(retriever: BM25Retriever) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(WING_QUERY)
    sources = response.source_nodes
    hits = retriever.index.search(WING_QUERY, k=4)
    assert [(s.node.node_id, s.score) for s in sources] == [(h.id, h.score) for h in hits]
    assert all(s.score is not None and s.score > 0 for s in sources)
    assert isinstance(str(response), str)


@pytest.mark.asyncio
async def test_inside_async_retriever_query_engine(retriever: BM25Retriever) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = await engine.aquery(WING_QUERY)
    hits = retriever.index.search(WING_QUERY, k=4)
    assert [(s.node.node_id, s.score) for s in response.source_nodes] == [
        (h.id, h.score) for h in hits
    ]


def test_callback_manager_sees_retrieve_events(nodes: list[TextNode]) -> None:
    debug = LlamaDebugHandler()
    retriever = BM25Retriever.from_defaults(
        nodes=nodes, callback_manager=CallbackManager([debug])
    )
    results = retriever.retrieve(WING_QUERY)
    pairs = debug.get_event_pairs(CBEventType.RETRIEVE)
    assert len(pairs) == 1
    assert [n.node.node_id for n in pairs[0][1].payload["nodes"]] == _ids(results)


def test_bm25_index_is_the_core_index_argument(retriever: BM25Retriever) -> None:
    core = retriever.bm25_index
    assert core is retriever.index
    expected = _ids(retriever.retrieve(WING_QUERY))
    assert _ids(BM25Retriever(core, similarity_top_k=4).retrieve(WING_QUERY)) == expected
    assert _ids(BM25Retriever(bm25_index=core, similarity_top_k=4).retrieve(WING_QUERY)) == expected
    assert _ids(BM25Retriever.from_defaults(bm25_index=core, similarity_top_k=4).retrieve(
        WING_QUERY)) == expected
    # In LlamaIndex index= is a VectorStoreIndex: a core index there is refused with a hint.
    with pytest.raises(TypeError, match="bm25_index"):
        BM25Retriever(index=core)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"'index' \(pass the core index as bm25_index="):
        BM25Retriever(core, index=core)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="a hybrid_retrievers BM25Index goes in bm25_index="):
        BM25Retriever.from_defaults(index=core)
    with pytest.raises(ValueError, match="got 2"):
        BM25Retriever.from_defaults(index=core, bm25_index=core)
    with pytest.raises(TypeError, match="bm25_index must be a hybrid_retrievers.BM25Index"):
        BM25Retriever(object())  # type: ignore[arg-type]
