"""`MMRCompressor` and `SourceCapCompressor`: the core's diversity stages for LangChain."""

from __future__ import annotations

import asyncio

from langchain_core.documents import Document

from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import (
    BM25Retriever,
    MMRCompressor,
    RerankingRetriever,
    SourceCapCompressor,
)

DOCS = [Document("wing lift at low speed", id="a", metadata={"source": "x.md"}),
        Document("wing lift at low speed!", id="b", metadata={"source": "x.md"}),
        Document("drag of a flat plate", id="c", metadata={"source": "y.md"})]


def test_mmr_compressor_demotes_the_near_copy_and_keeps_inputs_untouched() -> None:
    out = MMRCompressor(top_n=3).compress_documents(DOCS, "wing lift")
    assert [d.id for d in out] == ["a", "c", "b"]
    assert [d.metadata["previous_rank"] for d in out] == [1, 3, 2]
    assert out[0].metadata["mmr_score"] >= out[1].metadata["mmr_score"]
    assert "mmr_score" not in DOCS[0].metadata  # a new document, not an edit
    again = asyncio.run(MMRCompressor(top_n=3).acompress_documents(DOCS, "wing lift"))
    assert [d.id for d in again] == ["a", "c", "b"]


def test_mmr_compressor_with_an_embedding_model() -> None:
    out = MMRCompressor(top_n=2, lambda_mult=1.0, embedding=HashingEmbedder(32)
                        ).compress_documents(DOCS, "wing lift")
    assert [d.id for d in out] == ["a", "b"]  # λ = 1: input order


def test_source_cap_compressor_in_a_reranking_retriever() -> None:
    out = SourceCapCompressor().compress_documents(DOCS, "q")
    assert [d.id for d in out] == ["a", "c"] and "relevance_score" not in out[0].metadata
    chunks = [Document(f"wing lift part {i}", metadata={"parent_id": "p1"}) for i in range(3)]
    chunks.append(Document("lift of a plate", metadata={"parent_id": "p2"}))
    retriever = RerankingRetriever(
        base_retriever=BM25Retriever.from_documents(chunks),
        reranker=SourceCapCompressor(key="parent_id"), fetch_k=10, k=3)
    assert [d.metadata["parent_id"] for d in retriever.invoke("wing lift")] == ["p1", "p2"]
