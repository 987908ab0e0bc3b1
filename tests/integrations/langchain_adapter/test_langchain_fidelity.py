"""Behave as a LangChain user expects: no silently dropped arguments, traces that nest,
parents over any vector store, scores from stores, no shared mutable metadata."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langchain_text_splitters import RecursiveCharacterTextSplitter
from pydantic import Field

from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import (
    BM25Retriever,
    CrossEncoderReranker,
    DenseRetriever,
    FusionRetriever,
    HybridRetriever,
    HyDERetriever,
    LLMRerankCompressor,
    ParentDocumentRetriever,
    RerankingRetriever,
)

from corpora import CORPUS, WING_QUERY, WordOverlap

EMBED = HashingEmbedder(dimension=64)


@pytest.fixture
def documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


class Runs(BaseCallbackHandler):
    """Records (kind, name, run_id, parent_run_id, tags, metadata) of every run start."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def _add(self, kind: str, serialized: Any, run_id: UUID, parent_run_id: UUID | None,
             tags: list[str] | None, metadata: dict[str, Any] | None, name: Any = None) -> None:
        self.runs.append({"kind": kind, "name": name or (serialized or {}).get("name"),
                          "id": run_id, "parent": parent_run_id, "tags": tags or [],
                          "metadata": metadata or {}})

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID,
                           parent_run_id: UUID | None = None, tags: Any = None,
                           metadata: Any = None, **kwargs: Any) -> None:
        self._add("retriever", serialized, run_id, parent_run_id, tags, metadata,
                  kwargs.get("name"))

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID,
                     parent_run_id: UUID | None = None, tags: Any = None,
                     metadata: Any = None, **kwargs: Any) -> None:
        self._add("llm", serialized, run_id, parent_run_id, tags, metadata, kwargs.get("name"))

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID,
                            parent_run_id: UUID | None = None, tags: Any = None,
                            metadata: Any = None, **kwargs: Any) -> None:
        self._add("llm", serialized, run_id, parent_run_id, tags, metadata, kwargs.get("name"))

    def root(self) -> dict[str, Any]:
        roots = [r for r in self.runs if r["parent"] is None]
        assert len(roots) == 1, f"expected one root run, got {roots}"
        return roots[0]

    def children_of(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["parent"] == run["id"]]


CONFIG = {"tags": ["probe-tag"], "metadata": {"probe": 1}}


async def _call(retriever: Any, query: str, asynchronous: bool, handler: Runs,
                **kwargs: Any) -> list[Document]:
    config = {**CONFIG, "callbacks": [handler]}
    if asynchronous:
        return await retriever.ainvoke(query, config, **kwargs)
    return retriever.invoke(query, config, **kwargs)


def _assert_child_has_caller_config(run: dict[str, Any]) -> None:
    assert "probe-tag" in run["tags"] and run["metadata"].get("probe") == 1, run


# ------------------------------------------------------------- item 1: arguments


@pytest.mark.parametrize(("build", "argument", "hint"), [
    # Honoured by from_texts / from_documents (issue 35); the constructor names them.
    (lambda d, **kw: BM25Retriever(index=BM25Retriever.from_documents(d).index, **kw),
     "preprocess_func", "BM25Retriever.from_texts / from_documents"),
    (lambda d, **kw: BM25Retriever(index=BM25Retriever.from_documents(d).index, **kw),
     "bm25_params", "BM25Retriever.from_texts / from_documents"),
    (lambda d, **kw: BM25Retriever.from_texts([x.page_content for x in d], **kw), "top_k",
     "is k"),
    (lambda d, **kw: DenseRetriever.from_documents(d, EMBED, **kw), "search_kwargs",
     "pass k=, filter="),
    (lambda d, **kw: HybridRetriever.from_documents(d, EMBED, **kw), "id_key", "Document.id"),
    (lambda d, **kw: HyDERetriever.from_documents(d, embedding=EMBED, llm=FakeListLLM(
        responses=["x"]), **kw), "temperature", None),
    (lambda d, **kw: ParentDocumentRetriever.from_documents(d, **kw), "id_key", "Document.id"),
    (lambda d, **kw: RerankingRetriever(base_retriever=BM25Retriever.from_documents(d),
                                        reranker=CrossEncoderReranker(model=WordOverlap()), **kw),
     "top_k", "is k"),
])
def test_unknown_arguments_are_refused_with_the_equivalent(
    documents: list[Document], build: Any, argument: str, hint: str | None
) -> None:
    with pytest.raises(TypeError, match=rf"unexpected argument\(s\) '{argument}'") as info:
        build(documents, **{argument: 1})
    if hint is not None:
        assert hint in str(info.value)
    assert "accepted:" in str(info.value)


def test_reranking_retriever_takes_k_like_every_retriever(documents: list[Document]) -> None:
    retriever = RerankingRetriever(base_retriever=BM25Retriever.from_documents(documents),
                                   reranker=CrossEncoderReranker(model=WordOverlap()), k=2)
    assert len(retriever.invoke(WING_QUERY)) == 2
    assert len(retriever.invoke(WING_QUERY, k=3)) == 3


