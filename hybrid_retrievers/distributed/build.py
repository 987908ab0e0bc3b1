"""Build sharded indexes on a Ray cluster: BM25 shards and dense encoding with Ray Data.

* `build_bm25_shards` streams the corpus once, gives every document its global
  sequence number, routes it to its shard by id (`shard_of`) and hands it to that
  shard's builder actor; the builders tokenise and index in parallel, save their shard
  and report their local `CollectionStats`, which a reduce step sums into the
  corpus-wide statistics saved beside the shards. A shard loaded with them scores
  every document exactly as one index over the whole corpus.
* `encode_corpus` encodes texts with Ray Data ``map_batches`` over an actor pool (one
  model per actor, loaded once; ``batch_size``, ``concurrency``, ``num_gpus``
  passed through). An `EmbeddingCache` keeps its identity rule (model id + text
  hash): the actors receive the cached vectors and call the model only for texts not
  seen before, and new vectors are added to the cache, so a re-run encodes nothing.
* `build_vector_shards` encodes (or takes precomputed vectors) and saves vector shards.
* `build_sparse_shards` saves learned sparse shards (`SparseIndex`): each shard's builder
  actor encodes its own documents with its own model (in parallel), or the driver splits
  precomputed ``{token: weight}`` vectors. A sparse score is a dot product with no
  collection statistics (no idf, no average length), so every shard already scores each
  document exactly as one index would, and the merge by score is exact by construction.

Output: a directory readable by `ShardedSearcher` on any node that sees the path
(a shared file system on a real cluster). Ray is imported only when these run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..optional import require
from ..bm25.collection_stats import CollectionStats
from ..bm25.fields import check_fields, check_method
from ..bm25.params import BM25Params, params_from
from ..vector import EmbeddingCache, embed_texts, embedder_identity, text_key
from ..text import Analyzer
from ..types import Doc
from .corpus import META_JSON, in_corpus_order, is_ray_dataset, iter_doc_batches, row_to_doc
from .layout import (
    ShardedManifest,
    check_n_shards,
    fair_cpus,
    plan_shards,
    save_shard,
    shard_folder,
    shard_of,
    spread_strategies,
)

__all__ = ["build_bm25_shards", "build_sparse_shards", "build_vector_shards", "encode_corpus",
           "EncodedCorpus"]

_LIGHT_CPUS = 0.1
"""CPUs reserved by the small row-conversion tasks of an encoding pipeline."""
_MAX_IN_FLIGHT = 4
"""Chunks per builder sent but not yet acknowledged (bounds the driver's memory)."""


def _ray() -> Any:
    return require("ray", extra="ray", feature="distributed index building")


# ---------------------------------------------------------------------- BM25


class _ShardBuilder:
    """Collects one shard's documents (`extend`); `finish` indexes and saves them."""

    def __init__(self) -> None:
        self.docs: list[Doc] = []
        self.seqs: dict[str, int] = {}

    def extend(self, rows: list[tuple[str, str, dict[str, Any], int]]) -> int:
        for doc_id, text, meta, seq in rows:
            self.docs.append(Doc(doc_id, text, meta))
            self.seqs[doc_id] = seq
        return len(self.docs)


class _BM25ShardBuilder(_ShardBuilder):
    """One BM25 shard's builder (a Ray actor body)."""

    def __init__(self, analyzer_config: dict[str, Any], params: dict[str, Any]) -> None:
        super().__init__()
        self.analyzer = Analyzer.from_config(analyzer_config)
        self.params = params

    def finish(self, path: str) -> CollectionStats:
        from ..bm25 import BM25Index

        if self.docs:
            index = BM25Index.from_docs(self.docs, analyzer=self.analyzer, **self.params)
        else:  # a tiny corpus can leave a shard empty; it still exists and takes adds
            index = BM25Index(analyzer=self.analyzer, **self.params)
        if len(self.seqs) != len(self.docs):
            raise ValueError(f"duplicate document ids in shard {path}")
        save_shard(path, index, self.seqs)
        return CollectionStats.of_index(index)


def build_bm25_shards(
    corpus: Any,
    path: str | os.PathLike[str],
    *,
    n_shards: int,
    analyzer: Analyzer | None = None,
    params: BM25Params | None = None,
    method: str | None = None,
    k1: float | None = None,
    b: float | None = None,
    delta: float | None = None,
    fields: Mapping[str, float] | None = None,
    batch_size: int = 2000,
    text_column: str = "text",
    id_column: str = "id",
    num_cpus: float | None = None,
) -> ShardedManifest:
    """Build ``n_shards`` BM25 shards in parallel, with corpus-wide statistics.

    Args:
        corpus: a ``ray.data.Dataset``, a ``.parquet`` / ``.jsonl`` path, or an
            iterable of `Doc`, str or mapping rows (see `iter_doc_batches`).
        path: the output directory (created; an existing sharded index is replaced).
        n_shards: number of shards, each built by its own actor (the parallelism).
        analyzer, params (or method, k1, b, delta): as for `BM25Index`.
        fields: BM25F field weights, as for `BM25Index.from_docs` (field texts from each
            row's metadata); the statistics then hold df over all fields and each
            field's length, so the shards score like one fielded index.
        batch_size: documents read per step from the corpus.
        num_cpus: CPUs reserved by each builder actor (default: 1, or a fair share
            when the cluster has fewer CPUs than shards).

    Returns:
        The written `ShardedManifest`.

    Raises:
        ValueError: an empty corpus or duplicate ids.
    """
    ray = _ray()
    n_shards = check_n_shards(n_shards)
    analyzer = Analyzer() if analyzer is None else analyzer
    # Checked here, before starting actors; they get the plain values.
    checked = params_from(params, method=method, k1=k1, b=b, delta=delta)
    params_dict = checked.as_dict()
    index_args: dict[str, Any] = dict(params_dict)
    if fields is not None:
        index_args["fields"] = check_fields(fields)
        check_method(checked)
    root = _prepare_root(path)
    n_docs, parts = _run_builders(ray, _BM25ShardBuilder, (analyzer.to_config(), index_args),
                                  "BM25", corpus, root, n_shards=n_shards, num_cpus=num_cpus,
                                  batch_size=batch_size, text_column=text_column,
                                  id_column=id_column)
    stats = CollectionStats.merge(parts)  # the reduce step: global N, lengths, df
    stats.save(root / "stats")
    manifest = ShardedManifest("bm25", [shard_folder(i) for i in range(n_shards)], n_docs, n_docs,
                               params={"bm25": {**index_args, "analyzer": analyzer.to_config()}})
    manifest.write(root)
    return manifest


def _run_builders(
    ray: Any, builder: type, args: tuple[Any, ...], kind: str, corpus: Any, root: Path, *,
    n_shards: int, num_cpus: float | None, batch_size: int, text_column: str, id_column: str,
) -> tuple[int, list[Any]]:
    """One ``builder`` actor per shard (made with ``args``): the corpus is streamed to
    them by id, then each writes its shard under ``root``. Returns the number of
    documents and what each shard's ``finish`` returned; the actors are killed whatever
    happens. ``kind`` names the index in the empty-corpus error."""
    if num_cpus is None:
        num_cpus = fair_cpus(ray, n_shards, 1.0)
    Builder = ray.remote(builder)
    builders = [Builder.options(num_cpus=num_cpus, scheduling_strategy=place).remote(*args)
                for place in spread_strategies(ray, n_shards)]
    try:
        n_docs = _stream_to_builders(ray, corpus, builders, batch_size, text_column, id_column)
        if n_docs == 0:
            raise ValueError(f"cannot build a {kind} index from an empty corpus")
        return n_docs, _get(ray, [b.finish.remote(str(root / shard_folder(i)))
                                  for i, b in enumerate(builders)])
    finally:
        for b in builders:
            ray.kill(b)


def _stream_to_builders(
    ray: Any, corpus: Any, builders: list[Any], batch_size: int, text_column: str,
    id_column: str,
) -> int:
    seq = 0
    pending: list[Any] = []
    n = len(builders)
    for docs in iter_doc_batches(corpus, batch_size, text_column=text_column,
                                 id_column=id_column):
        per_shard: list[list[tuple[str, str, dict[str, Any], int]]] = [[] for _ in range(n)]
        for doc in docs:
            per_shard[shard_of(doc.id, n)].append((doc.id, doc.text, dict(doc.metadata), seq))
            seq += 1
        for b, rows in zip(builders, per_shard):
            if rows:
                pending.append(b.extend.remote(rows))
        while len(pending) > _MAX_IN_FLIGHT * n:
            done, pending = ray.wait(pending, num_returns=len(pending) - _MAX_IN_FLIGHT * n)
            _get(ray, done)
    _get(ray, pending)
    return seq


def _get(ray: Any, refs: Any) -> Any:
    """``ray.get`` that re-raises a remote task's own exception (ValueError, ...)."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.as_instanceof_cause()
        original = getattr(exc, "cause", None)
        raise (original if isinstance(original, Exception) else cause) from None


def _prepare_root(path: str | os.PathLike[str]) -> Path:
    root = Path(path)
    if root.exists() and any(root.iterdir()):
        try:
            ShardedManifest.read(root)
        except Exception:
            raise FileExistsError(
                f"{str(root)!r} exists and is not a sharded index; choose a new path"
            ) from None
        import shutil

        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    return root


# ---------------------------------------------------------------------- encoding


@dataclass
class EncodedCorpus:
    """Documents in corpus order and their vectors (row ``i`` is ``docs[i]``)."""

    docs: list[Doc]
    vectors: NDArray[np.float32]
    model_id: str | None
    encoded: int
    """Texts the model encoded in this run (the rest came from the cache)."""


class _EncodeBatch:
    """Ray Data ``map_batches`` body: one model per actor, cached texts skipped."""

    def __init__(self, factory: Callable[[], Any], cached: Any, batch_size: int) -> None:
        self.embedder = factory()
        if cached is not None and not isinstance(cached, tuple):  # an ObjectRef
            import ray

            cached = ray.get(cached)
        rows, matrix = cached if cached is not None else ({}, None)
        self.rows: dict[str, int] = rows
        self.matrix = matrix
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
        texts = [str(t) for t in batch["text"]]
        keys = [text_key(t) for t in texts]
        hit = np.fromiter((k in self.rows for k in keys), bool, len(keys))
        out: NDArray[np.float32] | None = None
        if hit.any():
            assert self.matrix is not None
            cached = self.matrix[[self.rows[k] for k, h in zip(keys, hit) if h]]
            out = np.zeros((len(texts), cached.shape[1]), dtype=np.float32)
            out[hit] = cached
        misses = [t for t, h in zip(texts, hit) if not h]
        if misses:
            fresh = embed_texts(self.embedder, misses, batch_size=self.batch_size)
            if out is None:
                out = np.zeros((len(texts), fresh.shape[1]), dtype=np.float32)
            out[~hit] = fresh
        assert out is not None
        return {**batch, "embedding": out, "cached": hit}


def encode_corpus(
    corpus: Any,
    embedder_factory: Callable[[], Any],
    *,
    model_id: str | None = None,
    cache: EmbeddingCache | None = None,
    batch_size: int = 64,
    concurrency: int = 1,
    num_gpus: float = 0,
    num_cpus: float | None = None,
    text_column: str = "text",
    id_column: str = "id",
) -> EncodedCorpus:
    """Encode a corpus with Ray Data over an actor pool; cached texts are not re-encoded.

    Args:
        corpus: a ``ray.data.Dataset``, a ``.parquet`` / ``.jsonl`` path or an iterable of
            `Doc`, str or mapping rows.
        embedder_factory: a picklable zero-argument callable returning an `Embedder`
            (e.g. ``functools.partial(SentenceTransformerEmbedder, path)``); each actor
            calls it once, so each actor loads one model.
        model_id: the embedding identity for the cache (default: the embedder's
            ``model_id``).
        cache: an `EmbeddingCache`: its vectors for this model are sent to the actors,
            which encode only the other texts; new vectors are added to it.
        batch_size: rows per ``map_batches`` batch (and per model call).
        concurrency: actors in the pool (models loaded at once).
        num_gpus: GPUs per actor (0 on CPU machines); the same code uses a cluster's GPUs.
        num_cpus: CPUs per actor (default: 1, or a fair share of a smaller cluster, so
            the pool and the small read tasks feeding it can all be scheduled).

    Returns:
        `EncodedCorpus` with documents in corpus order.
    """
    ray = _ray()
    import ray.data  # noqa: F401  (the Data library is a separate import)

    identity = embedder_identity(embedder_factory(), model_id) if (
        cache is not None or model_id is None) else model_id
    if cache is not None and identity is None:
        raise TypeError("a cache needs a model identity: pass model_id= or use an embedder "
                        "with a model_id attribute")
    if num_cpus is None:
        num_cpus = fair_cpus(ray, concurrency, 1.0)
    ds = _as_dataset(ray, corpus, text_column, id_column)
    cached = None
    if cache is not None and identity is not None:
        cached = _cache_snapshot(cache, identity)
    encoded = ds.map_batches(
        _EncodeBatch,
        fn_constructor_kwargs={"factory": embedder_factory,
                               "cached": None if cached is None else ray.put(cached),
                               "batch_size": batch_size},
        compute=ray.data.ActorPoolStrategy(size=concurrency),
        batch_size=batch_size, batch_format="numpy", num_gpus=num_gpus, num_cpus=num_cpus,
    )
    docs: list[Doc] = []
    blocks: list[NDArray[np.float32]] = []
    n_encoded = 0
    with in_corpus_order(encoded):  # sequence numbers follow the corpus order
        for batch in encoded.iter_batches(batch_size=4096, batch_format="numpy"):
            rows = [{"id": i, "text": t, META_JSON: m} for i, t, m in
                    zip(batch["id"].tolist(), batch["text"].tolist(), batch[META_JSON].tolist())]
            new_docs = [row_to_doc(r) for r in rows]
            vectors = np.asarray(batch["embedding"], dtype=np.float32)
            fresh = ~np.asarray(batch["cached"], dtype=bool)
            if cache is not None and identity is not None and fresh.any():
                first: dict[str, int] = {}  # one row per distinct text
                for j in np.flatnonzero(fresh).tolist():
                    first.setdefault(new_docs[j].text, j)
                cache.put_many(identity, list(first), vectors[list(first.values())])
            n_encoded += int(fresh.sum())
            docs.extend(new_docs)
            blocks.append(vectors)
    if not docs:
        raise ValueError("cannot encode an empty corpus")
    return EncodedCorpus(docs, np.concatenate(blocks), identity, n_encoded)


def _as_dataset(ray: Any, corpus: Any, text_column: str, id_column: str) -> Any:
    """A Ray Dataset with columns id, text and the metadata as JSON."""

    def normalise(rows: list[Any]) -> list[dict[str, str]]:
        out = []
        for r in rows:
            d = row_to_doc(r, text_column=text_column, id_column=id_column)
            out.append({"id": d.id, "text": d.text,
                        META_JSON: json.dumps(dict(d.metadata), ensure_ascii=False)})
        return out

    if is_ray_dataset(corpus) or isinstance(corpus, (str, os.PathLike)):
        ds = corpus
        if not is_ray_dataset(corpus):
            name = str(corpus).lower()
            ds = (ray.data.read_parquet(str(corpus)) if name.endswith(".parquet")
                  or Path(corpus).is_dir() else ray.data.read_json(str(corpus)))

        def convert(table: Any) -> Any:
            import pyarrow as pa

            return pa.Table.from_pylist(normalise(table.to_pylist()))

        return ds.map_batches(convert, batch_format="pyarrow", num_cpus=_LIGHT_CPUS)
    rows: list[dict[str, str]] = []
    for docs in iter_doc_batches(corpus, 10_000, text_column=text_column, id_column=id_column):
        rows.extend(normalise(docs))
    return ray.data.from_items(rows)


def _cache_snapshot(cache: EmbeddingCache, model_id: str) -> tuple[dict[str, int], Any] | None:
    """The cache's ``(key -> row, matrix)`` for one model, to ship to the actors."""
    with cache._lock:
        store = cache._stores.get(model_id)
        if store is None or store.size == 0:
            return None
        return dict(store.rows), np.array(store.matrix[: store.size])


# ---------------------------------------------------------------------- vector shards


def build_vector_shards(
    corpus: Any,
    path: str | os.PathLike[str],
    *,
    n_shards: int,
    embedder_factory: Callable[[], Any] | None = None,
    vectors: Any = None,
    metric: str = "cosine",
    **encode_options: Any,
) -> ShardedManifest:
    """Encode a corpus (or take its precomputed ``vectors``) and save vector shards.

    Args:
        corpus: as for `encode_corpus`; with ``vectors``, any iterable of rows.
        path: the output directory.
        n_shards: number of shards (documents are routed by id).
        embedder_factory: see `encode_corpus` (exactly one of it and ``vectors``).
        vectors: precomputed vectors, one row per corpus document, in order.
        metric: ``"cosine"`` or ``"dot"``.
        **encode_options: passed to `encode_corpus` (``cache``, ``batch_size``,
            ``concurrency``, ``num_gpus``, ``model_id``...).
    """
    from ..vector import VectorIndex

    n_shards = check_n_shards(n_shards)
    if (embedder_factory is None) == (vectors is None):
        raise TypeError("pass exactly one of embedder_factory= and vectors=")
    if vectors is not None:
        docs = [d for batch in iter_doc_batches(corpus) for d in batch]
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(docs):
            raise ValueError(f"vectors must have shape ({len(docs)}, dimension), got "
                             f"{matrix.shape}")
        model_id = encode_options.get("model_id")
    else:
        enc = encode_corpus(corpus, embedder_factory, **encode_options)
        docs, matrix, model_id = enc.docs, enc.vectors, enc.model_id
    root = _prepare_root(path)
    plan: list[list[int]] = [[] for _ in range(n_shards)]
    for pos, d in enumerate(docs):
        plan[shard_of(d.id, n_shards)].append(pos)
    for i, positions in enumerate(plan):
        index = VectorIndex(metric=metric, dimension=matrix.shape[1])
        if positions:
            index.add_vectors(matrix[positions], docs=[docs[p] for p in positions])
        index._loaded_model_id = model_id
        save_shard(root / shard_folder(i), index, {docs[p].id: p for p in positions})
    manifest = ShardedManifest("vector", [shard_folder(i) for i in range(n_shards)], len(docs),
                               len(docs), params={"vector": {"metric": metric,
                                                             "dimension": int(matrix.shape[1]),
                                                             "model_id": model_id}})
    manifest.write(root)
    return manifest



# ---------------------------------------------------------------------- sparse shards


class _SparseShardBuilder(_ShardBuilder):
    """One sparse shard's builder: encodes with its own model (a Ray actor body)."""

    def __init__(self, embedder_factory: Callable[[], Any], batch_size: int) -> None:
        super().__init__()
        self.factory = embedder_factory
        self.batch_size = batch_size

    def finish(self, path: str) -> str | None:
        from ..sparse import SparseIndex

        embedder = self.factory()
        if self.docs:
            index = SparseIndex.from_docs(self.docs, embedder=embedder,
                                          batch_size=self.batch_size)
        else:  # a tiny corpus can leave a shard empty; it still exists and takes adds
            index = SparseIndex(embedder=embedder)
        if len(self.seqs) != len(self.docs):
            raise ValueError(f"duplicate document ids in shard {path}")
        save_shard(path, index, self.seqs)
        return index.model_id


def build_sparse_shards(
    corpus: Any,
    path: str | os.PathLike[str],
    *,
    n_shards: int,
    embedder_factory: Callable[[], Any] | None = None,
    vectors: Any = None,
    vocabulary: Any = None,
    model_id: str | None = None,
    batch_size: int = 32,
    read_batch_size: int = 2000,
    text_column: str = "text",
    id_column: str = "id",
    num_cpus: float | None = None,
) -> ShardedManifest:
    """Build ``n_shards`` learned sparse shards (`SparseIndex`); searched by `ShardedSearcher`.

    Sparse scores need no corpus-wide statistics (a dot product of the query's and the
    document's weights), so shards are independent and the sharded top k, merged by
    score then corpus order, is exactly a single index's.

    Args:
        corpus: as for `build_bm25_shards`.
        path: the output directory (created; an existing sharded index is replaced).
        n_shards: number of shards (documents are routed by id).
        embedder_factory: makes a `SparseEmbedder`; each shard's builder actor calls it
            once and encodes its own documents (``batch_size`` texts per model call), in
            parallel across shards (exactly one of it and ``vectors``).
        vectors: precomputed vectors, one per corpus document in order: ``{token:
            weight}`` mappings or a scipy sparse matrix with ``vocabulary``.
        model_id: the vectors' model, recorded in each shard (default: the embedder's).
        num_cpus: CPUs reserved by each builder actor (default: a fair share).

    Returns:
        The written `ShardedManifest` (kind ``"sparse"``).
    """
    from ..sparse import SparseIndex
    import scipy.sparse as sp

    from ..sparse.vectors import check_vectors, csr_vectors, is_sparse_matrix

    n_shards = check_n_shards(n_shards)
    if (embedder_factory is None) == (vectors is None):
        raise TypeError("pass exactly one of embedder_factory= and vectors=")
    if vectors is not None:
        docs = [d for batch in iter_doc_batches(corpus, read_batch_size, text_column=text_column,
                                                id_column=id_column) for d in batch]
        checked = (csr_vectors(vectors, vocabulary) if is_sparse_matrix(vectors)
                   else check_vectors(vectors))
        if len(checked) != len(docs):
            raise ValueError(f"got {len(checked)} vectors for {len(docs)} documents")
        root = _prepare_root(path)
        for i, positions in enumerate(plan_shards([d.id for d in docs], n_shards)):
            shard = SparseIndex()
            if positions:
                part = checked.select(positions)  # as a CSR matrix over the token table
                matrix = sp.csr_matrix((part.weights, part.token_ids, part.offsets),
                                       shape=(len(part), len(part.tokens)))
                shard.add_vectors(matrix, [docs[p].id for p in positions],
                                  [dict(docs[p].metadata) for p in positions],
                                  texts=[docs[p].text for p in positions], vocabulary=part.tokens)
            shard._model_id = model_id
            save_shard(root / shard_folder(i), shard, {docs[p].id: p for p in positions})
        n_docs = len(docs)
    else:
        ray = _ray()
        root = _prepare_root(path)
        n_docs, ids = _run_builders(ray, _SparseShardBuilder, (embedder_factory, batch_size),
                                    "sparse", corpus, root, n_shards=n_shards,
                                    num_cpus=num_cpus, batch_size=read_batch_size,
                                    text_column=text_column, id_column=id_column)
        model_id = model_id if model_id is not None else next((m for m in ids if m), None)
    if n_docs == 0:
        raise ValueError("cannot build a sparse index from an empty corpus")
    manifest = ShardedManifest("sparse", [shard_folder(i) for i in range(n_shards)], n_docs,
                               n_docs, params={"sparse": {"model_id": model_id}})
    manifest.write(root)
    return manifest
