"""Framework-free pieces of sharding: routing by id, the saved layout, top-k merging.

Nothing here imports Ray, so shard planning, the manifest and the merge rule are
unit-testable alone and the same rules hold whether shards live in one process or on
a cluster.

Layout of a sharded index directory::

    <root>/manifest.json          kind "sharded-index": index kind, shard folders,
                                  documents, the next sequence number, routing rule
    <root>/stats/                 BM25 only: the corpus-wide `CollectionStats`
    <root>/shard-00000/           kind "shard": the shard's index under index/ and
    <root>/shard-00001/ ...       each document's sequence number (seq.npy)

Every document has a global **sequence number**: its position in the order documents
were added. A single index breaks score ties by position, so the merge breaks them by
sequence number and a sharded search returns exactly the single index's order.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..persistence import (
    FORMAT_NAME,
    MANIFEST,
    IndexFormatError,
    IndexReader,
    IndexWriter,
    atomic_index_dir,
    read_index,
)
from ..types import Doc, Hit
from ..validation import check_number

__all__ = [
    "ROUTING",
    "ShardedManifest",
    "ShardHit",
    "shard_of",
    "plan_shards",
    "merge_top_k",
    "shard_folder",
    "fair_cpus",
    "spread_strategies",
    "save_shard",
    "load_shard",
]

FORMAT_VERSION = 1
SHARD_FORMAT_VERSION = 1
ROUTING = "blake2b-64-mod"
"""Routing rule: shard = (first 8 bytes of blake2b(id), little-endian) mod n_shards."""
KINDS = ("bm25", "vector", "sparse")


def shard_of(doc_id: str, n_shards: int) -> int:
    """The shard that holds ``doc_id`` (stable across processes and machines).

    Example:
        >>> shard_of("doc-1", 4) == shard_of("doc-1", 4)
        True
    """
    digest = hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_shards


def plan_shards(ids: Iterable[str], n_shards: int) -> list[list[int]]:
    """Positions of ``ids`` per shard, each list ascending (input order kept)."""
    check_n_shards(n_shards)
    plan: list[list[int]] = [[] for _ in range(n_shards)]
    for pos, doc_id in enumerate(ids):
        plan[shard_of(doc_id, n_shards)].append(pos)
    return plan


def check_n_shards(n_shards: Any) -> int:
    return check_number(n_shards, "n_shards", low=1, integer=True)


def fair_cpus(ray: Any, n_actors: int, cap: float) -> float:
    """CPUs to reserve per actor so ``n_actors`` spread over the nodes all fit: <= ``cap``.

    Reserving more than a node has free would leave actors waiting for resources
    forever; a smaller share only changes scheduling, not correctness.
    """
    if not ray.is_initialized():
        ray.init()
    cpus = [float(n.get("Resources", {}).get("CPU", 0.0)) for n in ray.nodes() if n.get("Alive")]
    cpus = [c for c in cpus if c > 0] or [1.0]
    per_node = -(-max(n_actors, 1) // len(cpus))
    return max(0.01, min(cap, min(cpus) / per_node * 0.8))


def spread_strategies(ray: Any, n_actors: int) -> list[Any]:
    """One scheduling strategy per actor, placing actor ``i`` on alive node ``i mod nodes``.

    Soft node affinity: shards are spread over the nodes deterministically (Ray's
    ``"SPREAD"`` is best-effort, and actors reserving no CPU may all land on one node),
    and an actor whose node is gone is still restarted elsewhere.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if not ray.is_initialized():
        ray.init()
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
    if not nodes:
        return ["SPREAD"] * n_actors
    return [NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=True)
            for i in range(n_actors)]


def shard_folder(i: int) -> str:
    """The folder name of shard ``i`` inside a sharded index directory."""
    return f"shard-{i:05d}"


# ---------------------------------------------------------------------- merging


@dataclass(frozen=True, slots=True)
class ShardHit:
    """One shard's answer row, as plain data (Ray-serialisable, no mapping proxies)."""

    id: str
    text: str
    metadata: dict[str, Any]
    score: float
    seq: int


