"""After any sequence of adds and deletes, scores equal those of a fresh rebuild."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_retrievers import Analyzer, BM25Index

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
PLAIN = Analyzer(stopwords=None, stemmer=None)

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(texts, min_size=1, max_size=4)),
        st.tuples(st.just("delete"), st.integers(min_value=1, max_value=3)),
    ),
    min_size=1,
    max_size=6,
)


def _results(index: BM25Index, query: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in index.search(query, k=100)]


@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+", "bm25l", "atire"])
@settings(max_examples=40, deadline=None)
@given(initial=st.lists(texts, min_size=1, max_size=6), steps=ops, data=st.data())
def test_edits_equal_rebuild(method: str, initial: list[str], steps, data) -> None:
    counter = iter(range(10_000))
    live = {f"d{next(counter)}": t for t in initial}
    index = BM25Index.from_texts(list(live.values()), ids=list(live), analyzer=PLAIN, method=method)
    for op, arg in steps:
        if op == "add":
            new = {f"d{next(counter)}": t for t in arg}
            index.add(list(new.values()), ids=list(new))
            live.update(new)
        elif live:
            victims = data.draw(st.lists(st.sampled_from(sorted(live)), min_size=1, max_size=arg, unique=True))
            index.delete(victims)
            for v in victims:
                del live[v]
    assert index.ids == list(live)
    if not live:
        return
    rebuilt = BM25Index.from_texts(list(live.values()), ids=list(live), analyzer=PLAIN, method=method)
    assert index.vocabulary_size == rebuilt.vocabulary_size
    for query in ["alpha", "beta gamma", "omega sigma kappa theta", "delta delta alpha"]:
        got, want = _results(index, query), _results(rebuilt, query)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6)
