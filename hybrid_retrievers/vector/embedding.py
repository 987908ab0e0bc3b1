"""Texts to vectors, each distinct text once: `embed_texts` and the `EmbeddingCache`.

This is the one encoding path of dense retrieval. `embed_texts` drops duplicate texts,
takes cached ones from an `EmbeddingCache`, sorts the rest by length (so batches pad
less), calls the embedder in batches (with an optional progress bar), checks shape and
finiteness and restores the input order. `check_matrix` is the shape and finiteness
check every vector input goes through.

Encoding is the slow part of dense retrieval (MiniLM-L6 does ~90 short documents/s on two
cores), so re-indexing an unchanged corpus, or adding documents whose text was seen
before, should not call the model again. `EmbeddingCache` keeps one float32 matrix per
model identity and maps the blake2b hash of each text (`text_key`) to its row; it lives
in memory and can be saved as ``.npy`` + JSON (never pickle).

The keying (`text_key`, `text_keys`), the model identity rule, the per-model bookkeeping
and the saved format's framing (`ModelKeyedCache`, `read_cache_entries`) are shared with
`hybrid_retrievers.sparse.cache.SparseEmbeddingCache`, the same cache for
learned-sparse ``{token: weight}`` vectors.

Model identity rule: an embedder's identity is its ``model_id`` attribute (a non-empty
str naming the model *and* every option that changes document vectors, such as a
document prompt or normalisation). An embedder without one cannot share a cache by
accident: pass ``model_id=`` explicitly, or no caching happens (`embed_texts` raises
when a cache is given without an identity).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from ..documents import check_unicode
from ..persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index
from ..progress import progress
from ..validation import check_number, check_str_items

__all__ = ["DEFAULT_BATCH_SIZE", "EmbeddingCache", "check_matrix", "check_model_id",
           "ModelKeyedCache", "embed_texts", "embedder_dimension", "embedder_identity",
           "read_cache_entries",
           "row_keys", "text_key", "text_keys"]

DEFAULT_BATCH_SIZE = 1024
"""Texts per ``embed_documents`` call."""


def check_model_id(model_id: Any) -> str:
    if not isinstance(model_id, str) or not model_id.strip():
        raise TypeError(f"model_id must be a non-empty str, got {model_id!r}")
    if not model_id.isascii():
        check_unicode(None, model_id, None, "model_id")
    return model_id


def embedder_identity(embedder: Any, model_id: str | None = None) -> str | None:
    """The identity under which ``embedder``'s vectors are cached and saved.

    ``model_id`` wins when given; otherwise the embedder's own ``model_id`` attribute,
    when it is a non-empty str; otherwise ``None`` (unknown: not cacheable).
    """
    if model_id is not None:
        return check_model_id(model_id)
    value = getattr(embedder, "model_id", None)
    if isinstance(value, str) and value.strip():
        return check_model_id(value)
    return None


def check_matrix(
    value: Any,
    n: int,
    name: str,
    *,
    offset: int = 0,
    texts: Sequence[str] | None = None,
) -> NDArray[np.float32]:
    """``value`` as a finite (n, d) C-contiguous float32 matrix, or a clear error."""
    try:
        matrix = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a 2-d array of floats, got {type(value).__name__} ({exc})"
        ) from None
    if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] < 1:
        raise ValueError(
            f"{name} must have shape ({n}, dimension), one row per text, got shape {matrix.shape}"
        )
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        what = f" (text {texts[bad]!r:.60})" if texts is not None else ""
        raise ValueError(
            f"{name} row {offset + bad}{what} holds NaN or infinite values; vectors must be finite"
        )
    return np.ascontiguousarray(matrix)


def embedder_dimension(embedder: Any) -> int | None:
    """The embedder's ``dimension`` attribute when it has a usable one."""
    value = getattr(embedder, "dimension", None)
    if callable(value):
        value = value()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
        return int(value)
    return None


CACHE_FORMAT_VERSION = 1
"""Version of the saved `EmbeddingCache` format (``"embedding-cache"``)."""
_KEY_RE = re.compile(r"[0-9a-f]{32}\Z")


