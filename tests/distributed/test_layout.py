"""The framework-free parts of sharding: routing, merging, the saved layout, ShardServer."""

from __future__ import annotations

import json

import pytest

from hybrid_retrievers import BM25Index, Doc, VectorIndex
from hybrid_retrievers.bm25 import CollectionStats
from hybrid_retrievers.distributed import ShardedManifest, ShardHit, ShardServer, merge_top_k
from hybrid_retrievers.distributed.corpus import iter_doc_batches
from hybrid_retrievers.distributed.layout import load_shard, plan_shards, save_shard, shard_of
from hybrid_retrievers.persistence import IndexFormatError


def test_routing_is_stable_and_complete():
    ids = [f"d{i}" for i in range(500)]
    plan = plan_shards(ids, 4)
    assert sorted(p for part in plan for p in part) == list(range(500))
    assert all(shard_of(ids[p], 4) == s for s, part in enumerate(plan) for p in part)
    assert min(len(p) for p in plan) > 80
    with pytest.raises(ValueError, match="n_shards"):
        plan_shards(ids, 0)


def test_merge_breaks_ties_by_sequence_number():
    a = [ShardHit("x", "", {}, 2.0, 9), ShardHit("y", "", {}, 1.0, 1)]
    b = [ShardHit("z", "", {"k": 1}, 2.0, 3), ShardHit("w", "", {}, 1.0, 0)]
    hits = merge_top_k([(0, a), (1, b)], 3)
    assert [(h.id, h.rank, h.explanation["shard"]) for h in hits] == \
        [("z", 1, 1), ("x", 2, 0), ("w", 3, 1)]
    assert hits[0].doc.metadata == {"k": 1}


def test_shard_round_trip_and_server(tmp_path):
    docs = [Doc("a", "wing lift", {"t": "x"}), Doc("b", "flat plate lift"), Doc("c", "drag")]
    index = BM25Index.from_docs(docs)
    save_shard(tmp_path / "s", index, {"a": 5, "b": 7, "c": 9})
    loaded, seqs = load_shard(tmp_path / "s")
    assert loaded.ids == ["a", "b", "c"] and seqs == {"a": 5, "b": 7, "c": 9}
    stats = CollectionStats.of_index(index)
    stats.save(tmp_path / "stats")
    server = ShardServer(tmp_path / "s", tmp_path / "stats")
    assert [(h.id, h.seq) for h in server.search("lift", 5)] == [("a", 5), ("b", 7)]
    delta = server.add([("d", "lift lift", {}, 11)])
    server.apply_stats(delta)
    assert server.present(["d", "zz"]) == ["d"]
    assert load_shard(tmp_path / "s")[1]["d"] == 11  # persisted before acknowledging
    server.apply_stats(server.delete(["a"]))
    assert [h.id for h in server.search("lift", 5)] == ["d", "b"]


def test_empty_shards_save_and_load(tmp_path):
    save_shard(tmp_path / "b", BM25Index(), {})
    assert len(load_shard(tmp_path / "b")[0]) == 0
    save_shard(tmp_path / "v", VectorIndex(dimension=4), {})
    assert len(load_shard(tmp_path / "v")[0]) == 0


def test_manifest_validation(tmp_path):
    ShardedManifest("bm25", ["shard-00000"], 3, 3).write(tmp_path)
    assert ShardedManifest.read(tmp_path).n_shards == 1
    data = json.loads((tmp_path / "manifest.json").read_text())
    data["index_kind"] = "graph"
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(IndexFormatError, match="unknown index_kind"):
        ShardedManifest.read(tmp_path)


def test_corpus_readers(tmp_path):
    rows = [{"_id": "1", "title": "t", "text": "wing"}, {"_id": "2", "title": "u", "text": "lift"}]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    docs = [d for b in iter_doc_batches(path, id_column="_id") for d in b]
    assert [(d.id, d.text, dict(d.metadata)) for d in docs] == \
        [("1", "wing", {"title": "t"}), ("2", "lift", {"title": "u"})]
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "c.parquet")
    assert [d.id for b in iter_doc_batches(tmp_path / "c.parquet", 1, id_column="_id")
            for d in b] == ["1", "2"]
    assert [d.text for b in iter_doc_batches(["plain text"]) for d in b] == ["plain text"]
    with pytest.raises(ValueError, match="no 'text' column"):
        list(iter_doc_batches([{"body": "x"}]))
