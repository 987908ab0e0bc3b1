"""Loading trusts nothing; saved metadata round-trips exactly.

Each section names the attack it refuses: edited settings, structurally invalid arrays,
hostile file contents, swapped parent/child halves, metadata that is not JSON data, lone
surrogates. "Forged" files have every checksum recomputed, so they test the structural
checks, not the checksums.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from index_tamper import edit_manifest, files_of, rebind_pointer, rehash

from hybrid_retrievers import (
    BM25Index,
    Doc,
    IndexFormatError,
    ParentChildSearcher,
    VectorIndex,
)
from hybrid_retrievers.parent import ParentStore
from hybrid_retrievers.vector import EmbeddingCache, HNSWConfig, text_key
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.persistence import MANIFEST, read_index

TEXTS = ["wings make lift", "lift and drag of a wing", "bread and butter", "the wing flaps"]


def bm25(path: Path, **kwargs: Any) -> Path:
    BM25Index.from_texts(TEXTS, ids=["a", "b", "c", "d"],
                         metadatas=[{"n": i} for i in range(4)], **kwargs).save(path)
    return path


def vector(path: Path, metric: str = "cosine") -> Path:
    VectorIndex.from_texts(TEXTS, ids=["a", "b", "c", "d"], embedder=HashingEmbedder(8),
                           metric=metric).save(path)
    return path


def npy_edit(path: Path, name: str, edit: Callable[[np.ndarray], np.ndarray]) -> None:
    target = files_of(path) / name
    np.save(target, edit(np.load(target)))
    rehash(path)


# -------------- edited settings in a manifest are refused, never applied


@pytest.mark.parametrize(
    ("old", "new"),
    [('"k1": 1.5', '"k1": 0.5'), ('"b": 0.75', '"b": 0.5'),
     ('"method": "lucene"', '"method": "robertson"'), ('"stemmer": "snowball"', '"stemmer": null')],
)
@pytest.mark.parametrize("mmap", [False, True])
def test_edited_manifest_parameters_are_refused(tmp_path: Path, old: str, new: str,
                                                   mmap: bool) -> None:
    path = bm25(tmp_path / "idx")
    manifest = files_of(path) / MANIFEST
    text = manifest.read_text()
    assert old in text
    manifest.write_text(text.replace(old, new))
    assert manifest.read_text() != text
    with pytest.raises(IndexFormatError, match="corrupt or was edited"):
        BM25Index.load(path, mmap=mmap)


def test_an_edited_k1_in_the_manifest_pointer_does_not_change_scores(tmp_path: Path) -> None:
    path = bm25(tmp_path / "k1-idx")
    before = [(h.id, h.score) for h in BM25Index.load(path).search("wing lift")]
    m = path / MANIFEST  # once the settings lived here; it is now only the pointer
    m.write_text(m.read_text().replace('"k1": 1.5', '"k1": 0.5'))
    idx = BM25Index.load(path)
    assert (idx.k1, idx.method) == (1.5, "lucene")
    assert [(h.id, h.score) for h in idx.search("wing lift")] == before


def test_edited_pointer_or_cache_model_entry_is_refused(tmp_path: Path) -> None:
    cache = EmbeddingCache()
    cache.embed(HashingEmbedder(8), ["a", "b"])
    cache.embed(HashingEmbedder(4), ["a"])
    cache.save(tmp_path / "cache")
    manifest = files_of(tmp_path / "cache") / MANIFEST
    m = json.loads(manifest.read_text())
    m["models"] = m["models"][:1]
    manifest.write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="corrupt or was edited"):
        EmbeddingCache.load(tmp_path / "cache")
    path = bm25(tmp_path / "idx")
    pointer = json.loads((path / MANIFEST).read_text())
    pointer["manifest_sha256"] = "0" * 64
    (path / MANIFEST).write_text(json.dumps(pointer))
    with pytest.raises(IndexFormatError, match="corrupt or was edited"):
        BM25Index.load(path)


# ----------------- structurally invalid postings and vectors are refused


@pytest.mark.parametrize(
    ("name", "edit", "match"),
    [
        ("postings_docs.npy", lambda a: np.concatenate([[a[0]], a[:-1]]), "not strictly increasing"),
        ("postings_docs.npy", lambda a: a[::-1].copy(), "not strictly increasing|length"),
        ("postings_docs.npy", lambda a: a + 100, "outside"),
        ("postings_tf.npy", lambda a: np.zeros_like(a), "term frequency is 0"),
        ("postings_tf.npy", lambda a: a * 2, "length"),
        ("doc_lengths.npy", lambda a: np.zeros_like(a), "length"),
        ("doc_lengths.npy", lambda a: np.full_like(a, 2**31 - 1), "length"),
        ("doc_lengths.npy", lambda a: -a, "negative"),
        ("postings_indptr.npy", lambda a: a[::-1].copy(), "offset"),
    ],
)
@pytest.mark.parametrize("mode", ["plain", "mmap-verify"])
def test_structurally_invalid_postings_are_refused(tmp_path: Path, name: str, edit: Callable,
                                                      match: str, mode: str) -> None:
    path = bm25(tmp_path / "idx")
    npy_edit(path, name, edit)
    with pytest.raises(IndexFormatError, match=match):
        BM25Index.load(path, mmap=mode != "plain", verify=mode != "plain")


def test_a_duplicate_posting_is_refused(tmp_path: Path) -> None:
    BM25Index.from_texts(["cat", "cat dog", "dog"], ids=["a", "b", "c"]).save(tmp_path / "g")
    npy_edit(tmp_path / "g", "postings_docs.npy", lambda a: np.array([a[0], a[0], *a[2:]], a.dtype))
    with pytest.raises(IndexFormatError, match="postings_docs.npy"):
        BM25Index.load(tmp_path / "g")


@pytest.mark.parametrize(
    ("edit", "match"),
    [(lambda a: a * 10, "length"), (lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0,
                                                       np.nan, a).astype(np.float32), "NaN"),
     (lambda a: np.full_like(a, np.inf), "NaN or infinite")],
)
@pytest.mark.parametrize("mode", ["plain", "mmap-verify"])
def test_bad_vectors_are_refused(tmp_path: Path, edit: Callable, match: str, mode: str) -> None:
    path = vector(tmp_path / "v")
    npy_edit(path, "vectors.npy", edit)
    with pytest.raises(IndexFormatError, match=match):
        VectorIndex.load(path, HashingEmbedder(8), mmap=mode != "plain", verify=mode != "plain")


def test_dot_metric_keeps_unnormalised_vectors(tmp_path: Path) -> None:
    VectorIndex.from_vectors([[3.0, 0.0], [0.0, 2.0]], ids=["a", "b"], metric="dot").save(tmp_path / "v")
    assert VectorIndex.load(tmp_path / "v", verify=True).get_vector("a").tolist() == [3.0, 0.0]


def test_mmap_verify_catches_a_flipped_byte_plain_mmap_does_not_read_it(tmp_path: Path) -> None:
    path = vector(tmp_path / "v")
    target = files_of(path) / "vectors.npy"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x40
    target.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="corrupt"):
        VectorIndex.load(path, mmap=True, verify=True)
    with pytest.raises(IndexFormatError, match="corrupt"):
        VectorIndex.load(path)
    VectorIndex.load(path, mmap=True)  # documented: memory maps are checked on request only


def test_cheap_checks_run_even_with_mmap(tmp_path: Path) -> None:
    path = bm25(tmp_path / "idx")
    npy_edit(path, "doc_lengths.npy", lambda a: -a)
    with pytest.raises(IndexFormatError, match="negative"):
        BM25Index.load(path, mmap=True)


# --- hostile file contents (headers, JSON, encodings, types) are refused


def _header(shape: tuple[int, ...], descr: str = "<i4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False,
                                               "shape": shape})
    return buf.getvalue()


def test_forged_header_declaring_huge_shape_is_refused_before_allocating(tmp_path: Path) -> None:
    path = bm25(tmp_path / "idx")
    target = files_of(path) / "doc_lengths.npy"
    data = np.load(target).tobytes()
    target.write_bytes(_header((2**40,)) + data)
    rehash(path)
    with pytest.raises(IndexFormatError, match=r"declares shape|expected 4 rows"):
        BM25Index.load(path)
    edit_manifest(path, n_docs=2**40)
    with pytest.raises(IndexFormatError, match="declares shape"):
        BM25Index.load(path)


@pytest.mark.parametrize("name", ["doc_lengths.npy", "postings_docs.npy"])
def test_npz_in_place_of_npy(tmp_path: Path, name: str) -> None:
    path = bm25(tmp_path / "idx")
    target = files_of(path) / name
    buf = io.BytesIO()
    np.savez(buf, a=np.load(target))
    target.write_bytes(buf.getvalue())
    rehash(path)
    with pytest.raises(IndexFormatError, match="not a readable .npy"):
        BM25Index.load(path)


@pytest.mark.parametrize("which", ["pointer", "manifest", "vocabulary.json",
                                   "doc_metadata.npy"])
def test_deeply_nested_json_is_refused(tmp_path: Path, which: str) -> None:
    path = bm25(tmp_path / "idx")
    nested = "[" * 100_000 + "]" * 100_000
    target = {"pointer": path / MANIFEST, "manifest": files_of(path) / MANIFEST}.get(
        which, files_of(path) / which)
    if which == "doc_metadata.npy":  # one document's metadata, nested
        _save_buffer(files_of(path), "doc_metadata", ['{"n":' + nested + "}", "", "", ""])
    else:
        target.write_text(nested)
    if which not in ("pointer", "manifest"):
        rehash(path)
    with pytest.raises(IndexFormatError):
        BM25Index.load(path)


def _save_buffer(directory: Path, name: str, texts: list[str]) -> None:
    """Replace a saved UTF-8 column (``name``.npy and its offsets) with ``texts``."""
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets_name = {"doc_metadata": "doc_metadata_offsets", "doc_texts": "doc_text_offsets",
                    "doc_ids": "doc_id_offsets"}[name]
    np.save(directory / f"{name}.npy", np.frombuffer(b"".join(data), dtype=np.uint8))
    np.save(directory / f"{offsets_name}.npy",
            np.concatenate([[0], np.cumsum([len(d) for d in data])]).astype(np.int64))


def test_invalid_utf8_in_docs_names_the_file(tmp_path: Path) -> None:
    path = bm25(tmp_path / "idx")
    target = files_of(path) / "doc_texts.npy"
    target.write_bytes(target.read_bytes().replace(b"wings", b"w\xffngs"))
    rehash(path)
    with pytest.raises(IndexFormatError, match=r"doc_texts.npy: the texts of document 0"):
        BM25Index.load(path)
    store = tmp_path / "store"
    ParentStore([Doc("p", "text")]).save(store)
    target = files_of(store) / "parents.jsonl"
    target.write_bytes(target.read_bytes().replace(b"text", b"t\xc3\x28xt"))
    rehash(store)
    with pytest.raises(IndexFormatError, match=r"parents.jsonl, line 1"):
        ParentStore.load(store)


@pytest.mark.parametrize("bad", [None, 5, b"idx", 3.5, ["idx"], ""])
def test_path_of_the_wrong_type_names_path(tmp_path: Path, bad: Any) -> None:
    index = BM25Index.from_texts(["x"], ids=["x"])
    for call in (index.save, BM25Index.load, VectorIndex.load, EmbeddingCache.load,
                 ParentStore.load, ParentChildSearcher.load, EmbeddingCache().save):
        with pytest.raises((TypeError, ValueError), match="path"):
            call(bad)


def test_manifest_file_entry_with_a_string_byte_count(tmp_path: Path) -> None:
    path = bm25(tmp_path / "idx")
    manifest = json.loads((files_of(path) / MANIFEST).read_text())
    entry = manifest["files"]["doc_texts.npy"]
    entry["bytes"] = str(entry["bytes"])
    (files_of(path) / MANIFEST).write_text(json.dumps(manifest))
    rebind_pointer(path)
    with pytest.raises(IndexFormatError, match="int 'bytes'"):
        BM25Index.load(path)


def test_absurd_ann_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most"):
        HNSWConfig(m=10**9)
    with pytest.raises(TypeError, match="unknown HNSW config keys"):
        HNSWConfig.from_config({"m": 8, "evil": 1})
    path = vector(tmp_path / "ann")
    edit_manifest(path, ann={"m": 10**9, "ef_construction": 100, "ef_search": 64,
                             "exact_below": 10})
    with pytest.raises(IndexFormatError, match="ann parameters"):
        VectorIndex.load(path, HashingEmbedder(8))


# ------------- a parent/child index's two halves are bound to each other


def _pcs(path: Path) -> Path:
    ParentChildSearcher.from_texts(["Wings make lift. Flaps add lift."], ids=["p1"],
                                   chunk_size=20, chunk_overlap=0).save(path)
    return path


@pytest.mark.parametrize("part", ["parents", "children"])
def test_parent_child_halves_cannot_be_swapped(tmp_path: Path, part: str) -> None:
    path = _pcs(tmp_path / "pcs")
    other = tmp_path / "other"
    if part == "parents":
        ParentStore([Doc("other", "an unrelated parent")])._save_into(_mk(other))
    else:
        BM25Index.from_texts(["an unrelated child"], ids=["c"],
                             metadatas=[{"parent_id": "p1"}])._save_into(_mk(other))
    shutil.rmtree(files_of(path) / part)
    shutil.copytree(other, files_of(path) / part)
    with pytest.raises(IndexFormatError, match=f"{part}.*(corrupt or was edited|truncated)"):
        ParentChildSearcher.load(path)


def _mk(path: Path) -> Path:
    path.mkdir()
    return path


def test_parent_child_round_trip_and_manifest_binds_both(tmp_path: Path) -> None:
    path = _pcs(tmp_path / "pcs")
    files = json.loads((files_of(path) / MANIFEST).read_text())["files"]
    assert set(files) == {"parents/manifest.json", "children/manifest.json"}
    assert [h.id for h in ParentChildSearcher.load(path).search("lift")] == ["p1"]


# ------------- metadata is JSON data, refused otherwise at build or save


def test_non_str_metadata_keys_are_refused_at_build_time() -> None:
    with pytest.raises(TypeError, match=r"int key 1.*must be str"):
        BM25Index.from_texts(["cat"], ids=["x"], metadatas=[{1: "int key", "1": "str key"}])
    with pytest.raises(TypeError, match="document 'x'"):
        VectorIndex.from_docs([Doc("x", "cat", {"nested": {None: 1}})], embedder=HashingEmbedder(8))
    with pytest.raises(TypeError, match="must be str"):
        ParentStore([Doc("p", "t", {"a": [{2: 3}]})])


def test_tuples_and_non_json_values_are_refused_at_save_naming_the_key(tmp_path: Path) -> None:
    index = BM25Index.from_texts(["cat"], ids=["x"], metadatas=[{"t": (1, 2)}])
    assert [h.id for h in index.search("cat", filter={"t": (1, 2)})] == ["x"]  # fine in memory
    bm25(tmp_path / "idx")
    with pytest.raises(TypeError, match=r"document 'x'.*key 't' holds a tuple"):
        index.save(tmp_path / "idx")
    assert BM25Index.load(tmp_path / "idx").ids == ["a", "b", "c", "d"]  # old save kept
    for value, match in [({"deep": [1, {"x": (1,)}]}, r"key 'deep'\[1\].x holds a tuple"),
                         ({"f": float("nan")}, "nan"), ({"s": {1, 2}}, "set")]:
        with pytest.raises(TypeError, match=match):
            VectorIndex.from_vectors([[1.0, 0.0]], ids=["y"], metadatas=[value]).save(tmp_path / "v")


def test_json_metadata_round_trips_exactly(tmp_path: Path) -> None:
    meta = {"int": 1, "float": 0.1, "neg0": -0.0, "big": 2**70, "none": None, "bool": True,
            "list": [1, "a", [2.5, {"k": False}]], "dict": {"a": {"b": []}}, "uni": "é ✓ 🚀"}
    index = BM25Index.from_texts(["cat"], ids=["x"], metadatas=[meta])
    index.save(tmp_path / "idx")
    back = BM25Index.load(tmp_path / "idx")
    assert dict(back.get("x").metadata) == meta
    assert [h.id for h in back.search("cat", filter={"list": [1, "a", [2.5, {"k": False}]]})] == ["x"]


# ----------------------------------- lone surrogates in text are refused


@pytest.mark.parametrize(
    "build",
    [
        lambda: BM25Index.from_texts(["cat \ud800 dog", "plain"], ids=["s", "p"]),
        lambda: BM25Index.from_texts(["cat \ud800"]),  # content ids
        lambda: BM25Index.from_texts(["cat"], ids=["id\udfff"]),
        lambda: BM25Index.from_texts(["cat"], ids=["m"], metadatas=[{"k": ["ok", "\ud800"]}]),
        lambda: BM25Index.from_texts(["cat"], ids=["m"], metadatas=[{"\ud800": 1}]),
        lambda: VectorIndex.from_texts(["a \ud800"], ids=["v"], embedder=HashingEmbedder(8)),
        lambda: ParentChildSearcher.from_texts(["Wings \ud800 lift."], ids=["p"]),
        lambda: BM25Index.from_docs([Doc("d", "x \ud800")]),
    ],
)
def test_lone_surrogates_are_refused_at_build_time(build: Callable) -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        build()


def test_error_names_the_document() -> None:
    with pytest.raises(ValueError, match=r"text of document 's'.*position 4"):
        BM25Index.from_docs([Doc("s", "cat \ud800 dog")])
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        BM25Index.from_texts(["fine", "cat \ud800"])


def test_embedding_cache_refuses_surrogates_clearly() -> None:
    cache = EmbeddingCache()
    with pytest.raises(ValueError, match=r"texts\[1\].*lone surrogate"):
        cache.embed(HashingEmbedder(8), ["ok", "bad \ud800"])
    with pytest.raises(ValueError, match="lone surrogate"):
        text_key("\udc80")
    with pytest.raises(ValueError, match="model_id.*lone surrogate"):
        cache.put_many("model\ud800", ["a"], np.ones((1, 2), np.float32))


def test_surrogate_forged_into_a_saved_file_is_refused(tmp_path: Path) -> None:
    path = bm25(tmp_path / "idx")
    # UTF-8 cannot hold a lone surrogate; the one place it can hide is a JSON escape.
    _save_buffer(files_of(path), "doc_metadata", ['{"n":"wings \\ud800 lift"}', "", "", ""])
    rehash(path)
    with pytest.raises(IndexFormatError, match="lone surrogate"):
        BM25Index.load(path)


# ---------------------------------------------------------------------- concurrency


def test_loader_retries_when_its_version_is_removed_under_it(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = bm25(tmp_path / "idx")
    newer = BM25Index.from_texts(["newer text"], ids=["n"])
    real = BM25Index._from_reader.__func__
    calls = []

    def slow_reader(cls, r, **kwargs):
        if not calls:  # two saves land while this load reads: its version is deleted
            newer.save(path)
            newer.save(path)
        calls.append(r.directory.name)
        return real(cls, r, **kwargs)

    monkeypatch.setattr(BM25Index, "_from_reader", classmethod(slow_reader))
    assert BM25Index.load(path).ids == ["n"]
    assert len(calls) == 2 and calls[0] != calls[1]


def test_a_failing_read_without_concurrent_save_is_not_retried(tmp_path: Path) -> None:
    path = bm25(tmp_path / "idx")
    calls = []

    def read(r):
        calls.append(1)
        raise IndexFormatError("broken")

    with pytest.raises(IndexFormatError, match="broken"):
        read_index(path, kind="bm25", max_version=1, read=read)
    assert calls == [1]


# ---------------------------------------------------------------------- fuzzing


def _kinds(root: Path) -> dict[str, tuple[Path, Callable[[Path], Any]]]:
    out: dict[str, tuple[Path, Callable[[Path], Any]]] = {}
    out["bm25"] = (bm25(root / "bm25", analyzer=None), lambda p: BM25Index.load(p).search("wing"))
    out["bm25-mmap"] = (out["bm25"][0], lambda p: BM25Index.load(p, mmap=True, verify=True)
                        .search("wing"))
    out["vector"] = (vector(root / "vector"),
                     lambda p: VectorIndex.load(p, HashingEmbedder(8)).search("wing"))
    out["vector-mmap"] = (out["vector"][0], lambda p: VectorIndex.load(
        p, HashingEmbedder(8), mmap=True, verify=True).search("wing"))
    cache = EmbeddingCache()
    cache.embed(HashingEmbedder(8), TEXTS)
    cache.save(root / "cache")
    out["cache"] = (root / "cache", lambda p: EmbeddingCache.load(p).get_many(
        HashingEmbedder(8).model_id, TEXTS))
    ParentStore([Doc("p1", "a parent", {"x": 1})]).save(root / "store")
    out["store"] = (root / "store", lambda p: ParentStore.load(p).get_many(["p1"]))
    out["pcs"] = (_pcs(root / "pcs"), lambda p: ParentChildSearcher.load(p).search("lift"))
    return out


def _mutations(rng: random.Random, data: bytes) -> list[tuple[str, bytes]]:
    n = len(data)
    out = [("empty", b""), ("garbage", bytes(rng.randrange(256) for _ in range(64))),
           ("append", data + b"\x00junk"), ("truncate", data[: rng.randrange(max(n, 1))])]
    for _ in range(4):
        flipped = bytearray(data)
        if n:
            flipped[rng.randrange(n)] ^= 1 << rng.randrange(8)
        out.append(("flip", bytes(flipped)))
    if data[:6] == b"\x93NUMPY":
        header_end = data.index(b"\n") + 1
        body = data[10:header_end].decode("latin1")
        for old, new in [("<i4", "|O"), ("<f4", "<f8"), ("False", "True"), ("(", "(99999999999, ")]:
            if old in body:
                forged = body.replace(old, new, 1)
                out.append((f"header {old}->{new}", data[:10] + forged.encode("latin1")
                            + data[header_end:]))
    return out


def test_fuzz_every_file_of_every_kind_gives_only_index_format_errors(tmp_path: Path) -> None:
    rng = random.Random(20260310)
    kinds = _kinds(tmp_path / "pristine")
    deadline = time.monotonic() + 20.0  # bounded even on a slow machine
    tried = refused = loaded = 0
    for kind, (pristine, use) in kinds.items():
        files = [f for f in pristine.rglob("*") if f.is_file() and f.name != ".lock"]
        for f in files:
            rel = f.relative_to(pristine)
            for label, data in _mutations(rng, f.read_bytes()):
                for forge in (False, True):
                    if time.monotonic() > deadline:
                        break
                    work = tmp_path / "work"
                    shutil.rmtree(work, ignore_errors=True)
                    shutil.copytree(pristine, work, symlinks=True)
                    (work / rel).write_bytes(data)
                    if forge:
                        try:
                            rehash(work)
                        except (ValueError, OSError, KeyError, TypeError,
                                AttributeError, RecursionError):
                            continue  # the forgery itself could not be made
                    tried += 1
                    try:
                        use(work)
                        loaded += 1
                    except IndexFormatError:
                        refused += 1
                    except Exception as exc:  # noqa: BLE001 - the point of the test
                        pytest.fail(f"{kind} {rel} {label} forged={forge}: "
                                    f"{type(exc).__name__}: {exc}")
    assert tried >= 200 and refused >= tried * 0.8, (tried, refused, loaded)


def test_forged_child_without_parent_id_is_a_format_error(tmp_path: Path) -> None:
    path = _pcs(tmp_path / "pcs")
    docs = files_of(path) / "children" / "doc_metadata.npy"
    docs.write_bytes(docs.read_bytes().replace(b'"parent_id"', b'"parent_xx"'))
    rehash(path)
    with pytest.raises(IndexFormatError, match="parent_id"):
        ParentChildSearcher.load(path)