def text_key(text: str) -> str:
    """The cache key of ``text``: 32 hex digits of blake2b over its UTF-8 bytes.

    Example:
        >>> text_key("hello") == text_key("hello") != text_key("hello ")
        True

    Raises:
        TypeError: ``text`` is not a str.
        ValueError: ``text`` holds a lone surrogate (it has no UTF-8 form).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}: {text!r:.80}")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        check_unicode(None, text, None, "the text to embed")
        raise
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def text_keys(texts: Sequence[str]) -> list[str]:
    """`text_key` of each text; an error names the position of a bad one."""
    try:
        return [text_key(t) for t in texts]
    except (TypeError, ValueError):
        for i, t in enumerate(texts):
            try:
                text_key(t)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"texts[{i}]: {exc}") from None
        raise


class _Store:
    """The vectors of one model: a growable float32 matrix and key -> row."""

    __slots__ = ("rows", "matrix", "size")

    def __init__(self, dimension: int) -> None:
        self.rows: dict[str, int] = {}
        self.matrix = np.zeros((0, dimension), dtype=np.float32)
        self.size = 0

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1])

    def __len__(self) -> int:
        return self.size

    def put(self, keys: Sequence[str], vectors: NDArray[np.float32]) -> None:
        # First occurrence of each new key: a text repeated in one call is stored once.
        first: dict[str, int] = {}
        for j, key in enumerate(keys):
            if key not in self.rows:
                first.setdefault(key, j)
        fresh = list(first.values())
        if not fresh:
            return
        need = self.size + len(fresh)
        if need > self.matrix.shape[0]:
            grown = np.zeros((max(need, 2 * self.matrix.shape[0], 64), self.dimension), np.float32)
            grown[: self.size] = self.matrix[: self.size]
            self.matrix = grown
        self.matrix[self.size : need] = vectors[fresh]
        for offset, j in enumerate(fresh):
            self.rows[keys[j]] = self.size + offset
        self.size = need


class ModelKeyedCache:
    """What the dense and the sparse cache share: one store per model identity (each
    sized by ``len``), the hit/miss counters and the lock, and the bookkeeping over them.
    """

    def __init__(self) -> None:
        self._stores: dict[str, Any] = {}
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0

    def _count(self, hits: int, misses: int) -> None:
        with self._lock:
            self.hits += hits
            self.misses += misses

    def __len__(self) -> int:
        with self._lock:
            return sum(len(s) for s in self._stores.values())

    @property
    def model_ids(self) -> list[str]:
        """The model identities with cached vectors, sorted."""
        with self._lock:
            return sorted(self._stores)

    def size(self, model_id: str) -> int:
        """How many texts are cached for ``model_id``."""
        with self._lock:
            return len(self._stores.get(model_id, ()))

    def clear(self, model_id: str | None = None) -> None:
        """Forget every vector, or only those of ``model_id``."""
        with self._lock:
            if model_id is None:
                self._stores.clear()
            else:
                self._stores.pop(model_id, None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(models={len(self._stores)}, vectors={len(self)})"

    # ------------------------------------------------------------------ persistence
    # A subclass names its format (_KIND, _VERSION, the integer _FIELDS of its manifest
    # entries) and writes / reads one model's store; the framing is shared.

    _KIND: str
    _VERSION: int
    _FIELDS: tuple[str, ...] = ()

    def _write_store(self, w: IndexWriter, i: int, store: Any) -> tuple[list[str], dict[str, int]]:
        """Write ``store``'s files (ending ``_{i}``); return its keys in row order and fields."""
        raise NotImplementedError

    @classmethod
    def _read_store(cls, r: IndexReader, entry: dict[str, Any], keys: list[str]) -> Any:
        """Read and check one model's store written by `_write_store`."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the cache to directory ``path`` atomically (``.npy`` + JSON, no pickle).

        The save is atomic and durable, and a concurrent `load` sees the old or the
        new cache (see `hybrid_retrievers.persistence`).
        """
        with self._lock, atomic_index_dir(path) as tmp:
            w = IndexWriter(tmp)
            models = []
            for i, model_id in enumerate(sorted(self._stores)):
                keys, fields = self._write_store(w, i, self._stores[model_id])
                w.json(f"keys_{i}", keys)
                models.append({"model_id": model_id, **fields, "size": len(keys), "file": i})
            w.manifest(self._KIND, self._VERSION, {"models": models})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Read a cache written by `save`; every file is validated first.

        Raises:
            TypeError: ``path`` is not a str or path.
            IndexFormatError: missing, corrupt or foreign directory.
        """
        return read_index(path, kind=cls._KIND, max_version=cls._VERSION, read=cls._from_reader)

    @classmethod
    def _from_reader(cls, r: IndexReader) -> Self:
        cache = cls()
        for model_id, entry, keys in read_cache_entries(r, cls._FIELDS):
            cache._stores[model_id] = cls._read_store(r, entry, keys)
        return cache


class EmbeddingCache(ModelKeyedCache):
    """Document vectors by (model identity, text hash), in memory, optionally saved.

    Thread-safe. Unbounded: it holds every vector it was given until `clear`.

    Example:
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> cache, emb = EmbeddingCache(), HashingEmbedder(dimension=32)
        >>> _ = cache.embed(emb, ["a cat", "a dog"])
        >>> _ = cache.embed(emb, ["a dog", "a cat"])  # both cached: no model call
        >>> emb.calls, cache.hits, cache.misses
        (1, 2, 2)
    """

    _stores: dict[str, _Store]

    # ------------------------------------------------------------------ lookups

    def get_many(
        self, model_id: str, texts: Sequence[str]
    ) -> tuple[NDArray[np.float32] | None, NDArray[np.bool_]]:
        """Cached vectors of ``texts`` (rows of misses are zero) and a found-mask.

        Returns ``(None, all-False)`` when nothing is cached for ``model_id``. Does not
        change the hit/miss counters.
        """
        keys = text_keys(texts)
        with self._lock:
            store = self._stores.get(model_id)
            if store is None:
                return None, np.zeros(len(keys), dtype=bool)
            rows = np.fromiter((store.rows.get(k, -1) for k in keys), np.intp, len(keys))
            found = rows >= 0
            out = np.zeros((len(keys), store.dimension), dtype=np.float32)
            out[found] = store.matrix[rows[found]]
        return out, found

    def put_many(self, model_id: str, texts: Sequence[str], vectors: NDArray[Any]) -> None:
        """Remember ``vectors[i]`` as the embedding of ``texts[i]`` under ``model_id``."""
        check_model_id(model_id)
        vectors = check_matrix(vectors, len(texts), "vectors")
        keys = text_keys(texts)
        with self._lock:
            store = self._stores.get(model_id)
            if store is None:
                store = self._stores[model_id] = _Store(vectors.shape[1])
            if store.dimension != vectors.shape[1]:
                raise ValueError(
                    f"model {model_id!r} has {store.dimension}-d vectors in this cache, got "
                    f"{vectors.shape[1]}-d ones; give each embedding space its own model_id"
                )
            store.put(keys, vectors)

    def embed(
        self,
        embedder: Any,
        texts: Sequence[str],
        *,
        model_id: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        show_progress: bool = False,
    ) -> NDArray[np.float32]:
        """Embed ``texts`` as documents, calling ``embedder`` only for uncached texts."""
        return embed_texts(
            embedder, texts, cache=self, model_id=model_id, batch_size=batch_size,
            show_progress=show_progress,
        )

    # ------------------------------------------------------------------ persistence

    _KIND = "embedding-cache"
    _VERSION = CACHE_FORMAT_VERSION
    _FIELDS = ("dimension",)

    def _write_store(self, w: IndexWriter, i: int, store: _Store) -> tuple[list[str], dict[str, int]]:
        w.array(f"vectors_{i}", store.matrix[: store.size])
        return row_keys(store.rows, store.size), {"dimension": store.dimension}

    @classmethod
    def _read_store(cls, r: IndexReader, entry: dict[str, Any], keys: list[str]) -> _Store:
        i, size, dim = entry["file"], entry["size"], entry["dimension"]
        matrix = r.array(f"vectors_{i}", dtype_kind="f", ndim=2, length=size)
        if matrix.dtype != np.float32 or matrix.shape[1] != dim:
            raise IndexFormatError(
                f"{r.where(f'vectors_{i}.npy')}: expected float32 rows of {dim} values, "
                f"got {matrix.dtype} with shape {matrix.shape}"
            )
        if not np.isfinite(matrix).all():
            raise IndexFormatError(f"{r.where(f'vectors_{i}.npy')} holds NaN or infinite values")
        store = _Store(int(dim))
        store.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        store.rows = {k: j for j, k in enumerate(keys)}
        store.size = size
        return store


def row_keys(rows: Mapping[str, int], size: int) -> list[str]:
    """The text keys of a cache's rows ``0..size-1`` in row order (what a save writes)."""
    keys = [""] * size
    for key, row in rows.items():
        keys[row] = key
    return keys


