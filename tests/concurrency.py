"""A bounded many-readers / one-writer stress harness, a corpus whose edits are checkable, and
`Meeting`, the rendezvous that proves calls run at the same time without timing them.

Readers search while one writer edits; every hit is checked against what a consistent
snapshot could have returned. ``sys.setswitchinterval`` is lowered for the run so
threads switch every few bytecodes and a race shows within seconds.

The corpus: document ``d{n}`` has the text ``u{n} w{n % 40} w{7n % 40} v{version}``
and the metadata ``{"g": n % 2, "n": n}``. The writer appends ids in increasing order
and deletes the oldest ones, so the ids alive at any moment form a window
``[lo, hi)``; it raises ``hi`` *before* adding and ``lo`` *after* deleting, so a
reader that reads ``lo`` when its search starts and ``hi`` when it ends has a window
that holds every id alive at any moment in between ("live at either snapshot").
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

N_WORDS = 40
MEETING_TIMEOUT = 10.0
"""Seconds a `Meeting` call waits for the others: only a broken test ever waits this long."""
_checked = itertools.count()  # hits seen by check_hits (thread-safe in CPython)


def text_of(n: int, version: int = 0) -> str:
    return f"u{n} w{n % N_WORDS} w{n * 7 % N_WORDS} v{version}"


def meta_of(n: int) -> dict[str, int]:
    return {"g": n % 2, "n": n}


def number(doc_id: str) -> int:
    return int(doc_id[1:])


@dataclass
class Window:
    """The writer's announced window of live ids (see the module docstring)."""

    lo: int
    hi: int


@dataclass
class StressReport:
    queries: int = 0
    hits: int = 0
    exceptions: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    writes: int = 0
    writer_errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.queries} queries, {self.hits} hits checked, {self.writes} edits, "
            f"{len(self.exceptions)} exceptions, {len(self.wrong)} wrong hits, "
            f"{len(self.writer_errors)} writer errors"
        )


def run_stress(
    read: Callable[[random.Random], Iterable[str]],
    write: Callable[[random.Random], None],
    *,
    seconds: float = 2.0,
    readers: int = 8,
    seed: int = 0,
) -> StressReport:
    """Run ``readers`` threads calling ``read`` and one calling ``write`` for ``seconds``.

    ``read(rng)`` runs one query and returns a description of every wrong hit (an
    empty iterable when all hits are right); ``write(rng)`` makes one edit.
    """
    report = StressReport()
    stop = threading.Event()
    lock = threading.Lock()

    def reader(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        while not stop.is_set():
            try:
                wrong = list(read(rng))
            except Exception as exc:  # noqa: BLE001 - counted and reported
                with lock:
                    report.exceptions.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                report.queries += 1
                report.wrong.extend(wrong)

    def writer() -> None:
        rng = random.Random(seed * 1000 + 999)
        while not stop.is_set():
            try:
                write(rng)
            except Exception as exc:  # noqa: BLE001
                report.writer_errors.append(f"{type(exc).__name__}: {exc}")
                return
            report.writes += 1

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(readers)]
    threads.append(threading.Thread(target=writer, daemon=True))
    checked_before = next(_checked)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(timeout=60)
    finally:
        sys.setswitchinterval(old)
    assert not any(t.is_alive() for t in threads), "a stress thread did not stop"
    report.hits = next(_checked) - checked_before - 1
    return report


class SlidingCorpusWriter:
    """Edits indexes in step: append a few new ids, upsert one, delete the oldest.

    ``indexes`` get each edit one after another (like a `FusionSearcher`'s children).
    ``upsert`` is used when every index has it, with a bumped version in the text.
    """

    def __init__(self, indexes: list[Any], start: int, *, batch: int = 3) -> None:
        self.indexes = indexes
        self.window = Window(0, start)
        self.batch = batch
        self.versions: dict[int, int] = {}

    def __call__(self, rng: random.Random) -> None:
        w = self.window
        new = list(range(w.hi, w.hi + self.batch))
        w.hi += self.batch  # announce before adding
        for index in self.indexes:
            index.add([text_of(n) for n in new], ids=[f"d{n}" for n in new],
                      metadatas=[meta_of(n) for n in new])
        if all(callable(getattr(i, "upsert", None)) for i in self.indexes):
            n = rng.randrange(w.lo + self.batch, w.hi)
            version = self.versions[n] = self.versions.get(n, 0) + 1
            for index in self.indexes:
                index.upsert([text_of(n, version)], ids=[f"d{n}"], metadatas=[meta_of(n)])
        gone = [f"d{n}" for n in range(w.lo, w.lo + self.batch)]
        for index in self.indexes:
            index.delete(gone)
        w.lo += self.batch  # retract after deleting


