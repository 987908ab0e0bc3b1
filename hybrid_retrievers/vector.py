"""VectorIndex: exact dense retrieval over one contiguous float32 matrix.

Documents are rows of a C-contiguous ``(n, d)`` float32 matrix. A search multiplies the
query (or a block of queries) by the matrix in chunks that bound the score buffer, keeps
the rows above each query's running k-th-best threshold and sorts only the final ``k``
(`hybrid_retrievers.selection.top_k`, ties to the earlier document). With
``metric="cosine"`` vectors are L2-normalised on the way in, so the score is the cosine
similarity; with ``metric="dot"`` they are kept as given and the score is the inner
product. A zero vector stays zero under cosine (its similarity to anything is 0).

Texts are encoded through `hybrid_retrievers.embedding_cache.embed_texts`: each
distinct text once, cached texts never again when an `EmbeddingCache` is given.

Edit semantics: `add` refuses ids already in the index (like `BM25Index`); `upsert`
replaces the text, metadata and vector of existing ids in place and appends new ones;
`delete` removes ids and refuses unknown ones without removing anything.

Concurrency: a search reads one immutable snapshot (matrix rows ``0..n-1``, documents,
ANN graph, filter masks), so edits never tear it; see `VectorIndex`.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .validation import check_k, check_queries, check_query
from .validation import check_id_list
from .ann import FaissHNSW, HNSWConfig
from .documents import DocTable, DocumentAccess, check_docs, check_texts_argument, make_docs
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


class VectorIndex(DocumentAccess):
    """Dense vectors of documents, exact top-k search, edits, filters and persistence.

    Concurrency: any number of threads may search while one thread edits. A search
    takes the current snapshot once (rows ``0..n-1`` of the matrix, the document
    list, the ANN graph, the filter-mask memo) and reads only it, so it sees the
    index as it was before an edit or after it, never a mix; searches never wait for
    an edit nor for each other. Edits never change what a published snapshot reads:
    `add` writes rows past every snapshot's ``n`` (or into a new, larger matrix),
    `upsert` of existing ids and `delete` copy the matrix (O(n·d) per call: batch
    them), and the HNSW graph is never modified once searched (rows added later are
    scanned exactly until the next edit folds them into a copy of the graph).
    Writers are serialised by a lock: two threads editing at once get both edits,
    one after the other (in an unspecified order); a search sees none, one or both.

    Scores are deterministic: candidates found by the matrix product are re-scored
    with one fixed summation order, so `search`, `search_many`, filtered and
    approximate search give a document the same score and ties the same order.

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
        self._lock = threading.RLock()  # serialises writers; readers never take it
        self._flat_faiss = False  # exact scans through faiss.knn (same results)
        self._state = _Snapshot(np.zeros((0, self._dim or 0), dtype=np.float32), 0, [], {},
                                max_norm=0.0)

    def _install(
        self,
        vectors: NDArray[np.float32],
        docs: list[Doc],
        *,
        positions: dict[str, int] | None = None,
        ann: HNSWConfig | None = None,
    ) -> None:
        """Publish a complete new version of the index (used by `load`).

        ``vectors`` are stored as given (already normalised for cosine; may be a
        read-only memory map): one row per document of ``docs``.
        """
        with self._lock:
            self._state = _Snapshot(vectors, len(docs), docs, positions, ann=ann)

    # Read-only views of the current snapshot, for code that reads one field (save).
    @property
    def _buf(self) -> NDArray[np.float32]:
        return self._state.buf

    @property
    def _n(self) -> int:
        return self._state.n

    @property
    def _docs(self) -> list[Doc]:
        return self._state.docs

    @property
    def _positions(self) -> dict[str, int]:
        return self._state.positions

    @property
    def _ann_config(self) -> HNSWConfig | None:
        return self._state.ann

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
        docs = make_docs(texts, ids, metadatas, taken=self._state.positions)
        return self.add_docs(docs, show_progress=show_progress)

    def add_docs(self, docs: Iterable[Doc], *, show_progress: bool = False) -> list[str]:
        """Encode and add documents; return their ids. An existing id is an error."""
        docs = check_docs(docs)
        self._state.check_new(docs)
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
                                     taken=self._state.positions)
        docs = check_docs(docs)
        if len(docs) != matrix.shape[0]:
            raise ValueError(
                f"got {matrix.shape[0]} vectors but {len(docs)} documents; pass one each"
            )
        self._state.check_new(docs)
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
        ids = check_id_list(ids)
        with self._lock:
            st = self._state
            alive = st.kept_after_delete(ids)
            if alive is None:
                return
            buf = np.ascontiguousarray(st.vectors[alive])  # a copy: st is left as it was
            docs = [d for d, a in zip(st.docs, alive.tolist()) if a]
            # A new graph lineage: HNSW cannot remove rows, so it is rebuilt on demand.
            # The old largest norm still bounds the remaining rows (see _margins).
            self._state = _Snapshot(buf, len(docs), docs, None, ann=st.ann,
                                    max_norm=st._max_norm)

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
            st = self._state
            if self._dim is None:
                self._dim = int(matrix.shape[1])
            elif matrix.shape[1] != self._dim:  # another thread set it first
                raise ValueError(
                    f"vectors must be {self._dim}-d (this index's dimension), "
                    f"got {matrix.shape[1]}-d"
                )
            if not replace:
                st.check_new(docs)
                old, new = [], list(range(len(docs)))
            else:
                old = [j for j, d in enumerate(docs) if d.id in st.positions]
                new = [j for j, d in enumerate(docs) if d.id not in st.positions]
            self._state = st.edited(docs, matrix, old, new, self._dim)
        return [d.id for d in docs]

    # ------------------------------------------------------------------ approximate

    def enable_ann(self, config: HNSWConfig | None = None, **params: Any) -> VectorIndex:
        """Answer searches with an HNSW graph (faiss, the ``ann`` extra); returns ``self``.

        The graph is built on the next search (or now, with `build_ann`); searches
        that run while another thread builds it scan exactly instead of waiting. After
        a `delete` or an `upsert` of existing ids it is rebuilt the same way. Approximate
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
        from .optional import require

        require("faiss", extra="ann", feature="approximate vector search")
        with self._lock:
            st = self._state
            old = st.ann
            graphs = st.graphs
            if old is None or (old.m, old.ef_construction) != (config.m, config.ef_construction):
                graphs = _GraphLineage()  # another graph shape: build a new one
            self._state = st.derived(ann=config, graphs=graphs)
        return self

    def disable_ann(self) -> None:
        """Drop the graph; searches are exact again."""
        with self._lock:
            self._state = self._state.derived(ann=None, graphs=_GraphLineage())

    def build_ann(self) -> None:
        """Build the graph now (it is otherwise built by the first approximate search)."""
        self._graph(self._state)

    def enable_flat_faiss(self) -> VectorIndex:
        """Run unfiltered exact scans through faiss's flat kernel (the ``ann`` extra).

        Results are identical to the numpy path, ties and scores included (see
        `hybrid_retrievers.flat_faiss`); only the speed differs, which depends on the
        BLAS faiss was built with: measure it with ``benchmarks/dense_search.py``.
        Filtered searches and approximate (HNSW) searches are unaffected. Returns
        ``self``; not saved with the index (it is a choice of kernel, not data).
        """
        from .optional import require

        require("faiss", extra="ann", feature="the faiss flat backend")
        self._flat_faiss = True
        return self

    def disable_flat_faiss(self) -> None:
        """Exact scans use numpy blocks again (the default)."""
        self._flat_faiss = False

    @property
    def exact_backend(self) -> str:
        """The kernel of unfiltered exact scans: ``"numpy"`` or ``"faiss-flat"``."""
        return "faiss-flat" if self._flat_faiss else "numpy"

    @property
    def ann_config(self) -> HNSWConfig | None:
        """The approximate backend's parameters, or ``None`` for exact search."""
        return self._state.ann

    @staticmethod
    def _graph(st: _Snapshot, *, wait: bool = True) -> FaissHNSW | None:
        """The HNSW graph of ``st``'s lineage, built over ``st``'s rows on first use.

        With ``wait=False`` a graph another thread is building right now is not
        waited for: ``None`` comes back and the caller searches exactly meanwhile.
        """
        if st.ann is None:
            raise RuntimeError("approximate search is not enabled; call enable_ann() first")
        lineage = st.graphs
        graph = lineage.graph
        if graph is None:
            # One build per lineage, not one per concurrent reader.
            if not lineage.lock.acquire(blocking=wait):
                return None
            try:
                if lineage.graph is None:
                    lineage.graph = FaissHNSW.build(st.vectors, st.ann)
                graph = lineage.graph
            finally:
                lineage.lock.release()
        return graph

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
        st = self._state  # the one snapshot this search reads
        n = st.n
        m = queries.shape[0]
        if n == 0:
            return [[] for _ in range(m)]
        vectors = st.vectors
        if queries.shape[1] != vectors.shape[1]:
            raise ValueError(
                f"query vectors have dimension {queries.shape[1]} but this index holds "
                f"{vectors.shape[1]}-d vectors"
            )
        docs = st.docs
        rows: NDArray[np.intp] | None = None
        mask: NDArray[np.bool_] | None = None
        if filter is not None:
            mask = st.filter_mask(filter)
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                return [[] for _ in range(m)]
            if rows.size == n:
                rows = mask = None
        margins = _margins(queries, st.max_norm())
        config = st.ann
        graph = None
        if (config is not None and not exact
                and (rows is None or rows.size > config.exact_below)):
            # While another search builds the graph, search exactly instead of waiting.
            graph = self._graph(st, wait=False)
        if graph is not None:
            results = self._ann_topk(st, graph, queries, k, mask, margins)
        elif rows is not None and rows.size < _GATHER_FRACTION * n:
            results = [(rows[i], s)
                       for i, s in _exact_topk(vectors[rows], queries, k, None, margins)]
        elif mask is None and self._flat_faiss:
            from .flat_faiss import faiss_flat_topk

            results = faiss_flat_topk(
                vectors, queries, k, margins, _rescore,
                lambda rows: _exact_topk(vectors, queries[rows], k, None, margins[rows]),
            )
        else:
            results = _exact_topk(vectors, queries, k, mask, margins)
        return [
            [Hit(docs[p], s, r) for r, (p, s) in enumerate(zip(idx.tolist(), sc.tolist()), 1)]
            for idx, sc in results
        ]

    @staticmethod
    def _ann_topk(
        st: _Snapshot,
        graph: FaissHNSW,
        queries: NDArray[np.float32],
        k: int,
        mask: NDArray[np.bool_] | None,
        margins: NDArray[np.float64],
    ) -> list[tuple[NDArray[np.intp], NDArray[np.float32]]]:
        """Graph candidates, plus the rows the graph does not hold yet, scored exactly."""
        assert st.ann is not None
        vectors, n, g = st.vectors, st.n, len(graph)
        allowed = mask
        if g > n:  # the graph has grown past this (older) snapshot: hide the newer rows
            allowed = np.zeros(g, dtype=bool)
            allowed[:n] = True if mask is None else mask
        elif mask is not None and g < n:
            allowed = mask[:g]
        labels = graph.search(queries, min(k, g), allowed, ef_search=st.ann.ef_search)
        tail: list[tuple[NDArray[np.intp], NDArray[np.float32]]] | None = None
        if g < n:
            tail_mask = None if mask is None else mask[g:n]
            if tail_mask is None or tail_mask.any():
                tail = _exact_topk(vectors[g:n], queries, k, tail_mask, margins)
        out = []
        for qi in range(queries.shape[0]):
            cand = labels[qi]
            cand = np.unique(cand[cand >= 0]).astype(np.intp)
            scores = _rescore(vectors, cand, queries[qi])
            if tail is not None:
                cand = np.concatenate([cand, tail[qi][0] + g])
                scores = np.concatenate([scores, tail[qi][1]])
            best = top_k(scores, k, tiebreak=cand)
            out.append((cand[best], scores[best]))
        return out

    # ------------------------------------------------------------------ access

    def __repr__(self) -> str:
        st = self._state
        return (
            f"VectorIndex(docs={st.n}, dimension={self._dim}, metric={self._metric!r}, "
            f"model_id={self.model_id!r}, ann={st.ann is not None})"
        )

    def get_vector(self, doc_id: str) -> NDArray[np.float32]:
        """A copy of the stored (normalised, for cosine) vector of ``doc_id``."""
        st = self._state
        if doc_id not in st.positions:
            raise KeyError(f"document {doc_id!r} is not in the index")
        return np.array(st.buf[st.positions[doc_id]])

    @property
    def vectors(self) -> NDArray[np.float32]:
        """The ``(n, d)`` matrix, read-only view (rows in index order).

        The view stays valid (and unchanged) after later edits: they never write rows
        a published snapshot can see.
        """
        view = self._state.vectors.view()
        view.flags.writeable = False
        return view

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
        st = self._state
        graph = st.graphs.graph if st.ann is not None else None
        return int(st.buf.nbytes) + (graph.nbytes() if graph is not None else 0)

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
        index._install(vectors if mmap else np.ascontiguousarray(vectors), docs,
                       positions=positions, ann=ann_config)
        return index


