"""Tests for `langchain_hybrid_retrievers.BM25Retriever`.

Includes LangChain's standard `RetrieversIntegrationTests` plus per-call overrides,
async, batch, persistence, LCEL and callback checks. Every ranking is compared with
the core `BM25Index`, which is the single source of truth for scores.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

import langchain_hybrid_retrievers
from hybrid_retrievers import Analyzer, BM25Index, Doc
from langchain_hybrid_retrievers import BM25Retriever

from corpora import CORPUS, QUERIES, WING_QUERY



def _index() -> BM25Index:
    return BM25Index.from_texts(
        [t for _, t, _ in CORPUS],
        ids=[i for i, _, _ in CORPUS],
        metadatas=[m for _, _, m in CORPUS],
    )


@pytest.fixture
def documents() -> list[Document]:
    """The corpus as LangChain documents with ids (fresh copies per test)."""
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def retriever(documents: list[Document]) -> BM25Retriever:
    return BM25Retriever.from_documents(documents)


def _ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


# --------------------------------------------------------------------- standard


class TestBM25RetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard suite: constructor ``k``, ``invoke(q, k=...)``, async."""

    @property
    def retriever_constructor(self) -> type[BM25Retriever]:
        return BM25Retriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"index": _index()}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY


# ------------------------------------------------------------------- building


def test_package_exports() -> None:
    assert {"BM25Retriever", "__version__"} <= set(langchain_hybrid_retrievers.__all__)
    assert isinstance(langchain_hybrid_retrievers.__version__, str)


def test_from_documents_keeps_ids_and_metadata(
    retriever: BM25Retriever, documents: list[Document]
) -> None:
    by_id = {d.id: d for d in documents}
    results = retriever.invoke(WING_QUERY)
    assert len(results) == 4
    for rank, doc in enumerate(results, start=1):
        original = by_id[doc.id]
        assert doc.page_content == original.page_content
        assert doc.metadata == {**original.metadata, "score": doc.metadata["score"], "rank": rank}
        assert isinstance(doc.metadata["score"], float) and doc.metadata["score"] > 0
    scores = [d.metadata["score"] for d in results]
    assert scores == sorted(scores, reverse=True)


def test_results_equal_core_search(retriever: BM25Retriever) -> None:
    for query in QUERIES:
        hits = retriever.index.search(query, k=5)
        docs = retriever.invoke(query, k=5)
        assert _ids(docs) == [h.id for h in hits]
        assert [d.metadata["score"] for d in docs] == [h.score for h in hits]
        assert [d.metadata["rank"] for d in docs] == [h.rank for h in hits]


def test_documents_without_ids_get_content_ids_in_the_index() -> None:
    texts = ["wing lift and drag", "bread and butter", "wing lift and drag"]
    by_docs = BM25Retriever.from_documents([Document(page_content=t) for t in texts])
    by_texts = BM25Retriever.from_texts(texts)
    assert by_docs.index.ids == by_texts.index.ids
    assert len(set(by_docs.index.ids)) == 3
    again = BM25Retriever.from_documents([Document(page_content=t) for t in texts])
    assert again.index.ids == by_docs.index.ids  # deterministic, never uuid4
    # Handed back without an id, as langchain-community's BM25Retriever does.
    assert [d.id for d in by_docs.invoke("wing")] == [None, None]
    assert [d.id for d in by_docs.docs] == [None, None, None]


def test_mixed_ids_keep_the_given_ones() -> None:
    docs = [Document(id="mine", page_content="wing lift"), Document(page_content="bread")]
    retriever = BM25Retriever.from_documents(docs)
    assert retriever.index.ids[0] == "mine"
    assert len(retriever.index.ids[1]) == 32