# ------------------------------------------------------------- item 2: tracing


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("n", [1, 2])
async def test_hyde_llm_call_is_a_child_run_with_the_caller_s_config(
    documents: list[Document], asynchronous: bool, n: int
) -> None:
    llm = FakeListChatModel(responses=["A wing generates lift at speed."] * 4)
    retriever = HyDERetriever.from_documents(documents, embedding=EMBED, llm=llm, n=n, k=2)
    handler = Runs()
    docs = await _call(retriever, "how do planes fly?", asynchronous, handler)
    assert docs and docs[0].metadata["hyde"]["passages"]
    root = handler.root()
    assert root["name"] == "HyDERetriever"
    llm_runs = handler.children_of(root)
    assert [r["kind"] for r in llm_runs] == ["llm"] * n
    for run in llm_runs:
        _assert_child_has_caller_config(run)


async def test_hyde_llm_appears_in_astream_events(documents: list[Document]) -> None:
    llm = FakeListChatModel(responses=["A wing generates lift."])
    retriever = HyDERetriever.from_documents(documents, embedding=EMBED, llm=llm, k=1)
    events = [(e["event"], e["name"], len(e["parent_ids"]))
              async for e in retriever.astream_events("how do planes fly?", version="v2")]
    assert events[0] == ("on_retriever_start", "HyDERetriever", 0)
    assert ("on_chat_model_start", "FakeListChatModel", 1) in events
    assert events[-1] == ("on_retriever_end", "HyDERetriever", 0)


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_config_reaches_fusion_reranker_and_parent_children(
    documents: list[Document], asynchronous: bool
) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(documents)
    fusion = FusionRetriever(retrievers=[BM25Retriever.from_documents(documents),
                                         store.as_retriever()])
    reranking = RerankingRetriever(
        base_retriever=fusion,
        reranker=LLMRerankCompressor(llm=FakeListLLM(responses=["[2] > [1]"] * 4)), k=2)
    handler = Runs()
    await _call(reranking, WING_QUERY, asynchronous, handler)
    root = handler.root()
    kinds = sorted(r["kind"] for r in handler.children_of(root))
    assert kinds == ["llm", "retriever"]
    fusion_run = next(r for r in handler.children_of(root) if r["kind"] == "retriever")
    grandchildren = handler.children_of(fusion_run)
    assert len(grandchildren) == 2
    for run in [*handler.children_of(root), *grandchildren]:
        _assert_child_has_caller_config(run)

    # Parent/child over a plain editable LangChain retriever: its searches are child runs.
    parent = ParentDocumentRetriever.from_documents(
        documents, vectorstore=_EditableRetriever(), chunk_size=60, chunk_overlap=0, k=2)
    handler = Runs()
    docs = await _call(parent, WING_QUERY, asynchronous, handler)
    assert len(docs) == 2
    children = handler.children_of(handler.root())
    assert children and all(r["name"] == "_EditableRetriever" for r in children)
    for run in children:
        _assert_child_has_caller_config(run)


class _EditableRetriever(BaseRetriever):
    """Not a vector store: a retriever with add_documents / delete, scoring word overlap."""

    docs: dict[str, Document] = Field(default_factory=dict)

    def add_documents(self, documents: list[Document], ids: Any = None) -> None:
        self.docs.update((d.id, d) for d in documents)

    def delete(self, ids: list[str]) -> None:
        for i in ids:
            self.docs.pop(i)

    def _get_relevant_documents(self, query: str, *, run_manager: Any, k: int = 4
                                ) -> list[Document]:
        words = set(query.lower().split())
        scored = sorted(((len(words & set(d.page_content.lower().split())), d.id, d)
                         for d in self.docs.values()), key=lambda t: (-t[0], t[1]))
        return [d for n, _, d in scored if n > 0][:k]


# ----------------------------------------------------------- item 3: parent


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_parent_retriever_over_a_langchain_vector_store(
    documents: list[Document], asynchronous: bool
) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    docstore = InMemoryStore()
    retriever = ParentDocumentRetriever.from_documents(
        documents, vectorstore=store, docstore=docstore,
        child_splitter=RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0), k=3)
    assert len(store.store) > len(documents)  # the children live in the store
    assert all("parent_id" in v["metadata"] for v in store.store.values())
    assert sorted(docstore.yield_keys()) == sorted(d.id for d in documents)
    handler = Runs()
    docs = await _call(retriever, WING_QUERY, asynchronous, handler)
    assert len(docs) == 3 and len({d.id for d in docs}) == 3  # exactly k distinct parents
    assert {d.id for d in docs} <= {d.id for d in documents}
    assert all(d.metadata["matched_children"] for d in docs)
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    # Editing goes through the store.
    retriever.add_documents([Document(id="new", page_content="Ailerons roll the wing.")])
    assert any(v["metadata"]["parent_id"] == "new" for v in store.store.values())
    retriever.delete(["new"])
    assert not any(v["metadata"]["parent_id"] == "new" for v in store.store.values())


