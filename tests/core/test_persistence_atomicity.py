"""Saves are atomic and durable; loaders and savers may race.

The crash and race scenarios run in a fresh subprocess (``crash_driver.py``) that forks
savers and kills them with SIGKILL, so nothing here forks the pytest process. Each
scenario is bounded (a fixed number of kills, or a fixed time) and seeded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid_retrievers import BM25Index, IndexFormatError, ParentChildSearcher, VectorIndex
from hybrid_retrievers.persistence import LOCK, MANIFEST, current_files

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")

DRIVER = Path(__file__).with_name("crash_driver.py")


def drive(tmp_path: Path, *args: object, timeout: float = 120) -> dict:
    env = dict(os.environ)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, str(DRIVER), str(args[0]), str(tmp_path), *map(str, args[1:])],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _only_live_entries(left: list[str]) -> None:
    versions = [n for n in left if n.startswith("v")]
    assert set(left) - set(versions) == {MANIFEST, LOCK}, left
    assert len(versions) <= 2, left  # the current version and the previous one


@pytest.mark.parametrize("kind", ["bm25", "vector", "cache", "parent"])
def test_sigkill_at_every_step_of_a_save_leaves_old_or_new(tmp_path: Path, kind: str) -> None:
    out = drive(tmp_path, "crash_points", kind)
    outcomes = out["outcomes"]
    assert len(outcomes) == 2 * out["steps"] >= 10
    assert not [o for o in outcomes if "error" in o], outcomes
    assert all(o["code"] == -9 for o in outcomes)  # every run really died mid-save
    gens = [o["gen"] for o in outcomes]
    assert set(gens) == {0, 1}  # the kills spanned the switch from old to new
    # Once the new version is visible, no later crash point loses it again.
    before = [o["gen"] for o in outcomes if not o["after"]]
    assert before == sorted(before)
    _only_live_entries(out["left"])  # the next save removed every crash leftover


@pytest.mark.parametrize("kind", ["bm25", "vector", "cache"])
def test_crash_right_after_the_first_rename_keeps_an_index(tmp_path: Path, kind: str) -> None:
    out = drive(tmp_path, "first_rename", kind)
    assert out["code"] == -9
    assert out["gen"] == 1  # the first rename is the pointer switch: the new index is live


@pytest.mark.parametrize("kind", ["bm25", "vector"])
def test_random_sigkill_during_saves(tmp_path: Path, kind: str) -> None:
    out = drive(tmp_path, "random_kills", kind, 12, 1234)
    assert out["errors"] == []
    assert len(out["gens"]) == 12 and set(out["gens"]) <= {0, 1}
    # A kill may leave one unfinished version (a save removes earlier leftovers when it
    # starts): never more than current + previous + one unfinished.
    assert len([n for n in out["left_after_kills"] if n.startswith("v")]) <= 3
    _only_live_entries(out["left"])


@pytest.mark.parametrize(("kind", "mmap"), [("bm25", False), ("bm25", True), ("vector", False)])
def test_loader_racing_a_saver_never_fails(tmp_path: Path, kind: str, mmap: bool) -> None:
    out = drive(tmp_path, "loader_race", kind, 1.2, int(mmap))
    assert out["n_errors"] == 0, out["errors"]
    assert out["ok"] >= 10


@pytest.mark.parametrize("kind", ["bm25", "parent"])
def test_concurrent_savers_serialise_and_leave_no_copies(tmp_path: Path, kind: str) -> None:
    out = drive(tmp_path, "concurrent_savers", kind, 3, 6)
    assert out["codes"] == [0, 0, 0] and out["errors"] == []
    assert out["gen"] in (0, 1, 2)
    _only_live_entries(out["left"])


# ---------------------------------------------------------------------- layout


def test_save_layout_pointer_and_versions(tmp_path: Path) -> None:
    index = BM25Index.from_texts(["a cat", "a dog"], ids=["c", "d"])
    path = tmp_path / "idx"
    for _ in range(4):
        index.save(path)
    pointer = json.loads((path / MANIFEST).read_text())
    assert pointer["format_version"] == 2 and pointer["kind"] == "bm25"
    assert current_files(path) == path / pointer["current"]
    _only_live_entries(sorted(os.listdir(path)))
    assert len([n for n in os.listdir(path) if n.startswith("v")]) == 2


def test_format_1_directories_still_load_and_are_converted_in_place(tmp_path: Path) -> None:
    index = BM25Index.from_texts(["a cat", "a dog"], ids=["c", "d"], metadatas=[{"n": 1}, None])
    index.save(tmp_path / "new")
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    version = current_files(tmp_path / "new")
    for f in version.iterdir():  # format 1 kept these files in the index path itself
        (legacy / f.name).write_bytes(f.read_bytes())
    (legacy / "notes.txt").write_text("mine")
    assert BM25Index.load(legacy).docs == index.docs
    index.add(["a bird"], ids=["b"])
    index.save(legacy)
    assert BM25Index.load(legacy).ids == ["c", "d", "b"]
    names = set(os.listdir(legacy))
    assert not {n for n in names if n.endswith((".npy", ".jsonl"))}  # old data files gone
    assert "notes.txt" in names  # files we did not write are never removed


def test_failed_first_save_leaves_nothing(tmp_path: Path) -> None:
    index = BM25Index.from_texts(["x"], ids=["x"], metadatas=[{"bad": object()}])
    with pytest.raises(TypeError, match="JSON"):
        index.save(tmp_path / "idx")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_first_save_is_reported_and_then_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    path.mkdir()
    (path / LOCK).touch()
    (path / "v000001-0123abcd").mkdir()  # a first save that died before its pointer
    with pytest.raises(IndexFormatError, match="did not finish"):
        BM25Index.load(path)
    BM25Index.from_texts(["x"], ids=["x"]).save(path)
    assert BM25Index.load(path).ids == ["x"]
    assert "v000001-0123abcd" not in os.listdir(path)


def test_damaged_pointer_is_refused_on_load_and_repaired_by_the_next_save(tmp_path: Path) -> None:
    path = tmp_path / "idx"
    BM25Index.from_texts(["x"], ids=["x"]).save(path)
    (path / MANIFEST).write_bytes(b"\x00garbage")
    with pytest.raises(IndexFormatError, match="not valid"):
        BM25Index.load(path)
    BM25Index.from_texts(["y"], ids=["y"]).save(path)
    assert BM25Index.load(path).ids == ["y"]
    _only_live_entries(sorted(os.listdir(path)))


def test_save_refuses_foreign_paths(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("precious")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "notes.txt").write_text("precious")
    index = BM25Index.from_texts(["x"], ids=["x"])
    for name in ("file", "dir"):
        with pytest.raises(FileExistsError, match="not a hybrid-retrievers index"):
            index.save(tmp_path / name)
    assert (tmp_path / "file").read_text() == "precious"
    assert os.listdir(tmp_path / "dir") == ["notes.txt"]


# ---------------------------------------------------------------------- symlinks


def test_saving_through_a_symlink_saves_into_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real"
    BM25Index.from_texts(["old"], ids=["old"]).save(target)
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    BM25Index.from_texts(["new"], ids=["new"]).save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)  # the link is kept
    assert BM25Index.load(target).ids == ["new"]  # and its target holds the new save
    assert BM25Index.load(link).ids == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]  # no stray copies


def test_symlinks_inside_an_index_are_refused(tmp_path: Path) -> None:
    index = BM25Index.from_texts(["a cat", "a dog"], ids=["c", "d"])
    path = tmp_path / "idx"
    index.save(path)
    outside = tmp_path / "outside.npy"
    version = current_files(path)
    (version / "doc_lengths.npy").rename(outside)
    (version / "doc_lengths.npy").symlink_to(outside)
    with pytest.raises(IndexFormatError, match="symbolic link"):
        BM25Index.load(path)
    # The version directory itself may not be a link either.
    index.save(path)
    version = current_files(path)
    moved = tmp_path / "moved"
    version.rename(moved)
    version.symlink_to(moved, target_is_directory=True)
    with pytest.raises(IndexFormatError, match="symbolic link"):
        BM25Index.load(path)


def test_parent_child_children_symlinked_is_refused(tmp_path: Path) -> None:
    s = ParentChildSearcher.from_texts(["Wings make lift. Flaps add lift."], ids=["p1"],
                                       chunk_size=20, chunk_overlap=0)
    s.save(tmp_path / "pcs")
    version = current_files(tmp_path / "pcs")
    (version / "children").rename(tmp_path / "elsewhere")
    (version / "children").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(IndexFormatError, match="symbolic link"):
        ParentChildSearcher.load(tmp_path / "pcs")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_directory_or_dev_zero_in_place_of_a_file(tmp_path: Path) -> None:
    index = VectorIndex.from_vectors([[1.0, 0.0], [0.0, 1.0]], ids=["a", "b"])
    for kind, make in [
        ("FIFO", lambda p: os.mkfifo(p)),
        ("directory", lambda p: p.mkdir()),
        ("symbolic link", lambda p: p.symlink_to("/dev/zero")),
    ]:
        path = tmp_path / kind.replace(" ", "-")
        index.save(path)
        target = current_files(path) / "vectors.npy"
        target.unlink()
        make(target)
        with pytest.raises(IndexFormatError, match=kind):  # and it does not hang on the FIFO
            VectorIndex.load(path)
