"""VectorIndex: exact dense retrieval over one contiguous float32 matrix.

Documents are rows of a C-contiguous ``(n, d)`` float32 matrix. A search multiplies the
query (or a block of queries) by the matrix in chunks that bound the score buffer, keeps
each chunk's best candidates with ``np.partition`` and sorts only the final ``k``
(`hybrid_retrievers.selection.top_k`, ties to the earlier document). With
``metric="cosine"`` vectors are L2-normalised on the way in, so the score is the cosine
similarity; with ``metric="dot"`` they are kept as given and the score is the inner
product. A zero vector stays zero under cosine (its similarity to anything is 0).

Texts are encoded through `hybrid_retrievers.embedding_cache.embed_texts`: each
distinct text once, cached texts never again when an `EmbeddingCache` is given.

Edit semantics: `add` refuses ids already in the index (like `BM25Index`); `upsert`
replaces the text, metadata and vector of existing ids in place and appends new ones;
`delete` removes ids and refuses unknown ones without removing anything.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validation import check_k, check_queries, check_query
from .ann import FaissHNSW, HNSWConfig
from ._docs import check_docs, check_new_ids, make_docs
from .embedding_cache import (
    DEFAULT_CHUNK,
    EmbeddingCache,
    _check_matrix,
    embed_texts,
    embedder_identity,
)
from ._integrity import check_unique_ids, check_vectors
from .persistence import IndexFormatError, IndexReader, IndexWriter, atomic_index_dir, read_index
from .selection import top_k
from .types import Doc, Hit, MetadataFilter

__all__ = ["VectorIndex", "METRICS"]

FORMAT_VERSION = 1
METRICS = ("cosine", "dot")
# Upper bound on one block of scores (queries x documents), in float32 entries (32 MiB).
_BLOCK_ENTRIES = 1 << 23
_QUERY_BLOCK = 256
# A filter keeping less than this fraction of the corpus scores a gathered submatrix;
# above it, the full matrix is scored and excluded rows are masked.
_GATHER_FRACTION = 0.25
_MISSING = object()


class VectorIndex:
    """Dense vectors of documents, exact top-k search, edits, filters and persistence.

    Example:
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> index = VectorIndex.from_texts(
        ...     ["the cat sat on the mat", "dogs chase cats", "a bird sang"],
        ...     ids=["a", "b", "c"], embedder=HashingEmbedder(dimension=64),
        ... )
        >>> [hit.id for hit in index.search("the cat", k=1)]
        ['a']
    """

    def __init__(
        self,
        *,
        embedder: Any = None,
        metric: str = "cosine",
        dimension: int | None = None,
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_CHUNK,
    ) -> None:
        """Create an empty index; most users call `from_texts`, `from_docs` or `from_vectors`.

        Args:
            embedder: encodes documents and queries (the `Embedder` protocol); optional
                when only vectors are added and searched.
            metric: ``"cosine"`` (vectors normalised) or ``"dot"`` (inner product).
            dimension: the vector length; taken from the embedder's ``dimension`` or the
                first vectors when omitted.
            cache: an `EmbeddingCache` consulted before calling the embedder.
            batch_size: texts per ``embed_documents`` call.
        """
        if not isinstance(metric, str) or metric not in METRICS:
            raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
        if embedder is not None and not (
            callable(getattr(embedder, "embed_documents", None))
            and callable(getattr(embedder, "embed_query", None))
        ):
            raise TypeError(
                "embedder must have embed_documents(texts) and embed_query(text) methods "
                f"(the Embedder protocol), got {type(embedder).__name__}"
            )
        if cache is not None and not isinstance(cache, EmbeddingCache):
            raise TypeError(f"cache must be an EmbeddingCache or None, got {type(cache).__name__}")
        if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self._metric = metric
        self._embedder = embedder
        self._cache = cache
        self._batch_size = int(batch_size)
        if dimension is None and embedder is not None:
            dimension = _embedder_dimension(embedder)
        self._dim: int | None = None if dimension is None else _check_dimension(dimension)
        self._buf: NDArray[np.float32] = np.zeros((0, self._dim or 0), dtype=np.float32)
        self._n = 0
        self._docs: list[Doc] = []
        self._positions: dict[str, int] = {}
        self._lock = threading.RLock()
        self._ann_config: HNSWConfig | None = None
        self._ann: FaissHNSW | None = None
        self._invalidate()

    # ------------------------------------------------------------------ building

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        embedder: Any,
        metric: str = "cosine",
        batch_size: int = DEFAULT_CHUNK,
        show_progress: bool = False,
        cache: EmbeddingCache | None = None,
    ) -> VectorIndex:
        """Encode and index ``texts``; missing ids become deterministic content ids.

        Raises:
            ValueError: empty corpus, duplicate ids, mismatched lengths, or vectors
                with NaN/inf or of the wrong dimension.
        """
        docs = make_docs(texts, ids, metadatas)
        return cls.from_docs(
            docs, embedder=embedder, metric=metric, batch_size=batch_size,
            show_progress=show_progress, cache=cache,
        )

    @classmethod
    def from_docs(
        cls,
        docs: Iterable[Doc],
        *,
        embedder: Any,
        metric: str = "cosine",
        batch_size: int = DEFAULT_CHUNK,
        show_progress: bool = False,
        cache: EmbeddingCache | None = None,
    ) -> VectorIndex:
        """Encode and index `Doc` objects, keeping their ids and metadata."""
        if embedder is None:
            raise TypeError("from_docs needs an embedder; use from_vectors for precomputed vectors")
        docs = check_docs(docs)
        if not docs:
            raise ValueError(
                "cannot build a vector index from an empty corpus; pass at least one text"
            )
        index = cls(embedder=embedder, metric=metric, cache=cache, batch_size=batch_size)
        index.add_docs(docs, show_progress=show_progress)
        return index

    @classmethod
    def from_vectors(
        cls,
        vectors: Any,
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        texts: Iterable[str] | None = None,
        *,
        embedder: Any = None,
        metric: str = "cosine",
    ) -> VectorIndex:
        """Index precomputed ``vectors`` (shape ``(n, d)``), one per id.

        Args:
            vectors: the document vectors (copied into float32).
            ids: one id per vector; required unless ``texts`` are given (then content ids).
            metadatas: one mapping (or None) per vector.
            texts: the documents' texts (stored, returned in hits); empty when omitted.
            embedder: optional, to answer text queries with `search`.
        """
        matrix = _check_matrix(vectors, _rows(vectors), "vectors")
        if matrix.shape[0] == 0:
            raise ValueError(
                "cannot build a vector index from an empty corpus; pass at least one vector"
            )
        docs = _docs_for_vectors(matrix.shape[0], ids, metadatas, texts, "from_vectors")
        index = cls(embedder=embedder, metric=metric, dimension=matrix.shape[1])
        index.add_vectors(matrix, docs=docs)
        return index

    # ------------------------------------------------------------------ editing

    def add(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        show_progress: bool = False,
    ) -> list[str]:
        """Encode and add texts; return their ids. An id already in the index is an error."""
        docs = make_docs(texts, ids, metadatas, taken=self._positions)
        return self.add_docs(docs, show_progress=show_progress)

    def add_docs(self, docs: Iterable[Doc], *, show_progress: bool = False) -> list[str]:
        """Encode and add documents; return their ids. An existing id is an error."""
        docs = check_docs(docs)
        self._check_new(docs)
        return self._insert(docs, self._encode(docs, show_progress), replace=False)

    def add_vectors(
        self,
        vectors: Any,
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        texts: Iterable[str] | None = None,
        *,
        docs: Iterable[Doc] | None = None,
    ) -> list[str]:
        """Add precomputed vectors with their ids (or `Doc` objects); return the ids."""
        matrix = _check_matrix(vectors, _rows(vectors), "vectors")
        if docs is None:
            docs = _docs_for_vectors(matrix.shape[0], ids, metadatas, texts, "add_vectors",
                                     taken=self._positions)
        docs = check_docs(docs)
        if len(docs) != matrix.shape[0]:
            raise ValueError(
                f"got {matrix.shape[0]} vectors but {len(docs)} documents; pass one each"
            )
        self._check_new(docs)
        return self._insert(docs, matrix, replace=False)

    def upsert(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        show_progress: bool = False,
    ) -> list[str]:
        """Insert or replace: existing ids get the new text, metadata and vector in place.

        Without ids, content ids are used, so upserting an unchanged text (and metadata)
        replaces the document with itself (and, with a cache, costs no model call).
        """
        return self.upsert_docs(make_docs(texts, ids, metadatas), show_progress=show_progress)

    def upsert_docs(self, docs: Iterable[Doc], *, show_progress: bool = False) -> list[str]:
        """`upsert` for `Doc` objects."""
        docs = check_docs(docs)
        return self._insert(docs, self._encode(docs, show_progress), replace=True)

    def upsert_vectors(
        self,
        vectors: Any,
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        texts: Iterable[str] | None = None,
    ) -> list[str]:
        """`upsert` with precomputed vectors."""
        matrix = _check_matrix(vectors, _rows(vectors), "vectors")
        docs = check_docs(
            _docs_for_vectors(matrix.shape[0], ids, metadatas, texts, "upsert_vectors")
        )
        return self._insert(docs, matrix, replace=True)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; if any id is unknown nothing is removed (KeyError)."""
        if isinstance(ids, str):
            ids = [ids]
        ids = list(ids)
        with self._lock:
            unknown = [i for i in ids if i not in self._positions]
            if unknown:
                raise KeyError(f"{len(unknown)} id(s) not in the index: {unknown[:5]}")
            if not ids:
                return
            alive = np.ones(self._n, dtype=bool)
            alive[[self._positions[i] for i in ids]] = False
            self._buf = np.ascontiguousarray(self._buf[: self._n][alive])
            self._n = int(self._buf.shape[0])
            self._docs = [d for d, a in zip(self._docs, alive.tolist()) if a]
            self._positions = {d.id: i for i, d in enumerate(self._docs)}
            self._ann = None  # rebuilt on the next approximate search
            self._invalidate()

    def _check_new(self, docs: list[Doc]) -> None:
        check_new_ids(docs, self._positions, "use upsert() to replace them, or delete them first")

    def _encode(self, docs: list[Doc], show_progress: bool) -> NDArray[np.float32]:
        if self._embedder is None:
            raise TypeError(
                "this index has no embedder, so it cannot encode texts; pass embedder= when "
                "creating or loading it, or add precomputed vectors with add_vectors()"
            )
        return embed_texts(
            self._embedder, [d.text for d in docs], cache=self._cache,
            batch_size=self._batch_size, show_progress=show_progress, dimension=self._dim,
        )

    def _insert(self, docs: list[Doc], matrix: NDArray[np.float32], *, replace: bool) -> list[str]:
        if not docs:
            return []
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise ValueError(
                f"vectors must be {self._dim}-d (this index's dimension), got {matrix.shape[1]}-d"
            )
        if self._metric == "cosine":
            matrix = _normalize(matrix)
        with self._lock:
            if self._dim is None:
                self._dim = int(matrix.shape[1])
                self._buf = np.zeros((0, self._dim), dtype=np.float32)
            if not replace:
                self._check_new(docs)
                old, new = [], list(range(len(docs)))
            else:
                old = [j for j, d in enumerate(docs) if d.id in self._positions]
                new = [j for j, d in enumerate(docs) if d.id not in self._positions]
            if old:
                if not self._buf.flags.writeable:  # a memory-mapped, read-only load
                    self._buf = np.array(self._buf[: self._n])
                rows = [self._positions[docs[j].id] for j in old]
                self._buf[rows] = matrix[old]
                for j, row in zip(old, rows):
                    self._docs[row] = docs[j]
                self._ann = None  # HNSW cannot replace vectors: rebuild lazily
            if new:
                start = self._n
                need = start + len(new)
                if need > self._buf.shape[0] or not self._buf.flags.writeable:
                    cap = need if start == 0 else max(need, start + start // 2)
                    grown = np.empty((cap, self._dim), dtype=np.float32)
                    grown[:start] = self._buf[:start]
                    self._buf = grown
                self._buf[start:need] = matrix[new] if len(new) != len(docs) else matrix
                self._docs.extend(docs[j] for j in new)
                for offset, j in enumerate(new):
                    self._positions[docs[j].id] = start + offset
                self._n = need
                if self._ann is not None:
                    self._ann.add(self._buf[start:need])
            self._invalidate()
        return [d.id for d in docs]

    def _invalidate(self) -> None:
        self._filter_masks: dict[str, NDArray[np.bool_]] = {}

    # ------------------------------------------------------------------ approximate

    def enable_ann(self, config: HNSWConfig | None = None, **params: Any) -> VectorIndex:
        """Answer searches with an HNSW graph (faiss, the ``ann`` extra); returns ``self``.

        The graph is built on the next search (or now, with `build_ann`). Approximate
        candidates are re-scored exactly, so scores match exact search; only recall may
        differ. ``search(..., exact=True)`` still scans every vector.

        Args:
            config: an `HNSWConfig`, or its fields as keyword arguments.
        """
        if config is not None and params:
            raise TypeError("pass either an HNSWConfig or its fields as keywords, not both")
        if config is None:
            config = HNSWConfig(**params)
        if not isinstance(config, HNSWConfig):
            raise TypeError(f"config must be an HNSWConfig, got {type(config).__name__}")
        from ._optional import require

        require("faiss", extra="ann", feature="approximate vector search")
        with self._lock:
            old = self._ann_config
            if self._ann is not None and old is not None and (
                (old.m, old.ef_construction) == (config.m, config.ef_construction)
            ):
                self._ann.config = config  # search-time settings only: keep the graph
            else:
                self._ann = None
            self._ann_config = config
        return self

    def disable_ann(self) -> None:
        """Drop the graph; searches are exact again."""
        with self._lock:
            self._ann_config = None
            self._ann = None

    def build_ann(self) -> None:
        """Build the graph now (it is otherwise built by the first approximate search)."""
        self._graph()

    @property
    def ann_config(self) -> HNSWConfig | None:
        """The approximate backend's parameters, or ``None`` for exact search."""
        return self._ann_config

    def _graph(self) -> FaissHNSW:
        if self._ann_config is None:
            raise RuntimeError("approximate search is not enabled; call enable_ann() first")
        with self._lock:
            if self._ann is None:
                self._ann = FaissHNSW.build(self._buf[: self._n], self._ann_config)
            return self._ann

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """The ``k`` documents most similar to ``query`` (encoded with the embedder).

        Args:
            query: free text.
            k: how many hits at most (fewer when the index, or the filter, has fewer).
            filter: metadata equality mapping or predicate over `Doc`, applied before
                top-k so ``k`` filtered hits come back when they exist.
            exact: scan every vector even when approximate search is enabled.
        """
        check_query(query)
        k = check_k(k)
        vector = self._embed_query(query)
        return self._search_block(vector[None, :], k, filter, exact)[0]

    def search_vector(
        self,
        vector: Any,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """`search` with a query vector of this index's dimension."""
        k = check_k(k)
        q = self._check_queries_matrix(vector, single=True)
        return self._search_block(q, k, filter, exact)[0]

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[list[Hit]]:
        """`search` for each query, in order; all queries share one matrix product."""
        queries = check_queries(queries)
        k = check_k(k)
        if not queries:
            return []
        embedder = self._require_embedder()
        batch = getattr(embedder, "embed_queries", None)
        if callable(batch):
            raw = batch(queries)
        else:
            raw = [np.asarray(embedder.embed_query(q), dtype=np.float32).ravel() for q in queries]
        q = self._check_queries_matrix(raw, n=len(queries), name="query vectors")
        return self._search_block(q, k, filter, exact)

    def search_vectors(
        self,
        vectors: Any,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[list[Hit]]:
        """`search_vector` for each row of ``vectors`` (shape ``(m, d)``)."""
        k = check_k(k)
        q = self._check_queries_matrix(vectors)
        if q.shape[0] == 0:
            return []
        return self._search_block(q, k, filter, exact)

    def _require_embedder(self) -> Any:
        if self._embedder is None:
            raise TypeError(
                "this index has no embedder, so it cannot encode text queries; pass embedder= "
                "when creating or loading it, or use search_vector()"
            )
        return self._embedder

    def _embed_query(self, query: str) -> NDArray[np.float32]:
        raw = self._require_embedder().embed_query(query)
        return self._check_queries_matrix(raw, single=True, name="embed_query()")[0]

    def _check_queries_matrix(
        self, value: Any, *, n: int | None = None, single: bool = False, name: str = "vector"
    ) -> NDArray[np.float32]:
        try:
            q = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be an array of floats ({exc})") from None
        if single and q.ndim == 1:
            q = q[None, :]
        if q.ndim != 2 or (single and q.shape[0] != 1) or (n is not None and q.shape[0] != n):
            want = "(dimension,)" if single else "(n_queries, dimension)"
            raise ValueError(f"{name} must have shape {want}, got {np.shape(value)}")
        if self._dim is not None and q.shape[1] != self._dim:
            raise ValueError(
                f"{name} has dimension {q.shape[1]} but this index holds {self._dim}-d vectors; "
                "query with the embedder the index was built with"
            )
        if not np.isfinite(q).all():
            raise ValueError(f"{name} holds NaN or infinite values; query vectors must be finite")
        if self._metric == "cosine":
            q = _normalize(q)
        return np.ascontiguousarray(q)

    def _search_block(
        self, queries: NDArray[np.float32], k: int, filter: MetadataFilter | None, exact: bool
    ) -> list[list[Hit]]:
        with self._lock:  # a consistent snapshot; the arithmetic runs outside the lock
            n = self._n
            vectors = self._buf[:n]
            docs = self._docs
            use_ann = self._ann_config is not None and not exact
        m = queries.shape[0]
        if n == 0:
            return [[] for _ in range(m)]
        rows: NDArray[np.intp] | None = None
        mask: NDArray[np.bool_] | None = None
        if filter is not None:
            mask = self._filter_mask(filter, docs)
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                return [[] for _ in range(m)]
            if rows.size == n:
                rows = mask = None
        config = self._ann_config
        if use_ann and config is not None and (rows is None or rows.size > config.exact_below):
            results = self._ann_topk(vectors, queries, k, mask)
        elif rows is not None and rows.size < _GATHER_FRACTION * n:
            results = [(rows[i], s) for i, s in _exact_topk(vectors[rows], queries, k)]
        else:
            results = _exact_topk(vectors, queries, k, mask)
        return [
            [Hit(docs[p], s, r) for r, (p, s) in enumerate(zip(idx.tolist(), sc.tolist()), 1)]
            for idx, sc in results
        ]

    def _ann_topk(
        self,
        vectors: NDArray[np.float32],
        queries: NDArray[np.float32],
        k: int,
        mask: NDArray[np.bool_] | None,
    ) -> list[tuple[NDArray[np.intp], NDArray[np.float32]]]:
        graph = self._graph()
        if len(graph) != vectors.shape[0]:  # an edit raced with this search
            return _exact_topk(vectors, queries, k, mask)
        labels = graph.search(queries, min(k, vectors.shape[0]), mask)
        out = []
        for qi in range(queries.shape[0]):
            cand = labels[qi]
            cand = np.unique(cand[cand >= 0]).astype(np.intp)
            scores = vectors[cand] @ queries[qi]
            best = top_k(scores, k)
            out.append((cand[best], scores[best]))
        return out

    def _filter_mask(self, filter: Any, docs: list[Doc]) -> NDArray[np.bool_]:
        """Which documents pass ``filter``; equality masks are cached until the next edit."""
        if callable(filter) and not isinstance(filter, Mapping):
            return np.fromiter((bool(filter(d)) for d in docs), bool, len(docs))
        if not isinstance(filter, Mapping):
            raise TypeError(
                "filter must be a mapping of metadata equalities or a callable(Doc) -> bool, "
                f"got {type(filter).__name__}"
            )
        key = json.dumps(sorted((str(k), repr(v)) for k, v in filter.items()))
        masks = self._filter_masks
        mask = masks.get(key)
        if mask is None or mask.size != len(docs):
            items = list(filter.items())
            mask = np.fromiter(
                (all(d.metadata.get(f, _MISSING) == v for f, v in items) for d in docs),
                bool, len(docs),
            )
            if len(masks) >= 64:
                masks.clear()
            masks[key] = mask
        return mask

    # ------------------------------------------------------------------ access

    def __len__(self) -> int:
        return self._n

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._positions

    def __repr__(self) -> str:
        return (
            f"VectorIndex(docs={self._n}, dimension={self._dim}, metric={self._metric!r}, "
            f"model_id={self.model_id!r}, ann={self._ann_config is not None})"
        )

    def get(self, doc_id: str) -> Doc:
        """The stored document with ``doc_id``."""
        try:
            return self._docs[self._positions[doc_id]]
        except KeyError:
            raise KeyError(f"document {doc_id!r} is not in the index") from None

    def get_vector(self, doc_id: str) -> NDArray[np.float32]:
        """A copy of the stored (normalised, for cosine) vector of ``doc_id``."""
        with self._lock:
            if doc_id not in self._positions:
                raise KeyError(f"document {doc_id!r} is not in the index")
            return np.array(self._buf[self._positions[doc_id]])

    @property
    def vectors(self) -> NDArray[np.float32]:
        """The ``(n, d)`` matrix, read-only view (rows in index order)."""
        view = self._buf[: self._n].view()
        view.flags.writeable = False
        return view

    @property
    def ids(self) -> list[str]:
        """Document ids in index order."""
        return [d.id for d in self._docs]

    @property
    def docs(self) -> list[Doc]:
        """Documents in index order (a copy of the list; documents are immutable)."""
        return list(self._docs)

    @property
    def dimension(self) -> int | None:
        """Vector length (``None`` for an empty index that has not seen a vector)."""
        return self._dim

    @property
    def metric(self) -> str:
        return self._metric

    @property
    def embedder(self) -> Any:
        return self._embedder

    @property
    def cache(self) -> EmbeddingCache | None:
        return self._cache

    @property
    def model_id(self) -> str | None:
        """The embedder's identity (its ``model_id``), or the one recorded at load."""
        identity = embedder_identity(self._embedder) if self._embedder is not None else None
        return identity if identity is not None else getattr(self, "_loaded_model_id", None)

    def nbytes(self) -> int:
        """Bytes of the vector matrix (allocated capacity included) and of the ANN graph."""
        return int(self._buf.nbytes) + (self._ann.nbytes() if self._ann is not None else 0)

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically and durably (``.npy`` + JSON).

        The manifest records the metric, dimension and model identity. An ANN graph is
        not saved, only its parameters: it is rebuilt on the first approximate search.
        A crash at any moment leaves ``path`` loading as the previous save or this one;
        a concurrent `load` gets one complete version; concurrent saves run one after
        the other. A symbolic link at ``path`` is followed (the index is saved into its
        target). See `hybrid_retrievers.persistence` for the layout.

        Raises:
            TypeError: ``path`` is not a str or path, or metadata is not JSON data
                that would load back unchanged (the previous save is kept).
            FileExistsError: ``path`` exists and is not an index.
        """
        with self._lock, atomic_index_dir(path) as tmp:
            self._save_into(tmp)

    def _save_into(self, directory: Path) -> None:
        """Write the index files and their manifest into an existing empty directory."""
        with self._lock:
            w = IndexWriter(directory)
            w.docs("docs", self._docs)  # first: it is what refuses bad metadata
            w.array("vectors", self._buf[: self._n])
            w.manifest(
                "vector",
                FORMAT_VERSION,
                {
                    "metric": self._metric,
                    "dimension": self._dim,
                    "n_docs": self._n,
                    "model_id": self.model_id,
                    "embedder": None if self._embedder is None else type(self._embedder).__name__,
                    "ann": None if self._ann_config is None else self._ann_config.to_config(),
                },
            )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        embedder: Any = None,
        *,
        mmap: bool = False,
        cache: EmbeddingCache | None = None,
        verify: bool = False,
    ) -> VectorIndex:
        """Read an index saved by `save`; nothing in it is trusted before it is checked.

        Every file read into memory is checksummed, the manifest too, and the vectors
        must be finite (and of unit length for a cosine index).

        Args:
            embedder: for text queries and additions; its dimension must match.
                A different ``model_id`` than the saved one warns (same size, maybe
                another model).
            mmap: memory-map the vectors read-only (not read into memory); the first
                edit copies them into memory. Their size, shape and dtype are checked,
                their checksum and values only with ``verify``.
            cache: an `EmbeddingCache` for later additions.
            verify: with ``mmap``, also run the full checks (reads the vectors once).

        Raises:
            TypeError: ``path`` is not a str or path.
            IndexFormatError: missing, corrupt, truncated, foreign, invalid or newer
                directory.
            ValueError: the embedder's dimension differs from the saved vectors'.
        """
        return read_index(
            path, kind="vector", max_version=FORMAT_VERSION,
            read=lambda r: cls._from_reader(r, embedder, mmap=mmap, cache=cache, verify=verify,
                                            label=path),
        )

    @classmethod
    def _from_reader(
        cls,
        r: IndexReader,
        embedder: Any = None,
        *,
        mmap: bool = False,
        cache: EmbeddingCache | None = None,
        verify: bool = False,
        label: Any = None,
    ) -> VectorIndex:
        where = r.where()
        path = r.display if label is None else label
        metric = r.field("metric", str)
        n_docs = r.count("n_docs")
        dim = r.manifest.get("dimension")
        saved_id = r.manifest.get("model_id")
        ann = r.manifest.get("ann")
        if metric not in METRICS:
            raise IndexFormatError(f"{where}: unknown metric {metric!r} in manifest")
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim < 1):
            raise IndexFormatError(f"{where}: invalid dimension {dim!r} in manifest")
        if saved_id is not None and not isinstance(saved_id, str):
            raise IndexFormatError(f"{where}: invalid model_id {saved_id!r} in manifest")
        ann_config = None
        if ann is not None:
            try:
                ann_config = HNSWConfig.from_config(ann)
            except (TypeError, ValueError) as exc:
                raise IndexFormatError(f"{where}: invalid ann parameters ({exc})") from None
        vectors = r.array("vectors", dtype_kind="f", ndim=2, length=n_docs, mmap=mmap,
                          verify=verify)
        if dim is not None and vectors.shape[1] != dim:
            raise IndexFormatError(
                f"{where}: vectors.npy is {vectors.shape[1]}-d, manifest says {dim}"
            )
        if vectors.dtype != np.float32:
            raise IndexFormatError(f"{where}: vectors.npy must be float32, got {vectors.dtype}")
        check_vectors(vectors, metric=metric, where=where, full=not mmap or verify)
        docs = list(r.docs("docs"))
        if len(docs) != n_docs:
            raise IndexFormatError(
                f"{where}: docs.jsonl has {len(docs)} documents, manifest says {n_docs}"
            )
        check_unique_ids([d.id for d in docs], where=f"{where}/docs.jsonl")
        positions = {d.id: i for i, d in enumerate(docs)}
        if embedder is not None:
            emb_dim = _embedder_dimension(embedder)
            if emb_dim is not None and dim is not None and emb_dim != dim:
                raise ValueError(
                    f"the embedder makes {emb_dim}-d vectors but the index at {str(path)!r} holds "
                    f"{dim}-d vectors (model {saved_id!r}); load it with that model's embedder"
                )
            emb_id = embedder_identity(embedder)
            if saved_id is not None and emb_id is not None and emb_id != saved_id:
                warnings.warn(
                    f"the index at {str(path)!r} was built with model {saved_id!r} but is loaded "
                    f"with {emb_id!r}; scores are meaningless if the two embed differently",
                    UserWarning,
                    stacklevel=5,
                )
        index = cls(embedder=None, metric=metric, dimension=dim, cache=cache)
        index._embedder = embedder
        index._loaded_model_id = saved_id
        index._buf = vectors if mmap else np.ascontiguousarray(vectors)
        index._n = n_docs
        index._docs = docs
        index._positions = positions
        index._ann_config = ann_config
        index._invalidate()
        return index


# ---------------------------------------------------------------------- kernels


def _exact_topk(
    vectors: NDArray[np.float32],
    queries: NDArray[np.float32],
    k: int,
    mask: NDArray[np.bool_] | None = None,
) -> list[tuple[NDArray[np.intp], NDArray[np.float32]]]:
    """Exact top ``k`` rows of ``vectors`` for each query, best first.

    Scores are computed in blocks of at most ``_BLOCK_ENTRIES`` (queries x rows); each
    block keeps every row scoring at least its k-th best (ties included, so the final
    `top_k` breaks ties by row exactly as a full sort would), and only the survivors
    are sorted. Rows where ``mask`` is False are never returned.
    """
    n = vectors.shape[0]
    m = queries.shape[0]
    kk = min(k, n)
    cand_idx: list[list[NDArray[np.intp]]] = [[] for _ in range(m)]
    cand_sc: list[list[NDArray[np.float32]]] = [[] for _ in range(m)]
    for q0 in range(0, m, _QUERY_BLOCK):
        qb = queries[q0 : q0 + _QUERY_BLOCK]
        width = max(1024, _BLOCK_ENTRIES // qb.shape[0])
        for d0 in range(0, n, width):
            block = vectors[d0 : d0 + width]
            if qb.shape[0] == 1:
                scores = (block @ qb[0])[None, :]
            else:
                scores = qb @ block.T
            if mask is not None:
                scores[:, ~mask[d0 : d0 + width]] = -np.inf
            c = scores.shape[1]
            if c > kk:
                kth = np.partition(scores, c - kk, axis=1)[:, c - kk]
                r, col = np.nonzero(scores >= kth[:, None])
                bounds = np.searchsorted(r, np.arange(qb.shape[0] + 1))
                for j in range(qb.shape[0]):
                    cols = col[bounds[j] : bounds[j + 1]]
                    cand_idx[q0 + j].append(cols + d0)
                    cand_sc[q0 + j].append(scores[j, cols])
            else:
                cols = np.arange(c)
                for j in range(qb.shape[0]):
                    cand_idx[q0 + j].append(cols + d0)
                    cand_sc[q0 + j].append(scores[j])
    out = []
    for qi in range(m):
        idx = np.concatenate(cand_idx[qi])
        sc = np.concatenate(cand_sc[qi])
        if mask is not None:
            keep = sc > -np.inf
            idx, sc = idx[keep], sc[keep]
        best = top_k(sc, k, tiebreak=idx)
        out.append((idx[best], sc[best]))
    return out


def _normalize(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows divided by their L2 norm; zero rows stay zero.

    Rows already of unit length (within float32 rounding, as normalising models return
    them) are kept bit for bit, so the index stores exactly what the model produced.
    """
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scale = (norms > 0) & (np.abs(norms - 1.0) > 4e-7)
    out = np.array(matrix, dtype=np.float32, copy=True)
    np.divide(matrix, norms, out=out, where=scale)
    out[(norms == 0).ravel()] = 0.0
    return out


def _docs_for_vectors(
    n: int,
    ids: Iterable[str] | None,
    metadatas: Iterable[Mapping[str, Any] | None] | None,
    texts: Iterable[str] | None,
    caller: str,
    taken: Mapping[str, Any] | None = None,
) -> list[Doc]:
    """Documents for ``n`` precomputed vectors; lengths are checked against the vectors."""
    if texts is None and ids is None:
        raise ValueError(
            f"{caller} needs ids (one per vector) when no texts are given; "
            "pass ids=[...] or texts=[...]"
        )
    for name, values in (("ids", ids), ("texts", texts), ("metadatas", metadatas)):
        if values is not None and not isinstance(values, str):
            values = list(values)
            if len(values) != n:
                raise ValueError(f"got {n} vectors but {len(values)} {name}; pass one per vector")
            if name == "ids":
                ids = values
            elif name == "texts":
                texts = values
            else:
                metadatas = values
    return make_docs([""] * n if texts is None else texts, ids, metadatas, taken=taken)


def _rows(vectors: Any) -> int:
    shape = np.shape(vectors)
    if len(shape) != 2:
        raise ValueError(f"vectors must have shape (n, dimension), got shape {shape}")
    return int(shape[0])


def _check_dimension(dimension: Any) -> int:
    if isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer)):
        raise TypeError(f"dimension must be an int, got {type(dimension).__name__}: {dimension!r}")
    if dimension < 1:
        raise ValueError(f"dimension must be >= 1, got {dimension}")
    return int(dimension)


def _embedder_dimension(embedder: Any) -> int | None:
    """The embedder's ``dimension`` attribute when it has a usable one."""
    value = getattr(embedder, "dimension", None)
    if callable(value):
        value = value()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
        return int(value)
    return None
