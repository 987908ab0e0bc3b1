"""Subprocess driver for the crash and concurrency tests of test_persistence_atomicity.py.

Run as ``python crash_driver.py MODE ROOT KIND``; prints one JSON object. It forks
savers and kills them with SIGKILL (a real process death: no ``finally``, no atexit),
then loads what is on disk. Forking happens here, in a fresh single-threaded process,
never in the pytest process.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np

from hybrid_retrievers import BM25Index, ParentChildSearcher, VectorIndex
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.vector import EmbeddingCache

N_DOCS = 1500


def build(kind: str, gen: int):
    texts = [f"generation{gen} word{i % 97} term{i % 13} doc{i}" for i in range(N_DOCS)]
    ids = [f"g{gen}-{i}" for i in range(N_DOCS)]
    metas = [{"gen": gen, "i": i} for i in range(N_DOCS)]
    if kind == "bm25":
        return BM25Index.from_texts(texts, ids=ids, metadatas=metas)
    if kind == "vector":
        return VectorIndex.from_texts(texts, ids=ids, metadatas=metas, embedder=HashingEmbedder(32))
    if kind == "cache":
        cache = EmbeddingCache()
        cache.embed(HashingEmbedder(16), texts[: 200 + gen])
        return cache
    if kind == "parent":
        parents = [" ".join(f"Sentence {j} of parent {i} in generation {gen}." for j in range(4))
                   for i in range(40)]
        return ParentChildSearcher.from_texts(parents, ids=[f"g{gen}-p{i}" for i in range(40)],
                                              chunk_size=60, chunk_overlap=0)
    raise ValueError(kind)


def generation(kind: str, path: Path) -> int:
    """Load ``path`` and return the one generation it holds (raises if mixed or broken)."""
    if kind == "bm25":
        index = BM25Index.load(path)
        ids = index.ids
    elif kind == "vector":
        index = VectorIndex.load(path, HashingEmbedder(32))
        ids = index.ids
    elif kind == "cache":
        cache = EmbeddingCache.load(path)
        return len(cache) - 200
    else:
        searcher = ParentChildSearcher.load(path)
        hits = searcher.search("sentence parent generation", k=3)
        gens = {h.id.split("-")[0] for h in hits}
        if len(gens) != 1:
            raise AssertionError(f"mixed generations {gens}")
        return int(gens.pop()[1:])
    gens = {i.split("-")[0] for i in ids}
    if len(ids) != N_DOCS or len(gens) != 1:
        raise AssertionError(f"incomplete or mixed index: {len(ids)} ids, generations {gens}")
    gen = int(gens.pop()[1:])
    if kind == "bm25":
        top = index.search(f"generation{gen}", k=1)
        assert top and top[0].doc.metadata["gen"] == gen
    return gen


def leftovers(path: Path) -> list[str]:
    return sorted(os.listdir(path))


# ---------------------------------------------------------------------- crash points

_PATCHED = ("fsync", "replace", "rename", "mkdir", "unlink", "rmdir")


def _patch_os(limit: int, counter_file: Path | None = None, after: bool = False) -> None:
    """SIGKILL this process at the ``limit``-th os-level step of a save."""
    count = [0]
    for name in _PATCHED:
        real = getattr(os, name)

        def wrapped(*args, _real=real, **kwargs):
            count[0] += 1
            if count[0] == limit and not after:
                os.kill(os.getpid(), signal.SIGKILL)
            result = _real(*args, **kwargs)
            if count[0] == limit and after:
                os.kill(os.getpid(), signal.SIGKILL)
            if counter_file is not None:
                counter_file.write_text(str(count[0]))
            return result

        setattr(os, name, wrapped)


def _in_child(fn) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - report and die
            print(f"child error: {type(exc).__name__}: {exc}", file=sys.stderr)
            os._exit(3)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def crash_points(root: Path, kind: str) -> dict:
    """Kill a save before (and after) each of its os-level steps; load after each."""
    old, new = build(kind, 0), build(kind, 1)
    path = root / "idx"
    old.save(path)
    counter = root / "count"

    def dry() -> None:
        _patch_os(10**9, counter_file=counter)
        new.save(path)

    assert _in_child(dry) == 0
    steps = int(counter.read_text())
    outcomes = []
    for after in (False, True):
        for k in range(1, steps + 1):
            old.save(path)

            def run(k=k, after=after) -> None:
                _patch_os(k, after=after)
                new.save(path)

            code = _in_child(run)
            try:
                outcomes.append({"k": k, "after": after, "code": code,
                                 "gen": generation(kind, path)})
            except Exception as exc:  # noqa: BLE001 - reported to the test
                outcomes.append({"k": k, "after": after, "code": code,
                                 "error": f"{type(exc).__name__}: {exc}"})
    old.save(path)
    return {"steps": steps, "outcomes": outcomes, "left": leftovers(path)}


def first_rename(root: Path, kind: str) -> dict:
    """Die right after the first rename (or replace) of a save: the old index must stay
    loadable, as the crash can come before the new one is complete."""
    build(kind, 0).save(root / "idx")
    new = build(kind, 1)

    def run() -> None:
        for name in ("rename", "replace"):
            real = getattr(os, name)

            def wrapped(a, b, *args, _real=real, **kwargs):
                _real(a, b, *args, **kwargs)
                os.kill(os.getpid(), signal.SIGKILL)

            setattr(os, name, wrapped)
        new.save(root / "idx")

    code = _in_child(run)
    return {"code": code, "gen": generation(kind, root / "idx"), "left": leftovers(root / "idx")}


def _fork_saver(indexes: list, path: Path, first: int) -> int:
    """Fork a process that saves the indexes in turn, forever; return its pid."""
    pid = os.fork()
    if pid == 0:
        i = first
        while True:
            indexes[i % len(indexes)].save(path)
            i += 1
    return pid


def random_kills(root: Path, kind: str, rounds: int, seed: int) -> dict:
    """A saver alternating two generations, SIGKILLed at random moments."""
    rng = random.Random(seed)
    indexes = [build(kind, 0), build(kind, 1)]
    path = root / "idx"
    indexes[0].save(path)
    t0 = time.perf_counter()
    indexes[1].save(path)
    save_time = time.perf_counter() - t0
    gens, errors = [], []
    for _ in range(rounds):
        pid = _fork_saver(indexes, path, 0)
        time.sleep(rng.uniform(0, 3 * save_time))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        try:
            gens.append(generation(kind, path))
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {exc}")
    left_after_kills = leftovers(path)
    indexes[0].save(path)
    return {"gens": gens, "errors": errors, "save_time": save_time,
            "left_after_kills": left_after_kills, "left": leftovers(path)}


MIN_RACING_LOADS = 12


def loader_race(root: Path, kind: str, seconds: float, mmap: bool) -> dict:
    """Load continuously while another process re-saves the same path.

    Runs for ``seconds`` and at least until ``MIN_RACING_LOADS`` loads were tried (a
    loaded CI machine is slow, and the test is about errors, not speed), at most 60 s.
    """
    indexes = [build(kind, 0), build(kind, 1)]
    path = root / "idx"
    indexes[0].save(path)
    pid = _fork_saver(indexes, path, 1)
    ok, errors, gens = 0, [], set()
    start = time.perf_counter()
    deadline, cap = start + seconds, start + 60.0
    while (now := time.perf_counter()) < deadline or (
        ok + len(errors) < MIN_RACING_LOADS and now < cap
    ):
        try:
            if mmap and kind == "bm25":
                BM25Index.load(path, mmap=True)
            gens.add(generation(kind, path))
            ok += 1
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {exc}")
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return {"ok": ok, "errors": errors[:20], "n_errors": len(errors), "gens": sorted(gens)}


def concurrent_savers(root: Path, kind: str, savers: int, saves: int) -> dict:
    """Several processes saving to one path at once."""
    indexes = [build(kind, g) for g in range(savers)]
    path = root / "idx"
    pids = []
    for g in range(savers):
        pid = os.fork()
        if pid == 0:
            try:
                for _ in range(saves):
                    indexes[g].save(path)
            except BaseException as exc:  # noqa: BLE001
                (root / f"error-{g}").write_text(f"{type(exc).__name__}: {exc}")
                os._exit(3)
            os._exit(0)
        pids.append(pid)
    codes = [os.WEXITSTATUS(os.waitpid(pid, 0)[1]) for pid in pids]
    errors = [p.read_text() for p in sorted(root.glob("error-*"))]
    return {"codes": codes, "errors": errors, "gen": generation(kind, path),
            "left": leftovers(path)}


def main() -> None:
    mode, root, kind = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    np.random.seed(0)
    if mode == "crash_points":
        out = crash_points(root, kind)
    elif mode == "first_rename":
        out = first_rename(root, kind)
    elif mode == "random_kills":
        out = random_kills(root, kind, rounds=int(sys.argv[4]), seed=int(sys.argv[5]))
    elif mode == "loader_race":
        out = loader_race(root, kind, seconds=float(sys.argv[4]), mmap=sys.argv[5] == "1")
    elif mode == "concurrent_savers":
        out = concurrent_savers(root, kind, savers=int(sys.argv[4]), saves=int(sys.argv[5]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
