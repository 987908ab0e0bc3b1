"""Our BM25Retriever.from_defaults takes what llama-index-retrievers-bm25's takes."""

from __future__ import annotations

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from hybrid_retrievers import Analyzer
from llama_index_hybrid_retrievers import BM25Retriever

from corpora import CORPUS, WING_QUERY


@pytest.fixture
def nodes() -> list[TextNode]:
    return [TextNode(id_=i, text=t, metadata=dict(m)) for i, t, m in CORPUS]


def _ids(retriever: BM25Retriever, query: str = WING_QUERY) -> list[str]:
    return [r.node.node_id for r in retriever.retrieve(query)]


def test_index_language_stemmer_filters_like_llama_index_bm25(nodes: list[TextNode]) -> None:
    plain = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    assert _ids(BM25Retriever.from_defaults(index=index, similarity_top_k=3)) == _ids(plain)
    assert _ids(BM25Retriever.from_defaults(bm25_index=plain.index, similarity_top_k=3)) == _ids(
        plain)
    assert _ids(BM25Retriever.from_defaults(nodes=nodes, language="en",
                                            similarity_top_k=3)) == _ids(plain)
    stemmer = pytest.importorskip("Stemmer").Stemmer("english")
    with_stemmer = BM25Retriever.from_defaults(nodes=nodes, stemmer=stemmer, language="english",
                                               similarity_top_k=3)
    assert _ids(with_stemmer) == _ids(plain)
    with pytest.raises(ValueError, match="does not stem like Snowball 'es'"):
        BM25Retriever.from_defaults(nodes=nodes, stemmer=stemmer, language="es")
    unstemmed = BM25Retriever.from_defaults(nodes=nodes, skip_stemming=True)
    assert unstemmed.index.analyzer.to_config() == Analyzer(stemmer=None).to_config()
    filters = MetadataFilters(filters=[MetadataFilter(key="year", value=2000,
                                                      operator=FilterOperator.GT)])
    recent = BM25Retriever.from_defaults(nodes=nodes, filters=filters, similarity_top_k=5)
    assert recent.filters is filters
    assert _ids(recent) and all(dict(CORPUS_BY_ID[i])["year"] > 2000 for i in _ids(recent))


CORPUS_BY_ID = {i: m for i, _, m in CORPUS}


def test_unsupported_arguments_name_the_alternative(nodes: list[TextNode]) -> None:
    with pytest.raises(TypeError, match=r"'corpus_weight_mask' \(.*pass filters="):
        BM25Retriever(nodes=nodes, corpus_weight_mask=[1] * len(nodes))
    with pytest.raises(TypeError, match=r"'existing_bm25' \(.*from_persist_dir"):
        BM25Retriever.from_defaults(nodes=nodes, existing_bm25=object())
    with pytest.raises(TypeError, match=r"'filter' \(LlamaIndex spells it filters="):
        BM25Retriever.from_defaults(nodes=nodes, filter={"topic": "aero"})
    with pytest.raises(ValueError, match="pass analyzer= or language="):
        BM25Retriever.from_defaults(nodes=nodes, analyzer=Analyzer(), language="en")
