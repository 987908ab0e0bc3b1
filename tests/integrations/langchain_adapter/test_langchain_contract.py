"""One contract for every LangChain retriever of the package.

At most ``k`` documents (per call ``invoke(q, k=n)``), ranked under ``metadata["rank"]``
(1..n), with non-increasing scores under each retriever's documented score key and its
documented provenance key; unique ids, every document one of the corpus with its own
text; no filler beyond the matches of a lexical retriever; ``invoke``, ``ainvoke``,
``batch`` and ``abatch`` agree; a bad ``k`` is refused with an error naming ``k``. The
LlamaIndex side is `tests/integrations/llama_index_adapter/test_llama_index_contract.py`;
the core's is `tests/contract.py`.

Every retriever is built through its public constructor in ``BUILDERS`` below (one
entry each; the package's classes are named as ``lc.<Name>`` there only, so a rename is
fixed in one place). Known breaches of the contract are listed in ``VIOLATIONS`` and
run as strict xfails.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from hybrid_retrievers.bm25 import BM25Index
from hybrid_retrievers.fusion import FusionSearcher
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from hybrid_retrievers.types import Doc
from hybrid_retrievers.vector import VectorIndex
import langchain_hybrid_retrievers as lc

from contract import BAD_K, RARE_MATCHES, RARE_QUERY
from corpora import CORPUS, QUERIES, WordOverlap

EMBED = HashingEmbedder(dimension=64)
SPARSE = HashingSparseEmbedder()


def make_documents() -> list[Document]:
    return [Document(id=i, page_content=t, metadata=dict(m)) for i, t, m in CORPUS]


def passage(prompt: str) -> str:
    """A fake HyDE LLM: the same neutral passage (no corpus word) for every prompt."""
    return "A short passage."


def ranking(prompt: str) -> str:
    """A fake listwise LLM: always prefers the second candidate, then the first."""
    return "[2] > [1]"


def vector_store(docs: list[Document]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(docs)
    return store


def children(docs: list[Document]) -> list[Any]:
    """A BM25 and a dense retriever over ``docs``: the children of the fusion cases."""
    return [lc.BM25Retriever.from_documents(docs), lc.DenseRetriever.from_documents(docs, EMBED)]


def core_fusion(docs: list[Document]) -> FusionSearcher:
    """A core BM25 + dense `FusionSearcher` over ``docs``, for `SearcherRetriever`."""
    core = [Doc(d.id, d.page_content, d.metadata) for d in docs]
    return FusionSearcher([BM25Index.from_docs(core),
                           VectorIndex.from_docs(core, embedder=EMBED)])


@dataclass(frozen=True)
class Case:
    """One retriever: its public constructor and what its documents carry.

    Args:
        build: the retriever over the given documents, with ``k=3``.
        score_key: the documented metadata key of each document's score.
        rank_key: the documented metadata key of its 1-based rank (``None``: none).
        lexical: only documents sharing a query term come back (BM25 semantics).
        provenance: the documented metadata key of where the document came from
            (``None``: none), on every returned document.
    """

    build: Callable[[list[Document]], Any]
    score_key: str = "score"
    rank_key: str | None = "rank"
    lexical: bool = False
    provenance: str | None = None


BUILDERS: dict[str, Case] = {
    "bm25": Case(lambda d: lc.BM25Retriever.from_documents(d, k=3), lexical=True),
    "dense": Case(lambda d: lc.DenseRetriever.from_documents(d, EMBED, k=3)),
    "sparse": Case(lambda d: lc.SparseRetriever.from_documents(d, SPARSE, k=3), lexical=True),
    "hybrid": Case(lambda d: lc.HybridRetriever.from_documents(d, EMBED, k=3),
                   provenance="fusion"),
    "hybrid3": Case(lambda d: lc.HybridRetriever.from_documents(d, EMBED, sparse=SPARSE, k=3),
                    provenance="fusion"),
    # fetch_k: the children return their own k (4) unless asked for more.
    "fusion": Case(lambda d: lc.FusionRetriever(retrievers=children(d), k=3, fetch_k=20),
                   provenance="fusion"),
    "fusion-score": Case(
        lambda d: lc.FusionRetriever(retrievers=children(d), mode="relative_score", k=3,
                                     fetch_k=20),
        provenance="fusion"),
    "parent": Case(lambda d: lc.ParentDocumentRetriever.from_documents(
        d, k=3, chunk_size=60, chunk_overlap=0), lexical=True, provenance="matched_children"),
    "hyde": Case(lambda d: lc.HyDERetriever.from_documents(d, embedding=EMBED, llm=passage, k=3),
                 provenance="hyde"),
    "searcher": Case(lambda d: lc.SearcherRetriever(searcher=core_fusion(d), k=3)),
    "rerank": Case(lambda d: lc.RerankingRetriever(
        base_retriever=lc.BM25Retriever.from_documents(d),
        reranker=lc.CrossEncoderReranker(model=WordOverlap()), k=3),
        score_key="relevance_score", lexical=True, provenance="previous_rank"),
    "rerank-listwise": Case(lambda d: lc.RerankingRetriever(
        base_retriever=lc.BM25Retriever.from_documents(d), reranker=lc.LLMRerankCompressor(llm=ranking),
        k=3), score_key="relevance_score", lexical=True, provenance="previous_rank"),
    "scored-store": Case(lambda d: lc.ScoredVectorStoreRetriever(
        vectorstore=vector_store(d), k=3, score_method="raw"), rank_key=None),
}

VIOLATIONS: Mapping[tuple[str, str], str] = {
}
"""``{(builder, check): reason}``: known breaches, run as ``xfail(strict=True)``."""


def cases(check: str) -> list[Any]:
    """The builder names for ``check``, a known violation marked as a strict xfail."""
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))
            if (reason := VIOLATIONS.get((name, check))) else name for name in BUILDERS]


@functools.cache
def retriever(name: str) -> Any:
    """One retriever per builder for the whole module (the checks never edit it)."""
    return BUILDERS[name].build(make_documents())


def rows(name: str, docs: list[Document]) -> list[tuple[Any, ...]]:
    case = BUILDERS[name]
    return [(d.id, d.page_content, round(d.metadata[case.score_key], 6),
             d.metadata.get(case.rank_key) if case.rank_key else None) for d in docs]


TEXTS = {i: t for i, t, _ in CORPUS}


@pytest.mark.parametrize("k", [1, 3, 100])
@pytest.mark.parametrize("name", cases("shape"))
def test_at_most_k_documents_ranked_best_first_with_unique_ids(name: str, k: int) -> None:
    case = BUILDERS[name]
    for query in QUERIES:
        docs = retriever(name).invoke(query, k=k)
        assert 0 < len(docs) <= min(k, len(CORPUS)), query
        assert all(isinstance(d, Document) for d in docs)
        if case.rank_key is not None:
            assert [d.metadata[case.rank_key] for d in docs] == list(range(1, len(docs) + 1))
        scores = [d.metadata[case.score_key] for d in docs]
        assert all(isinstance(s, float) for s in scores), scores
        assert scores == sorted(scores, reverse=True), scores
        ids = [d.id for d in docs]
        assert len(set(ids)) == len(ids), ids
        assert all(TEXTS.get(d.id) == d.page_content for d in docs), ids
        if case.provenance is not None:
            assert all(case.provenance in d.metadata for d in docs), case.provenance


@pytest.mark.parametrize("name", cases("default_k"))
def test_the_k_field_is_the_default(name: str) -> None:
    assert len(retriever(name).invoke(QUERIES[0])) == 3


@pytest.mark.parametrize("name", cases("no_filler"))
def test_a_k_beyond_the_matches_adds_no_filler(name: str) -> None:
    ids = [d.id for d in retriever(name).invoke(RARE_QUERY, k=len(CORPUS) + 5)]
    if BUILDERS[name].lexical:
        assert ids == RARE_MATCHES
    else:  # clamped to the corpus, every document once
        assert sorted(ids) == sorted(TEXTS)


@pytest.mark.parametrize("name", cases("sync_async_batch"))
async def test_invoke_ainvoke_batch_and_abatch_agree(name: str) -> None:
    r = retriever(name)
    want = [rows(name, r.invoke(q)) for q in QUERIES]
    assert [rows(name, await r.ainvoke(q)) for q in QUERIES] == want
    assert [rows(name, docs) for docs in r.batch(QUERIES)] == want
    assert [rows(name, docs) for docs in await r.abatch(QUERIES)] == want
    assert rows(name, r.invoke(QUERIES[0], k=2)) == rows(name, await r.ainvoke(QUERIES[0], k=2))


@pytest.mark.parametrize(("k", "error", "words"), BAD_K)
@pytest.mark.parametrize("name", cases("bad_k"))
async def test_a_bad_k_is_refused_naming_k(
    name: str, k: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        retriever(name).invoke(QUERIES[0], k=k)
    with pytest.raises(error, match=words):
        await retriever(name).ainvoke(QUERIES[0], k=k)