def test_from_texts_passes_bm25_settings() -> None:
    analyzer = Analyzer(stemmer=None)
    retriever = BM25Retriever.from_texts(
        [t for _, t, _ in CORPUS],
        metadatas=[m for _, _, m in CORPUS],
        ids=[i for i, _, _ in CORPUS],
        k=2,
        analyzer=analyzer,
        k1=1.2,
        b=0.5,
        method="bm25+",
        delta=0.5,
        score_key="bm25",
        tags=["kw"],
    )
    assert (retriever.index.k1, retriever.index.b, retriever.index.delta) == (1.2, 0.5, 0.5)
    assert retriever.index.analyzer.to_config() == analyzer.to_config()
    assert retriever.k == 2 and retriever.tags == ["kw"]
    docs = retriever.invoke("wings")
    hits = retriever.index.search("wings", k=2)
    assert _ids(docs) == [h.id for h in hits]
    assert [d.metadata["bm25"] for d in docs] == [h.score for h in hits]
    assert "score" not in docs[0].metadata


def test_from_documents_rejects_non_documents() -> None:
    with pytest.raises(TypeError, match=r"documents\[1\]"):
        BM25Retriever.from_documents([Document(page_content="a"), "b"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="wrap it in a list"):
        BM25Retriever.from_documents(Document(page_content="a"))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -3])
def test_bad_k_at_construction_is_a_clear_value_error(bad: int) -> None:
    with pytest.raises(ValidationError, match="k must be >= 1"):
        BM25Retriever(index=_index(), k=bad)


def test_k_of_wrong_kind_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="k must be a positive int"):
        BM25Retriever(index=_index(), k=True)


def test_index_must_be_a_bm25_index() -> None:
    with pytest.raises(ValidationError, match="index"):
        BM25Retriever(index=["not", "an", "index"])  # type: ignore[arg-type]


def test_score_key_must_not_clash_with_rank() -> None:
    with pytest.raises(ValidationError, match="score_key"):
        BM25Retriever(index=_index(), score_key="rank")


# ------------------------------------------------------------ per-call overrides


def test_per_call_k(retriever: BM25Retriever) -> None:
    assert len(retriever.invoke(WING_QUERY)) == 4
    assert len(retriever.invoke(WING_QUERY, k=1)) == 1
    assert _ids(retriever.invoke(WING_QUERY, k=2)) == _ids(retriever.invoke(WING_QUERY))[:2]
    assert retriever.k == 4  # the override did not stick


def test_per_call_k_zero_is_not_replaced_by_the_default(retriever: BM25Retriever) -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        retriever.invoke(WING_QUERY, k=0)


def test_k_larger_than_matches_returns_only_matches(retriever: BM25Retriever) -> None:
    docs = retriever.invoke("bread", k=50)
    assert sorted(_ids(docs)) == ["bread-1", "bread-2", "bread-3"]
    assert retriever.invoke("zeppelin") == []


def test_per_call_mapping_filter(retriever: BM25Retriever) -> None:
    docs = retriever.invoke("bread wing lift", k=10, filter={"topic": "cooking"})
    assert docs and {d.metadata["topic"] for d in docs} == {"cooking"}
    hits = retriever.index.search("bread wing lift", 10, filter={"topic": "cooking"})
    assert _ids(docs) == [h.id for h in hits]


def test_per_call_callable_filter_receives_core_docs(retriever: BM25Retriever) -> None:
    seen: list[Any] = []

    def recent(doc: Doc) -> bool:
        seen.append(doc)
        return doc.metadata["year"] >= 2000

    docs = retriever.invoke(WING_QUERY, k=10, filter=recent)
    assert _ids(docs) == ["aero-4"]
    assert seen and all(isinstance(d, Doc) for d in seen)


def test_default_filter_and_per_call_override(documents: list[Document]) -> None:
    retriever = BM25Retriever.from_documents(documents, filter={"topic": "garden"})
    assert {d.metadata["topic"] for d in retriever.invoke("plant trees soil", k=10)} == {"garden"}
    assert retriever.invoke(WING_QUERY) == []
    override = retriever.invoke(WING_QUERY, filter={"topic": "aero"})
    assert len(override) == 4


def test_unknown_keyword_is_an_error(retriever: BM25Retriever) -> None:
    with pytest.raises(TypeError):
        retriever.invoke(WING_QUERY, top_k=2)


