"""Documents stored once, as data (`DocColumns`): the same documents and results as before.

The differential half runs one seeded scenario (a three-leg hybrid built, searched with
and without filters, edited, saved, loaded and memory-mapped) and compares a digest of
every id, text, metadata, score and order with the digest the list-of-`Doc` tables gave
(recorded below from the code before `DocColumns`, by running `scenario` there). The
other tests check the table against a list of `Doc` kept here as the oracle.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, Doc, FusionSearcher, SparseIndex, VectorIndex
from hybrid_retrievers.document_columns import DocColumns, json_exact
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from hybrid_retrievers.persistence import IndexFormatError, current_files

# The digest of `scenario`'s record under the list-of-Doc tables (commit 15a8c44).
RECORDED = "28e6246656793f7164934a28fd0094a9dfb4765a43a47fbd0c19a77bd3321368"

QUERIES = ["w1 w2", "w17 w3 w99", "w150", "w5 w6 w7 w8", "nothing here"]


def _corpus(n: int = 300) -> tuple[list[str], list[dict[str, Any] | None]]:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(200)] + ["café", "naïve", "日本"]
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 25))) for _ in range(n)]
    metas: list[dict[str, Any] | None] = [
        None if i % 5 == 0 else
        {"group": i % 3, "lang": ["en", "fr"][i % 2], "weight": i / 7,
         **({"tags": ["a", str(i % 4)], "nested": {"k": i % 2}} if i % 7 == 0 else {})}
        for i in range(n)]
    texts[3] = texts[1]  # a duplicate text: content ids get "#2"
    metas[3] = metas[1]
    return texts, metas


def _hits(hits: list[Any]) -> list[Any]:
    return [[h.doc.id, h.doc.text, dict(h.doc.metadata), repr(h.score), h.rank] for h in hits]


def _docs(index: Any) -> list[Any]:
    return [[d.id, d.text, dict(d.metadata)] for d in index.docs]


def _searches(searcher: Any) -> list[Any]:
    out = []
    for q in QUERIES:
        out.append(_hits(searcher.search(q, k=8)))
        out.append(_hits(searcher.search(q, k=8, filter={"group": 1})))
        out.append(_hits(searcher.search(q, k=5, filter={"lang": "fr", "group": 2})))
        out.append(_hits(searcher.search(q, k=5, filter=lambda d: len(d.text) % 2 == 0)))
    return out


def scenario(tmp: Path) -> list[Any]:
    """Everything a user sees of the documents, built, edited, saved and loaded."""
    texts, metas = _corpus()
    dense, sparse = HashingEmbedder(dimension=64), HashingSparseEmbedder()
    hybrid = FusionSearcher.hybrid(texts, dense, metadatas=metas, sparse=sparse)
    legs = hybrid.searchers
    record: list[Any] = [_searches(hybrid)] + [_searches(leg) for leg in legs]
    record.append([_docs(leg) for leg in legs])
    record.append([leg.get(leg.ids[7]).text for leg in legs])
    ids = legs[0].ids
    for leg in legs:  # the same edits on every leg, as an adapter makes them
        leg.add(["w1 w2 fresh", "w3 café"], metadatas=[{"group": 1}, None])
        leg.upsert(["w1 replaced w150", "w2 brand new"], ids=[ids[10], "new-id"],
                   metadatas=[{"group": 2, "lang": "fr"}, {"group": 1}])
        leg.delete([ids[0], ids[5], ids[299]])
    record.append([_docs(leg) for leg in legs])
    record.append(_searches(hybrid))
    hybrid.save(tmp / "hybrid")
    for mmap in (False, True):
        again = FusionSearcher.load(tmp / "hybrid", dense, sparse_embedder=sparse, mmap=mmap)
        record.append(_searches(again))
        record.append([_docs(leg) for leg in again.searchers])
    bm25 = BM25Index.from_texts(texts, metadatas=metas, fields={"text": 1.0, "lang": 2.0})
    bm25.add(["w1 fr"], ids=["f"], metadatas=[{"lang": "fr w1"}])
    bm25.delete([bm25.ids[2]])
    record.append(_searches(bm25) + [_docs(bm25)])
    bm25.save(tmp / "fielded")
    record.append(_searches(BM25Index.load(tmp / "fielded", mmap=True)))
    return record


def digest(record: list[Any]) -> str:
    data = json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def test_results_are_those_of_the_list_of_doc_tables(tmp_path: Path) -> None:
    assert digest(scenario(tmp_path)) == RECORDED


def test_the_legs_of_a_hybrid_share_one_table_until_one_is_edited() -> None:
    texts, metas = _corpus(50)
    hybrid = FusionSearcher.hybrid(texts, HashingEmbedder(dimension=16), metadatas=metas,
                                   sparse=HashingSparseEmbedder())
    bm25, dense, sparse = hybrid.searchers
    assert bm25.docs is dense.docs is sparse.docs
    before = list(dense.docs)
    bm25.upsert(["changed"], ids=[bm25.ids[0]])  # copy-on-write: the others keep theirs
    assert bm25.docs is not dense.docs and dense.docs is sparse.docs
    assert list(dense.docs) == before and bm25.get(bm25.ids[0]).text == "changed"
    assert dense.get(bm25.ids[0]).text == texts[0]


@pytest.mark.parametrize("mmap", [False, True])
def test_a_loaded_hybrid_shares_one_table_again(tmp_path: Path, mmap: bool) -> None:
    texts, metas = _corpus(50)
    dense, sparse = HashingEmbedder(dimension=16), HashingSparseEmbedder()
    FusionSearcher.hybrid(texts, dense, metadatas=metas, sparse=sparse).save(tmp_path / "h")
    bm25, vec, spr = FusionSearcher.load(tmp_path / "h", dense, sparse_embedder=sparse,
                                         mmap=mmap).searchers
    assert bm25.docs is vec.docs is spr.docs and list(bm25.docs) == list(
        BM25Index.from_texts(texts, metadatas=metas).docs)
    vec.delete([vec.ids[0]])
    assert len(vec) == 49 and len(bm25) == len(spr) == 50 and bm25.docs is spr.docs


def test_table_matches_a_list_of_docs_through_edits() -> None:
    texts, metas = _corpus(120)
    ids = [f"d{i}" for i in range(120)]
    oracle = [Doc(i, t, m or {}) for i, t, m in zip(ids, texts, metas)]
    table = DocColumns.from_columns(ids, texts, metas)
    assert list(table) == oracle and table == oracle and len(table) == 120
    assert [table[i] for i in (-1, 0, 57)] == [oracle[-1], oracle[0], oracle[57]]
    assert table[10:13] == oracle[10:13]
    new = DocColumns.from_columns(["d5", "x", "d7", "y"], ["five", "ex", "seven", "why"],
                                  [{"a": 1}, None, None, {"t": (1, 2)}])
    rows = np.array([5, 120, 7, 121])
    placed = table.placed(new, rows)
    expected = list(oracle)
    expected[5], expected[7] = Doc("d5", "five", {"a": 1}), Doc("d7", "seven")
    expected += [Doc("x", "ex"), Doc("y", "why", {"t": (1, 2)})]
    assert placed == expected and table == oracle  # the old table is unchanged
    assert placed[121].metadata["t"] == (1, 2)  # kept exactly, not through JSON
    alive = np.ones(len(placed), dtype=bool)
    alive[[0, 3, 121]] = False
    kept = placed.kept(alive)
    assert kept == [d for d, a in zip(expected, alive) if a]
    assert [kept.rows[d.id] for d in kept] == list(range(len(kept)))
    assert "y" not in kept.rows and kept.rows.get("d0") is None and 5 not in kept.rows


def test_id_lookup_without_a_dict(tmp_path: Path) -> None:
    ids = [f"id-{i}" for i in range(5000)] + ["", "é", "日本語", "a" * 300]
    table = DocColumns.from_columns(ids, [""] * len(ids), None)
    rows = table.rows
    assert all(rows[i] == n for n, i in enumerate(ids))
    assert list(rows.find(ids + ["missing"])) == list(range(len(ids))) + [-1]
    assert rows.duplicates() == [] and len(rows) == len(ids)
    twice = DocColumns.from_columns(["a", "b", "a"], ["", "", ""], None)
    assert twice.rows.duplicates() == ["a"]


def test_json_exact_metadata_only_goes_through_json() -> None:
    assert json_exact({"a": [1, {"b": None}], "c": 1.5, "d": True})
    for value in [(1, 2), float("nan"), float("inf"), {1: "x"}, MappingProxyType({}), b"x"]:
        assert not json_exact({"v": value})


def test_saved_documents_are_arrays_and_old_files_still_load(tmp_path: Path) -> None:
    index = BM25Index.from_texts(["a cat", "a dog"], ids=["c", "d"],
                                 metadatas=[{"n": 1}, None])
    index.save(tmp_path / "idx")
    names = {p.name for p in current_files(tmp_path / "idx").iterdir()}
    assert {"doc_ids.npy", "doc_texts.npy", "doc_metadata.npy"} <= names
    assert "docs.jsonl" not in names
    for mmap in (False, True):
        again = BM25Index.load(tmp_path / "idx", mmap=mmap)
        assert list(again.docs) == list(index.docs)
    old = Path(__file__).parent / "data" / "bm25_analyzer_v1"  # saved with docs.jsonl
    assert len(BM25Index.load(old)) > 0


def test_unsaveable_metadata_is_refused_naming_the_document(tmp_path: Path) -> None:
    index = VectorIndex.from_vectors(np.eye(2, dtype=np.float32), ids=["a", "b"],
                                     metadatas=[None, {"t": (1, 2)}])
    assert index.get("b").metadata["t"] == (1, 2)
    with pytest.raises(TypeError, match=r"document 'b'.*tuple"):
        index.save(tmp_path / "v")


def _forge(path: Path, name: str, old: bytes, new: bytes) -> None:
    from index_tamper import rehash

    target = current_files(path) / name
    target.write_bytes(target.read_bytes().replace(old, new))
    rehash(path)


@pytest.mark.parametrize(("name", "old", "new", "message"), [
    ("doc_texts.npy", b"a cat", b"a \xffat", r"doc_texts.npy: the texts of document 0 are "
                                             r"not valid UTF-8"),
    ("doc_metadata.npy", b'{"n":1}', b'{"n":[}', r"doc_metadata.npy: bad metadata of doc"),
    ("doc_metadata.npy", b'{"n":1}', b'["n",1]', r"expected a non-empty JSON object"),
    ("doc_metadata.npy", b'{"n":"x"}', b'{"n":NaN}', r"NaN is not JSON data"),
    ("doc_metadata.npy", b'{"n":"xxxxxx"}', b'{"n":"\\ud800"}', r"lone surrogate"),
    ("doc_ids.npy", b"cd", b"cc", r"doc_ids.npy: duplicate document id 'c'"),
])
def test_forged_document_files_are_refused(tmp_path: Path, name: str, old: bytes,
                                           new: bytes, message: str) -> None:
    meta = {"n": 1} if b'"n":1' in old else {"n": "x" if b"NaN" in new else "xxxxxx"}
    BM25Index.from_texts(["a cat", "a dog"], ids=["c", "d"],
                         metadatas=[meta, None]).save(tmp_path / "idx")
    _forge(tmp_path / "idx", name, old, new)
    with pytest.raises(IndexFormatError, match=message):
        BM25Index.load(tmp_path / "idx")


@pytest.mark.parametrize("offsets", [[0, 5, 9], [1, 5, 10], [0, 6, 5]])
def test_forged_document_offsets_are_refused_naming_the_file(tmp_path: Path,
                                                             offsets: list[int]) -> None:
    from index_tamper import rehash

    BM25Index.from_texts(["a cat", "a dog"], ids=["c", "d"]).save(tmp_path / "idx")
    np.save(current_files(tmp_path / "idx") / "doc_text_offsets.npy",
            np.array(offsets, dtype=np.int64))
    rehash(tmp_path / "idx")
    for mmap in (False, True):
        with pytest.raises(IndexFormatError, match=r"doc_text_offsets.npy is not a valid "
                                                   r"offset array .*end at 10"):
            BM25Index.load(tmp_path / "idx", mmap=mmap)


def test_sparse_and_vector_indexes_keep_the_table_through_save(tmp_path: Path) -> None:
    texts, metas = _corpus(40)
    sparse = SparseIndex.from_texts(texts, metadatas=metas, embedder=HashingSparseEmbedder())
    sparse.save(tmp_path / "s")
    assert list(SparseIndex.load(tmp_path / "s", mmap=True).docs) == list(sparse.docs)
    dense = VectorIndex.from_texts(texts, metadatas=metas, embedder=HashingEmbedder(8))
    dense.save(tmp_path / "v")
    assert list(VectorIndex.load(tmp_path / "v", mmap=True).docs) == list(dense.docs)


def test_parent_store_keeps_a_table_with_dict_semantics(tmp_path: Path) -> None:
    from hybrid_retrievers.parent import ParentStore

    oracle = {f"p{i}": Doc(f"p{i}", f"parent {i}", {"n": i} if i % 2 else {}) for i in range(30)}
    store = ParentStore(oracle.values())
    before = store.snapshot()
    store.put_many([Doc("p3", "replaced"), Doc("new", "appended", {"x": [1]})])
    oracle["p3"], oracle["new"] = Doc("p3", "replaced"), Doc("new", "appended", {"x": [1]})
    store.delete(["p0", "p7", "unknown"])
    del oracle["p0"], oracle["p7"]
    assert list(store) == list(oracle.values()) and store.ids == list(oracle)
    assert store.get_many(["p3", "zzz", "new"]) == [oracle["p3"], None, oracle["new"]]
    assert before["p3"].text == "parent 3" and len(before) == 30 and "p0" in before
    assert "p0" not in store and len(store) == 29
    store.save(tmp_path / "store")
    assert list(ParentStore.load(tmp_path / "store")) == list(oracle.values())
