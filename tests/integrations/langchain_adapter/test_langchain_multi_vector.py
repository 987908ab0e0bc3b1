"""`ParentDocumentRetriever` and `MultiVectorRetriever` built LangChain's way.

Drop-ins for ``langchain_classic.retrievers``' classes: the behaviours of their unit tests
(written here), the same children and results as the originals on the same stores, a store
with only ``similarity_search``, ``mmr`` and ``similarity_score_threshold``, a
``LocalFileStore`` docstore persisted across instances, LangChain's multimodal recipe
(image summaries as children), exact ``k`` parents, and the arguments refused with what
to pass instead. LangChain's standard `RetrieversIntegrationTests` run on the
``MultiVectorRetriever``.
"""

from __future__ import annotations

import doctest
from pathlib import Path
from typing import Any

import pytest
from langchain_classic import retrievers as original
from langchain_classic.retrievers.multi_vector import SearchType
from langchain_classic.storage import LocalFileStore, create_kv_docstore
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.stores import InMemoryByteStore, InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter

from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import MultiVectorRetriever, ParentDocumentRetriever
from langchain_hybrid_retrievers import multi_vector as multi_vector_module
from langchain_hybrid_retrievers import parent as parent_module

from corpora import CORPUS

PROVENANCE = ("score", "rank", "matched_children")


