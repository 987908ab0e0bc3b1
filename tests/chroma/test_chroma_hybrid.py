"""Hybrid retrieval over a real local Chroma server (``chroma run``), both frameworks.

The server is started on 127.0.0.1 and a free port by a module fixture and stopped
after; the tests skip (with the server's log) only when it cannot start. The corpus,
adapters and retrievers are those of ``examples/chroma_hybrid.py``, so the example is
what is tested. Parent-document retrieval keeps its children in a Chroma collection;
HyDE searches Chroma with the expanded query and with the HyDE vector.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("chromadb", reason="the [chroma] extra is not installed")
pytest.importorskip("langchain_chroma", reason="the [chroma] extra is not installed")
pytest.importorskip("llama_index.vector_stores.chroma",
                    reason="the [chroma] extra is not installed")

from hybrid_retrievers import VectorIndex  # noqa: E402
from hybrid_retrievers.models import HashingEmbedder  # noqa: E402

# Cosine similarities of signed hashing vectors can be negative: LangChain warns that its
# relevance scores leave [0, 1], which is expected here.
pytestmark = [pytest.mark.chroma,
              pytest.mark.filterwarnings("ignore:Relevance scores must be between")]

_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chroma_hybrid.py"


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("chroma_hybrid_example", _EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = _load_example()
VISUAL = "schlieren photo of a bow shock"
PLAIN = "heat transfer in the boundary layer"


@pytest.fixture(scope="module")
def port(tmp_path_factory: Any) -> Any:
    try:
        server = ex.chroma_server(tmp_path_factory.mktemp("chroma") / "db")
        port = server.__enter__()
    except RuntimeError as exc:
        pytest.skip(f"the local Chroma server could not start: {exc}")
    yield port
    server.__exit__(None, None, None)


@pytest.fixture(scope="module")
def docs() -> list[Any]:
    return ex.corpus()


@pytest.fixture(scope="module")
def ours(docs: list[Any]) -> VectorIndex:
    return VectorIndex.from_texts([d.page_content for d in docs], ids=[d.id for d in docs],
                                  metadatas=[d.metadata for d in docs],
                                  embedder=HashingEmbedder(ex.DIM))


@pytest.fixture(scope="module")
def langchain_rrf(port: int, docs: list[Any]) -> tuple[Any, Any]:
    fusion, store, _ = ex.langchain_hybrid(port, docs)
    return fusion, store


def types(documents: list[Any]) -> set[str]:
    return {d.metadata["type"] for d in documents}


def test_default_embedding_function_never_runs(port: int) -> None:
    collection = ex.client(port).get_or_create_collection("no_default_embedding")
    with pytest.raises(Exception, match="would download a model"):
        collection.add(ids=["a"], documents=["text without an embedding"])


def test_chroma_scores_are_our_cosine_similarities(langchain_rrf: Any, ours: VectorIndex) -> None:
    _, store = langchain_rrf
    for query in [VISUAL, PLAIN, "flutter of panels"]:
        for kind in ["text", "image"]:
            got = store.similarity_search_with_relevance_scores(query, k=8, filter={"type": kind})
            want = {h.id: h.score for h in ours.search(query, 200, filter={"type": kind})}
            assert got and all(d.metadata["type"] == kind for d, _ in got)
            for d, score in got:
                assert score == pytest.approx(want[d.id], abs=1e-5)
            assert [s for _, s in got] == pytest.approx(sorted(want.values(), reverse=True)[:8],
                                                        abs=1e-5)


def test_langchain_per_source_filters_and_query_weights(langchain_rrf: Any) -> None:
    fusion, _ = langchain_rrf
    assert types(fusion.invoke(PLAIN, weights=[1, 0, 1, 0])) == {"text"}
    assert types(fusion.invoke(PLAIN, weights=[0, 1, 0, 1])) == {"image"}
    visual = fusion.invoke(VISUAL)
    assert visual[0].metadata["type"] == "image"
    assert types(fusion.invoke(VISUAL, k=10)) == {"text", "image"}
    assert types(fusion.invoke(PLAIN)) == {"text"}  # images weigh 0.5 without visual words
    sources = {s["source"]: s for s in visual[0].metadata["fusion"]["sources"]}
    assert set(sources) == {"bm25_image", "chroma_image"}
    assert sources["chroma_image"]["weight"] == 2.0


def test_langchain_score_fusion_reads_chroma_scores(port: int, docs: list[Any],
                                                    langchain_rrf: Any) -> None:
    _, store = langchain_rrf
    fusion, _, _ = ex.langchain_hybrid(port, docs, mode="relative_score")
    query = "pressure distribution on a cone figure"
    relevance = {d.id: s for d, s in store.similarity_search_with_relevance_scores(query, k=20)}
    hits = fusion.invoke(query, k=8)
    read = [(d.id, s) for d in hits for s in d.metadata["fusion"]["sources"]
            if s["source"].startswith("chroma")]
    assert read
    for doc_id, source in read:
        assert source["score"] == pytest.approx(relevance[doc_id], abs=1e-9)
    reranked = ex.reranked_hybrid(fusion).invoke(query)
    assert len(reranked) == 3 and {d.id for d in reranked} <= {d.id for d in
                                                              fusion.invoke(query, k=10)}


def test_llama_index_chroma_hybrid(port: int, docs: list[Any], ours: VectorIndex) -> None:
    rrf = ex.llama_index_hybrid(port, docs)
    text_only = rrf.retrievers[2].retrieve(PLAIN)
    assert {n.node.metadata["type"] for n in text_only} == {"text"}
    want = {h.id: h.score for h in ours.search(PLAIN, 200, filter={"type": "text"})}
    for n in text_only:  # LlamaIndex's Chroma store reports exp(-cosine distance)
        assert n.score == pytest.approx(math.exp(-(1.0 - want[n.node.node_id])), abs=1e-5)
    visual = rrf.retrieve(VISUAL)
    assert visual[0].node.metadata["type"] == "image"
    assert {n.node.metadata["type"] for n in rrf.retrieve(PLAIN)} == {"text"}
    scored = ex.llama_index_hybrid(port, docs, mode="relative_score")
    top = scored.retrieve(VISUAL)
    sources = top[0].node.metadata["fusion"]["sources"]
    assert any(s["source"] == "chroma_image" and s["score"] > 0 for s in sources)


# ---------------------------------------------------------------------- parent-document


@pytest.fixture(scope="module")
def parents_over_chroma(port: int, docs: list[Any]) -> tuple[Any, Any]:
    """Our LangChain `ParentDocumentRetriever` whose children live in a Chroma collection."""
    from langchain_chroma import Chroma

    from langchain_hybrid_retrievers import ParentDocumentRetriever

    children = Chroma(collection_name="lc_children",
                      embedding_function=ex.LangChainHashingEmbeddings(),
                      client=ex.client(port), collection_metadata=ex.COLLECTION_METADATA)
    retriever = ParentDocumentRetriever.from_documents(
        docs[:40] + docs[-len(ex.IMAGES):], vectorstore=children, k=4,
        chunk_size=200, chunk_overlap=0)
    return retriever, children


def test_parent_document_children_in_chroma(parents_over_chroma: Any, docs: list[Any]) -> None:
    retriever, children = parents_over_chroma
    by_id = {d.id: d for d in docs}
    stored = children.get(limit=10_000)
    assert len(stored["ids"]) > 48  # the texts were split: more children than parents
    parent_of = {i: m["parent_id"] for i, m in zip(stored["ids"], stored["metadatas"])}
    assert set(parent_of.values()) == {d.id for d in docs[:40] + docs[-len(ex.IMAGES):]}
    child_text = dict(zip(stored["ids"], stored["documents"]))
    for query in [PLAIN, VISUAL, "flutter of panels"]:
        got = retriever.invoke(query)
        assert len(got) == 4 and len({d.id for d in got}) == 4
        # The best child decides: Chroma's own top child's parent comes first.
        top_child = children.similarity_search(query, k=1)[0]
        assert got[0].id == top_child.metadata["parent_id"]
        for parent in got:
            assert parent.page_content == by_id[parent.id].page_content  # the whole parent
            matched = parent.metadata["matched_children"]
            assert matched and parent.metadata["score"] == pytest.approx(matched[0]["score"])
            for child in matched:
                assert parent_of[child["id"]] == parent.id
                assert child_text[child["id"]] in parent.page_content
    assert len(retriever.invoke(PLAIN, k=7)) == 7


def test_parent_document_filters_and_threshold_over_chroma(parents_over_chroma: Any) -> None:
    retriever, _ = parents_over_chroma
    images = retriever.invoke(PLAIN, filter={"type": "image"})  # Chroma's where= filter
    assert len(images) == 4 and types(images) == {"image"}
    texts = retriever.invoke(VISUAL, filter={"type": "text"})
    assert len(texts) == 4 and types(texts) == {"text"}
    scores = [d.metadata["score"] for d in retriever.invoke(PLAIN, k=8)]
    assert scores == sorted(scores, reverse=True)
    cut = (scores[1] + scores[2]) / 2
    kept = retriever.model_copy(update={"score_threshold": cut}).invoke(PLAIN, k=8)
    assert [d.metadata["score"] for d in kept] == scores[:2]


# ---------------------------------------------------------------------- HyDE


@pytest.fixture(scope="module")
def hyde_store(port: int, docs: list[Any]) -> Any:
    """The corpus in a Chroma collection whose HNSW graph is dense enough to be exact.

    With Chroma's default graph (16 neighbours) the eight short image descriptions are
    poorly linked to the long abstracts: in about half of fresh server runs the search
    for the HyDE-expanded query below never reaches img-07, its exact nearest
    neighbour. HNSW is approximate; the HyDE assertions need exact ranks.
    """
    from langchain_chroma import Chroma

    store = Chroma(collection_name="lc_hyde", embedding_function=ex.LangChainHashingEmbeddings(),
                   client=ex.client(port), collection_metadata=ex.COLLECTION_METADATA)
    assert store._collection.configuration["hnsw"]["max_neighbors"] == 64
    store.add_documents(docs, ids=[d.id for d in docs])
    return store


def test_hyde_expansion_drives_the_chroma_search(hyde_store: Any) -> None:
    from langchain_core.language_models import FakeListLLM

    from hybrid_retrievers.hyde import HyDE, HyDESearcher
    from langchain_hybrid_retrievers import HyDERetriever
    from langchain_hybrid_retrievers.hyde import as_text_generator
    from langchain_hybrid_retrievers.parent import LangChainChildIndex

    store = hyde_store
    query = "vibrating skin measurements"
    plain = store.similarity_search(query, k=3)
    assert "img-07" not in {d.id for d in plain}
    passage = "A photograph of a panel flutter test rig with accelerometers."
    llm = FakeListLLM(responses=[passage])
    # The query-expansion side: Chroma is searched with the query plus the passage, which
    # the store embeds with the collection's own embeddings.
    hyde = HyDE(as_text_generator(llm), HashingEmbedder(ex.DIM), prompt="technical")
    retriever = HyDERetriever(searcher=HyDESearcher(hyde, expand=LangChainChildIndex(store)), k=3)
    got = retriever.invoke(query)
    assert got[0].id == "img-07" and len(got) == 3
    info = got[0].metadata["hyde"]
    assert info == {"passages": [passage], "fallback": False, "error": None,
                    "mode": "expansion"}
    expanded = store.similarity_search_with_relevance_scores(f"{query}\n{passage}", k=3)
    assert [d.id for d in got] == [d.id for d, _ in expanded]
    assert [d.metadata["score"] for d in got] == pytest.approx([s for _, s in expanded])
    texts = retriever.invoke(query, filter={"type": "text"})  # Chroma's where= filter
    assert types(texts) == {"text"} and "img-07" not in {d.id for d in texts}
    # The LLM failing falls back to the raw query: Chroma's plain ranking, flagged.
    broken = HyDE(lambda prompt: "", HashingEmbedder(ex.DIM))
    fallback = HyDERetriever(searcher=HyDESearcher(broken, expand=LangChainChildIndex(store)),
                             k=3).invoke(query)
    assert [d.id for d in fallback] == [d.id for d in plain]
    assert fallback[0].metadata["hyde"]["fallback"] is True


def test_hyde_vector_search_runs_in_chroma(hyde_store: Any, ours: VectorIndex) -> None:
    from langchain_core.language_models import FakeListLLM

    from hybrid_retrievers import BM25Index
    from hybrid_retrievers.hyde import HyDE, HyDESearcher
    from llama_index_hybrid_retrievers import HyDERetriever as LlamaHyDERetriever

    store = hyde_store
    query = "vibrating skin measurements"
    passage = "A photograph of a panel flutter test rig with accelerometers."
    assert "img-07" not in {d.id for d in store.similarity_search(query, k=3)}
    retriever = ex.hyde_over_chroma(store, FakeListLLM(responses=[passage]))
    got = retriever.invoke(query)
    assert got[0].id == "img-07" and len(got) == 3
    assert got[0].metadata["hyde"] == {"passages": [passage], "fallback": False,
                                       "error": None, "mode": "vector"}
    # Chroma ranks and scores the HyDE vector as our own VectorIndex does.
    hyde = HyDE(lambda prompt: passage, HashingEmbedder(ex.DIM), prompt="technical")
    want = HyDESearcher(hyde, ours).search(query, 3)
    assert [d.id for d in got] == [h.id for h in want]
    assert [d.metadata["score"] for d in got] == pytest.approx([h.score for h in want],
                                                               abs=1e-5)
    texts = retriever.invoke(query, filter={"type": "text"})
    assert types(texts) == {"text"}
    assert [d.id for d in texts] == [h.id for h in HyDESearcher(hyde, ours).search(
        query, 3, filter={"type": "text"})]
    with pytest.raises(TypeError, match="where= mappings"):
        ex.ChromaSearcher(store).search(query, 3, filter=lambda doc: True)
    # Hybrid HyDE: the Chroma vector side fused (RRF) with query-expanded BM25.
    bm25 = BM25Index.from_docs(ours.docs)
    hybrid = HyDESearcher(hyde, ex.ChromaSearcher(store), expand=bm25).search(query, 3)
    assert hybrid[0].id == "img-07" and hybrid[0].explanation["hyde"]["mode"] == "hybrid"
    assert {s["source"] for s in hybrid[0].explanation["fusion"]["sources"]} == {
        "vector", "expansion"}
    # LlamaIndex's HyDE retriever over the same Chroma searcher.
    nodes = LlamaHyDERetriever(HyDESearcher(hyde, ex.ChromaSearcher(store)),
                               similarity_top_k=3).retrieve(query)
    assert [n.node.node_id for n in nodes] == [d.id for d in got]
    assert [n.score for n in nodes] == pytest.approx([h.score for h in want], abs=1e-5)
