"""`langchain_hybrid_retrievers.BM25Retriever` with fields (BM25F): field texts from
``Document.metadata``, per-call ``field_weights``, save/load. The core `BM25Index` (checked
against a direct BM25F implementation in tests/core/test_bm25_fields.py) is the reference."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from hybrid_retrievers import BM25Index, Doc
from langchain_hybrid_retrievers import BM25Retriever

from corpora import FIELD_WEIGHTS as FIELDS
from corpora import FIELDED
from corpora import FIELDED_QUERY as QUERY

DOCS = [Document(id=i, page_content=text, metadata=meta) for i, text, meta in FIELDED]


def _core() -> BM25Index:
    return BM25Index.from_docs(
        [Doc(d.id or "", d.page_content, dict(d.metadata)) for d in DOCS], fields=FIELDS)


def _ranking(docs: list[Document]) -> list[tuple[str | None, float]]:
    return [(d.id, d.metadata["score"]) for d in docs]


def test_title_in_metadata_is_a_field_ranked_as_bm25f() -> None:
    retriever = BM25Retriever.from_documents(DOCS, fields=FIELDS, k=4)
    got = _ranking(retriever.invoke(QUERY))
    want = [(h.doc.id, h.score) for h in _core().search(QUERY, 4)]
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want])
    assert got[0][0] == "wing"  # its title matches, weighted 3x; not in its page_content
    # One field (the text alone) ranks the body match first: the fields are what moved it.
    assert BM25Retriever.from_documents(DOCS, k=1).invoke(QUERY)[0].id == "layer"


def test_per_call_field_weights_like_k_and_filter() -> None:
    retriever = BM25Retriever.from_documents(DOCS, fields=FIELDS, k=4)
    weights = {"title": 0.0}
    want = [(h.doc.id, h.score) for h in _core().search(QUERY, 4, field_weights=weights)]
    got = _ranking(retriever.invoke(QUERY, field_weights=weights))
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want])
    assert got[0][0] == "layer"
    again = asyncio.run(retriever.ainvoke(QUERY, field_weights=weights, k=2))
    assert _ranking(again) == got[:2]
    # The field default, overridden per call; the build weights otherwise.
    fixed = BM25Retriever.from_documents(DOCS, fields=FIELDS, k=4, field_weights=weights)
    assert [d.id for d in fixed.invoke(QUERY)] == [i for i, _ in want]
    assert fixed.invoke(QUERY, field_weights={"title": 3.0})[0].id == "wing"
    assert retriever.invoke(QUERY)[0].id == "wing"


def test_from_texts_fields_and_bad_weights() -> None:
    retriever = BM25Retriever.from_texts(
        [d.page_content for d in DOCS], metadatas=[d.metadata for d in DOCS],
        ids=[d.id for d in DOCS], fields=FIELDS, k=1)
    assert retriever.index.fields == FIELDS
    assert retriever.invoke(QUERY)[0].id == "wing"
    with pytest.raises(ValueError, match="no field 'body'"):
        retriever.invoke(QUERY, field_weights={"body": 1.0})
    with pytest.raises(ValidationError, match="no field 'body'"):
        BM25Retriever.from_documents(DOCS, fields=FIELDS, field_weights={"body": 1.0})
    with pytest.raises(ValidationError, match="needs an index built with fields="):
        BM25Retriever.from_documents(DOCS, field_weights={"title": 1.0})


def test_fields_survive_save_and_load(tmp_path) -> None:
    retriever = BM25Retriever.from_documents(DOCS, fields=FIELDS, k=4)
    retriever.save_local(tmp_path / "bm25")
    loaded = BM25Retriever.load_local(tmp_path / "bm25", k=4)
    assert loaded.index.fields == FIELDS
    for weights in (None, {"title": 0.5}):
        assert _ranking(loaded.invoke(QUERY, field_weights=weights)) == \
            _ranking(retriever.invoke(QUERY, field_weights=weights))
    new = Document(id="new", page_content="Nothing relevant here.",
                   metadata={"title": "Swept wing transition"})
    loaded.add_documents([new])  # an edit after loading indexes the new title as a field
    rebuilt = BM25Retriever.from_documents([*DOCS, new], fields=FIELDS, k=5)
    got, want = _ranking(loaded.invoke(QUERY, k=5)), _ranking(rebuilt.invoke(QUERY))
    assert [i for i, _ in got] == [i for i, _ in want] and "new" in [i for i, _ in got]
    assert [s for _, s in got] == pytest.approx([s for _, s in want])