class WordEmbeddings(Embeddings):
    """Bag-of-words vectors (`HashingEmbedder`): texts sharing words are similar."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dimension=256)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text).tolist()


class CosineStore(InMemoryVectorStore):
    """LangChain's `InMemoryVectorStore` with relevance scores (its cosine similarity), which
    ``similarity_score_threshold`` needs (the plain one has none)."""

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score


class KeyLookupStore(VectorStore):
    """A vector store with only what LangChain requires: ``similarity_search`` (here a
    lookup of the query as a child id), ``add_documents`` assigning its own ids, ``delete``."""

    def __init__(self) -> None:
        self.store: dict[str, Document] = {}

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        ids = [str(len(self.store) + n) for n in range(len(documents))]  # ignores ids=
        self.store.update(zip(ids, documents))
        return ids

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        raise NotImplementedError

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None,
                   **kwargs: Any) -> KeyLookupStore:
        raise NotImplementedError

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
        for i in ids or ():
            self.store.pop(i, None)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        found = self.store.get(query)
        return [] if found is None else [found]


class ScoredLookupStore(KeyLookupStore):
    """`KeyLookupStore` with a relevance-scored search: every hit scores 0.8."""

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score

    def similarity_search_with_score(self, query: str, k: int = 4,
                                     **kwargs: Any) -> list[tuple[Document, float]]:
        return [(d, 0.8) for d in self.similarity_search(query, k)]


def _sections() -> list[Document]:
    """Four parents, one per topic of the shared corpus, with metadata."""
    by_topic: dict[str, list[str]] = {}
    for _, text, meta in CORPUS:
        by_topic.setdefault(meta["topic"], []).append(text)
    return [Document(page_content=" ".join(texts), metadata={"topic": t, "source": f"{t}.md"})
            for t, texts in by_topic.items()]


SPLITTER = RecursiveCharacterTextSplitter(chunk_size=120, chunk_overlap=0)
IDS = ["aero", "cooking", "garden", "engineering"]
QUERIES = ["wing lift at low speed", "bread crust oven", "soil compost", "heat radiator",
           "speed"]


def _plain(docs: list[Document]) -> list[tuple[str, dict[str, Any]]]:
    """Returned documents without our provenance keys, to compare with the originals."""
    return [(d.page_content, {k: v for k, v in d.metadata.items() if k not in PROVENANCE})
            for d in docs]


def _children(store: InMemoryVectorStore) -> list[tuple[str, dict[str, Any]]]:
    return sorted(((v["text"], v["metadata"]) for v in store.store.values()),
                  key=lambda t: (t[0], sorted(t[1].items())))


# -------------------------------------- the originals' unit tests, our versions


def test_parent_document_retriever_built_empty_then_filled() -> None:
    store = KeyLookupStore()
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(),
                                        child_splitter=CharacterTextSplitter(chunk_size=400))
    (pid,) = retriever.add_documents([Document(page_content="test document")])
    assert store.store["0"].metadata == {"doc_id": pid}  # a child, in LangChain's layout
    results = retriever.invoke("0")
    assert [d.page_content for d in results] == ["test document"]
    assert results[0].id == pid and results[0].metadata["matched_children"][0]["rank"] == 1


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_multi_vector_retriever_over_children_you_add(asynchronous: bool) -> None:
    retriever = MultiVectorRetriever(vectorstore=ScoredLookupStore(), docstore=InMemoryStore(),
                                     doc_id="doc_id")  # LangChain's tests spell id_key so
    assert retriever.id_key == "doc_id"
    documents = [Document(page_content="test document", metadata={"doc_id": "1"})]
    if asynchronous:
        await retriever.vectorstore.aadd_documents(documents)
        await retriever.docstore.amset([("1", documents[0])])
        results = await retriever.ainvoke("0")  # the store's id of the child
    else:
        retriever.vectorstore.add_documents(documents)
        retriever.docstore.mset([("1", documents[0])])
        results = retriever.invoke("0")
    assert [d.page_content for d in results] == ["test document"]
    assert results[0].metadata["score"] == pytest.approx(0.8)
    assert retriever.invoke("nothing") == []


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(("threshold", "found"), [(0.5, 1), (0.9, 0)])
async def test_similarity_score_threshold_on_children(
    asynchronous: bool, threshold: float, found: int
) -> None:
    documents = [Document(page_content="test document", metadata={"doc_id": "1"})]
    store = ScoredLookupStore()
    store.add_documents(documents)
    retriever = MultiVectorRetriever(
        vectorstore=store, docstore=InMemoryStore(), search_type=SearchType.similarity_score_threshold,
        search_kwargs={"score_threshold": threshold})
    assert retriever.search_type == "similarity_score_threshold"
    retriever.docstore.mset([("1", documents[0])])
    results = await retriever.ainvoke("0") if asynchronous else retriever.invoke("0")
    assert len(results) == found


# --------------------------------------------------- the same as the originals


def _pair(**kwargs: Any) -> tuple[Any, ParentDocumentRetriever, InMemoryVectorStore,
                                   InMemoryVectorStore]:
    theirs_store, ours_store = (CosineStore(WordEmbeddings()) for _ in range(2))
    theirs = original.ParentDocumentRetriever(vectorstore=theirs_store, docstore=InMemoryStore(),
                                              child_splitter=SPLITTER, **kwargs)
    ours = ParentDocumentRetriever(vectorstore=ours_store, docstore=InMemoryStore(),
                                   child_splitter=SPLITTER, **kwargs)
    return theirs, ours, theirs_store, ours_store


@pytest.mark.parametrize("kwargs", [
    {},
    {"search_kwargs": {"k": 2}},
    {"search_kwargs": {"k": 10}, "child_metadata_fields": ["topic"]},
    {"search_type": "mmr", "search_kwargs": {"k": 3, "fetch_k": 10, "lambda_mult": 0.3}},
    {"search_type": "similarity_score_threshold", "search_kwargs": {"score_threshold": 0.2}},
    {"id_key": "parent", "search_kwargs": {"k": 6, "filter": lambda d: d.metadata["topic"]
                                                  != "aero"}},
], ids=["default", "k2", "fields", "mmr", "threshold", "id_key-filter"])
def test_same_children_and_results_as_langchain(kwargs: dict[str, Any]) -> None:
    theirs, ours, theirs_store, ours_store = _pair(**kwargs)
    theirs.add_documents(_sections(), ids=IDS)
    assert ours.add_documents(_sections(), ids=IDS) == IDS
    assert _children(ours_store) == _children(theirs_store)
    for query in QUERIES:
        expected = theirs.invoke(query)
        got = ours.invoke(query)
        assert _plain(got) == _plain(expected), query
        assert [d.id for d in got] == [next(i for i, s in zip(IDS, _sections())
                                            if s.page_content == d.page_content)
                                       for d in expected]


def test_parent_splitter_cuts_parents_as_langchain_does() -> None:
    parent_splitter = RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0,
                                                     add_start_index=True)
    theirs, ours, theirs_store, ours_store = _pair(parent_splitter=parent_splitter)
    theirs.add_documents(_sections())
    ids = ours.add_documents(_sections())
    assert len(ids) == len(set(ids)) > len(IDS)  # random UUIDs, one per parent chunk
    strip = [(t, {k: v for k, v in m.items() if k != "doc_id"})
             for t, m in _children(ours_store)]
    assert strip == [(t, {k: v for k, v in m.items() if k != "doc_id"})
                     for t, m in _children(theirs_store)]
    for query in QUERIES:
        assert _plain(ours.invoke(query)) == _plain(theirs.invoke(query))
    assert all("start_index" in d.metadata for d in ours.invoke("wing"))


# ----------------------------------------- stores, search types, persistence


def test_from_documents_over_a_store_with_only_similarity_search() -> None:
    store = KeyLookupStore()
    retriever = ParentDocumentRetriever.from_documents(
        [Document(id="p", page_content="One sentence here. Another one there.")],
        vectorstore=store, chunk_size=20, chunk_overlap=0)
    assert {d.metadata["parent_id"] for d in store.store.values()} == {"p"}
    docs = retriever.invoke("1")  # the store's id of the second child
    assert [d.id for d in docs] == ["p"]
    assert docs[0].metadata["matched_children"][0] == {"id": "p:1", "rank": 1, "score": 1.0}
    retriever.delete(["p"])  # the store's own ids are remembered
    assert store.store == {}


def test_mmr_diversifies_the_children() -> None:
    store = InMemoryVectorStore(WordEmbeddings())
    retriever = MultiVectorRetriever(vectorstore=store, docstore=InMemoryStore(),
                                     search_type="mmr",
                                     search_kwargs={"k": 2, "fetch_k": 4, "lambda_mult": 0.0})
    retriever.docstore.mset([("a", Document(page_content="A")), ("b", Document(page_content="B"))])
    store.add_documents([
        Document(page_content="wing lift wing lift", metadata={"doc_id": "a"}),
        Document(page_content="wing lift wing lift again", metadata={"doc_id": "a"}),
        Document(page_content="wing drag", metadata={"doc_id": "b"}),
    ])
    # Similarity alone picks both "a" children; MMR picks one and then the different one.
    similar = MultiVectorRetriever(vectorstore=store, docstore=retriever.docstore,
                                   search_kwargs={"k": 2})
    assert [d.id for d in similar.invoke("wing lift")] == ["a"]
    assert [d.id for d in retriever.invoke("wing lift")] == ["a", "b"]
    # LangChain reads its fields at each call: its docs set `retriever.search_type = mmr`.
    similar.search_type = SearchType.mmr
    similar.search_kwargs["lambda_mult"] = 0.0
    assert [d.id for d in similar.invoke("wing lift")] == ["a", "b"]
    similar.search_kwargs["k"] = 1
    assert [d.id for d in similar.invoke("wing lift")] == ["a"]
    # A copy shares the child index but searches with its own fields.
    copy = retriever.model_copy(update={"search_type": "similarity"})
    assert [d.id for d in copy.invoke("wing lift")] == ["a"]
    assert [d.id for d in retriever.invoke("wing lift")] == ["a", "b"]
    similar.search_type = "knn"
    with pytest.raises(ValueError, match="search_type must be one of"):
        similar.invoke("wing lift")


def test_similarity_score_threshold_with_a_real_store() -> None:
    store = CosineStore(WordEmbeddings())
    docstore = InMemoryStore()
    build = ParentDocumentRetriever(vectorstore=store, docstore=docstore, child_splitter=SPLITTER)
    build.add_documents(_sections(), ids=IDS)
    loose = MultiVectorRetriever(vectorstore=store, docstore=docstore,
                                 search_type="similarity_score_threshold",
                                 search_kwargs={"score_threshold": 0.0, "k": 50})
    assert len(loose.invoke("wing lift")) == 4
    best = loose.invoke("wing lift")[0].metadata["score"]
    strict = MultiVectorRetriever(vectorstore=store, docstore=docstore,
                                  search_type="similarity_score_threshold",
                                  search_kwargs={"score_threshold": best, "k": 50})
    assert [d.id for d in strict.invoke("wing lift")] == ["aero"]


def test_local_file_store_docstore_persists_across_instances(tmp_path: Path) -> None:
    store = InMemoryVectorStore(WordEmbeddings())
    first = ParentDocumentRetriever(vectorstore=store,
                                    docstore=create_kv_docstore(LocalFileStore(tmp_path)),
                                    child_splitter=SPLITTER)
    first.add_documents(_sections(), ids=IDS)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(IDS)
    # A new retriever (and a new LangChain one) over the same files and children.
    second = ParentDocumentRetriever(vectorstore=store, byte_store=LocalFileStore(tmp_path),
                                     child_splitter=SPLITTER)
    theirs = original.ParentDocumentRetriever(
        vectorstore=store, byte_store=LocalFileStore(tmp_path), child_splitter=SPLITTER)
    docs = second.invoke("bread crust oven")
    assert docs[0].id == "cooking" and docs[0].metadata["topic"] == "cooking"
    assert _plain(docs) == _plain(theirs.invoke("bread crust oven"))
    with pytest.raises(ValueError, match="already present"):
        second.add_documents(_sections()[:1], ids=["aero"])


def test_byte_store_is_wrapped_like_langchain() -> None:
    retriever = MultiVectorRetriever(vectorstore=ScoredLookupStore(),
                                     byte_store=InMemoryByteStore())
    retriever.docstore.mset([("1", Document(page_content="parent"))])
    retriever.vectorstore.add_documents([Document(page_content="c", metadata={"doc_id": "1"})])
    assert retriever.byte_store.mget(["1"])[0].startswith(b"{")  # LangChain's JSON
    assert [d.page_content for d in retriever.invoke("0")] == ["parent"]


def test_multimodal_recipe_image_summaries_point_to_their_parents() -> None:
    # LangChain's multimodal RAG recipe: summaries of texts, tables and images are the
    # children; the raw texts and base64 images are the parents, linked by id_key.
    store = InMemoryVectorStore(WordEmbeddings())
    retriever = MultiVectorRetriever(vectorstore=store, docstore=InMemoryStore(),
                                     id_key="doc_id", search_kwargs={"k": 2})
    image_b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    texts = ["The wing chart shows lift rising with angle of attack until stall."]
    summaries = {"img-1": "Line chart of lift coefficient against angle of attack",
                 "img-2": "Photo of a sourdough loaf with a dark crust",
                 "txt-1": "Lift rises with angle of attack until the wing stalls"}
    store.add_documents([Document(page_content=s, metadata={"doc_id": i})
                         for i, s in summaries.items()])
    retriever.docstore.mset([("img-1", image_b64), ("img-2", image_b64[::-1]),
                             ("txt-1", Document(page_content=texts[0]))])
    docs = retriever.invoke("chart of lift against angle of attack")
    assert [d.id for d in docs] == ["img-1", "txt-1"]
    assert docs[0].page_content == image_b64  # the raw image string, as the recipe stored it
    assert docs[1].page_content == texts[0]
    # A summary pointing at a parent the docstore lacks is left out, as in LangChain.
    store.add_documents([Document(page_content="chart of lift against angle of attack",
                                  metadata={"doc_id": "gone"})])
    assert [d.id for d in retriever.invoke("chart of lift against angle of attack")] == ["img-1"]


# ---------------------------------------------- beyond the originals: exact k


def test_k_asks_for_exactly_k_parents() -> None:
    store = InMemoryVectorStore(WordEmbeddings())
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(),
                                        child_splitter=SPLITTER, search_kwargs={"k": 1})
    retriever.add_documents(_sections(), ids=IDS)
    assert len(retriever.invoke("wing lift speed")) == 1  # one child, one parent
    three = retriever.invoke("wing lift speed", k=3)
    assert len(three) == 3 and three[0].id == "aero"
    scores = [d.metadata["score"] for d in three]
    assert scores == sorted(scores, reverse=True)
    assert len(retriever.model_copy(update={"k": 4}).invoke("wing")) == 4


def test_parent_ids_are_document_ids_when_set_else_uuids() -> None:
    retriever = ParentDocumentRetriever(vectorstore=InMemoryVectorStore(WordEmbeddings()),
                                        docstore=InMemoryStore(), child_splitter=SPLITTER)
    named, unnamed = retriever.add_documents(
        [Document(id="mine", page_content="Wing ribs."), Document(page_content="Bread.")])
    assert named == "mine" and len(unnamed) == 36  # a UUID
    assert sorted(retriever.docstore.yield_keys()) == sorted([named, unnamed])
    assert retriever.docstore.mget([unnamed])[0].page_content == "Bread."


async def test_add_to_docstore_false_aadd_and_delete() -> None:
    store = InMemoryVectorStore(WordEmbeddings())
    docstore = InMemoryStore()
    docstore.mset(list(zip(IDS, _sections())))
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=docstore,
                                        child_splitter=SPLITTER)
    with pytest.raises(ValueError, match="add_to_docstore=False needs ids="):
        retriever.add_documents(_sections(), add_to_docstore=False)
    with pytest.raises(ValueError, match="got 4 parent.*and 2 for ids="):
        retriever.add_documents(_sections(), ids=IDS[:2])
    assert await retriever.aadd_documents(_sections(), ids=IDS, add_to_docstore=False) == IDS
    assert retriever.invoke("soil compost")[0].id == "garden"
    retriever.delete(["garden"])
    assert docstore.mget(["garden"]) == [None]
    assert all(v["metadata"]["doc_id"] != "garden" for v in store.store.values())


# ------------------------------------------------------------------ arguments


def test_arguments_are_refused_with_what_to_pass() -> None:
    store = InMemoryVectorStore(WordEmbeddings())
    with pytest.raises(TypeError, match="needs child_splitter="):
        ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore())
    with pytest.raises(TypeError, match=r"needs docstore= .* or byte_store="):
        MultiVectorRetriever(vectorstore=store)
    with pytest.raises(TypeError, match="needs vectorstore="):
        MultiVectorRetriever(docstore=InMemoryStore())
    with pytest.raises(TypeError, match="not both"):
        MultiVectorRetriever(vectorstore=store, docstore=InMemoryStore(),
                             byte_store=InMemoryByteStore())
    with pytest.raises(TypeError, match="pass its .vectorstore"):
        MultiVectorRetriever(vectorstore=store.as_retriever(), docstore=InMemoryStore())
    with pytest.raises(TypeError,
                       match=r"'child_spliter' \(did you mean child_splitter=\?\).*accepted"):
        ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(),
                                child_spliter=SPLITTER)
    with pytest.raises(ValueError, match="search_type must be one of"):
        MultiVectorRetriever(vectorstore=store, docstore=InMemoryStore(), search_type="knn")
    with pytest.raises(ValueError, match=r"search_kwargs\['k'\]"):
        MultiVectorRetriever(vectorstore=store, docstore=InMemoryStore(),
                             search_kwargs={"k": 0})
    with pytest.raises(TypeError, match="doc_id='a' and id_key='b' differ"):
        MultiVectorRetriever(vectorstore=store, docstore=InMemoryStore(), doc_id="a",
                             id_key="b")
    with pytest.raises(TypeError, match="child_metadata_fields must be a list"):
        ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(),
                                child_splitter=SPLITTER, child_metadata_fields="topic")
    with pytest.raises(TypeError, match="split_text"):
        ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(), child_splitter=3)
    # LangChain's arguments do not mix with a searcher built by from_documents.
    with pytest.raises(TypeError, match=r"'search_type', 'search_kwargs' for a retriever "
                                        r"over searcher="):
        ParentDocumentRetriever.from_documents(_sections(), search_type="mmr",
                                               search_kwargs={"k": 2})


def test_add_documents_refusals() -> None:
    retriever = ParentDocumentRetriever(vectorstore=InMemoryVectorStore(WordEmbeddings()),
                                        docstore=InMemoryStore(), child_splitter=SPLITTER,
                                        child_metadata_fields=["year"])
    with pytest.raises(KeyError, match=r"names \['year'\], which document 'aero' lacks"):
        retriever.add_documents(_sections()[:1], ids=["aero"])
    with pytest.raises(TypeError, match=r"unexpected argument\(s\) 'batch_size'"):
        retriever.add_documents(_sections(), batch_size=2)
    keyed = retriever.model_copy(update={"child_metadata_fields": None})
    clash = Document(page_content="x y z", metadata={"parent_id": "elsewhere"})
    with pytest.raises(ValueError, match="'parent_id'='elsewhere'"):
        keyed.add_documents([clash], ids=["p"])
    assert keyed.docstore.mget(["aero", "p"]) == [None, None]  # nothing was added
    # The children are stored under the id_key in force when they are added.
    keyed.id_key = "source_doc"
    keyed.add_documents(_sections()[:1], ids=["aero"])
    assert {v["metadata"]["source_doc"] for v in keyed.vectorstore.store.values()} == {"aero"}
    assert keyed.invoke("wing lift")[0].id == "aero"


def test_a_child_with_a_non_str_parent_id_is_named() -> None:
    retriever = MultiVectorRetriever(vectorstore=ScoredLookupStore(), docstore=InMemoryStore())
    retriever.vectorstore.add_documents([Document(page_content="c", metadata={"doc_id": 7})])
    with pytest.raises(ValueError, match="under 'doc_id' as a int"):
        retriever.invoke("0")


def test_docstring_examples() -> None:
    for module in (multi_vector_module, parent_module):
        assert doctest.testmod(module).failed == 0


class TestMultiVectorRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[MultiVectorRetriever]:
        return MultiVectorRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        store = InMemoryVectorStore(WordEmbeddings())
        filler = ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(),
                                         child_splitter=SPLITTER)
        filler.add_documents(_sections(), ids=IDS)
        return {"vectorstore": store, "docstore": filler.docstore}

    @property
    def retriever_query_example(self) -> str:
        return "wing bread soil heat"
