"""``retrieve(None)`` / ``retrieve(5)`` get our TypeError naming the query before LlamaIndex's
instrumentation fails on it, for every retriever; valid queries still emit one span."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import QueryBundle, TextNode

from hybrid_retrievers.models import HashingEmbedder
from llama_index_hybrid_retrievers import (
    BM25Retriever,
    DenseRetriever,
    FusionRetriever,
    HybridRetriever,
    HyDERetriever,
    ParentDocumentRetriever,
)

NODES = [TextNode(text="wing lift and drag", id_="a"), TextNode(text="bread dough", id_="b")]


def _retrievers() -> dict[str, object]:
    emb = HashingEmbedder(16)
    bm25 = BM25Retriever.from_defaults(nodes=NODES)
    dense = DenseRetriever.from_defaults(nodes=NODES, embed_model=emb)
    return {
        "bm25": bm25,
        "dense": dense,
        "fusion": FusionRetriever([bm25, dense]),
        "hybrid": HybridRetriever.from_defaults(nodes=NODES, embed_model=emb),
        "hyde": HyDERetriever.from_defaults(nodes=NODES, embed_model=emb,
                                            llm=lambda p: "wings lift"),
        "parent": ParentDocumentRetriever.from_defaults(NODES),
    }


@pytest.mark.parametrize("name", ["bm25", "dense", "fusion", "hybrid", "hyde", "parent"])
@pytest.mark.parametrize("query", [None, 5, b"wing", ["wing"]])
def test_bad_query_types_are_our_clear_error(name: str, query: object) -> None:
    retriever = _retrievers()[name]
    with pytest.raises(TypeError, match="must be a str or a llama_index QueryBundle"):
        retriever.retrieve(query)
    with pytest.raises(TypeError, match="must be a str or a llama_index QueryBundle"):
        asyncio.run(retriever.aretrieve(query))


def test_valid_queries_still_work_with_one_span() -> None:
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler

    retriever = _retrievers()["bm25"]
    handler = SimpleSpanHandler()
    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(handler)
    try:
        assert retriever.retrieve("wing")[0].node.node_id == "a"
        assert retriever.retrieve(QueryBundle("wing"))[0].node.node_id == "a"
    finally:
        dispatcher.span_handlers.remove(handler)
    names = [s.id_.rsplit("-", 5)[0] for s in handler.completed_spans]
    assert names.count("BM25Retriever.retrieve") == 2