def read_cache_entries(
    r: IndexReader, fields: Sequence[str] = ()
) -> Iterator[tuple[str, dict[str, Any], list[str]]]:
    """The model entries of a saved cache (dense or sparse), checked: ``(model_id, entry,
    keys)``.

    Every entry of the manifest's ``models`` list names a ``model_id``, a row count
    ``size``, a file number ``file`` (its files end in ``_{file}``) and the integer
    ``fields`` (each >= 1); its ``keys_{file}.json`` lists ``size`` distinct text keys
    (`text_key`) in row order. A model or file listed twice is an error.

    Raises:
        IndexFormatError: a bad entry, a repeated model or file, or a bad key list.
    """
    where = r.where("manifest.json")
    seen_models: set[str] = set()
    seen_files: set[int] = set()
    for entry in r.field("models", list):
        try:
            model_id, size, i = entry["model_id"], entry["size"], entry["file"]
            extra = [entry[f] for f in fields]
        except (KeyError, TypeError):
            raise IndexFormatError(f"{where}: bad model entry {entry!r:.200}") from None
        if not (
            isinstance(model_id, str) and model_id.strip()
            and all(type(x) is int for x in (size, i, *extra))
            and size >= 0 and 0 <= i < 1_000_000 and all(x >= 1 for x in extra)
        ):
            raise IndexFormatError(f"{where}: bad model entry {entry!r:.200}")
        if model_id in seen_models or i in seen_files:
            raise IndexFormatError(f"{where}: model {model_id!r} or file {i} listed twice")
        seen_models.add(model_id)
        seen_files.add(i)
        try:
            check_model_id(model_id)
        except (TypeError, ValueError) as exc:
            raise IndexFormatError(f"{where}: bad model entry: {exc}") from None
        keys = r.json(f"keys_{i}")
        if (
            not isinstance(keys, list)
            or len(keys) != size
            or not all(isinstance(k, str) and _KEY_RE.match(k) for k in keys)
            or len(set(keys)) != size
        ):
            raise IndexFormatError(
                f"{r.where(f'keys_{i}.json')}: must list {size} distinct 32-hex-digit keys"
            )
        yield model_id, entry, keys


