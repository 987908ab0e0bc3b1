"""CollectionStats and the BM25Index hook: a shard with global statistics scores exactly."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_retrievers.persistence import current_files
from hybrid_retrievers import BM25Index
from hybrid_retrievers.bm25 import CollectionStats
from hybrid_retrievers.datasets import load_dataset
from hybrid_retrievers.persistence import IndexFormatError


@pytest.fixture(scope="module")
def cranfield():
    ds = load_dataset("cranfield")
    return list(ds.corpus.values()), list(ds.queries.values())


@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25l", "bm25+"])
def test_shards_with_global_stats_score_like_one_index(cranfield, method):
    docs, queries = cranfield
    whole = BM25Index.from_docs(docs, method=method)
    shards = [BM25Index.from_docs(docs[s::3], method=method) for s in range(3)]
    stats = CollectionStats.merge(CollectionStats.of_index(s) for s in shards)
    assert stats == CollectionStats.of_index(whole)
    for s in shards:
        s.set_collection_stats(stats)
    order = {d.id: i for i, d in enumerate(docs)}
    for q in queries[:80]:
        merged = sorted((h for s in shards for h in s.search(q, 10)),
                        key=lambda h: (-h.score, order[h.id]))[:10]
        want = whole.search(q, 10)
        assert [h.id for h in merged] == [h.id for h in want]
        assert [h.score for h in merged] == pytest.approx([h.score for h in want], abs=1e-6)
    shard = next(s for s in shards if docs[4].id in s)
    assert shard.explain(queries[0], docs[4].id) == whole.explain(queries[0], docs[4].id)


def test_diff_apply_and_stale_statistics(cranfield):
    docs, _ = cranfield
    index = BM25Index.from_docs(docs[:50])
    before = CollectionStats.of_index(index)
    index.add(["a zyxwv term no one else has"], ids=["new"])
    index.delete([docs[0].id])
    delta = CollectionStats.diff(before, CollectionStats.of_index(index))
    assert before.apply(delta) == CollectionStats.of_index(index)
    assert "zyxwv" in delta.df and delta.n_docs == 0
    index.set_collection_stats(before)  # stale: lacks the new term
    with pytest.raises(ValueError, match="stale"):
        index.search("zyxwv", 3)
    with pytest.raises(ValueError, match="count 2 documents"):
        index.set_collection_stats(CollectionStats(2, 10, {}))
    with pytest.raises(TypeError, match="CollectionStats or None"):
        index.set_collection_stats({"n_docs": 3})  # type: ignore[arg-type]
    index.set_collection_stats(None)
    assert index.search("zyxwv", 3)[0].id == "new"
    with pytest.raises(ValueError, match="0..n_docs"):
        before.apply(CollectionStats.diff(CollectionStats.of_index(index), before)
                     ).apply(CollectionStats.diff(CollectionStats.of_index(index), before))


def test_save_load_round_trip_and_corruption(tmp_path, cranfield):
    stats = CollectionStats.of_index(BM25Index.from_docs(cranfield[0][:30]))
    stats.save(tmp_path / "s")
    assert CollectionStats.load(tmp_path / "s") == stats
    (current_files(tmp_path / "s") / "terms.json").write_text("[]")
    with pytest.raises(IndexFormatError):
        CollectionStats.load(tmp_path / "s")


def test_fielded_statistics_merge_save_and_score_like_one_index(tmp_path):
    """BM25F shards: df over all fields and per-field lengths add up; scores equal one index."""
    docs = list(load_dataset("cranfield").fielded_corpus().values())[:300]
    weights = {"title": 2.0, "text": 1.0}
    whole = BM25Index.from_docs(docs, fields=weights)
    parts = [BM25Index.from_docs(docs[i::2], fields=weights) for i in range(2)]
    stats = CollectionStats.merge(CollectionStats.of_index(p) for p in parts)
    assert stats == CollectionStats.of_index(whole)
    tok = whole.analyzer.tokenize
    for term in ("wing", "flow", "slipstream"):  # df: documents with the term in any field
        assert stats.df[term] == sum(term in tok(d.text) or term in tok(d.metadata["title"])
                                     for d in docs)
    assert stats.field_lengths == {f: sum(len(tok(d.text if f == "text" else d.metadata[f]))
                                          for d in docs) for f in weights}
    stats.save(tmp_path / "s")
    assert CollectionStats.load(tmp_path / "s") == stats
    for p in parts:
        p.set_collection_stats(stats)
    for q, fw in [("wing lift", None), ("boundary layer heat", {"title": 6.0})]:
        got = sorted((h for p in parts for h in p.search(q, 10, field_weights=fw)),
                     key=lambda h: -h.score)[:10]
        want = whole.search(q, 10, field_weights=fw)
        assert [h.id for h in got] == [h.id for h in want]
        assert np.allclose([h.score for h in got], [h.score for h in want], rtol=1e-6)
    with pytest.raises(ValueError, match="over fields None"):
        parts[0].set_collection_stats(CollectionStats(300, 10, {}))
    with pytest.raises(ValueError, match="different fields"):
        CollectionStats.merge([stats, CollectionStats.of_index(BM25Index.from_texts(["a b"]))])
