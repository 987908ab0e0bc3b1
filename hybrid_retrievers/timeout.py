"""Bounded waits for model calls that may never return (LLMs behind a network).

A hung LLM must neither block a query nor keep the process alive at exit. The standard
tools do one or the other: ``ThreadPoolExecutor`` workers are joined at interpreter exit,
and ``asyncio.to_thread`` runs in the loop's default executor, which ``asyncio.run``
waits for when it shuts down. So each call here runs in its own *daemon* thread, which
the interpreter does not wait for, and the caller waits on a future with a timeout
(``asyncio.wrap_future`` on the async side). A call that times out keeps running in
the background until it returns by itself; its answer is discarded.

The worker runs in a copy of the caller's ``contextvars`` context, so tracing and
callback context (LangChain, LlamaIndex) follow the call into the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
import numbers
import threading
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["DEFAULT_LLM_TIMEOUT", "LLMTimeoutError", "acall_with_timeout", "call_with_timeout",
           "check_timeout", "start_daemon_call"]

DEFAULT_LLM_TIMEOUT = 30.0
"""Default seconds to wait for an LLM answer (HyDE generations, one listwise rerank call)."""


def check_timeout(value: Any, name: str = "timeout") -> float | None:
    """Return ``value`` as a positive, finite float, or ``None`` (no limit).

    Raises:
        TypeError: for a bool or anything that is not a real number.
        ValueError: for NaN, infinity, zero, a negative value or one too large to wait on.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a positive number of seconds or None (no limit), got "
            f"{type(value).__name__}: {value!r:.80}"
        )
    seconds = float(value)
    if math.isnan(seconds):
        raise ValueError(f"{name} must be a positive number of seconds, got nan")
    if math.isinf(seconds):
        raise ValueError(
            f"{name} must be a finite number of seconds, got {seconds}; pass {name}=None "
            "to wait without a limit"
        )
    if seconds <= 0:
        raise ValueError(
            f"{name} must be > 0 seconds, got {seconds:g}; pass {name}=None to wait without "
            "a limit"
        )
    if seconds > threading.TIMEOUT_MAX:
        raise ValueError(
            f"{name} must be at most {threading.TIMEOUT_MAX:g} seconds, got {seconds:g}; "
            f"pass {name}=None to wait without a limit"
        )
    return seconds


def start_daemon_call(fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
    """Run ``fn(*args)`` in a new daemon thread; its result or exception goes to the future."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # handed to the waiter, never lost in the thread
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=run, name="hybrid-retrievers-llm", daemon=True).start()
    return future


class LLMTimeoutError(TimeoutError):
    """A model call gave no answer within its timeout (it may still finish in the background)."""


def _timeout_error(seconds: float) -> LLMTimeoutError:
    return LLMTimeoutError(f"no answer within {seconds:g} s")


def call_with_timeout(fn: Callable[..., Any], *args: Any, timeout: float | None) -> Any:
    """``fn(*args)``, waiting at most ``timeout`` seconds (``None``: in this thread, no limit).

    Raises:
        LLMTimeoutError: when no answer came in time (the call goes on in the background).
        Exception: whatever ``fn`` raised.
    """
    if timeout is None:
        return fn(*args)
    future = start_daemon_call(fn, *args)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        raise _timeout_error(timeout) from None


async def acall_with_timeout(
    make_awaitable: Callable[[], Awaitable[Any]] | None,
    fn: Callable[..., Any] | None,
    *args: Any,
    timeout: float | None,
) -> Any:
    """Await ``make_awaitable()``, or run the sync ``fn(*args)`` in a daemon thread.

    Exactly one of ``make_awaitable`` and ``fn`` is used (the awaitable when given). A
    sync call never runs in the event loop's default executor, so ``asyncio.run`` does
    not wait for a hung one at shutdown. A timed-out awaitable is cancelled and not
    waited for; one that ignores cancellation keeps running on its loop (and
    ``asyncio.run`` waits for it at shutdown: only the caller's own async code can fix
    that, e.g. by not hiding a blocking call behind ``async``).

    Raises:
        LLMTimeoutError: when no answer came within ``timeout`` seconds.
        Exception: whatever the call raised.
    """
    if make_awaitable is not None:
        awaitable: Awaitable[Any] = make_awaitable()
    else:
        assert fn is not None
        awaitable = asyncio.wrap_future(start_daemon_call(fn, *args))
    if timeout is None:
        return await awaitable
    # asyncio.wait, not wait_for: wait_for waits until the cancelled call has finished,
    # which is forever for a call that ignores cancellation (e.g. a sync LLM behind
    # LangChain's default ainvoke, running in the loop's executor).
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except BaseException:  # the caller was cancelled: do not leave the call running
        task.cancel()
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve_outcome)
        raise _timeout_error(timeout)
    return task.result()


def _retrieve_outcome(task: asyncio.Future[Any]) -> None:
    """Mark an abandoned call's outcome as seen (no "exception was never retrieved")."""
    if not task.cancelled():
        task.exception()
