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
(or counts as missing under ``allow_partial``). Those call rules live in
`hybrid_retrievers.distributed.fanout` (`ShardCalls`); this module plans the calls and
merges their answers.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..documents import check_docs, make_docs
from ..optional import require
from ..timeout import check_timeout
from ..validation import check_k, check_query
from ..bm25.collection_stats import CollectionStats, StatsDelta
from ..vector import EmbeddingCache, embed_texts, embedder_identity
from ..types import Doc, Hit, MetadataFilter
from .fanout import ShardCalls, ShardTimeoutError, ShardUnavailableError
from .layout import ShardedManifest, ShardHit, merge_top_k, shard_of, spread_strategies
from .shard import ShardServer

__all__ = [
    "ShardedSearcher",
    "ShardUnavailableError",
    "ShardTimeoutError",
    "PartialHits",
    "PartialResultsWarning",
]


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

    Example (needs a Ray cluster; see docs/scale.md)::

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
        if self._kind != "bm25" and embedder is not None and not callable(
            getattr(embedder, "embed_query", None)
        ):
            raise TypeError(f"embedder must have embed_query(text), got {type(embedder).__name__}")
        self._embedder = embedder
        self._cache = cache
        self._timeout = check_timeout(timeout)
        self._allow_partial = bool(allow_partial)
        self._lock = threading.RLock()
        self._stats = (CollectionStats.load(self._root / "stats")
                       if self._kind == "bm25" else None)
        Actor = self._ray.remote(ShardServer)
        stats_path = str(self._root / "stats") if self._kind == "bm25" else None
        places = spread_strategies(self._ray, len(self._manifest.shards))
        actors = [
            Actor.options(max_restarts=max_restarts, max_task_retries=0, num_cpus=num_cpus,
                          scheduling_strategy=place).remote(
                str(self._root / name), stats_path, persist=persist, mmap=mmap)
            for name, place in zip(self._manifest.shards, places)
        ]
        self._calls = ShardCalls(self._ray, actors, [str(self._root / name) for name in
                                                     self._manifest.shards], self._timeout)
        # Fail now if a shard cannot load; starting actors may take a while on a busy cluster.
        self._calls.call_all("ping",
                             wait=None if self._timeout is None else max(self._timeout, 120.0))

    # ------------------------------------------------------------------ properties

    @property
    def kind(self) -> str:
        """``"bm25"`` or ``"vector"``."""
        return self._kind

    @property
    def n_shards(self) -> int:
        return len(self._calls.actors)

    @property
    def actors(self) -> list[Any]:
        """The shard actor handles, by shard number."""
        return list(self._calls.actors)

    @property
    def collection_stats(self) -> CollectionStats | None:
        """The corpus-wide BM25 statistics (None for a vector index)."""
        return self._stats

    @property
    def path(self) -> Path:
        """The sharded index's folder."""
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
        field_weights: Mapping[str, float] | None = None,
    ) -> list[Hit]:
        """The exact global top ``k`` for ``query`` across every shard.

        Args:
            query: free text (embedded once here for a vector index).
            k: hits at most.
            filter: metadata equality mapping or predicate over `Doc`, applied inside
                each shard before its top-k.
            field_weights: BM25 shards built with ``fields``: this query's field
                weights (as for `BM25Index.search`), sent to every shard.
            timeout: seconds to wait for the shards (None: the searcher's default).
            allow_partial: override the searcher's ``allow_partial``.

        Raises:
            ShardUnavailableError: a shard is down (unless partial results are allowed).
            ShardTimeoutError: a shard did not answer in time (same).
        """
        method, arg, k = self._query_args(query, k)
        answers, missing = self._calls.call_all(method, arg, k, filter,
                                                *self._field_args(field_weights),
                                                **self._policy(timeout, allow_partial))
        return self._merge(answers, k, missing)

    def search_vector(
        self, vector: Any, k: int = 10, *, filter: MetadataFilter | None = None,
        timeout: float | None = None, allow_partial: bool | None = None,
    ) -> list[Hit]:
        """`search` with a query vector (vector indexes; a ``{token: weight}`` mapping for
        sparse ones)."""
        if self._kind == "bm25":
            raise TypeError("search_vector needs a vector or sparse index; this one is BM25")
        k = check_k(k)
        arg = dict(vector) if self._kind == "sparse" else np.asarray(vector, np.float32)
        answers, missing = self._calls.call_all("search_vector", arg,
                                                k, filter, **self._policy(timeout, allow_partial))
        return self._merge(answers, k, missing)

    async def asearch(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        timeout: float | None = None,
        allow_partial: bool | None = None,
        field_weights: Mapping[str, float] | None = None,
    ) -> list[Hit]:
        """`search` awaiting every shard concurrently on the event loop."""
        extra = self._field_args(field_weights)
        if self._kind != "bm25":
            method, arg, k = await asyncio.to_thread(self._query_args, query, k)
        else:
            method, arg, k = self._query_args(query, k)
        answers, missing = await self._calls.acall_all(
            method, arg, k, filter, *extra, **self._policy(timeout, allow_partial))
        return self._merge(answers, k, missing)

    def _field_args(self, field_weights: Mapping[str, float] | None) -> tuple[Any, ...]:
        """The shards' extra search argument: BM25F weights (BM25 shards only)."""
        if field_weights is None:
            return ()
        if self._kind != "bm25":
            raise TypeError(f"field_weights needs BM25 shards built with fields; this index "
                            f"is {self._kind}")
        if not isinstance(field_weights, Mapping):
            raise TypeError(f"field_weights must be a mapping of field name to weight, such "
                            f"as {{'title': 2.0}}, got {type(field_weights).__name__}")
        return (dict(field_weights),)

    def _policy(self, timeout: float | None, allow_partial: bool | None) -> dict[str, Any]:
        return {"wait": self._timeout if timeout is None else check_timeout(timeout),
                "partial_ok": self._allow_partial if allow_partial is None else bool(allow_partial)}

    def _query_args(self, query: str, k: int) -> tuple[str, Any, int]:
        check_query(query)
        k = check_k(k)
        if self._kind == "bm25":
            return "search", query, k
        if self._embedder is None:
            raise TypeError(f"this {self._kind} index has no embedder for text queries; pass "
                            "embedder= to ShardedSearcher, or use search_vector()")
        vector = self._embedder.embed_query(query)
        if self._kind == "sparse":  # sparse scores need no corpus statistics: sent as is
            return "search_vector", dict(vector), k
        return "search_vector", np.asarray(vector, np.float32), k

    def _merge(self, answers: list[tuple[int, list[ShardHit]]], k: int,
               missing: Sequence[int]) -> list[Hit]:
        hits = merge_top_k(answers, k)
        if not missing:
            return hits
        warnings.warn(
            f"search answered from {self.n_shards - len(missing)} of {self.n_shards} shards; "
            f"missing: {self._calls.names(missing)}", PartialResultsWarning, stacklevel=3)
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
            taken = self._calls.call_some({s: ("present", [docs[p].id for p in pos])
                                           for s, pos in routed.items()})
            clash = [i for ids in taken.values() for i in ids]
            if clash:
                raise ValueError(f"{len(clash)} id(s) already in the index: {clash[:5]}; "
                                 "delete them first to replace those documents")
            seq0 = self._manifest.next_seq
            calls = {}
            for s, pos in routed.items():
                rows = [(docs[p].id, docs[p].text, dict(docs[p].metadata), seq0 + p) for p in pos]
                calls[s] = ("add", rows, None if matrix is None else
                            [matrix[p] for p in pos] if isinstance(matrix, list) else matrix[pos])
            deltas = self._calls.call_some(calls)
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
            present = self._calls.call_some({s: ("present", [ids[p] for p in pos])
                                             for s, pos in routed.items()})
            found = {i for got in present.values() for i in got}
            unknown = [i for i in ids if i not in found]
            if unknown:
                raise KeyError(f"{len(unknown)} id(s) not in the index: {unknown[:5]}")
            unique = {s: sorted({ids[p] for p in pos}) for s, pos in routed.items()}
            deltas = self._calls.call_some({s: ("delete", got) for s, got in unique.items()})
            self._manifest.n_docs -= len(found)
            self._after_edit(deltas)

    def _vectors_for(self, docs: list[Doc], vectors: Any) -> Any:
        if self._kind == "bm25":
            if vectors is not None:
                raise TypeError("vectors= applies to vector and sparse indexes only")
            return None
        if self._kind == "sparse":
            if vectors is None:
                if self._embedder is None:
                    raise TypeError("adding texts to a sparse index needs embedder= (or pass "
                                    "vectors=)")
                vectors = self._embedder.embed_documents([d.text for d in docs])
            vectors = [dict(v) for v in vectors]  # plain dicts: checked by the shard
            if len(vectors) != len(docs):
                raise ValueError(f"got {len(vectors)} vectors for {len(docs)} documents")
            return vectors
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
            total = StatsDelta.total([d for d in deltas.values() if d is not None],
                                     self._stats.field_lengths)
            self._stats = self._stats.apply(total)
            self._stats.save(self._root / "stats")  # restarted shards read these
            self._calls.call_all("apply_stats", total, wait=self._timeout)
        self._manifest.write(self._root)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop the shard actors (the saved shards stay on disk)."""
        self._calls.close()

    def __enter__(self) -> ShardedSearcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
