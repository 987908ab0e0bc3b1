"""FusionRetriever as LangChain's EnsembleRetriever fuses, and BM25Retriever's id behaviour.

Written from the originals' behaviours (langchain-classic ``EnsembleRetriever``,
langchain-community ``BM25Retriever``): a child's own ``k`` is respected unless
``fetch_k`` asks for more, ``c=0`` is ``w / rank``, ``weighted_reciprocal_rank`` fuses
lists as the original does (checked against it), and a document given without an id
comes back from BM25 with ``id=None`` while fusion still merges it across children.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda

from hybrid_retrievers.models import HashingEmbedder
from langchain_hybrid_retrievers import BM25Retriever, DenseRetriever, FusionRetriever

TEXTS = ["I like apples", "I like oranges", "Apples and oranges are fruits"]


class KRetriever(BaseRetriever):
    """Returns its documents, cut to its own ``k`` or the ``k`` it is asked for."""

    docs: list[Document]
    k: int = 2
    asked: list[Any] = []

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        self.asked.append(k)
        return self.docs[: self.k if k is None else k]


def _docs(*texts: str) -> list[Document]:
    return [Document(page_content=t) for t in texts]


# ------------------------------------------------------------ a child's own k


def test_a_childs_own_k_is_respected() -> None:
    bm25 = BM25Retriever.from_texts(TEXTS)
    bm25.k = 1
    assert len(FusionRetriever(retrievers=[bm25, bm25]).invoke("I like apples")) == 1
    original = EnsembleRetriever(retrievers=[bm25, bm25])
    assert [d.page_content for d in original.invoke("I like apples")] == \
        [d.page_content for d in FusionRetriever(retrievers=[bm25, bm25]).invoke("I like apples")]


def test_fetch_k_asks_the_children_for_more() -> None:
    child = KRetriever(docs=_docs(*"abcdef"), k=2)
    fusion = FusionRetriever(retrievers=[child], k=10)
    assert len(fusion.invoke("q")) == 2 and child.asked[-1] is None
    assert len(fusion.invoke("q", fetch_k=5)) == 5 and child.asked[-1] == 5
    assert len(FusionRetriever(retrievers=[child], k=10, fetch_k=4).invoke("q")) == 4


# ------------------------------------------------------------ c = 0


def test_c_zero_is_weight_over_rank() -> None:
    a, b = KRetriever(docs=_docs("x", "y"), k=2), KRetriever(docs=_docs("y", "z"), k=2)
    fusion = FusionRetriever(retrievers=[a, b], c=0, k=5)
    assert fusion.c == fusion.k_rrf == 0
    docs = fusion.invoke("q")
    # y: 1/2 + 1/1, x: 1/1, z: 1/2
    assert [(d.page_content, d.metadata["score"]) for d in docs] == \
        [("y", 1.5), ("x", 1.0), ("z", 0.5)]
    with pytest.raises(ValueError, match=">= 0"):
        FusionRetriever(retrievers=[a], c=-1)


# ------------------------------------------------------------ weighted_reciprocal_rank


def test_weighted_reciprocal_rank_weights_decide() -> None:
    one, two = Document(page_content="1"), Document(page_content="2")
    bm25 = BM25Retriever.from_texts(["1", "2"])
    fusion = FusionRetriever(retrievers=[bm25, bm25], weights=[0.4, 0.5], c=0)
    result = fusion.weighted_reciprocal_rank([[one, two], [two, one]])
    assert [d.page_content for d in result] == ["2", "1"]
    assert result[0] is two  # the very objects given, unchanged
    assert two.metadata == {}
    fusion.weights = [0.5, 0.4]
    assert [d.page_content for d in fusion.weighted_reciprocal_rank([[one, two], [two, one]])] \
        == ["1", "2"]


def test_weighted_reciprocal_rank_equals_the_original_on_random_lists() -> None:
    rng = random.Random(7)
    pool = [Document(page_content=f"doc {i}", metadata={"key": i % 9}) for i in range(14)]
    bm25 = BM25Retriever.from_texts(["x"])
    for trial in range(60):
        n = rng.randint(1, 3)
        lists = [rng.sample(pool, rng.randint(0, 8)) for _ in range(n)]
        weights = [rng.choice([0.0, 0.1, 0.5, 1.0, 2.0]) for _ in range(n)]
        if not any(weights):
            weights[0] = 1.0
        c = rng.choice([0, 1, 60])
        id_key = rng.choice([None, "key"])
        if id_key == "key":  # the original counts a repeat inside one list twice
            lists = [list({d.metadata["key"]: d for d in reversed(lst)}.values())[::-1]
                     for lst in lists]
        ours = FusionRetriever(retrievers=[bm25] * n, weights=weights, c=c, id_key=id_key)
        theirs = EnsembleRetriever(retrievers=[bm25] * n, weights=weights, c=c, id_key=id_key)
        expected = theirs.weighted_reciprocal_rank(lists)
        got = ours.weighted_reciprocal_rank(lists)
        assert [id(d) for d in got] == [id(d) for d in expected], (trial, lists, weights, c)


def test_weighted_reciprocal_rank_ties_keep_first_appearance() -> None:
    # c=0: w = 1/1, y = 1/2 + 1/2 and x = 1/1 all score 1; y appears before x (list 0),
    # so it leads x, although x has the better best rank (the core's own tie-break).
    x, y = Document(page_content="x"), Document(page_content="y")
    bm25 = BM25Retriever.from_texts(["x"])
    fusion = FusionRetriever(retrievers=[bm25, bm25], c=0)
    result = fusion.weighted_reciprocal_rank([[Document(page_content="w"), y], [x, y]])
    assert [d.page_content for d in result] == ["w", "y", "x"]


def test_weighted_reciprocal_rank_id_key_and_bad_input() -> None:
    bm25 = BM25Retriever.from_texts(["x"])
    fusion = FusionRetriever(retrievers=[bm25, bm25], id_key="id")
    b = Document(page_content="b", metadata={"id": 2})
    d = Document(page_content="d", metadata={"id": 2})
    a = Document(page_content="a", metadata={"id": 1})
    result = fusion.weighted_reciprocal_rank([[a, b], [d]])
    assert result == [b, a]  # b and d are one document; the first copy met is returned
    with pytest.raises(ValueError, match="one ranked list per retriever: expected 2, got 1"):
        fusion.weighted_reciprocal_rank([[a]])
    with pytest.raises(KeyError, match=r"doc_lists\[1\]\[0\] has no id_key 'id'"):
        fusion.weighted_reciprocal_rank([[a], [Document(page_content="z")]])
    with pytest.raises(TypeError, match=r"doc_lists\[0\]\[0\] must be a Document"):
        fusion.weighted_reciprocal_rank([["a"], []])
    rule = FusionRetriever(retrievers=[bm25, bm25], weights=lambda q: [1.0, 1.0])
    with pytest.raises(ValueError, match="weights is a rule of the query"):
        rule.weighted_reciprocal_rank([[a], [b]])


# ------------------------------------------------------------ BM25Retriever ids


def test_bm25_documents_without_ids_come_back_without_ids(tmp_path: Any) -> None:
    docs = [Document(page_content="I have a pen.", id="1"),
            Document(page_content="Do you have a pen?", metadata={"src": "q"}),
            Document(page_content="Do you have a pen?", metadata={"src": "q"})]
    bm25 = BM25Retriever.from_documents(docs)
    assert [d.id for d in bm25.docs] == ["1", None, None]
    assert len(set(bm25.index.ids)) == 3  # the index keeps its content ids
    assert sorted([d.id for d in bm25.invoke("pen")], key=str) == ["1", None, None]
    bm25.add_documents([Document(page_content="a new pen")])
    assert [d.id for d in bm25.invoke("new")] == [None]
    bm25.save_local(tmp_path / "bm25")
    loaded = BM25Retriever.load_local(tmp_path / "bm25")
    assert [d.id for d in loaded.docs] == ["1", None, None, None]
    # A given id that only looks like a content id of another text stays.
    other = BM25Retriever.from_documents([Document(page_content="pen", id=bm25.index.ids[1])])
    assert [d.id for d in other.docs] == [bm25.index.ids[1]]


def test_fusion_still_merges_id_less_documents_across_children() -> None:
    docs = [Document(page_content=t, metadata={"source": f"s{i}"}) for i, t in enumerate(TEXTS)]
    bm25 = BM25Retriever.from_documents(docs)
    dense = DenseRetriever.from_documents(docs, HashingEmbedder(dimension=64))
    fused = FusionRetriever(retrievers=[bm25, dense], k=10).invoke("apples")
    assert sorted(d.page_content for d in fused) == sorted(TEXTS)  # each text once
    both = [d for d in fused if len(d.metadata["fusion"]["sources"]) == 2]
    assert both  # documents found by both children were merged
    assert all(d.id == dense.index.ids[TEXTS.index(d.page_content)] for d in fused)
    # Two BM25 children over id-less documents merge too.
    assert len(FusionRetriever(retrievers=[bm25, bm25], k=10).invoke("apples")) == 2


def test_a_child_returning_strings_is_read_as_documents() -> None:
    words = RunnableLambda(lambda query: ["wing lift", "bread"])
    docs = FusionRetriever(retrievers=[words, KRetriever(docs=_docs("bread"))]).invoke("q")
    assert [d.page_content for d in docs] == ["bread", "wing lift"]


async def test_fusion_merges_id_less_documents_in_ainvoke_too() -> None:
    docs = [Document(page_content=t, metadata={"source": f"s{i}"}) for i, t in enumerate(TEXTS)]
    bm25 = BM25Retriever.from_documents(docs)
    dense = DenseRetriever.from_documents(docs, HashingEmbedder(dimension=64))
    fusion = FusionRetriever(retrievers=[bm25, dense], k=10)
    fused = await fusion.ainvoke("apples")
    assert sorted(d.page_content for d in fused) == sorted(TEXTS)
    assert [d.id for d in fused] == [d.id for d in fusion.invoke("apples")]
    assert [d.id for d in await bm25.ainvoke("apples")] == [None, None]  # outside: no id