# ---------------------------------------------------------------------- snapshots

_ANN_TAIL_MIN = 1024
_ANN_TAIL_SHARE = 64
"""Rows appended after the graph was built are scanned exactly; once there are more
than ``max(_ANN_TAIL_MIN, n // _ANN_TAIL_SHARE)`` of them, the next edit folds them
into a copy of the graph (HNSW graphs cannot be searched while rows are added)."""


class _GraphLineage:
    """The HNSW graph shared by snapshots whose rows ``0..len(graph)-1`` are identical.

    Appending rows keeps the lineage; replacing or deleting rows starts a new one. A
    published graph is never modified: a fold replaces ``graph`` with a bigger copy.
    """

    __slots__ = ("graph", "lock")

    def __init__(self) -> None:
        self.graph: FaissHNSW | None = None
        self.lock = threading.Lock()


class _Snapshot(DocTable):
    """One version of the index: everything a search reads, never changed once published.

    The documents (``docs``, ``positions``, the ``masks`` memo) are its `DocTable`.
    ``buf`` may have spare rows past ``n`` (amortised appends write there, which no
    snapshot of this or an older version reads); the documents and rows ``0..n-1`` of
    ``buf`` are never modified.
    """

    __slots__ = ("buf", "n", "ann", "graphs", "_max_norm")

    def __init__(
        self,
        buf: NDArray[np.float32],
        n: int,
        docs: list[Doc],
        positions: dict[str, int] | None,
        *,
        ann: HNSWConfig | None = None,
        graphs: _GraphLineage | None = None,
        masks: dict[Hashable, NDArray[np.bool_]] | None = None,
        max_norm: float | None = None,
    ) -> None:
        super().__init__(docs, positions)
        self.buf = buf
        self.n = n
        self.ann = ann
        self.graphs = _GraphLineage() if graphs is None else graphs
        if masks is not None:
            self.masks = masks
        self._max_norm = max_norm

    @property
    def vectors(self) -> NDArray[np.float32]:
        return self.buf[: self.n]

    def max_norm(self) -> float:
        """An upper bound on the row norms (for `_margins`); computed once if unknown."""
        if self._max_norm is None:
            self._max_norm = _max_row_norm(self.vectors)
        return self._max_norm

    def derived(self, **changes: Any) -> _Snapshot:
        """The same rows and documents with other ANN settings (``ann``, ``graphs``)."""
        fields = {"ann": self.ann, "graphs": self.graphs, "masks": self.masks,
                  "max_norm": self._max_norm, **changes}
        return _Snapshot(self.buf, self.n, self.docs, self.positions, **fields)

    def edited(
        self,
        docs: list[Doc],
        matrix: NDArray[np.float32],
        old: list[int],
        new: list[int],
        dim: int,
    ) -> _Snapshot:
        """A new snapshot: ``docs[j]`` for ``j in old`` replace the documents (and rows)
        with their ids, ``docs[j]`` for ``j in new`` are appended. ``self`` is untouched."""
        n = self.n
        need = n + len(new)
        buf = self.buf if self.buf.shape[1] == dim else np.zeros((0, dim), dtype=np.float32)
        docs_list = list(self.docs)
        positions = dict(self.positions)
        graphs = self.graphs
        max_norm = self._max_norm
        if old:
            # Copy-on-write: searches on older snapshots keep reading the old rows.
            grown = np.empty((_capacity(n, need), dim), dtype=np.float32)
            grown[:n] = buf[:n]
            rows = [positions[docs[j].id] for j in old]
            grown[rows] = matrix[old]
            for j, row in zip(old, rows):
                docs_list[row] = docs[j]
            buf = grown
            graphs = _GraphLineage()  # HNSW cannot replace vectors: rebuilt on demand
        if new:
            if need > buf.shape[0] or not buf.flags.writeable:
                grown = np.empty((_capacity(n, need), dim), dtype=np.float32)
                grown[:n] = buf[:n]
                buf = grown
            # Rows n.. are past every published snapshot's end: nobody reads them yet.
            added = matrix[new] if len(new) != len(docs) else matrix
            buf[n:need] = added
            for offset, j in enumerate(new):
                docs_list.append(docs[j])
                positions[docs[j].id] = n + offset
        if max_norm is not None:  # an upper bound is all _margins needs
            max_norm = max(max_norm, _max_row_norm(matrix))
        state = _Snapshot(buf, need, docs_list, positions, ann=self.ann, graphs=graphs,
                          max_norm=max_norm)
        state._fold_tail()
        return state

    def _fold_tail(self) -> None:
        """Fold rows the graph lacks into a copy of it once they are too many to scan."""
        lineage = self.graphs
        graph = lineage.graph
        if self.ann is None or graph is None:
            return
        if self.n - len(graph) <= max(_ANN_TAIL_MIN, self.n // _ANN_TAIL_SHARE):
            return
        with lineage.lock:
            graph = lineage.graph
            if graph is not None and len(graph) < self.n:
                lineage.graph = graph.extended(self.buf[len(graph) : self.n])


def _capacity(n: int, need: int) -> int:
    return need if n == 0 else max(need, n + n // 2)


def _max_row_norm(vectors: NDArray[np.float32]) -> float:
    if not vectors.shape[0]:
        return 0.0
    return float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max(), dtype=np.float64))