def check_hits(
    hits: list[Any],
    lo: int,
    hi: int,
    *,
    term: str | None = None,
    group: int | None = None,
) -> list[str]:
    """Describe every hit that no consistent snapshot in ``[lo, hi)`` could return."""
    wrong = []
    ids = [h.doc.id for h in hits]
    if len(set(ids)) != len(ids):
        wrong.append(f"duplicate ids in {ids}")
    if [h.rank for h in hits] != list(range(1, len(hits) + 1)):
        wrong.append(f"ranks {[h.rank for h in hits]}")
    if any(a.score < b.score for a, b in zip(hits, hits[1:])):
        wrong.append(f"scores not sorted: {[h.score for h in hits]}")
    for h in hits:
        next(_checked)
        n = number(h.doc.id)
        words = h.doc.text.split()
        if not lo <= n < hi:
            wrong.append(f"{h.doc.id} not live in [{lo}, {hi})")
        if words[0] != f"u{n}" or dict(h.doc.metadata) != meta_of(n):
            wrong.append(f"{h.doc.id} carries another document: {h.doc.text!r} {h.doc.metadata}")
        if term is not None and term not in words:
            wrong.append(f"{h.doc.id} ({h.doc.text!r}) lacks the query term {term!r}")
        if group is not None and h.doc.metadata.get("g") != group:
            wrong.append(f"{h.doc.id} fails the filter g={group}: {h.doc.metadata}")
    return wrong


@contextmanager
def editing_in_background(write: Callable[[random.Random], None], seed: int = 0) -> Iterator[None]:
    """Run ``write`` in a loop on another thread for the duration of the ``with`` block."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                write(rng)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive(), "the writer did not stop"
    if errors:
        raise errors[0]


def bm25_corpus(size: int) -> Any:
    """A `BM25Index` over documents ``d0 .. d{size-1}`` of the sliding corpus."""
    from hybrid_retrievers import BM25Index

    return BM25Index.from_texts([text_of(n) for n in range(size)],
                                ids=[f"d{n}" for n in range(size)],
                                metadatas=[meta_of(n) for n in range(size)])


class Meeting:
    """A rendezvous only calls running at the same time can pass.

    Each of ``parties`` calls of `wait` (threads) or `await_` (one event loop) blocks until
    all ``parties`` have arrived, then all go on; a call still waiting after ``timeout``
    seconds raises ``AssertionError``. So a test whose calls run one after another fails
    (after ``timeout``), and one whose calls run concurrently passes however loaded the
    machine is: no wall-clock bound on how long the calls took.
    The thread side is a `threading.Barrier` (reusable: the next ``parties`` calls meet
    again); the async side meets once.

        >>> meeting = Meeting(2, timeout=0.01)
        >>> meeting.wait()
        Traceback (most recent call last):
        AssertionError: a call waited 0.01 s for the other 1: the calls did not run at the same time
    """

    def __init__(self, parties: int, *, timeout: float = MEETING_TIMEOUT) -> None:
        self.parties = parties
        self.timeout = timeout
        self._barrier = threading.Barrier(parties)
        self._arrived = 0
        self._all_here: asyncio.Event | None = None  # created in the event loop

    def _failure(self) -> AssertionError:
        return AssertionError(f"a call waited {self.timeout:g} s for the other "
                              f"{self.parties - 1}: the calls did not run at the same time")

    def wait(self) -> None:
        """Block until ``parties`` threads wait here (``AssertionError`` after ``timeout``)."""
        try:
            self._barrier.wait(self.timeout)
        except threading.BrokenBarrierError:
            raise self._failure() from None

    async def await_(self) -> None:
        """Wait until ``parties`` coroutines await here (``AssertionError`` after ``timeout``)."""
        if self._all_here is None:
            self._all_here = asyncio.Event()
        self._arrived += 1
        if self._arrived >= self.parties:
            self._all_here.set()
        try:
            await asyncio.wait_for(self._all_here.wait(), self.timeout)
        except asyncio.TimeoutError:
            raise self._failure() from None
