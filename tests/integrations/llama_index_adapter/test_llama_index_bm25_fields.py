"""`llama_index_hybrid_retrievers.BM25Retriever` with fields (BM25F): field texts from node
metadata, ``"text"`` the node's own text (``MetadataMode.NONE``), ``field_weights``,
persist / from_persist_dir. The core `BM25Index` (checked against a direct BM25F
implementation in tests/core/test_bm25_fields.py) is the reference."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from hybrid_retrievers import BM25Index, Doc
from llama_index_hybrid_retrievers import BM25Retriever

from corpora import FIELD_WEIGHTS as FIELDS
from corpora import FIELDED
from corpora import FIELDED_QUERY as QUERY

NODES = [TextNode(id_=i, text=text, metadata=meta) for i, text, meta in FIELDED]


def _core(**search: object) -> list[tuple[str, float]]:
    index = BM25Index.from_docs([Doc(n.node_id, n.text, dict(n.metadata)) for n in NODES],
                                fields=FIELDS)
    return [(h.doc.id, h.score) for h in index.search(QUERY, 4, **search)]  # type: ignore[arg-type]


def _ranking(results: list[NodeWithScore]) -> list[tuple[str, float]]:
    return [(r.node.node_id, float(r.score or 0.0)) for r in results]


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want])


def test_title_in_node_metadata_is_a_field_ranked_as_bm25f() -> None:
    retriever = BM25Retriever(nodes=NODES, fields=FIELDS, similarity_top_k=4)
    assert retriever.metadata_mode is MetadataMode.NONE  # the metadata is the fields
    assert retriever.bm25_index.get("wing").text == NODES[0].text
    got = _ranking(retriever.retrieve(QUERY))
    _same(got, _core())
    assert got[0][0] == "wing"  # the title, weighted 3x, is only in its metadata
    assert retriever.retrieve(QUERY)[0].node is NODES[0]  # the caller's node back
    # Without fields and with metadata_mode=NONE, the body match wins: the fields moved it.
    plain = BM25Retriever(nodes=NODES, metadata_mode=MetadataMode.NONE, similarity_top_k=1)
    assert plain.retrieve(QUERY)[0].node.node_id == "layer"


def test_field_weights_setting_and_from_defaults() -> None:
    retriever = BM25Retriever.from_defaults(nodes=NODES, fields=FIELDS, similarity_top_k=4,
                                            field_weights={"title": 0.0})
    assert retriever.fields == FIELDS and retriever.field_weights == {"title": 0.0}
    _same(_ranking(retriever.retrieve(QUERY)), _core(field_weights={"title": 0.0}))
    assert _ranking(asyncio.run(retriever.aretrieve(QUERY))) == \
        _ranking(retriever.retrieve(QUERY))
    retriever.field_weights = None
    _same(_ranking(retriever.retrieve(QUERY)), _core())
    with pytest.raises(ValueError, match="no field 'body'"):
        retriever.field_weights = {"body": 1.0}
    with pytest.raises(ValueError, match="needs an index built with fields="):
        BM25Retriever(nodes=NODES, field_weights={"title": 1.0})


def test_fields_and_weights_survive_persist(tmp_path) -> None:
    retriever = BM25Retriever(nodes=NODES, fields=FIELDS, similarity_top_k=4,
                              field_weights={"title": 0.5})
    retriever.persist(tmp_path / "bm25")
    loaded = BM25Retriever.from_persist_dir(tmp_path / "bm25")
    assert loaded.fields == FIELDS and loaded.field_weights == {"title": 0.5}
    assert loaded.metadata_mode is MetadataMode.NONE
    assert _ranking(loaded.retrieve(QUERY)) == _ranking(retriever.retrieve(QUERY))
    assert [r.node.get_content() for r in loaded.retrieve(QUERY)] == \
        [r.node.get_content() for r in retriever.retrieve(QUERY)]
    new = TextNode(id_="new", text="Nothing relevant here.",
                   metadata={"title": "Swept wing transition"})
    loaded.insert_nodes([new])  # an edit after loading indexes the title as a field
    loaded.field_weights = None
    rebuilt = BM25Retriever(nodes=[*NODES, new], fields=FIELDS, similarity_top_k=5)
    loaded.similarity_top_k = 5
    _same(_ranking(loaded.retrieve(QUERY)), _ranking(rebuilt.retrieve(QUERY)))
    assert "new" in [i for i, _ in _ranking(loaded.retrieve(QUERY))]
