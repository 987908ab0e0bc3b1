"""evaluate() batches LangChain retrievers through ``batch`` and runs LlamaIndex per query.

Both go through their adapter's ``as_eval_callable``; the core's evaluation knows no framework.
"""

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

    from langchain_hybrid_retrievers import BM25Retriever, as_eval_callable

    calls: list[int] = []

    class CountingBM25(BM25Retriever):
        def batch(self, inputs: list[Any], config: Any = None, **kwargs: Any) -> list[Any]:
            calls.append(len(inputs))
            return super().batch(inputs, config, **kwargs)

    docs = [Document(id=d.id, page_content=d.text) for d in cranfield.corpus.values()]
    retriever = CountingBM25.from_documents(docs, k=10)
    report = evaluate({"lc": as_eval_callable(retriever)}, cranfield, k=10, max_queries=12, batch_size=5)
    assert calls == [5, 5, 2]
    assert report.batch_sizes == {"lc": 5}
    one_by_one = evaluate({"lc": as_eval_callable(retriever)}, cranfield, k=10, max_queries=12, batch=False)
    assert calls == [5, 5, 2] and one_by_one.batch_sizes == {"lc": 1}
    assert one_by_one.runs == report.runs


def test_llama_index_retrievers_run_one_query_at_a_time(cranfield) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index_hybrid_retrievers import BM25Retriever, as_eval_callable

    index = BM25Index.from_docs(list(cranfield.corpus.values()))
    report = evaluate({"li": as_eval_callable(BM25Retriever(index, similarity_top_k=10)),
                       "core": index},
                      cranfield, k=10, max_queries=12)
    assert report.batch_sizes == {"li": 1, "core": 64}
    assert report.runs["li"] == report.runs["core"]


def test_a_framework_retriever_passed_bare_is_refused_with_the_wrapper_named(cranfield) -> None:
    pytest.importorskip("langchain_core")
    from langchain_hybrid_retrievers import BM25Retriever

    retriever = BM25Retriever.from_texts(["wings lift"], ids=["a"])
    with pytest.raises(TypeError, match=r"langchain_hybrid_retrievers\.as_eval_callable"):
        evaluate({"lc": retriever}, cranfield, max_queries=1)


def test_a_langchain_retriever_without_k_is_cut_to_k(cranfield) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from langchain_hybrid_retrievers import as_eval_callable

    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [Document(id=str(i), page_content="x") for i in (3, 1, 2)]

    run = as_eval_callable(Fixed())
    assert run("anything", 2) == [("3", 0.0), ("1", -1.0)]
    assert run.batch is not None and run.batch(["a", "b"], 1) == [[("3", 0.0)], [("3", 0.0)]]
