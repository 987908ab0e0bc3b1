"""evaluate() batches LangChain retrievers through ``batch`` and runs LlamaIndex per query."""

from __future__ import annotations

from typing import Any

import pytest

from hybrid_retrievers import BM25Index
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.evaluation import evaluate


@pytest.fixture(scope="module")
def cranfield():
    return load_dataset("cranfield")


def test_langchain_retrievers_are_evaluated_through_batch(cranfield) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_hybrid_retrievers import BM25Retriever

    calls: list[int] = []

    class CountingBM25(BM25Retriever):
        def batch(self, inputs: list[Any], config: Any = None, **kwargs: Any) -> list[Any]:
            calls.append(len(inputs))
            return super().batch(inputs, config, **kwargs)

    docs = [Document(id=d.id, page_content=d.text) for d in cranfield.corpus.values()]
    retriever = CountingBM25.from_documents(docs, k=10)
    report = evaluate({"lc": retriever}, cranfield, k=10, max_queries=12, batch_size=5)
    assert calls == [5, 5, 2]
    assert report.batch_sizes == {"lc": 5}
    one_by_one = evaluate({"lc": retriever}, cranfield, k=10, max_queries=12, batch=False)
    assert calls == [5, 5, 2] and one_by_one.batch_sizes == {"lc": 1}
    assert one_by_one.runs == report.runs


def test_llama_index_retrievers_run_one_query_at_a_time(cranfield) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index_hybrid_retrievers import BM25Retriever

    index = BM25Index.from_docs(list(cranfield.corpus.values()))
    report = evaluate({"li": BM25Retriever(index, similarity_top_k=10), "core": index},
                      cranfield, k=10, max_queries=12)
    assert report.batch_sizes == {"li": 1, "core": 64}
    assert report.runs["li"] == report.runs["core"]
