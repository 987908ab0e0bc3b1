"""ShardServer: one shard's index and its operations, the body of a Ray shard actor.

Framework-free: `ShardedSearcher` runs it inside a Ray actor (``ray.remote`` is applied
at run time), and tests can drive it directly. It loads its shard from disk, so a
restarted actor (Ray's ``max_restarts``) comes back from the last save; with
``persist=True`` (the default) every edit is saved before it returns, so a restart
loses nothing that was acknowledged. Answers are plain data (`ShardHit`), never
objects holding mapping proxies or locks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..bm25 import BM25Index
from ..bm25.collection_stats import CollectionStats, StatsDelta
from ..sparse import SparseIndex
from ..types import Doc, MetadataFilter
from .layout import ShardHit, load_shard, save_shard

__all__ = ["ShardServer"]


class ShardServer:
    """Serves one saved shard: search, membership, add and delete, statistics.

    Args:
        path: the shard folder (written by `save_shard`).
        stats_path: BM25 only: the folder of the corpus-wide `CollectionStats`
            (read at start, so a restarted shard scores with the latest statistics).
        persist: save the shard after every edit.
        mmap: memory-map the shard's arrays on load.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        stats_path: str | os.PathLike[str] | None = None,
        *,
        persist: bool = True,
        mmap: bool = False,
    ) -> None:
        self.path = Path(path)
        self.persist = persist
        self.index, self.seqs = load_shard(self.path, mmap=mmap)
        self.is_bm25 = isinstance(self.index, BM25Index)
        self.is_sparse = isinstance(self.index, SparseIndex)
        if self.is_bm25 and stats_path is not None:
            self.index.set_collection_stats(CollectionStats.load(stats_path))

    # ------------------------------------------------------------------ queries

    def ping(self) -> int:
        """The process id serving this shard (for health checks and tests)."""
        return os.getpid()

    def where(self) -> tuple[int, str | None]:
        """``(process id, Ray node id)`` of this shard (node id None outside Ray)."""
        try:
            import ray

            node: str | None = ray.get_runtime_context().get_node_id()
        except Exception:  # noqa: BLE001 - not inside a Ray worker
            node = None
        return os.getpid(), node

    def size(self) -> int:
        return len(self.index)

    def search(
        self, query: str, k: int, filter: MetadataFilter | None = None,
        field_weights: Mapping[str, float] | None = None,
    ) -> list[ShardHit]:
        """This shard's top ``k`` for a text query (BM25 shards; ``field_weights`` on
        fielded ones, as for `BM25Index.search`)."""
        return self._rows(self.index.search(query, k, filter=filter,
                                            field_weights=field_weights))

    def search_vector(
        self, vector: Any, k: int, filter: MetadataFilter | None = None
    ) -> list[ShardHit]:
        """This shard's top ``k`` for a query vector (vector shards; sparse shards take a
        ``{token: weight}`` mapping)."""
        return self._rows(self.index.search_vector(vector, k, filter=filter))

    def _rows(self, hits: Sequence[Any]) -> list[ShardHit]:
        seqs = self.seqs
        return [ShardHit(h.doc.id, h.doc.text, dict(h.doc.metadata), h.score, seqs[h.doc.id])
                for h in hits]

    def present(self, ids: Sequence[str]) -> list[str]:
        """Which of ``ids`` this shard holds."""
        return [i for i in ids if i in self.seqs]

    def local_stats(self) -> CollectionStats:
        """This shard's own BM25 statistics."""
        return CollectionStats.of_index(self.index)

    # ------------------------------------------------------------------ edits

    def add(
        self, rows: Sequence[tuple[str, str, Mapping[str, Any], int]],
        vectors: Any = None,
    ) -> StatsDelta | None:
        """Add ``(id, text, metadata, seq)`` rows (and their vectors for a vector or sparse
        shard: a matrix, or one ``{token: weight}`` mapping per row).

        Returns the change to the BM25 statistics (None for a vector shard).
        """
        docs = [Doc(i, t, m) for i, t, m, _ in rows]
        before = self.local_stats() if self.is_bm25 else None
        if self.is_bm25:
            self.index.add_docs(docs)
        elif self.is_sparse:
            self.index.add_vectors(list(vectors), [d.id for d in docs],
                                   [dict(d.metadata) for d in docs], texts=[d.text for d in docs])
        else:
            self.index.add_vectors(np.asarray(vectors, dtype=np.float32), docs=docs)
        for i, _, _, seq in rows:
            self.seqs[i] = int(seq)
        return self._after_edit(before)

    def delete(self, ids: Sequence[str]) -> StatsDelta | None:
        """Delete ``ids`` (all must be here); returns the BM25 statistics change."""
        before = self.local_stats() if self.is_bm25 else None
        self.index.delete(list(ids))
        for i in ids:
            self.seqs.pop(i, None)
        return self._after_edit(before)

    def _after_edit(self, before: CollectionStats | None) -> StatsDelta | None:
        if self.persist:
            save_shard(self.path, self.index, self.seqs)
        if before is None:
            return None
        return CollectionStats.diff(before, self.local_stats())

    def apply_stats(self, delta: StatsDelta | None = None,
                    stats: CollectionStats | None = None) -> None:
        """Update the corpus-wide statistics: by ``delta``, or replace them by ``stats``."""
        if not self.is_bm25:
            return
        if stats is None:
            current = self.index.collection_stats
            if current is None or delta is None:
                raise ValueError("apply_stats needs stats, or a delta and current statistics")
            stats = current.apply(delta)
        self.index.set_collection_stats(stats)