def test_blank_query_is_a_clear_error(retriever: BM25Retriever) -> None:
    with pytest.raises(ValueError, match="query"):
        retriever.invoke("   ")


# ------------------------------------------------------------------ immutability


def test_inputs_and_stored_metadata_are_not_mutated(documents: list[Document]) -> None:
    before = copy.deepcopy(documents)
    retriever = BM25Retriever.from_documents(documents)
    first = retriever.invoke(WING_QUERY)
    assert documents == before
    first[0].metadata["topic"] = "edited"
    first[0].metadata["extra"] = 1
    documents[0].metadata["topic"] = "edited-too"
    second = retriever.invoke(WING_QUERY)
    assert second[0] is not first[0]
    assert second[0].metadata["topic"] == "aero" and "extra" not in second[0].metadata
    assert "score" not in retriever.index.get(second[0].id).metadata


# ------------------------------------------------------------------ async, batch


@pytest.mark.asyncio
async def test_ainvoke_matches_invoke(retriever: BM25Retriever) -> None:
    for query in QUERIES:
        assert await retriever.ainvoke(query) == retriever.invoke(query)
    assert await retriever.ainvoke(WING_QUERY, k=3) == retriever.invoke(WING_QUERY, k=3)
    filtered = await retriever.ainvoke("bread wing lift", k=10, filter={"topic": "cooking"})
    assert filtered == retriever.invoke("bread wing lift", k=10, filter={"topic": "cooking"})