def embed_texts(
    embedder: Any,
    texts: Sequence[str],
    *,
    cache: EmbeddingCache | None = None,
    model_id: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    show_progress: bool = False,
    dimension: int | None = None,
) -> NDArray[np.float32]:
    """Embed ``texts`` as documents into a validated C-contiguous float32 matrix.

    Each distinct text is encoded once (cached texts not at all); texts go to
    ``embedder.embed_documents`` longest first in chunks of ``batch_size`` (so the
    model pads less and a progress bar can advance), and the rows come back in input
    order.

    Args:
        embedder: anything with ``embed_documents(texts) -> (n, d)``.
        texts: the texts, in order.
        cache: reuse and record vectors here; needs a model identity (see module doc).
        model_id: overrides the embedder's ``model_id`` for the cache.
        batch_size: texts per ``embed_documents`` call.
        show_progress: show a tqdm bar (the ``progress`` extra) over the texts.
        dimension: the required vector length, when known.

    Raises:
        TypeError: texts not a list of str; ``embedder`` without ``embed_documents``.
        ValueError: a cache without a model identity, a wrong shape, NaN or inf.
    """
    if isinstance(texts, str) or not isinstance(texts, Iterable):
        raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
    texts = check_str_items(texts, "texts")
    if not callable(getattr(embedder, "embed_documents", None)):
        raise TypeError(
            "embedder must have an embed_documents(texts) method (the Embedder protocol), "
            f"got {type(embedder).__name__}"
        )
    check_number(batch_size, "batch_size", low=1, integer=True)
    identity = embedder_identity(embedder, model_id)
    if cache is not None and identity is None:
        raise ValueError(
            f"cannot cache embeddings of {type(embedder).__name__}: it has no model_id "
            "attribute naming its model; pass model_id='...' (the model name plus any option "
            "that changes its vectors) or drop the cache"
        )
    unique: dict[str, int] = {}
    inverse = np.fromiter((unique.setdefault(t, len(unique)) for t in texts), np.intp, len(texts))
    distinct = list(unique)
    vectors: NDArray[np.float32] | None = None
    missing = list(range(len(distinct)))
    if cache is not None and distinct:
        vectors, found = cache.get_many(identity, distinct)  # type: ignore[arg-type]
        missing = np.flatnonzero(~found).tolist()
        cache._count(len(distinct) - len(missing), len(missing))
    if missing:
        todo = sorted(missing, key=lambda j: -len(distinct[j]))
        fresh = _encode_chunks(embedder, [distinct[j] for j in todo], batch_size, show_progress)
        if dimension is not None and fresh.shape[1] != dimension:
            raise ValueError(
                f"the embedder returned {fresh.shape[1]}-d vectors but {dimension}-d ones are "
                "needed (the index's dimension); use the embedder the index was built with"
            )
        if vectors is None or vectors.shape[1] != fresh.shape[1]:
            if vectors is not None and len(missing) < len(distinct):
                raise ValueError(
                    f"cached vectors for {identity!r} are {vectors.shape[1]}-d but the embedder "
                    f"now returns {fresh.shape[1]}-d ones; its model_id must change with its model"
                )
            vectors = np.zeros((len(distinct), fresh.shape[1]), dtype=np.float32)
        vectors[todo] = fresh
        if cache is not None:
            cache.put_many(identity, [distinct[j] for j in todo], fresh)  # type: ignore[arg-type]
    if vectors is None:  # no texts at all
        return np.zeros((0, dimension or 0), dtype=np.float32)
    if dimension is not None and vectors.shape[1] != dimension:
        raise ValueError(
            f"cached vectors are {vectors.shape[1]}-d but {dimension}-d ones are needed"
        )
    if len(distinct) == len(texts):
        return np.ascontiguousarray(vectors)
    return np.ascontiguousarray(vectors[inverse])


def _encode_chunks(
    embedder: Any, texts: list[str], batch_size: int, show_progress: bool
) -> NDArray[np.float32]:
    bar = progress(total=len(texts), show=show_progress, desc="embedding", unit="text")
    try:
        parts = []
        for start in range(0, len(texts), batch_size):
            chunk = texts[start : start + batch_size]
            out = check_matrix(embedder.embed_documents(chunk), len(chunk), "embed_documents()",
                                offset=start, texts=chunk)
            if parts and out.shape[1] != parts[0].shape[1]:
                raise ValueError(
                    f"embed_documents() returned {out.shape[1]}-d vectors after "
                    f"{parts[0].shape[1]}-d ones; an embedder must keep one dimension"
                )
            parts.append(out)
            bar.update(len(chunk))
    finally:
        bar.close()
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
