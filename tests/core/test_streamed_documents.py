"""Documents streamed from iterators (`make_docs` over a generator): UTF-8 buffers, same table.

A generator of texts (and of ids, of metadatas) is read `STREAM_BATCH` documents at a time
and each batch encoded into the table's buffers at once, so a streamed build holds no
Python string per text. Everything a user sees must equal the list path: the documents,
content ids (with ``#2`` suffixes across batches and against given ids), the BM25 index
arrays, searches, saved files; the errors name the argument and the global position.
``STREAM_BATCH`` is made tiny so that every corpus spans many batches.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, FusionSearcher, SparseIndex, VectorIndex
from hybrid_retrievers import document_columns, documents
from hybrid_retrievers.document_columns import DocColumns, StrColumn
from hybrid_retrievers.documents import make_docs
from hybrid_retrievers.ids import content_id
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from hybrid_retrievers.persistence import current_files


@pytest.fixture(autouse=True)
def _small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "STREAM_BATCH", 7)


def _corpus(n: int = 60) -> tuple[list[str], list[str | None], list[Any]]:
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(40)] + ["café", "naïve", "日本", "🙂"]
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 9))) for _ in range(n)]
    texts[20] = texts[2]  # duplicates in other batches: content ids get "#2", "#3"
    texts[41] = texts[2]
    ids: list[str | None] = [f"id-{i}" if i % 3 else None for i in range(n)]
    metas: list[Any] = [None if i % 4 == 0 else {"g": i % 3, "name": f"ü{i}"} for i in range(n)]
    metas[9] = {"t": (1, 2)}  # not JSON-exact: kept as a mapping beside the column
    metas[20] = metas[41] = metas[2]
    return texts, ids, metas


def _rows(docs: Any) -> list[Any]:
    return [(d.id, d.text, dict(d.metadata)) for d in docs]


def _same_tables(streamed: DocColumns, listed: DocColumns) -> None:
    assert len(streamed) == len(listed)
    assert _rows(streamed) == _rows(listed)
    assert [streamed[i] for i in range(-len(listed), len(listed))] == [
        listed[i] for i in range(-len(listed), len(listed))]
    assert streamed.ids() == listed.ids() and streamed.texts() == listed.texts()
    assert list(streamed.metadatas()) == list(listed.metadatas())
    assert streamed.at([5, 0, 59]) == listed.at([5, 0, 59])
    assert all(streamed.rows[i] == listed.rows[i] for i in listed.ids())
    ids, texts, _, _ = streamed.columns
    assert ids.is_buffer and texts.is_buffer  # no Python string per document kept
    assert texts[3:11] == listed.texts()[3:11] and texts[::5] == listed.texts()[::5]


@pytest.mark.parametrize("given", ["none", "mixed", "all"])
@pytest.mark.parametrize("with_metadata", [False, True])
def test_generators_give_the_table_of_lists(given: str, with_metadata: bool) -> None:
    texts, ids, metas = _corpus()
    id_list = None if given == "none" else ids if given == "mixed" else [
        f"x{i}" for i in range(len(texts))]
    meta_list = metas if with_metadata else None
    listed = make_docs(texts, id_list, meta_list)
    streamed = make_docs((t for t in texts), None if id_list is None else iter(id_list),
                         None if meta_list is None else (m for m in meta_list))
    _same_tables(streamed, listed)
    if given == "none":
        assert [streamed.id(i) for i in (2, 20, 41)] == [
            content_id(texts[2], meta_list and metas[2]),
            content_id(texts[2], meta_list and metas[2]) + "#2",
            content_id(texts[2], meta_list and metas[2]) + "#3"]


def test_a_given_id_later_in_the_stream_pushes_an_earlier_content_id_to_a_suffix() -> None:
    texts = [f"text {i}" for i in range(30)]
    ids: list[str | None] = [None] * 30
    ids[25] = content_id(texts[1], None)  # given after the row whose content id it is
    listed = make_docs(texts, ids, None)
    streamed = make_docs(iter(texts), iter(ids), None)
    assert streamed.ids() == listed.ids()
    assert streamed.id(1) == ids[25] + "#2"


def test_added_generators_avoid_the_ids_the_index_holds() -> None:
    texts = [f"t {i % 9}" for i in range(40)]
    a, b = BM25Index.from_texts(texts[:20]), BM25Index.from_texts(texts[:20])
    a.add(texts[20:])
    b.add(t for t in texts[20:])
    assert a.ids == b.ids and _rows(a.docs) == _rows(b.docs)


def _arrays(index: BM25Index) -> list[Any]:
    st = index._state  # private: the index arrays, compared exactly
    return [st.vocab, st.indptr.tolist(), st.post_docs.tolist(), st.post_tf.tolist(),
            st.post_tf.dtype, st.doc_len.tolist()]


def test_bm25_from_generators_is_the_index_of_lists_through_save_and_load(
        tmp_path: Path) -> None:
    texts, ids, metas = _corpus()
    listed = BM25Index.from_texts(texts, ids=ids, metadatas=metas)
    streamed = BM25Index.from_texts((t for t in texts), ids=iter(ids),
                                    metadatas=(m for m in metas))
    assert _arrays(streamed) == _arrays(listed)
    _same_tables(streamed._state.docs, listed._state.docs)
    for q in ["w1 w2", "café w3", "日本", "w39 naïve w7"]:
        assert streamed.search(q, k=10) == listed.search(q, k=10)
        assert streamed.search(q, k=5, filter={"g": 1}) == listed.search(q, k=5, filter={"g": 1})
    del metas[9]  # (a tuple is not saveable)
    listed = BM25Index.from_texts(texts[:9] + texts[10:], ids=ids[:9] + ids[10:], metadatas=metas)
    streamed = BM25Index.from_texts(iter(texts[:9] + texts[10:]), ids=iter(ids[:9] + ids[10:]),
                                    metadatas=iter(metas))
    listed.save(tmp_path / "listed")
    streamed.save(tmp_path / "streamed")
    saved, wanted = current_files(tmp_path / "streamed"), current_files(tmp_path / "listed")
    files = sorted(p.name for p in wanted.iterdir() if p.name != "manifest.json")
    assert "doc_texts.npy" in files and "doc_ids.npy" in files
    assert files == sorted(p.name for p in saved.iterdir() if p.name != "manifest.json")
    for name in files:
        assert (saved / name).read_bytes() == (wanted / name).read_bytes(), name
    for mmap in (False, True):
        again = BM25Index.load(tmp_path / "streamed", mmap=mmap)
        assert _rows(again.docs) == _rows(listed.docs)
        assert again.search("w1 w2", k=10) == listed.search("w1 w2", k=10)


def test_bm25_n_jobs_two_reads_the_buffers_too() -> None:
    texts, ids, _ = _corpus()
    one = BM25Index.from_texts(iter(texts), ids=ids)
    two = BM25Index.from_texts(iter(texts), ids=ids, n_jobs=2)
    assert _arrays(one) == _arrays(two)


def test_the_dense_sparse_and_hybrid_legs_build_from_generators_alike() -> None:
    texts, ids, metas = _corpus()
    dense, sparse = HashingEmbedder(dimension=32), HashingSparseEmbedder()
    for build in (lambda t, i, m: VectorIndex.from_texts(t, i, m, embedder=dense),
                  lambda t, i, m: SparseIndex.from_texts(t, i, m, embedder=sparse),
                  lambda t, i, m: FusionSearcher.hybrid(t, dense, ids=i, metadatas=m,
                                                        sparse=sparse)):
        listed, streamed = build(texts, ids, metas), build(iter(texts), iter(ids), iter(metas))
        for q in ["w1 w2", "café", "w5 w6 w7"]:
            assert streamed.search(q, k=8) == listed.search(q, k=8)
        for leg_s, leg_l in zip(getattr(streamed, "searchers", [streamed]),
                                getattr(listed, "searchers", [listed])):
            assert _rows(leg_s.docs) == _rows(leg_l.docs)


def test_lone_surrogates_are_refused_naming_the_argument_and_position() -> None:
    texts = [f"t{i}" for i in range(20)]
    bad = texts[:15] + ["ok \ud800 no"] + texts[16:]
    with pytest.raises(ValueError, match=r"texts\[15\].*lone surrogate"):
        BM25Index.from_texts(iter(bad))
    bad_ids = [f"i{i}" for i in range(20)]
    bad_ids[12] = "x\udfff"
    with pytest.raises(ValueError, match=r"ids\[12\].*lone surrogate"):
        BM25Index.from_texts(iter(texts), ids=iter(bad_ids))
    metas: list[Any] = [None] * 20
    metas[9] = {"k": "\ud83d"}
    with pytest.raises(ValueError, match=r"metadatas\[9\].*lone surrogate"):
        BM25Index.from_texts(iter(texts), metadatas=iter(metas))
    # The encoder names what it encodes too (a safety net behind the checks above).
    with pytest.raises(ValueError, match=r"texts\[23\] cannot be encoded as UTF-8.*'\\ud800c'"):
        StrColumn.encoded(["a", "b", "\ud800c", "é"], name="texts", start=21)


def test_long_lists_are_encoded_in_batches_to_the_same_buffer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    texts, _, _ = _corpus()
    whole = StrColumn.encoded(texts)
    monkeypatch.setattr(document_columns, "_ENCODE_BATCH", 4)
    parts = StrColumn.encoded(texts)
    for a, b in zip(parts.buffers(), whole.buffers()):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert parts.tolist() == texts
    with pytest.raises(ValueError, match=r"ids\[15\] cannot be encoded"):
        StrColumn.encoded(texts[:15] + ["\udc80"] + texts[16:], name="ids")


def test_items_of_the_wrong_type_are_named_at_their_global_position() -> None:
    texts: list[Any] = [f"t{i}" for i in range(20)]
    texts[17] = b"bytes"
    with pytest.raises(TypeError, match=r"texts\[17\] must be a str, got bytes"):
        make_docs(iter(texts), None, None)
    with pytest.raises(TypeError, match=r"ids\[11\] must be a str or None, got int"):
        make_docs(iter(texts[:15]), iter([*map(str, range(11)), 5, "a", "b", "c"]), None)
    with pytest.raises(TypeError, match=r"metadatas\[8\] must be a mapping or None, got list"):
        make_docs(iter(texts[:15]), None, iter([None] * 8 + [[1]] + [None] * 6))
    with pytest.raises(TypeError, match="ids must be a list of str"):
        make_docs(iter(texts[:15]), "abc", None)


@pytest.mark.parametrize("what", ["ids", "metadatas"])
@pytest.mark.parametrize("n_other", [0, 9, 10, 16])
def test_mismatched_lengths_count_every_item(what: str, n_other: int) -> None:
    other: list[Any] = [f"i{i}" if what == "ids" else None for i in range(n_other)]
    args: dict[str, Any] = {"ids": None, "metadatas": None, what: iter(other)}
    with pytest.raises(ValueError, match=rf"got 12 texts but {n_other} {what}"):
        make_docs((f"t{i}" for i in range(12)), args["ids"], args["metadatas"])


def test_empty_streams_and_batches() -> None:
    table = make_docs(iter([]), iter([]), iter([]))
    assert len(table) == 0 and list(table) == [] and table.texts() == []
    with pytest.raises(ValueError, match="empty corpus"):
        BM25Index.from_texts(t for t in [])
    texts = [f"t{i}" for i in range(14)]  # exactly two batches of 7
    assert make_docs(iter(texts), None, None).texts() == texts
    assert make_docs(iter([""] * 9), [f"e{i}" for i in range(9)], None).texts() == [""] * 9
    parts = [StrColumn.encoded([]), StrColumn.encoded(["ab", "é"]), StrColumn.encoded([]),
             StrColumn(["", "c"])]
    joined = StrColumn.joined(parts)
    assert parts == [] and joined.tolist() == ["ab", "é", "", "c"] and joined.is_buffer
    assert StrColumn.joined([]).tolist() == []
    assert len(DocColumns.joined([])) == 0


def test_joined_tables_keep_the_rows_of_non_json_metadata() -> None:
    a = DocColumns.from_columns(["a", "b"], ["x", "y"], [{"t": (1,)}, None])
    b = DocColumns.from_columns(["c", "d"], ["z", "w"], [None, {"t": (2,)}])
    joined = DocColumns.joined([a, b])
    assert _rows(joined) == _rows(a) + _rows(b)
    assert dict(joined.columns[3]) == {0: a.metadata(0), 3: b.metadata(1)}


def test_sized_inputs_keep_the_callers_strings() -> None:
    texts = ["one text", "another"]
    for given in (texts, tuple(texts)):
        table = make_docs(given, None, None)
        assert not table.columns[1].is_buffer
        assert table.text(0) is texts[0]
    assert np.array_equal(StrColumn.encoded(texts).buffers()[1], [0, 8, 15])
