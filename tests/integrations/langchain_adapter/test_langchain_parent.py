"""Tests for `langchain_hybrid_retrievers.ParentDocumentRetriever`.

LangChain's standard `RetrieversIntegrationTests`, plus: k distinct parents, scores and
matched children in metadata, BM25 / hybrid / passed-in child indexes, LangChain text
splitters, any `BaseStore` as parent store, add/delete by parent id, auto-merge, async.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import InMemoryStore
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langchain_text_splitters import RecursiveCharacterTextSplitter

from hybrid_retrievers import BM25Index, Doc, FusionSearcher
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.parent import ParentChildSearcher
from langchain_hybrid_retrievers import BM25Retriever, ParentDocumentRetriever

from corpora import CORPUS, WING_QUERY


def _sections() -> list[Document]:
    """Parents: each topic of the shared corpus as one section (4 sections)."""
    by_topic: dict[str, list[str]] = {}
    for _, text, meta in CORPUS:
        by_topic.setdefault(meta["topic"], []).append(text)
    return [
        Document(id=f"sec-{topic}", page_content=" ".join(texts), metadata={"topic": topic})
        for topic, texts in by_topic.items()
    ]


def _searcher() -> ParentChildSearcher:
    parents = [Doc(d.id, d.page_content, d.metadata) for d in _sections()]
    return ParentChildSearcher.from_docs(parents, chunk_size=120, chunk_overlap=0)


class TestParentDocumentRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[ParentDocumentRetriever]:
        return ParentDocumentRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"searcher": _searcher()}

    @property
    def retriever_query_example(self) -> str:
        # Matches children of all four sections, so k up to 4 is always filled.
        return "wing bread soil heat"


@pytest.fixture
def retriever() -> ParentDocumentRetriever:
    return ParentDocumentRetriever.from_documents(_sections(), chunk_size=120, chunk_overlap=0)


def test_returns_distinct_parents_with_scores_and_children(retriever: ParentDocumentRetriever) -> None:
    docs = retriever.invoke(WING_QUERY, k=2)
    assert [d.id for d in docs][0] == "sec-aero" and len({d.id for d in docs}) == len(docs)
    top = docs[0]
    assert top.page_content == _sections()[0].page_content
    assert top.metadata["topic"] == "aero" and top.metadata["rank"] == 1
    kids = top.metadata["matched_children"]
    assert len(kids) >= 2 and all(c["id"].startswith("sec-aero:") for c in kids)
    assert top.metadata["score"] == pytest.approx(kids[0]["score"])
    # The core is the source of truth.
    core = retriever.searcher.search(WING_QUERY, k=2)
    assert [(d.id, d.metadata["score"]) for d in docs] == [(h.id, h.score) for h in core]


def test_k_parents_even_when_one_parent_dominates_the_children() -> None:
    r = ParentDocumentRetriever.from_documents(
        _sections(), chunk_size=60, chunk_overlap=0, fetch_k=1
    )
    docs = r.invoke("wing lift drag bread", k=2)
    assert [d.id for d in docs] == ["sec-aero", "sec-cooking"]


def test_hybrid_children_when_embedding_given() -> None:
    r = ParentDocumentRetriever.from_documents(_sections(), embedding=HashingEmbedder(64), k=2)
    assert isinstance(r.searcher.child_searcher, FusionSearcher)
    assert r.invoke(WING_QUERY)[0].id == "sec-aero"


def test_langchain_text_splitter_and_inmemory_store() -> None:
    store = InMemoryStore()
    splitter = RecursiveCharacterTextSplitter(chunk_size=80, chunk_overlap=10)
    r = ParentDocumentRetriever.from_documents(_sections(), child_splitter=splitter, docstore=store)
    assert sorted(store.yield_keys()) == sorted(d.id for d in _sections())
    stored = store.mget(["sec-aero"])[0]
    assert isinstance(stored, Document) and stored.metadata == {"topic": "aero"}
    children = r.searcher.child_searcher.docs
    assert all(len(c.text) <= 80 for c in children)
    assert r.invoke(WING_QUERY, k=1)[0].id == "sec-aero"
    r.delete(["sec-aero"])
    assert store.mget(["sec-aero"]) == [None]
    assert all(d.id != "sec-aero" for d in r.invoke(WING_QUERY))
    # The docstore is wrapped as a LangChainParentStore.
    from langchain_hybrid_retrievers.parent import LangChainParentStore

    assert isinstance(r.searcher.parent_store, LangChainParentStore)


def test_a_retriever_passed_as_vectorstore_gets_the_children() -> None:
    child = BM25Retriever(index=BM25Index())
    r = ParentDocumentRetriever.from_documents(_sections(), vectorstore=child, k=1)
    assert len(child.index) > 4
    assert all("parent_id" in d.metadata for d in child.index.docs)
    assert r.invoke("sourdough")[0].id == "sec-cooking"
    with pytest.raises(TypeError, match="cannot index children.*vector store"):
        ParentDocumentRetriever.from_documents(_sections(), vectorstore=_Opaque())


class _Opaque(BaseRetriever):  # wraps nothing of ours
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return []


def test_add_documents_and_delete_by_parent_id(retriever: ParentDocumentRetriever) -> None:
    ids = retriever.add_documents(
        [Document(id="sec-ribs", page_content="Wing ribs and spars carry the lift loads.")]
    )
    assert ids == ["sec-ribs"]
    assert retriever.invoke("ribs spars", k=1)[0].id == "sec-ribs"
    children = retriever.searcher.children_of("sec-ribs")
    retriever.delete(["sec-ribs"])
    assert all(c not in retriever.searcher.child_searcher for c in children)
    assert all(d.id != "sec-ribs" for d in retriever.invoke("ribs spars"))
    with pytest.raises(KeyError):
        retriever.delete(["unknown"])
    with pytest.raises(ValueError, match="already present"):
        retriever.add_documents([Document(id="sec-aero", page_content="dup")])


def test_filter_and_auto_merge(retriever: ParentDocumentRetriever) -> None:
    assert [d.id for d in retriever.invoke(WING_QUERY, filter={"topic": "cooking"})] == []
    assert [d.id for d in retriever.invoke("oven", filter={"topic": "cooking"})] == ["sec-cooking"]
    merging = ParentDocumentRetriever.from_documents(
        _sections(), chunk_size=120, chunk_overlap=0, merge_threshold=1.0
    )
    docs = merging.invoke("oven crust")
    # Only one of the cooking children matches: that child comes back, not the section.
    assert docs[0].metadata["parent_id"] == "sec-cooking" and docs[0].id.startswith("sec-cooking:")
    assert "matched_children" not in docs[0].metadata


async def test_async_matches_sync(retriever: ParentDocumentRetriever) -> None:
    sync = retriever.invoke(WING_QUERY, k=3)
    assert await retriever.ainvoke(WING_QUERY, k=3) == sync
    batch = retriever.batch([WING_QUERY, "bread"], config={"max_concurrency": 2})
    assert batch == [retriever.invoke(WING_QUERY), retriever.invoke("bread")]


def test_validation() -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        ParentDocumentRetriever(searcher=_searcher(), k=0)
    with pytest.raises(ValueError, match="score_key"):
        ParentDocumentRetriever(searcher=_searcher(), score_key="rank")
    with pytest.raises(TypeError, match="docstore"):
        ParentDocumentRetriever.from_documents(_sections(), docstore=object())
    with pytest.raises(ValueError, match="at least one"):
        ParentDocumentRetriever.from_documents([])