def test_parent_retriever_threshold_parent_splitter_and_as_retriever(
    documents: list[Document],
) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    long = Document(id="book", page_content=" ".join(d.page_content for d in documents))
    retriever = ParentDocumentRetriever.from_documents(
        [long], vectorstore=store.as_retriever(),
        parent_splitter=RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0),
        child_splitter=RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=0), k=4)
    docs = retriever.invoke(WING_QUERY)
    assert len(docs) == 4
    assert all(d.id.startswith("book:p") and d.metadata["source_id"] == "book" for d in docs)
    assert all("parent_id" not in d.metadata for d in docs)
    best = docs[0].metadata["score"]
    strict = retriever.model_copy(update={"score_threshold": best})
    assert [d.id for d in strict.invoke(WING_QUERY)] == [docs[0].id]
    with pytest.raises(TypeError, match=r"'child_retriever' \(the child store is vectorstore="):
        ParentDocumentRetriever.from_documents([long], child_retriever=store)


# ------------------------------------------- item 4: fetch_k through wrappers


@pytest.mark.parametrize("wrap", ["with_config", "configurable_fields", "bind"])
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_fetch_k_reaches_wrapped_children(
    documents: list[Document], wrap: str, asynchronous: bool
) -> None:
    from langchain_core.runnables import ConfigurableField

    bm25 = BM25Retriever.from_documents(documents, k=2)
    child = {
        "with_config": lambda: bm25.with_config(run_name="lexical"),
        "configurable_fields": lambda: bm25.configurable_fields(
            k=ConfigurableField(id="child_k")),
        "bind": lambda: bm25.bind(),
    }[wrap]()
    fusion = FusionRetriever(retrievers=[child], k=10, fetch_k=5)
    query = "wing lift drag speed"
    docs = await fusion.ainvoke(query) if asynchronous else fusion.invoke(query)
    assert len(docs) == 5
    reranking = RerankingRetriever(base_retriever=child, reranker=CrossEncoderReranker(
        model=WordOverlap()), fetch_k=5, k=10)
    docs = await reranking.ainvoke(query) if asynchronous else reranking.invoke(query)
    assert len(docs) == 5


# ------------------------------------------------- item 5: no shared metadata


def _nested(documents: list[Document]) -> list[Document]:
    return [Document(id=d.id, page_content=d.page_content,
                     metadata={**d.metadata, "tags": ["orig"], "info": {"a": [1]}})
            for d in documents]


def _all_retrievers(docs: list[Document]) -> dict[str, Any]:
    bm25 = BM25Retriever.from_documents(docs, k=3)
    return {
        "bm25": bm25,
        "dense": DenseRetriever.from_documents(docs, EMBED, k=3),
        "hybrid": HybridRetriever.from_documents(docs, EMBED, k=3),
        "parent": ParentDocumentRetriever.from_documents(docs, k=3, docstore=InMemoryStore()),
        "hyde": HyDERetriever.from_documents(docs, embedding=EMBED, llm=FakeListLLM(
            responses=["wing lift"] * 10), k=3),
        "rerank": RerankingRetriever(base_retriever=bm25, reranker=CrossEncoderReranker(
            model=WordOverlap()), k=3),
    }


@pytest.mark.parametrize("name", ["bm25", "dense", "hybrid", "parent", "hyde", "rerank"])
def test_returned_metadata_shares_nothing_with_index_or_input(
    documents: list[Document], name: str
) -> None:
    docs = _nested(documents)
    retriever = _all_retrievers(docs)[name]
    first = retriever.invoke(WING_QUERY)
    assert first
    for d in first:
        d.metadata["tags"].append("edited")
        d.metadata["info"]["a"].append(2)
    again = retriever.invoke(WING_QUERY)
    assert all(d.metadata["tags"] == ["orig"] and d.metadata["info"] == {"a": [1]}
               for d in again)
    assert all(d.metadata["tags"] == ["orig"] and d.metadata["info"] == {"a": [1]}
               for d in docs)
    # Editing the caller's input after indexing does not reach the index either.
    docs[0].metadata["tags"].append("late")
    assert all(d.metadata["tags"] == ["orig"] for d in retriever.invoke(WING_QUERY))


def test_compressor_output_shares_nothing_with_its_input(documents: list[Document]) -> None:
    docs = _nested(documents)
    for compressor in (CrossEncoderReranker(model=WordOverlap()),
                       LLMRerankCompressor(llm=FakeListLLM(responses=["[1]"]))):
        out = compressor.compress_documents(docs[:3], WING_QUERY)
        out[0].metadata["tags"].append("edited")
        assert all(d.metadata["tags"] == ["orig"] for d in docs)


class TestParentOverVectorStoreStandard(RetrieversIntegrationTests):
    """LangChain's standard suite: parents whose children live in a LangChain vector store."""

    @property
    def retriever_constructor(self) -> Any:
        def build(**kwargs: Any) -> ParentDocumentRetriever:
            documents = [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]
            return ParentDocumentRetriever.from_documents(
                documents, vectorstore=InMemoryVectorStore(DeterministicFakeEmbedding(size=16)),
                chunk_size=60, chunk_overlap=0, **kwargs)

        return build

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY
