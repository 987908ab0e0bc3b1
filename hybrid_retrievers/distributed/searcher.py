"""ShardedSearcher: a `Searcher` over BM25 or vector shards held by Ray actors.

Each search is scattered to every shard actor (each returns its own top ``k``,
filters applied inside the shard before top-k) and gathered into the exact global
top ``k`` (`merge_top_k`: score, then the global sequence number, which is a single
index's tie rule). Because BM25 shards score with the corpus-wide `CollectionStats`,
the merged list equals what one index over the whole corpus returns.

Edits are routed by id (`shard_of`). For BM25 an edit changes N, avgdl and df for
every shard: the edited shards report the change of their local statistics
(`StatsDelta`), the searcher adds it to the global statistics, saves them and pushes
the delta to every shard, so all shards keep scoring exactly. Edits are serialised
by a lock; a search running while an edit is applied may see the old or the new
documents (each shard is consistent on its own).

Faults: shard actors run with Ray's ``max_restarts``; a restarted actor reloads its
saved shard (edits are saved before they are acknowledged) and the latest global
statistics. A call that fails because its actor died is retried once. A shard that
is still unavailable raises `ShardUnavailableError` naming it, or, with
``allow_partial=True``, the other shards' hits come back as `PartialHits` (flagged
``partial``, each hit's explanation names the missing shards) with a warning: never
silently fewer results. A shard slower than ``timeout`` raises `ShardTimeoutError`
(or counts as missing under ``allow_partial``).
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..documents import check_docs, make_docs
from ..optional import require
from ..validation import check_k, check_query
from ..collection_stats import CollectionStats, StatsDelta
from ..vector import EmbeddingCache, embed_texts, embedder_identity
from ..types import Doc, Hit, MetadataFilter
from .layout import ShardedManifest, ShardHit, merge_top_k, shard_of, spread_strategies
from .shard import ShardServer

__all__ = [
    "ShardedSearcher",
    "ShardUnavailableError",
    "ShardTimeoutError",
    "PartialHits",
    "PartialResultsWarning",
]


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


class PartialResultsWarning(UserWarning):
    """A search returned hits from only some shards (``allow_partial=True``)."""


class PartialHits(list):  # type: ignore[type-arg]
    """Hits merged from the shards that answered; ``missing_shards`` did not.

    ``partial`` is True when any shard is missing. A complete answer is a plain list.
    """

    def __init__(self, hits: Iterable[Hit], missing_shards: Sequence[int]) -> None:
        super().__init__(hits)
        self.missing_shards = tuple(missing_shards)
        self.partial = bool(self.missing_shards)


class ShardedSearcher:
    """Search a sharded BM25 or vector index held by Ray actors, as one `Searcher`.

    Example (needs a Ray cluster; see the README's "Scaling out")::

        build_bm25_shards(docs, "idx", n_shards=4)
        with ShardedSearcher("idx") as sharded:
            hits = sharded.search("wing lift", k=10)        # == BM25Index over docs
            sharded.add(["a new text"], ids=["n1"])          # global stats stay exact

    Args:
        path: a directory written by `build_bm25_shards` / `build_vector_shards`.
        embedder: vector indexes: embeds queries (once per query, on the caller's side;
            shards receive the vector) and added texts.
        cache: vector indexes: an `EmbeddingCache` consulted before embedding additions.
        max_restarts: how often Ray restarts a dead shard actor (from its saved shard).
        timeout: seconds a call waits for the shards (None: no limit); per call too.
        allow_partial: return `PartialHits` instead of raising when shards are missing.
        num_cpus: CPUs reserved by each shard actor. Default 0.01: a serving shard waits
            for queries most of the time, and a larger reservation would only keep builds
            and encoders (which reserve CPUs) from being scheduled next to it (a zero
            reservation lets Ray ignore the node placement).
        persist: shard actors save their shard after every edit (needed for restarts
            to keep edits).
        mmap: shard actors memory-map their arrays.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Any = None,
        cache: EmbeddingCache | None = None,
        max_restarts: int = 1,
        timeout: float | None = 60.0,
        allow_partial: bool = False,
        num_cpus: float = 0.01,
        persist: bool = True,
        mmap: bool = False,
    ) -> None:
        self._ray = require("ray", extra="ray", feature="ShardedSearcher")
        self._root = Path(path)
        self._manifest = ShardedManifest.read(self._root)
        self._kind = self._manifest.kind
        if self._kind == "vector" and embedder is not None and not callable(
            getattr(embedder, "embed_query", None)
        ):
            raise TypeError(f"embedder must have embed_query(text), got {type(embedder).__name__}")
        self._embedder = embedder
        self._cache = cache
        self._timeout = _check_timeout(timeout)
        self._allow_partial = bool(allow_partial)
        self._lock = threading.RLock()
        self._stats = (CollectionStats.load(self._root / "stats")
                       if self._kind == "bm25" else None)
        Actor = self._ray.remote(ShardServer)
        stats_path = str(self._root / "stats") if self._kind == "bm25" else None
        places = spread_strategies(self._ray, len(self._manifest.shards))
        self._actors = [
            Actor.options(max_restarts=max_restarts, max_task_retries=0, num_cpus=num_cpus,
                          scheduling_strategy=place).remote(
                str(self._root / name), stats_path, persist=persist, mmap=mmap)
            for name, place in zip(self._manifest.shards, places)
        ]
        # Fail now if a shard cannot load; starting actors may take a while on a busy cluster.
        self._call_all("ping", wait=None if self._timeout is None else max(self._timeout, 120.0))

    # ------------------------------------------------------------------ properties

    @property
    def kind(self) -> str:
        """``"bm25"`` or ``"vector"``."""
        return self._kind

    @property
    def n_shards(self) -> int:
        return len(self._actors)

    @property
    def actors(self) -> list[Any]:
        """The shard actor handles, by shard number."""
        return list(self._actors)

    @property
    def collection_stats(self) -> CollectionStats | None:
        """The corpus-wide BM25 statistics (None for a vector index)."""
        return self._stats

    @property
    def path(self) -> Path:
        return self._root

    def __len__(self) -> int:
        return self._manifest.n_docs

    def __repr__(self) -> str:
        return (f"ShardedSearcher(kind={self._kind!r}, shards={self.n_shards}, "
                f"docs={len(self)}, path={str(self._root)!r})")

    def shard_of(self, doc_id: str) -> int:
        """The shard that holds (or would hold) ``doc_id``."""
        return shard_of(doc_id, self.n_shards)

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        timeout: float | None = None,
        allow_partial: bool | None = None,
    ) -> list[Hit]:
        """The exact global top ``k`` for ``query`` across every shard.

        Args:
            query: free text (embedded once here for a vector index).
            k: hits at most.
            filter: metadata equality mapping or predicate over `Doc`, applied inside
                each shard before its top-k.
            timeout: seconds to wait for the shards (None: the searcher's default).
            allow_partial: override the searcher's ``allow_partial``.

        Raises:
            ShardUnavailableError: a shard is down (unless partial results are allowed).
            ShardTimeoutError: a shard did not answer in time (same).
        """
        method, arg, k = self._query_args(query, k)
        answers, missing = self._call_all(method, arg, k, filter, **self._policy(timeout,
                                                                                 allow_partial))
        return self._merge(answers, k, missing)

    def search_vector(
        self, vector: Any, k: int = 10, *, filter: MetadataFilter | None = None,
        timeout: float | None = None, allow_partial: bool | None = None,
    ) -> list[Hit]:
        """`search` with a query vector (vector indexes)."""
        if self._kind != "vector":
            raise TypeError("search_vector needs a vector index; this one is BM25")
        k = check_k(k)
        answers, missing = self._call_all("search_vector", np.asarray(vector, np.float32), k,
                                          filter, **self._policy(timeout, allow_partial))
        return self._merge(answers, k, missing)

    async def asearch(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        timeout: float | None = None,
        allow_partial: bool | None = None,
    ) -> list[Hit]:
        """`search` awaiting every shard concurrently on the event loop."""
        if self._kind == "vector":
            method, arg, k = await asyncio.to_thread(self._query_args, query, k)
        else:
            method, arg, k = self._query_args(query, k)
        policy = self._policy(timeout, allow_partial)
        wait, partial_ok = policy["wait"], policy["partial_ok"]

        async def one(i: int) -> Any:
            for attempt in (0, 1):
                try:
                    ref = getattr(self._actors[i], method).remote(arg, k, filter)
                    return await asyncio.wait_for(asyncio.wrap_future(ref.future()), wait)
                except (asyncio.TimeoutError, TimeoutError):
                    return _Timeout()
                except self._ray.exceptions.RayActorError:
                    if attempt or not await asyncio.to_thread(self._await_restart, i, wait):
                        return _Dead()
                except self._ray.exceptions.RayTaskError as exc:
                    raise _cause(exc) from None
            return _Dead()  # pragma: no cover

        results = await asyncio.gather(*(one(i) for i in range(self.n_shards)))
        answers = self._judge(list(results), partial_ok, wait)
        return self._merge(answers[0], k, answers[1])

    def _policy(self, timeout: float | None, allow_partial: bool | None) -> dict[str, Any]:
        return {"wait": self._timeout if timeout is None else _check_timeout(timeout),
                "partial_ok": self._allow_partial if allow_partial is None else bool(allow_partial)}

    def _query_args(self, query: str, k: int) -> tuple[str, Any, int]:
        check_query(query)
        k = check_k(k)
        if self._kind == "bm25":
            return "search", query, k
        if self._embedder is None:
            raise TypeError("this vector index has no embedder for text queries; pass "
                            "embedder= to ShardedSearcher, or use search_vector()")
        return "search_vector", np.asarray(self._embedder.embed_query(query), np.float32), k

    def _merge(self, answers: list[tuple[int, list[ShardHit]]], k: int,
               missing: Sequence[int]) -> list[Hit]:
        hits = merge_top_k(answers, k)
        if not missing:
            return hits
        warnings.warn(
            f"search answered from {self.n_shards - len(missing)} of {self.n_shards} shards; "
            f"missing: {self._names(missing)}", PartialResultsWarning, stacklevel=3)
        marked = [Hit(h.doc, h.score, h.rank, {**h.explanation, "partial": True,
                                                "missing_shards": list(missing)})
                  for h in hits]
        return PartialHits(marked, missing)

    # ------------------------------------------------------------------ editing

    def add(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        vectors: Any = None,
    ) -> list[str]:
        """Add texts (routed by id) and return their ids; see `add_docs`."""
        return self.add_docs(make_docs(texts, ids, metadatas), vectors=vectors)

    def add_docs(self, docs: Iterable[Doc], *, vectors: Any = None) -> list[str]:
        """Add documents; an id already indexed is an error and nothing is added.

        BM25: the global statistics are updated on every shard before this returns.
        Vector: texts are embedded here (through ``cache`` when given) unless
        ``vectors`` (one row per document) are passed.
        """
        docs = check_docs(docs)
        if not docs:
            return []
        with self._lock:
            matrix = self._vectors_for(docs, vectors)
            routed = self._route([d.id for d in docs])
            taken = self._call_some({s: ("present", [docs[p].id for p in pos])
                                     for s, pos in routed.items()})
            clash = [i for ids in taken.values() for i in ids]
            if clash:
                raise ValueError(f"{len(clash)} id(s) already in the index: {clash[:5]}; "
                                 "delete them first to replace those documents")
            seq0 = self._manifest.next_seq
            calls = {}
            for s, pos in routed.items():
                rows = [(docs[p].id, docs[p].text, dict(docs[p].metadata), seq0 + p) for p in pos]
                calls[s] = ("add", rows, None if matrix is None else matrix[pos])
            deltas = self._call_some(calls)
            self._manifest.next_seq = seq0 + len(docs)
            self._manifest.n_docs += len(docs)
            self._after_edit(deltas)
        return [d.id for d in docs]

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; if any id is unknown nothing is removed."""
        ids = [ids] if isinstance(ids, str) else list(ids)
        if not ids:
            return
        with self._lock:
            routed = self._route(ids)
            present = self._call_some({s: ("present", [ids[p] for p in pos])
                                       for s, pos in routed.items()})
            found = {i for got in present.values() for i in got}
            unknown = [i for i in ids if i not in found]
            if unknown:
                raise KeyError(f"{len(unknown)} id(s) not in the index: {unknown[:5]}")
            unique = {s: sorted({ids[p] for p in pos}) for s, pos in routed.items()}
            deltas = self._call_some({s: ("delete", got) for s, got in unique.items()})
            self._manifest.n_docs -= len(found)
            self._after_edit(deltas)

    def _vectors_for(self, docs: list[Doc], vectors: Any) -> Any:
        if self._kind == "bm25":
            if vectors is not None:
                raise TypeError("vectors= applies to vector indexes only")
            return None
        if vectors is not None:
            matrix = np.asarray(vectors, dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[0] != len(docs):
                raise ValueError(f"vectors must have shape ({len(docs)}, dimension), got "
                                 f"{matrix.shape}")
            return matrix
        if self._embedder is None:
            raise TypeError("adding texts to a vector index needs embedder= (or pass vectors=)")
        model_id = embedder_identity(self._embedder) if self._cache is not None else None
        return embed_texts(self._embedder, [d.text for d in docs], cache=self._cache,
                           model_id=model_id)

    def _route(self, ids: Sequence[str]) -> dict[int, list[int]]:
        routed: dict[int, list[int]] = {}
        for p, doc_id in enumerate(ids):
            routed.setdefault(shard_of(doc_id, self.n_shards), []).append(p)
        return routed

    def _after_edit(self, deltas: Mapping[int, StatsDelta | None]) -> None:
        if self._stats is not None:
            total = StatsDelta(0, 0, {})
            for d in deltas.values():
                if d is not None:
                    total.n_docs += d.n_docs
                    total.total_length += d.total_length
                    for t, c in d.df.items():
                        total.df[t] = total.df.get(t, 0) + c
            self._stats = self._stats.apply(total)
            self._stats.save(self._root / "stats")  # restarted shards read these
            self._call_all("apply_stats", total, wait=self._timeout)
        self._manifest.write(self._root)

    # ------------------------------------------------------------------ calls and faults

    def _call_all(self, method: str, *args: Any, wait: float | None,
                  partial_ok: bool = False) -> Any:
        """Call ``method`` on every shard; returns ``[(shard, answer)], missing``.

        ``wait`` is the timeout in seconds (None: none); only searches may accept
        partial answers (edits and health checks must reach every shard).
        """
        refs = [getattr(a, method).remote(*args) for a in self._actors]
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
                self._ray.get(self._actors[i].ping.remote(), timeout=remaining)
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
            return self._ray.get(getattr(self._actors[i], method).remote(*args), timeout=wait)
        except self._ray.exceptions.GetTimeoutError:
            return _Timeout()
        except self._ray.exceptions.RayActorError:
            return _Dead()
        except self._ray.exceptions.RayTaskError as exc:
            raise _cause(exc) from None

    def _call_some(self, calls: Mapping[int, tuple[Any, ...]]) -> dict[int, Any]:
        """Call one method per shard (edits): every call must succeed."""
        refs = {s: getattr(self._actors[s], c[0]).remote(*c[1:]) for s, c in calls.items()}
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
                    f"shard {self._names([s])} did not answer within {self._timeout}s",
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
                    f"{len(slow)} shard(s) did not answer within {wait}s: {self._names(slow)}; "
                    "raise timeout=, or pass allow_partial=True to accept partial results",
                    slow)
        answers = [(i, r) for i, r in enumerate(results) if not isinstance(r, (_Dead, _Timeout))]
        return answers, sorted(dead + slow)

    def _unavailable(self, shards: Sequence[int]) -> ShardUnavailableError:
        return ShardUnavailableError(
            f"{len(shards)} shard(s) unavailable after a restart and one retry: "
            f"{self._names(shards)}; check the Ray cluster (ray status) and the shard folders, "
            "or pass allow_partial=True to accept partial results", shards)

    def _names(self, shards: Sequence[int]) -> list[str]:
        return [f"#{s} ({self._root / self._manifest.shards[s]})" for s in shards]

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop the shard actors (the saved shards stay on disk)."""
        for a in self._actors:
            try:
                self._ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._actors = []

    def __enter__(self) -> ShardedSearcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Dead:
    """Marker: the shard's actor stayed dead."""


class _Timeout:
    """Marker: the shard did not answer in time."""


def _cause(exc: Any) -> BaseException:
    """The remote exception itself (ValueError, KeyError...), not Ray's wrapper."""
    original = getattr(exc, "cause", None)
    return original if isinstance(original, BaseException) else exc.as_instanceof_cause()


def _check_timeout(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    return float(timeout)