# ---------------------------------------------------------------------- kernels


def _margins(queries: NDArray[np.float32], max_norm: float) -> NDArray[np.float64]:
    """Per query, twice a bound on how far a BLAS float32 score can be from `_rescore`'s.

    A float32 dot product of length d is within about ``d·u·|v|·|q|`` of the exact
    value whatever the summation order (u = 2^-24), and `_rescore` is within ``u·|v|·|q|``
    of it. Keeping every candidate within twice that bound of the k-th best means
    no document that `_rescore` ranks in the top k is lost by the first, BLAS pass.
    """
    d = queries.shape[1]
    return (d + 2) * 2.0**-22 * max_norm * np.linalg.norm(queries.astype(np.float64), axis=1)


def _rescore(
    vectors: NDArray[np.float32], rows: NDArray[np.intp], query: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Scores of ``rows`` for ``query`` computed one fixed way, rounded to float32.

    BLAS kernels sum in an order that depends on the matrix shape (one query or a
    block, how many rows), so the same document could score ``0.0`` alone and
    ``-1.4e-09`` in a batch and swap with a tied one. Here each score is float64
    products summed pairwise along its own row: it depends on nothing but the two
    vectors, so single, batched, filtered and approximate search agree exactly.
    """
    sub = vectors[rows].astype(np.float64)
    sub *= query.astype(np.float64)
    return sub.sum(axis=1).astype(np.float32)




def _exact_topk(
    vectors: NDArray[np.float32],
    queries: NDArray[np.float32],
    k: int,
    mask: NDArray[np.bool_] | None = None,
    margins: NDArray[np.float64] | None = None,
) -> list[tuple[NDArray[np.intp], NDArray[np.float32]]]:
    """Exact top ``k`` rows of ``vectors`` for each query, best first.

    Scores are computed in blocks of at most ``_BLOCK_ENTRIES`` (queries x rows), one
    BLAS product per block. Each query keeps a running threshold: its k-th best score
    so far minus its margin (see `_margins`). The first block sets it with one
    ``np.partition``; later blocks only compare against it (no partition per block:
    the comparison is the only pass over the scores besides the product itself) and
    the threshold is raised from the kept candidates when they pile up. Every row
    scoring at least the final k-th best minus the margin survives (ties included),
    and only the survivors are re-scored (`_rescore`) and sorted, so the result does
    not depend on how the queries were batched. Rows where ``mask`` is False are never
    returned.
    """
    n = vectors.shape[0]
    m = queries.shape[0]
    kk = min(k, n)
    if margins is None:
        margins = _margins(queries, _max_row_norm(vectors))
    cap = max(4 * kk, 256)  # candidates per query before its threshold is raised
    out = []
    for q0 in range(0, m, _QUERY_BLOCK):
        qb = queries[q0 : q0 + _QUERY_BLOCK]
        b = qb.shape[0]
        slack = margins[q0 : q0 + b]
        width = max(1024, _BLOCK_ENTRIES // b)
        thr = np.full(b, -np.inf, dtype=np.float32)
        cand_idx: list[list[NDArray[np.intp]]] = [[] for _ in range(b)]
        cand_sc: list[list[NDArray[np.float32]]] = [[] for _ in range(b)]
        counts = np.zeros(b, dtype=np.intp)
        for d0 in range(0, n, width):
            block = vectors[d0 : d0 + width]
            scores = (block @ qb[0])[None, :] if b == 1 else qb @ block.T
            if mask is not None:
                scores[:, ~mask[d0 : d0 + width]] = -np.inf
            c = scores.shape[1]
            if d0 == 0 and c > kk:
                thr = _down32(np.partition(scores, c - kk, axis=1)[:, c - kk] - slack)
            r, col = np.nonzero(scores >= thr[:, None])
            bounds = np.searchsorted(r, np.arange(b + 1))
            for j in np.flatnonzero(np.diff(bounds)):
                cols = col[bounds[j] : bounds[j + 1]]
                cand_idx[j].append(cols + d0)
                cand_sc[j].append(scores[j, cols])
            counts += np.diff(bounds)
            for j in np.flatnonzero(counts > cap):
                idx = np.concatenate(cand_idx[j])
                sc = np.concatenate(cand_sc[j])
                kth = np.partition(sc, sc.size - kk)[sc.size - kk]
                thr[j] = max(thr[j], _down32(kth - slack[j]))
                keep = sc >= thr[j]
                cand_idx[j], cand_sc[j] = [idx[keep]], [sc[keep]]
                counts[j] = int(keep.sum())
        for j in range(b):
            idx = np.concatenate(cand_idx[j]) if cand_idx[j] else np.zeros(0, np.intp)
            if mask is not None:
                idx = idx[np.concatenate(cand_sc[j]) > -np.inf] if cand_sc[j] else idx
            sc = _rescore(vectors, idx, queries[q0 + j])
            best = top_k(sc, k, tiebreak=idx)
            out.append((idx[best], sc[best]))
    return out


def _down32(value: Any) -> Any:
    """``value`` as float32, rounded towards -inf (a threshold that never rises by rounding).

    Comparing float32 scores with a float32 threshold avoids a float64 copy of every
    score block; rounding down keeps every row the float64 threshold keeps.
    """
    low = np.asarray(value, dtype=np.float32)
    return np.where(low > value, np.nextafter(low, np.float32(-np.inf)), low)


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
    if texts is not None:
        texts = check_texts_argument(texts, paired=True)
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
    try:
        shape = np.shape(vectors)
    except ValueError:  # ragged nested lists: numpy's "inhomogeneous shape"
        lengths = sorted({len(v) for v in vectors if hasattr(v, "__len__")})
        raise ValueError(
            f"vectors must have shape (n, dimension) with rows of equal length, got rows of "
            f"lengths {lengths[:5]}; every vector must have the same dimension"
        ) from None
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