@pytest.mark.asyncio
async def test_ainvoke_searches_in_a_worker_thread(
    retriever: BM25Retriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    search = BM25Index.search

    def spy(self: BM25Index, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return search(self, *args, **kwargs)

    monkeypatch.setattr(BM25Index, "search", spy)
    loop_thread = threading.get_ident()
    docs = await retriever.ainvoke(WING_QUERY, k=2)
    assert len(docs) == 2
    assert threads and threads[0] != loop_thread


@pytest.mark.asyncio
async def test_ainvoke_runs_concurrently(retriever: BM25Retriever) -> None:
    results = await asyncio.gather(*(retriever.ainvoke(q, k=3) for q in QUERIES))
    assert results == [retriever.invoke(q, k=3) for q in QUERIES]


def test_batch_matches_invoke(retriever: BM25Retriever) -> None:
    assert retriever.batch(QUERIES) == [retriever.invoke(q) for q in QUERIES]
    assert retriever.batch(QUERIES, k=2) == [retriever.invoke(q, k=2) for q in QUERIES]


@pytest.mark.asyncio
async def test_abatch_matches_invoke(retriever: BM25Retriever) -> None:
    assert await retriever.abatch(QUERIES, k=2) == [retriever.invoke(q, k=2) for q in QUERIES]


# ------------------------------------------------------------------ add, delete


def test_add_documents_texts_and_delete(retriever: BM25Retriever) -> None:
    added = retriever.add_documents(
        [Document(id="zep-1", page_content="A zeppelin is a rigid airship.", metadata={"topic": "aero"})]
    )
    assert added == ["zep-1"]
    text_ids = retriever.add_texts(
        ["Zeppelin raids began in 1915."], metadatas=[{"topic": "history"}]
    )
    assert len(text_ids) == 1 and len(text_ids[0]) == 32
    found = retriever.invoke("zeppelin")
    # A text added without an id is keyed by its content id, handed back without one.
    assert sorted(_ids(found), key=str) == [None, "zep-1"]
    assert {d.id: d.metadata["topic"] for d in found}[None] == "history"

    retriever.delete(["zep-1", text_ids[0]])
    assert retriever.invoke("zeppelin") == []
    assert len(retriever.index) == len(CORPUS)


def test_add_existing_id_and_delete_unknown_id_fail(retriever: BM25Retriever) -> None:
    with pytest.raises(ValueError, match="already in the index"):
        retriever.add_documents([Document(id="aero-1", page_content="again")])
    with pytest.raises(KeyError, match="nope"):
        retriever.delete(["aero-1", "nope"])
    assert "aero-1" in retriever.index  # nothing deleted on error


# ------------------------------------------------------------------ persistence


def test_save_local_load_local_round_trip(tmp_path: Path, documents: list[Document]) -> None:
    retriever = BM25Retriever.from_documents(
        documents, analyzer=Analyzer(stemmer=None), method="bm25l", k1=1.1, b=0.6
    )
    folder = tmp_path / "bm25"
    retriever.save_local(folder)
    loaded = BM25Retriever.load_local(folder, k=3, score_key="bm25")
    assert loaded.k == 3 and loaded.score_key == "bm25"
    assert loaded.index.analyzer.to_config() == retriever.index.analyzer.to_config()
    assert (loaded.index.method, loaded.index.k1, loaded.index.b, loaded.index.delta) == (
        retriever.index.method, retriever.index.k1, retriever.index.b, retriever.index.delta
    )
    for query in QUERIES:
        want = retriever.invoke(query, k=3)
        got = loaded.invoke(query)
        assert [(d.id, d.page_content, d.metadata["bm25"]) for d in got] == [
            (d.id, d.page_content, d.metadata["score"]) for d in want
        ]
        assert [
            {k: v for k, v in d.metadata.items() if k != "bm25"} for d in got
        ] == [{k: v for k, v in d.metadata.items() if k != "score"} for d in want]
    assert not list(folder.rglob("*.pkl")) and not list(folder.rglob("*.pickle"))


def test_load_local_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        BM25Retriever.load_local(tmp_path / "missing")


# ------------------------------------------------------------------ LCEL, callbacks


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(f"[{d.id}] {d.page_content}" for d in docs)


def test_retriever_in_an_lcel_chain(retriever: BM25Retriever) -> None:
    context_chain = retriever | RunnableLambda(format_docs)
    context = context_chain.invoke(WING_QUERY)
    assert context.startswith(f"[{retriever.invoke(WING_QUERY)[0].id}]")

    prompts: list[str] = []

    def spy(prompt_value: Any) -> Any:
        prompts.append(prompt_value.to_string())
        return prompt_value

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    llm = FakeListChatModel(responses=["Lift grows with the angle of attack."])
    chain = (
        {"context": context_chain, "question": RunnablePassthrough()}
        | prompt
        | RunnableLambda(spy)
        | llm
        | StrOutputParser()
    )
    assert chain.invoke(WING_QUERY) == "Lift grows with the angle of attack."
    assert context in prompts[0] and WING_QUERY in prompts[0]


@pytest.mark.asyncio
async def test_retriever_in_an_async_lcel_chain(retriever: BM25Retriever) -> None:
    chain = retriever | RunnableLambda(format_docs)
    assert await chain.ainvoke(WING_QUERY) == chain.invoke(WING_QUERY)
    assert await chain.abatch(QUERIES) == chain.batch(QUERIES)


class RecordingHandler(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_retriever_start(
        self, serialized: dict[str, Any], query: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.events.append(("start", query))

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(("end", [d.id for d in documents]))

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append(("error", type(error).__name__))


def test_callbacks_see_retriever_start_and_end(retriever: BM25Retriever) -> None:
    handler = RecordingHandler()
    docs = retriever.invoke(WING_QUERY, config={"callbacks": [handler]}, k=2)
    assert handler.events == [("start", WING_QUERY), ("end", _ids(docs))]
    with pytest.raises(ValueError):
        retriever.invoke(WING_QUERY, config={"callbacks": [handler]}, k=0)
    assert handler.events[-1] == ("error", "ValueError")


@pytest.mark.asyncio
async def test_async_callbacks_see_retriever_start_and_end(retriever: BM25Retriever) -> None:
    handler = RecordingHandler()
    docs = await retriever.ainvoke(WING_QUERY, config={"callbacks": [handler]})
    assert handler.events == [("start", WING_QUERY), ("end", _ids(docs))]
