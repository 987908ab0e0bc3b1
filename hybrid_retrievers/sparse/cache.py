"""`SparseEmbeddingCache`: learned-sparse document vectors by (model identity, text hash).

The sparse counterpart of `EmbeddingCache`, with its guarantees: a text seen before with
the same model identity is never encoded again, each distinct text of a call is encoded
once, and the cache can be saved and loaded (``.npy`` + JSON, checksummed, never
pickle). It keys texts exactly as the dense cache does (`text_key`: the blake2b hash of
the UTF-8 text; the model identity rule of `embedder_identity`) and reads its saved model
entries with the same checks (the shared `ModelKeyedCache`); only the stored values differ: a
``{token: weight}`` dict per text instead of a matrix row.

A SPLADE encoder (`hybrid_retrievers.models.SpladeEncoder`) takes one as ``cache=``; any
other sparse embedder (``embed_documents(texts) -> list[dict[str, float]]`` and a
``model_id``) goes through `SparseEmbeddingCache.embed`.

On disk, each model's vectors are one CSR matrix over that model's own token list:
``indptr_{i}.npy`` (int64, rows + 1), ``tokens_{i}.npy`` (int32 positions in
``vocabulary_{i}.json``), ``weights_{i}.npy`` (float32) and ``keys_{i}.json``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .._integrity import check_offsets
from ..persistence import IndexFormatError, IndexReader, IndexWriter
from ..validation import check_str_items
from ..vector.embedding import (
    ModelKeyedCache,
    check_model_id,
    embedder_identity,
    text_keys,
)

__all__ = ["SPARSE_CACHE_FORMAT_VERSION", "SparseEmbeddingCache", "check_sparse_vector"]

SPARSE_CACHE_FORMAT_VERSION = 1
"""Version of the saved `SparseEmbeddingCache` format (``"sparse-embedding-cache"``)."""

SparseVector = dict[str, float]


def check_sparse_vector(value: Any, name: str) -> SparseVector:
    """``value`` as a ``{token: weight}`` dict of Python floats, zero weights dropped.

    Raises:
        TypeError: not a mapping of str to numbers.
        ValueError: a negative, NaN or infinite weight, or an empty token.
    """
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a {{token: weight}} mapping, got {type(value).__name__}")
    out: SparseVector = {}
    for token, weight in value.items():
        if not isinstance(token, str) or not token:
            raise TypeError(f"{name} has a token {token!r}; tokens must be non-empty str")
        if not isinstance(weight, numbers.Real) or isinstance(weight, bool):
            raise TypeError(f"{name}[{token!r}] must be a number, got {type(weight).__name__}")
        w = float(weight)
        if not math.isfinite(w) or w < 0:
            raise ValueError(
                f"{name}[{token!r}] = {w!r}; sparse weights must be finite and >= 0"
            )
        if w > 0:
            out[token] = w
    return out


class SparseEmbeddingCache(ModelKeyedCache):
    """Sparse document vectors by (model identity, text hash), in memory, optionally saved.

    Thread-safe. Unbounded: it holds every vector it was given until `clear`. Vectors
    are returned as fresh dicts, so a caller editing one never edits the cache.

    Example:
        >>> cache, calls = SparseEmbeddingCache(), []
        >>> def encode(texts):
        ...     calls.append(list(texts))
        ...     return [{w: 1.0 for w in t.split()} for t in texts]
        >>> cache.encode("bag-of-words", ["a cat", "a dog", "a cat"], encode)
        [{'a': 1.0, 'cat': 1.0}, {'a': 1.0, 'dog': 1.0}, {'a': 1.0, 'cat': 1.0}]
        >>> _ = cache.encode("bag-of-words", ["a dog"], encode)  # cached: no call
        >>> calls, cache.hits, cache.misses
        ([['a cat', 'a dog']], 1, 2)
    """

    _stores: dict[str, dict[str, SparseVector]]

    # ------------------------------------------------------------------ lookups

    def get_many(self, model_id: str, texts: Sequence[str]) -> list[SparseVector | None]:
        """The cached vector of each text (a copy), ``None`` where it is not cached.

        Does not change the hit/miss counters.
        """
        keys = text_keys(texts)
        with self._lock:
            store = self._stores.get(model_id, {})
            found = [store.get(k) for k in keys]
        return [None if v is None else dict(v) for v in found]

    def put_many(self, model_id: str, texts: Sequence[str],
                 vectors: Sequence[Mapping[str, float]]) -> None:
        """Remember ``vectors[i]`` as the sparse vector of ``texts[i]`` under ``model_id``."""
        check_model_id(model_id)
        keys = text_keys(texts)
        if isinstance(vectors, Mapping) or len(vectors) != len(keys):
            raise ValueError(
                f"vectors must be a sequence of one {{token: weight}} mapping per text "
                f"({len(keys)} texts), got {type(vectors).__name__}"
                + ("" if isinstance(vectors, Mapping) else f" of length {len(vectors)}")
            )
        checked = [check_sparse_vector(v, f"vectors[{i}]") for i, v in enumerate(vectors)]
        with self._lock:
            store = self._stores.setdefault(model_id, {})
            for key, vector in zip(keys, checked):
                store.setdefault(key, vector)

    def encode(
        self,
        model_id: str,
        texts: Sequence[str],
        encode: Callable[[list[str]], Sequence[Mapping[str, float]]],
    ) -> list[SparseVector]:
        """The vectors of ``texts``: cached ones read, each distinct other text encoded once.

        ``encode`` gets the uncached distinct texts in one list (in first-seen order) and
        returns one ``{token: weight}`` mapping per text; the results are checked, cached
        and returned in input order.

        Raises:
            TypeError: texts not a list of str.
            ValueError: ``encode`` returned the wrong number of vectors or a bad weight.
        """
        if isinstance(texts, str) or not isinstance(texts, Iterable):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        texts = check_str_items(texts, "texts")
        check_model_id(model_id)
        distinct = list(dict.fromkeys(texts))
        cached = self.get_many(model_id, distinct)
        todo = [t for t, v in zip(distinct, cached) if v is None]
        self._count(len(distinct) - len(todo), len(todo))
        by_text = {t: v for t, v in zip(distinct, cached) if v is not None}
        if todo:
            fresh = list(encode(todo))
            if len(fresh) != len(todo):
                raise ValueError(
                    f"the encoder returned {len(fresh)} sparse vectors for {len(todo)} texts; "
                    "it must return one per text"
                )
            fresh = [check_sparse_vector(v, f"encoded vector {i} (text {t!r:.60})")
                     for i, (t, v) in enumerate(zip(todo, fresh))]
            self.put_many(model_id, todo, fresh)
            by_text.update(zip(todo, fresh))
        seen: set[str] = set()
        out = []
        for t in texts:  # a repeated text gets its own copy
            out.append(by_text[t] if t not in seen else dict(by_text[t]))
            seen.add(t)
        return out

    def embed(self, embedder: Any, texts: Sequence[str], *,
              model_id: str | None = None) -> list[SparseVector]:
        """Document vectors of ``texts`` from ``embedder.embed_documents``, uncached texts only.

        Raises:
            TypeError: ``embedder`` has no ``embed_documents``.
            ValueError: neither ``model_id`` nor the embedder's ``model_id`` names its model.
        """
        if not callable(getattr(embedder, "embed_documents", None)):
            raise TypeError(
                "embedder must have an embed_documents(texts) method (the SparseEmbedder "
                f"protocol), got {type(embedder).__name__}"
            )
        identity = embedder_identity(embedder, model_id)
        if identity is None:
            raise ValueError(
                f"cannot cache sparse vectors of {type(embedder).__name__}: it has no model_id "
                "attribute naming its model; pass model_id='...' or drop the cache"
            )
        return self.encode(identity, texts, embedder.embed_documents)

    # ------------------------------------------------------------------ persistence

    _KIND = "sparse-embedding-cache"
    _VERSION = SPARSE_CACHE_FORMAT_VERSION

    def _write_store(self, w: IndexWriter, i: int,
                     store: dict[str, SparseVector]) -> tuple[list[str], dict[str, int]]:
        keys = list(store)  # insertion order: the rows
        vocabulary: dict[str, int] = {}
        indptr = np.zeros(len(keys) + 1, dtype=np.int64)
        tokens: list[int] = []
        weights: list[float] = []
        for row, key in enumerate(keys):
            vector = store[key]
            tokens.extend(vocabulary.setdefault(t, len(vocabulary)) for t in vector)
            weights.extend(vector.values())
            indptr[row + 1] = len(tokens)
        w.array(f"indptr_{i}", indptr)
        w.array(f"tokens_{i}", np.asarray(tokens, dtype=np.int32))
        w.array(f"weights_{i}", np.asarray(weights, dtype=np.float32))
        w.json(f"vocabulary_{i}", list(vocabulary))
        return keys, {}

    @classmethod
    def _read_store(cls, r: IndexReader, entry: dict[str, Any],
                    keys: list[str]) -> dict[str, SparseVector]:
        i, size = entry["file"], entry["size"]
        indptr = r.array(f"indptr_{i}", dtype_kind="i", ndim=1, length=size + 1)
        check_offsets(indptr, where=r.where(), file=f"indptr_{i}.npy")
        nnz = int(indptr[-1])
        tokens = r.array(f"tokens_{i}", dtype_kind="i", ndim=1, length=nnz)
        weights = r.array(f"weights_{i}", dtype_kind="f", ndim=1, length=nnz)
        vocabulary = r.json(f"vocabulary_{i}")
        if (not isinstance(vocabulary, list)
                or not all(isinstance(t, str) and t for t in vocabulary)
                or len(set(vocabulary)) != len(vocabulary)):
            raise IndexFormatError(
                f"{r.where(f'vocabulary_{i}.json')}: must list distinct non-empty tokens")
        if nnz and (int(tokens.min()) < 0 or int(tokens.max()) >= len(vocabulary)):
            raise IndexFormatError(f"{r.where(f'tokens_{i}.npy')}: positions outside the vocabulary")
        if not (np.isfinite(weights) & (weights > 0)).all():
            raise IndexFormatError(
                f"{r.where(f'weights_{i}.npy')}: weights must be finite and > 0")
        words = [vocabulary[t] for t in tokens.tolist()]
        values = weights.astype(np.float32).tolist()
        store: dict[str, SparseVector] = {}
        for row, key in enumerate(keys):
            lo, hi = int(indptr[row]), int(indptr[row + 1])
            vector = dict(zip(words[lo:hi], values[lo:hi]))
            if len(vector) != hi - lo:
                raise IndexFormatError(f"{r.where(f'tokens_{i}.npy')}: row {row} repeats a token")
            store[key] = vector
        return store
