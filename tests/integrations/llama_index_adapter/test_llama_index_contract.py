"""One contract for every LlamaIndex retriever of the package.

str and `QueryBundle`, sync and async agree; node ids, metadata, relationships and
excluded keys come back; persistence round-trips results and node fields; nodes can
be inserted and deleted; an id replaced through ``.index`` returns the new text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import (
    Document,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from llama_index_hybrid_retrievers import (
    BM25Retriever,
    DenseRetriever,
    FusionRetriever,
    HybridRetriever,
    HyDERetriever,
    ParentDocumentRetriever,
    SparseRetriever,
)

from corpora import CORPUS, QUERIES, WING_QUERY

EMBED = HashingEmbedder(dimension=64)
SPARSE = HashingSparseEmbedder()
FIELDS = ("node_id", "ref_doc_id", "excluded_llm_metadata_keys",
          "excluded_embed_metadata_keys", "metadata_template", "metadata_separator",
          "text_template", "class_name")


def make_nodes() -> list[TextNode]:
    """Nodes as an ingestion pipeline makes them: a source document, excluded keys..."""
    out = []
    for i, text, metadata in CORPUS:
        node = TextNode(id_=i, text=text, metadata={**metadata, "file": f"{i}.txt"},
                        excluded_llm_metadata_keys=["file"],
                        excluded_embed_metadata_keys=["file", "year"],
                        metadata_template="{key}={value}")
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc-{i[:4]}")
        out.append(node)
    return out


BUILDERS: dict[str, Callable[[list[TextNode]], Any]] = {
    "bm25": lambda n: BM25Retriever.from_defaults(nodes=n, similarity_top_k=3),
    "dense": lambda n: DenseRetriever.from_defaults(nodes=n, embed_model=EMBED,
                                                    similarity_top_k=3),
    "sparse": lambda n: SparseRetriever.from_defaults(nodes=n, sparse_embed_model=SPARSE,
                                                      similarity_top_k=3),
    "fusion": lambda n: FusionRetriever(
        [BM25Retriever.from_defaults(nodes=n, similarity_top_k=10),
         DenseRetriever.from_defaults(nodes=n, embed_model=EMBED, similarity_top_k=10)],
        similarity_top_k=3),
    "hybrid": lambda n: HybridRetriever.from_defaults(nodes=n, embed_model=EMBED,
                                                      similarity_top_k=3),
    "hybrid3": lambda n: HybridRetriever.from_defaults(nodes=n, embed_model=EMBED,
                                                       sparse=SPARSE, similarity_top_k=3),
    "parent": lambda n: ParentDocumentRetriever.from_defaults(n, similarity_top_k=3,
                                                              chunk_size=60, chunk_overlap=0),
    "hyde": lambda n: HyDERetriever.from_defaults(n, embed_model=EMBED,
                                                  llm=lambda prompt: "wing lift and drag",
                                                  similarity_top_k=3),
}
PERSISTED = {
    "bm25": lambda d: BM25Retriever.from_persist_dir(d),
    "dense": lambda d: DenseRetriever.from_persist_dir(d, embed_model=EMBED),
    "sparse": lambda d: SparseRetriever.from_persist_dir(d, sparse_embed_model=SPARSE),
    "hybrid": lambda d: HybridRetriever.from_persist_dir(d, embed_model=EMBED),
    "hybrid3": lambda d: HybridRetriever.from_persist_dir(d, embed_model=EMBED,
                                                          sparse_embed_model=SPARSE),
    "parent": lambda d: ParentDocumentRetriever.from_persist_dir(d),
}
ALL = list(BUILDERS)


def _pairs(results: list[NodeWithScore]) -> list[tuple[str, float]]:
    return [(r.node.node_id, round(float(r.score), 6)) for r in results]


def _fields(node: Any) -> tuple[Any, ...]:
    return (*(getattr(node, f) if f != "class_name" else node.class_name() for f in FIELDS),
            node.get_content(), dict(node.relationships))


@pytest.mark.parametrize("name", ALL)
async def test_str_and_bundle_sync_and_async_agree(name: str) -> None:
    retriever = BUILDERS[name](make_nodes())
    for query in QUERIES:
        want = _pairs(retriever.retrieve(query))
        assert want and len(want) <= 3
        assert [s for _, s in want] == sorted((s for _, s in want), reverse=True)
        assert _pairs(retriever.retrieve(QueryBundle(query_str=query))) == want
        assert _pairs(await retriever.aretrieve(query)) == want
        assert _pairs(await retriever.aretrieve(QueryBundle(query_str=query))) == want


@pytest.mark.parametrize("name", ALL)
def test_node_ids_metadata_relationships_and_excluded_keys_come_back(name: str) -> None:
    nodes = make_nodes()
    by_id = {n.node_id: n for n in nodes}
    for result in BUILDERS[name](nodes).retrieve(WING_QUERY):
        node, original = result.node, by_id[result.node.node_id]
        assert node.get_content() == original.get_content()
        assert {k: node.metadata[k] for k in original.metadata} == original.metadata
        assert node.relationships == original.relationships
        assert node.ref_doc_id == original.ref_doc_id
        assert set(original.excluded_llm_metadata_keys) <= set(node.excluded_llm_metadata_keys)
        assert "file" not in node.get_content(metadata_mode="llm")  # still excluded


@pytest.mark.parametrize("name", list(PERSISTED))
def test_persist_round_trip_keeps_results_node_fields_and_settings(
    name: str, tmp_path: Path
) -> None:
    retriever = BUILDERS[name](make_nodes())
    retriever.similarity_top_k = 2
    retriever.persist(tmp_path / name)
    assert not list((tmp_path / name).rglob("*.pkl"))
    loaded = PERSISTED[name](tmp_path / name)
    assert loaded.similarity_top_k == 2
    for query in QUERIES:
        want, got = retriever.retrieve(query), loaded.retrieve(query)
        assert _pairs(got) == _pairs(want)
        assert [_fields(g.node) for g in got] == [_fields(w.node) for w in want]


def test_persisted_filters_are_restored(tmp_path: Path) -> None:
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="cooking",
                                                      operator=FilterOperator.EQ)])
    for build, load in ((BUILDERS["bm25"], PERSISTED["bm25"]),
                        (BUILDERS["dense"], PERSISTED["dense"]),
                        (BUILDERS["sparse"], PERSISTED["sparse"])):
        retriever = build(make_nodes())
        filtered = type(retriever)(retriever.index, similarity_top_k=5, filters=filters,
                                   nodes=make_nodes())
        filtered.persist(tmp_path / "f")
        loaded = load(tmp_path / "f")
        assert loaded.filters == filters
        ids = [r.node.node_id for r in loaded.retrieve("bread dough wing lift")]
        assert ids and all(i.startswith("bread") for i in ids)
        assert ids == [r.node.node_id for r in filtered.retrieve("bread dough wing lift")]
    callable_filter = BM25Retriever.from_defaults(nodes=make_nodes(), filters=lambda d: True)
    with pytest.warns(UserWarning, match="not saved"):
        callable_filter.persist(tmp_path / "c")


def test_a_bare_core_index_directory_loads(tmp_path: Path) -> None:
    # What the core and the LangChain adapter save (fusion children too) loads here.
    retriever = BUILDERS["bm25"](make_nodes())
    retriever.index.save(tmp_path / "core")
    loaded = BM25Retriever.from_persist_dir(tmp_path / "core", similarity_top_k=3)
    assert _pairs(loaded.retrieve(WING_QUERY)) == _pairs(retriever.retrieve(WING_QUERY))
    assert all(type(r.node) is TextNode for r in loaded.retrieve(WING_QUERY))


@pytest.mark.parametrize("name", ALL)
def test_insert_and_delete_nodes(name: str) -> None:
    retriever = BUILDERS[name](make_nodes())
    new = TextNode(id_="new-1", text="Winglets reduce the induced drag of a wing tip vortex "
                   "and improve lift.", metadata={"topic": "aero", "year": 2020})
    query = "winglets tip vortex induced drag"
    assert retriever.insert_nodes([new]) in (["new-1"], None)
    results = retriever.retrieve(query)
    assert results[0].node.node_id == "new-1"
    assert results[0].node.get_content() == new.get_content()
    with pytest.raises(ValueError):
        retriever.insert_nodes([new])  # the id is taken
    retriever.delete_nodes(["new-1"])
    assert "new-1" not in [r.node.node_id for r in retriever.retrieve(query)]
    with pytest.raises(KeyError):
        retriever.delete_nodes(["new-1"])


def test_delete_ref_doc_removes_a_source_document_s_nodes() -> None:
    document = Document(id_="manual", text="unused")
    chunks = [TextNode(id_=f"m{i}", text=t) for i, t in enumerate(
        ["Ailerons roll the aircraft.", "Elevators pitch the aircraft."])]
    for chunk in chunks:
        chunk.relationships[NodeRelationship.SOURCE] = document.as_related_node_info()
    retriever = BUILDERS["bm25"](make_nodes())
    retriever.insert_nodes(chunks)
    assert retriever.retrieve("ailerons aircraft")[0].node.node_id == "m0"
    retriever.delete_ref_doc("manual")
    assert not any(r.node.node_id.startswith("m") and r.node.node_id[1:].isdigit()
                   for r in retriever.retrieve("ailerons elevators aircraft"))


@pytest.mark.parametrize("name", ["bm25", "dense", "sparse"])
def test_an_id_replaced_through_index_returns_the_new_text(name: str) -> None:
    # The stored document wins over a stale cached node: results never show old text.
    retriever = BUILDERS[name](make_nodes())
    retriever.index.delete(["aero-1"])
    retriever.index.add(["Brand new text about wing lift and lift."], ids=["aero-1"])
    (hit,) = [r for r in retriever.retrieve(WING_QUERY) if r.node.node_id == "aero-1"]
    assert hit.node.get_content() == "Brand new text about wing lift and lift."
    if name != "bm25":
        retriever.index.upsert(["Upserted wing lift text."], ids=["aero-1"])
        (hit,) = [r for r in retriever.retrieve(WING_QUERY) if r.node.node_id == "aero-1"]
        assert hit.node.get_content() == "Upserted wing lift text."
