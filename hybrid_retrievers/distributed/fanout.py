"""Calls to the shard actors of a sharded index: scatter, gather, retries and faults.

`ShardCalls` sends one method to every shard (searches, statistics pushes, health
checks) or one call per shard (edits), waits with a timeout, retries a call once when
its actor died and Ray restarted it, and turns what is left into the caller's rule:
`ShardUnavailableError` / `ShardTimeoutError`, or, where a search accepts partial
answers, the list of missing shards. `ShardedSearcher` holds one; it knows nothing of
BM25 or vectors.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["RESTART_WAIT", "ShardCalls", "ShardTimeoutError", "ShardUnavailableError"]


RESTART_WAIT = 60.0
"""Seconds a call waits for a dead shard actor to be restarted before it counts as down."""


class ShardUnavailableError(RuntimeError):
    """A shard actor died and could not be reached after a restart and one retry."""

    def __init__(self, message: str, shards: Sequence[int]) -> None:
        super().__init__(message)
        self.shards = tuple(shards)


class ShardTimeoutError(TimeoutError):
    """Some shards did not answer within the call's timeout."""

    def __init__(self, message: str, shards: Sequence[int]) -> None:
        super().__init__(message)
        self.shards = tuple(shards)


class ShardCalls:
    """The actors of one sharded index, called with a timeout, one retry and fault rules.

    Args:
        ray: the imported ``ray`` module.
        actors: the shard actor handles, by shard number.
        labels: how to name each shard in an error (its folder).
        timeout: seconds an edit waits for its shards (None: no limit).
    """

    def __init__(self, ray: Any, actors: list[Any], labels: Sequence[str],
                 timeout: float | None) -> None:
        self._ray = ray
        self.actors = actors
        self._labels = list(labels)
        self._timeout = timeout

    def call_all(self, method: str, *args: Any, wait: float | None,
                 partial_ok: bool = False) -> Any:
        """Call ``method`` on every shard; returns ``[(shard, answer)], missing``.

        ``wait`` is the timeout in seconds (None: none); only searches may accept
        partial answers (edits and health checks must reach every shard).
        """
        refs = [getattr(a, method).remote(*args) for a in self.actors]
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=wait)
        ready_set = set(ready)
        results: list[Any] = []
        for i, ref in enumerate(refs):
            if ref not in ready_set:
                results.append(_Timeout())
                continue
            try:
                results.append(self._ray.get(ref))
            except self._ray.exceptions.RayActorError:
                results.append(self._retry(i, method, args, wait))
            except self._ray.exceptions.RayTaskError as exc:
                raise _cause(exc) from None
        answers, missing = self._judge(results, partial_ok, wait)
        return answers, missing

    async def acall_all(self, method: str, *args: Any, wait: float | None,
                        partial_ok: bool = False) -> Any:
        """`call_all` awaiting every shard concurrently on the event loop."""

        async def one(i: int) -> Any:
            for attempt in (0, 1):
                try:
                    ref = getattr(self.actors[i], method).remote(*args)
                    return await asyncio.wait_for(asyncio.wrap_future(ref.future()), wait)
                except (asyncio.TimeoutError, TimeoutError):
                    return _Timeout()
                except self._ray.exceptions.RayActorError:
                    if attempt or not await asyncio.to_thread(self._await_restart, i, wait):
                        return _Dead()
                except self._ray.exceptions.RayTaskError as exc:
                    raise _cause(exc) from None
            return _Dead()  # pragma: no cover

        results = await asyncio.gather(*(one(i) for i in range(len(self.actors))))
        return self._judge(list(results), partial_ok, wait)

    def _await_restart(self, i: int, wait: float | None) -> bool:
        """Wait until Ray has restarted shard ``i``'s actor; False if it stays dead.

        A restarting actor refuses calls (``ActorUnavailableError``) until it has reloaded
        its saved shard, which takes a while on a loaded machine; an actor out of
        restarts fails at once (``ActorDiedError``).
        """
        deadline = time.monotonic() + (RESTART_WAIT if wait is None else wait)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                self._ray.get(self.actors[i].ping.remote(), timeout=remaining)
                return True
            except self._ray.exceptions.ActorUnavailableError:
                time.sleep(0.05)
            except (self._ray.exceptions.RayActorError, self._ray.exceptions.GetTimeoutError):
                return False

    def _retry(self, i: int, method: str, args: tuple[Any, ...], wait: float | None) -> Any:
        """One more try on a shard whose actor died, once Ray has restarted it from its save."""
        if not self._await_restart(i, wait):
            return _Dead()
        try:
            return self._ray.get(getattr(self.actors[i], method).remote(*args), timeout=wait)
        except self._ray.exceptions.GetTimeoutError:
            return _Timeout()
        except self._ray.exceptions.RayActorError:
            return _Dead()
        except self._ray.exceptions.RayTaskError as exc:
            raise _cause(exc) from None

    def call_some(self, calls: Mapping[int, tuple[Any, ...]]) -> dict[int, Any]:
        """Call one method per shard (edits): every call must succeed."""
        refs = {s: getattr(self.actors[s], c[0]).remote(*c[1:]) for s, c in calls.items()}
        out: dict[int, Any] = {}
        for s, ref in refs.items():
            try:
                out[s] = self._ray.get(ref, timeout=self._timeout)
            except self._ray.exceptions.RayActorError:
                got = self._retry(s, calls[s][0], calls[s][1:], self._timeout)
                if isinstance(got, (_Dead, _Timeout)):
                    raise self._unavailable([s]) from None
                out[s] = got
            except self._ray.exceptions.GetTimeoutError:
                raise ShardTimeoutError(
                    f"shard {self.names([s])} did not answer within {self._timeout}s",
                    [s]) from None
            except self._ray.exceptions.RayTaskError as exc:
                raise _cause(exc) from None
        return out

    def _judge(self, results: list[Any], partial_ok: bool, wait: float | None
               ) -> tuple[list[tuple[int, Any]], list[int]]:
        dead = [i for i, r in enumerate(results) if isinstance(r, _Dead)]
        slow = [i for i, r in enumerate(results) if isinstance(r, _Timeout)]
        if not partial_ok:
            if dead:
                raise self._unavailable(dead)
            if slow:
                raise ShardTimeoutError(
                    f"{len(slow)} shard(s) did not answer within {wait}s: {self.names(slow)}; "
                    "raise timeout=, or pass allow_partial=True to accept partial results",
                    slow)
        answers = [(i, r) for i, r in enumerate(results) if not isinstance(r, (_Dead, _Timeout))]
        return answers, sorted(dead + slow)

    def _unavailable(self, shards: Sequence[int]) -> ShardUnavailableError:
        return ShardUnavailableError(
            f"{len(shards)} shard(s) unavailable after a restart and one retry: "
            f"{self.names(shards)}; check the Ray cluster (ray status) and the shard folders, "
            "or pass allow_partial=True to accept partial results", shards)

    def names(self, shards: Sequence[int]) -> list[str]:
        """Shards as error messages name them: number and folder."""
        return [f"#{s} ({self._labels[s]})" for s in shards]

    def close(self) -> None:
        """Stop the shard actors (the saved shards stay on disk)."""
        for a in self.actors:
            try:
                self._ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors = []


class _Dead:
    """Marker: the shard's actor stayed dead."""


class _Timeout:
    """Marker: the shard did not answer in time."""


def _cause(exc: Any) -> BaseException:
    """The remote exception itself (ValueError, KeyError...), not Ray's wrapper."""
    original = getattr(exc, "cause", None)
    return original if isinstance(original, BaseException) else exc.as_instanceof_cause()
