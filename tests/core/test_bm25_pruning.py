"""MaxScore pruning never changes results: pruned top-k equals exhaustive top-k."""

from __future__ import annotations

import pytest

from hybrid_retrievers import BM25Index
from hybrid_retrievers.inverted import Backend
from hybrid_retrievers.inverted import matching
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.selection import top_k


@pytest.fixture(scope="module")
def cranfield_docs():
    ds = load_dataset("cranfield")
    docs = list(ds.corpus.values())
    docs = [d.__class__(d.id, d.text, {"half": int(d.id) % 2}) for d in docs]
    return docs, list(ds.queries.values())


def _index(cranfield_docs, dense_scan: int = 8) -> tuple[BM25Index, list[str]]:
    # Cranfield's queries are short; take the per-term (prunable) numpy path for all of them.
    docs, queries = cranfield_docs
    backend = Backend("numpy", batched_postings=0, dense_scan=dense_scan)
    return BM25Index.from_docs(docs, backend=backend), queries


def _exhaustive(index: BM25Index, query: str, k: int, half: int | None = None):
    counts: dict[str, int] = {}
    for t in index.analyzer.tokenize(query):
        counts[t] = counts.get(t, 0) + 1
    cand, scores = index._match(index._state, list(counts), list(counts.values()))  # no pruning
    if half is not None:
        keep = [index.docs[p].metadata["half"] == half for p in cand.tolist()]
        cand, scores = cand[keep], scores[keep]
    best = top_k(scores, k, tiebreak=cand)
    return [(index.ids[cand[i]], float(scores[i])) for i in best]


@pytest.mark.parametrize("k", [1, 3, 10])
def test_pruned_equals_exhaustive(cranfield_docs, monkeypatch, k: int) -> None:
    index, queries = _index(cranfield_docs)
    pruned = 0
    original = matching.can_skip_new

    def counting(*args, **kwargs):
        nonlocal pruned
        result = original(*args, **kwargs)
        pruned += result
        return result

    monkeypatch.setattr(matching, "can_skip_new", counting)  # a spy: counts the prunes
    for q in queries:
        got = [(h.id, h.score) for h in index.search(q, k=k)]
        want = _exhaustive(index, q, k)
        assert [i for i, _ in got] == [i for i, _ in want], q
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6)
        got_f = [(h.id, h.score) for h in index.search(q, k=k, filter={"half": 1})]
        want_f = _exhaustive(index, q, k, half=1)
        assert [i for i, _ in got_f] == [i for i, _ in want_f], q
    assert pruned > len(queries) // 4, "pruning should kick in for many queries"


@pytest.mark.parametrize("scan", [0, 10**9])
def test_predicate_filters_see_every_match(cranfield_docs, scan: int) -> None:
    """A predicate is only known per candidate, so no shortcut may drop a passing doc."""
    index, queries = _index(cranfield_docs, dense_scan=scan)
    for q in queries[:80]:
        got = [h.id for h in index.search(q, k=5, filter=lambda d: d.metadata["half"] == 1)]
        assert got == [i for i, _ in _exhaustive(index, q, 5, half=1)], q
        got_map = [h.id for h in index.search(q, k=5, filter={"half": 1})]
        assert got_map == got, q
