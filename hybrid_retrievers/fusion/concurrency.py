"""Run a fusion's child calls at the same time, and say which child failed.

`CallRunner.run` (sync) runs the first call in the calling thread and the others in a
thread pool the runner owns (created on first use, so a searcher that is never queried
concurrently never starts a thread); every pooled call runs in a copy of the caller's
`contextvars` context, so tracing and callback context (LangChain's, LlamaIndex's
instrumentation spans) nest under the caller's. `gather_calls` is the async driver:
``asyncio.gather`` of the awaitables. Both add a note ``"raised by <label>"`` to an
exception a call raises (Python 3.11+), so a failure names its child.

Running one call inline instead of waiting idle means two children need one pool
thread, and ``max_workers=1`` runs every call one after the other in the caller's
thread (what a machine without spare cores wants; ``benchmarks/fusion_latency.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["CallRunner", "gather_calls", "labelled", "note_source", "run_calls"]

T = TypeVar("T")

Label = Callable[[int], str]
"""``label(j)`` describes call ``j`` in an error note (called only when it fails)."""


def note_source(exc: BaseException, label: str) -> None:
    """Add ``"raised by <label>"`` to ``exc``'s notes (Python 3.11+; no-op before)."""
    if hasattr(exc, "add_note"):
        exc.add_note(f"raised by {label}")


def labelled(call: Callable[[], T], label: Label, j: int) -> T:
    """``call()``, noting ``label(j)`` on the exception it raises."""
    try:
        return call()
    except Exception as exc:
        note_source(exc, label(j))
        raise


async def _labelled_async(awaitable: Awaitable[T], label: Label, j: int) -> T:
    try:
        return await awaitable
    except Exception as exc:
        note_source(exc, label(j))
        raise


async def gather_calls(awaitables: Sequence[Awaitable[T]], label: Label) -> list[T]:
    """Await every call concurrently (``asyncio.gather``); results in call order."""
    return list(await asyncio.gather(
        *(_labelled_async(a, label, j) for j, a in enumerate(awaitables))
    ))


class CallRunner:
    """Runs calls concurrently on a lazily created, reusable thread pool.

    Args:
        max_workers: calls in flight at once, at most, the calling thread included
            (default: ``size``; 1 runs them one after the other inline).
        size: the most calls one `run` gets (the number of children); the pool has
            ``min(max_workers, size) - 1`` threads.
        name: the pool threads' name prefix.

    Safe to use from many threads at once; `close` shuts the pool down (a later `run`
    starts a new one).
    """

    def __init__(self, max_workers: int | None = None, *, size: int,
                 name: str = "fusion") -> None:
        self.max_workers = size if max_workers is None else max_workers
        self._size = size
        self._threads = max(1, min(self.max_workers, size) - 1)
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __reduce__(self) -> Any:
        """A copy (``copy.deepcopy``, pickle) is a new runner with the same settings."""
        return (_new_runner, (self.max_workers, self._size, self._name))

    def run(
        self, calls: Sequence[Callable[[], T]], label: Label, *, max_workers: int | None = None
    ) -> list[T]:
        """Results of ``calls`` in order: the first runs here, the rest in the pool.

        ``max_workers`` caps this run further (e.g. LangChain's ``max_concurrency``).
        """
        limit = self.max_workers if max_workers is None else min(self.max_workers, max_workers)
        parallel = min(limit, len(calls))
        if parallel <= 1:
            return [labelled(call, label, j) for j, call in enumerate(calls)]
        if parallel - 1 < min(self._threads, len(calls) - 1):
            # A per-call cap below the pool's size: a one-off pool keeps the cap.
            with ThreadPoolExecutor(max_workers=parallel - 1,
                                    thread_name_prefix=self._name) as pool:
                return _run_on(pool, calls, label)
        return _run_on(self._executor(), calls, label)

    def _executor(self) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=self._threads,
                                                    thread_name_prefix=self._name)
                pool = self._pool
        return pool

    @property
    def started(self) -> bool:
        """Whether the pool exists (it is created by the first concurrent run)."""
        return self._pool is not None

    def close(self) -> None:
        """Shut the pool down, waiting for running calls."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def __del__(self) -> None:  # pragma: no cover - depends on the garbage collector
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)


def _new_runner(max_workers: int, size: int, name: str) -> CallRunner:
    return CallRunner(max_workers, size=size, name=name)


def _run_on(pool: ThreadPoolExecutor, calls: Sequence[Callable[[], T]], label: Label) -> list[T]:
    """The first call inline, the others on ``pool`` in copies of this context."""
    futures: list[Future[T]] = [
        pool.submit(contextvars.copy_context().run, labelled, call, label, j)
        for j, call in enumerate(calls[1:], 1)
    ]
    try:
        first = labelled(calls[0], label, 0)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    return [first, *(f.result() for f in futures)]


def run_calls(calls: Sequence[Callable[[], T]], label: Label,
              max_workers: int | None = None) -> list[T]:
    """`CallRunner.run` on a one-off pool (for callers that keep no runner)."""
    runner = CallRunner(max_workers, size=max(1, len(calls)))
    try:
        return runner.run(calls, label)
    finally:
        runner.close()
