"""Save/load round trips, atomicity, and refusal of corrupt or foreign directories."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from index_tamper import edit_manifest, files_of, rehash

from hybrid_retrievers import Analyzer, BM25Index, IndexFormatError


@pytest.fixture()
def index(passages: list[str]) -> BM25Index:
    metas = [{"n": i, "tags": ["a", "b"], "nested": {"x": i / 2}} for i in range(len(passages))]
    return BM25Index.from_texts(
        passages, metadatas=metas, analyzer=Analyzer(language="english"), method="bm25+", k1=1.2, b=0.6
    )


QUERIES = ["bm25 ranking", "dense vectors bi-encoder", "IPC-420 connector", "fusion"]


def test_round_trip_is_identical(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.ids == index.ids and loaded.docs == index.docs
    assert loaded.analyzer == index.analyzer
    assert (loaded.method, loaded.k1, loaded.b, loaded.delta) == ("bm25+", 1.2, 0.6, 1.0)
    for q in QUERIES:
        assert loaded.search(q, k=5) == index.search(q, k=5)


def test_round_trip_with_mmap_and_after_edits(index: BM25Index, tmp_path: Path) -> None:
    index.delete([index.ids[0]])
    index.add(["An added passage about ranking."], ids=["new"])
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx", mmap=True)
    for q in QUERIES + ["added passage"]:
        assert loaded.search(q, k=5) == index.search(q, k=5)
    loaded.add(["zebra text on ranking"], ids=["zebra"])  # a memory-mapped index stays editable
    assert loaded.search("zebra", k=1)[0].id == "zebra"


def test_save_overwrites_previous_save(index: BM25Index, tmp_path: Path) -> None:
    path = tmp_path / "idx"
    index.save(path)
    index.add(["brand new words"], ids=["bn"])
    index.save(path)
    assert "bn" in BM25Index.load(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no temp dirs left


def test_failed_save_keeps_previous(index: BM25Index, tmp_path: Path) -> None:
    path = tmp_path / "idx"
    index.save(path)
    index.add(["bad metadata"], ids=["bad"], metadatas=[{"when": object()}])
    with pytest.raises(TypeError, match="JSON-serialisable"):
        index.save(path)
    assert "bad" not in BM25Index.load(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_refuses_to_overwrite_foreign_directory(index: BM25Index, tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="not a hybrid-retrievers index"):
        index.save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "precious"


def test_no_pickle_in_saved_files(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path / "idx")
    for f in (tmp_path / "idx").glob("*.npy"):
        np.load(f, allow_pickle=False)  # would raise if an object array had been pickled


def _saved(index: BM25Index, tmp_path: Path) -> Path:
    path = tmp_path / "idx"
    index.save(path)
    return path


def _edit_manifest(path: Path, **changes) -> None:
    edit_manifest(path, **changes)  # consistently re-hashed: the loader's own checks must refuse


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda p: (p / "manifest.json").unlink(), "manifest.json is missing"),
        (lambda p: (p / "manifest.json").write_text("{not json"), "not valid JSON"),
        (lambda p: (files_of(p) / "manifest.json").write_text("{not json"), "corrupt or was edited"),
        (lambda p: _edit_manifest(p, format="something-else"), "not a hybrid-retrievers manifest"),
        (lambda p: _edit_manifest(p, kind="vector"), "holds a 'vector' index"),
        (lambda p: _edit_manifest(p, format_version=99), "upgrade hybrid-retrievers"),
        (lambda p: _edit_manifest(p, format_version="1"), "invalid format_version"),
        (lambda p: _edit_manifest(p, n_docs=3), "n_docs|rows|documents"),
        (lambda p: _edit_manifest(p, params={"method": "nope", "k1": 1, "b": 0.7, "delta": 0}), "invalid parameters"),
        (lambda p: (files_of(p) / "postings_docs.npy").unlink(), "missing"),
        (lambda p: _truncate(files_of(p) / "postings_tf.npy"), "truncated"),
        (lambda p: _flip_byte(files_of(p) / "postings_docs.npy"), "corrupt"),
        (lambda p: _flip_byte(files_of(p) / "doc_texts.npy"), "corrupt"),
        (lambda p: _flip_byte(files_of(p) / "vocabulary.json"), "corrupt"),
    ],
)
def test_corrupt_directories_raise_clear_errors(index, tmp_path: Path, damage, match) -> None:
    path = _saved(index, tmp_path)
    damage(path)
    with pytest.raises(IndexFormatError, match=match):
        BM25Index.load(path)


def test_pickle_file_posing_as_array_is_refused(index, tmp_path: Path) -> None:
    path = _saved(index, tmp_path)

    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('code ran')",))

    target = files_of(path) / "postings_docs.npy"
    np.save(target, np.array([Boom()], dtype=object), allow_pickle=True)
    # Even with every checksum updated to match, loading must not unpickle.
    rehash(path)
    with pytest.raises(IndexFormatError, match="not a readable"):
        BM25Index.load(path)
    raw = pickle.dumps({"x": 1})
    assert raw  # pickle itself is only used here, to build the hostile file


def test_missing_and_foreign_paths(tmp_path: Path) -> None:
    with pytest.raises(IndexFormatError, match="no index directory"):
        BM25Index.load(tmp_path / "nothing")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.csv").write_text("a,b")
    with pytest.raises(IndexFormatError, match="not a hybrid-retrievers index"):
        BM25Index.load(tmp_path / "other")


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01
    path.write_bytes(bytes(data))