def merge_top_k(lists: Sequence[tuple[int, Sequence[ShardHit]]], k: int) -> list[Hit]:
    """The exact global top ``k`` of several shards' top-k lists, as `Hit` objects.

    Each shard returns its own best ``k`` (or all its matches), so the global best
    ``k`` are among them. Order: score descending, then sequence number ascending
    (a single index's tie rule). Each hit's explanation records its shard.

    Example:
        >>> a = [ShardHit("x", "", {}, 2.0, 5), ShardHit("y", "", {}, 1.0, 0)]
        >>> b = [ShardHit("z", "", {}, 2.0, 3)]
        >>> [h.id for h in merge_top_k([(0, a), (1, b)], 2)]
        ['z', 'x']
    """
    rows = ((-h.score, h.seq, shard, h) for shard, hits in lists for h in hits)
    best = heapq.nsmallest(k, rows, key=lambda r: (r[0], r[1]))
    return [
        Hit(Doc(h.id, h.text, h.metadata), h.score, rank, {"shard": shard})
        for rank, (_, _, shard, h) in enumerate(best, 1)
    ]


# ---------------------------------------------------------------------- manifest


@dataclass
class ShardedManifest:
    """What a sharded index directory holds (the root ``manifest.json``)."""

    kind: str
    shards: list[str]
    n_docs: int
    next_seq: int
    routing: str = ROUTING
    params: dict[str, Any] | None = None

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    def write(self, root: str | os.PathLike[str]) -> None:
        """Write (or replace atomically) the root manifest."""
        from .. import __version__

        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        data = {
            "format": FORMAT_NAME, "kind": "sharded-index", "format_version": FORMAT_VERSION,
            "library_version": __version__, "index_kind": self.kind, "shards": self.shards,
            "n_docs": self.n_docs, "next_seq": self.next_seq, "routing": self.routing,
            "params": self.params or {}, "files": {},
        }
        fd, tmp = tempfile.mkstemp(prefix=".manifest.", dir=root)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False)
        os.replace(tmp, root / MANIFEST)

    @classmethod
    def read(cls, root: str | os.PathLike[str]) -> ShardedManifest:
        """Read and validate the root manifest of a sharded index."""
        r = IndexReader(root, kind="sharded-index", max_version=FORMAT_VERSION)
        kind = r.field("index_kind", str)
        shards = r.field("shards", list)
        routing = r.field("routing", str)
        if kind not in KINDS:
            raise IndexFormatError(f"{root}: unknown index_kind {kind!r}, expected one of {KINDS}")
        if not shards or not all(isinstance(s, str) and "/" not in s and s for s in shards):
            raise IndexFormatError(f"{root}: 'shards' must list shard folder names")
        if routing != ROUTING:
            raise IndexFormatError(f"{root}: unknown routing rule {routing!r}")
        return cls(kind, list(shards), r.field("n_docs", int), r.field("next_seq", int),
                   routing, r.manifest.get("params") or {})


# ---------------------------------------------------------------------- one shard on disk


def save_shard(path: str | os.PathLike[str], index: Any, seqs: Mapping[str, int]) -> None:
    """Save a shard atomically: its index (BM25Index, VectorIndex or SparseIndex) and
    sequence numbers."""
    with atomic_index_dir(path) as tmp:
        index.save(tmp / "index")
        w = IndexWriter(tmp)
        w.array("seq", np.fromiter((seqs[i] for i in index.ids), np.int64, len(index)))
        w.manifest("shard", SHARD_FORMAT_VERSION,
                   {"index_kind": _kind_of(index), "n_docs": len(index)})


def load_shard(path: str | os.PathLike[str], *, mmap: bool = False) -> tuple[Any, dict[str, int]]:
    """Load a shard saved by `save_shard`: ``(index, {id: seq})``."""
    from ..bm25 import BM25Index
    from ..sparse import SparseIndex
    from ..vector import VectorIndex

    def read(r: IndexReader) -> tuple[Any, dict[str, int]]:
        kind = r.field("index_kind", str)
        n_docs = r.field("n_docs", int)
        if kind == "bm25":
            index: Any = BM25Index.load(r.directory / "index", mmap=mmap)
        elif kind == "vector":
            index = VectorIndex.load(r.directory / "index", mmap=mmap)
        elif kind == "sparse":
            index = SparseIndex.load(r.directory / "index", mmap=mmap)
        else:
            raise IndexFormatError(f"{path}: unknown shard index_kind {kind!r}")
        seq = r.array("seq", dtype_kind="i", ndim=1, length=n_docs)
        if len(index) != n_docs:
            raise IndexFormatError(f"{path}: the index holds {len(index)} documents, manifest {n_docs}")
        return index, dict(zip(index.ids, seq.tolist()))

    return read_index(path, kind="shard", max_version=SHARD_FORMAT_VERSION, read=read)


def _kind_of(index: Any) -> str:
    from ..bm25 import BM25Index
    from ..sparse import SparseIndex

    if isinstance(index, SparseIndex):
        return "sparse"
    return "bm25" if isinstance(index, BM25Index) else "vector"
