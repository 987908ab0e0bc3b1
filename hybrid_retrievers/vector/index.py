"""VectorIndex: exact dense retrieval over one contiguous float32 matrix (the facade).

Documents are rows of a C-contiguous ``(n, d)`` float32 matrix. With ``metric="cosine"``
vectors are L2-normalised on the way in, so the score is the cosine similarity; with
``metric="dot"`` they are kept as given and the score is the inner product. A zero
vector stays zero under cosine (its similarity to anything is 0).

This class holds the index's state (its current `Snapshot`, settings and writer lock)
and every public method: build, edit, search, describe, save and load. The work is done
by functions over a snapshot next door, one job per module: `editing` (add, upsert,
delete: new copy-on-write `snapshot` versions), `search` (query checks and the choice
of kernel per query block), `kernels` (exact top-k), `queries` (batched and async query
embedding), `saving` (the file format), `embedding` (texts to vectors, each distinct
text once), `ann` (HNSW), `images` (image documents and vectors for `from_images`,
`add_images` and `search_image`).

Edit semantics: `add` refuses ids already in the index (like `BM25Index`); `upsert`
replaces the text, metadata and vector of existing ids in place and appends new ones;
`delete` removes ids and refuses unknown ones without removing anything.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from ..document_columns import DocColumns
from ..documents import EditableIndex, check_docs, make_docs
from ..optional import require
from ..persistence import AtomicSave, IndexReader, read_index
from ..types import Doc, Hit, MetadataFilter
from ..validation import check_k, check_number, check_queries, check_query
from .ann import HNSWConfig
from .editing import (
    Metadatas,
    deleted,
    docs_for_vectors,
    encode_docs,
    inserted,
    row_count,
    vectors_and_docs,
)
from .embedding import (
    DEFAULT_BATCH_SIZE,
    EmbeddingCache,
    check_matrix,
    embedder_dimension,
    embedder_identity,
)
from .images import embed_query_image, image_documents, image_embedder
from .kernels import normalize
from .queries import coroutine_method, embed_queries
from .saving import FORMAT_VERSION, METRICS, read_saved, write_index
from .search import ann_enabled, query_matrix, search_block
from .snapshot import GraphLineage, Snapshot, graph_of

__all__ = ["VectorIndex", "METRICS", "FORMAT_VERSION"]


class VectorIndex(AtomicSave, EditableIndex):
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

    `save` records the metric, dimension and model identity; an ANN graph is not saved,
    only its parameters (it is rebuilt on the first approximate search). `save`, the
    document accessors (``len``, ``in``, `get`, `ids`, `docs`) and the edits (`add`,
    `add_docs`, `upsert`, `upsert_docs`, `delete`) are shared with `BM25Index`
    (`AtomicSave`, `EditableIndex`). Texts are encoded through the `EmbeddingCache` when
    one is given, so upserting an unchanged text costs no model call.

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
        batch_size: int = DEFAULT_BATCH_SIZE,
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
        batch_size = check_number(batch_size, "batch_size", low=1, integer=True)
        self._metric = metric
        self._embedder = embedder
        self._cache = cache
        self._batch_size = int(batch_size)
        if dimension is None and embedder is not None:
            dimension = embedder_dimension(embedder)
        self._dim: int | None = None if dimension is None else _check_dimension(dimension)
        self._lock = threading.RLock()  # serialises writers; readers never take it
        self._flat_faiss = False  # exact scans through faiss.knn (same results)
        self._state = Snapshot(np.zeros((0, self._dim or 0), dtype=np.float32), 0,
                               DocColumns.empty(), max_norm=0.0)

    def _install(
        self,
        vectors: NDArray[np.float32],
        docs: DocColumns,
        *,
        ann: HNSWConfig | None = None,
    ) -> None:
        """Publish a complete new version of the index (used by `load`).

        ``vectors`` are stored as given (already normalised for cosine; may be a
        read-only memory map): one row per document of ``docs``.
        """
        with self._lock:
            self._state = Snapshot(vectors, len(docs), docs, ann=ann)

    @property
    def _buf(self) -> NDArray[np.float32]:
        """The current snapshot's whole buffer (spare rows included; a memmap after
        ``load(mmap=True)`` until the first edit)."""
        return self._state.buf

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
        batch_size: int = DEFAULT_BATCH_SIZE,
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
        batch_size: int = DEFAULT_BATCH_SIZE,
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
        matrix = check_matrix(vectors, row_count(vectors), "vectors")
        if matrix.shape[0] == 0:
            raise ValueError(
                "cannot build a vector index from an empty corpus; pass at least one vector"
            )
        docs = docs_for_vectors(matrix.shape[0], ids, metadatas, texts, "from_vectors")
        index = cls(embedder=embedder, metric=metric, dimension=matrix.shape[1])
        index.add_vectors(matrix, docs=docs)
        return index

    @classmethod
    def from_images(
        cls,
        images: Iterable[Any],
        ids: Iterable[str | None] | None = None,
        metadatas: Metadatas = None,
        texts: Iterable[str | None] | None = None,
        *,
        embedder: Any,
        metric: str = "cosine",
        show_progress: bool = False,
    ) -> VectorIndex:
        """Index images with an image embedder (CLIP: `hybrid_retrievers.models.ClipEmbedder`).

        Each image is one document (see `hybrid_retrievers.vector.images`): id
        ``image_id(image)`` unless given, ``image_metadata(image)`` merged with the
        caller's metadata, and as text the caller's ``texts[i]`` (a caption), else the
        metadata's ``"caption"`` / ``"alt"`` / ``"alt_text"`` / ``"title"``, else the file
        name. Text queries (`search`)
        go through the embedder's text side, so text finds images; `search_image` finds
        images by an image.

        Args:
            images: paths, file bytes, data URIs, PIL images or ``LoadedImage`` objects.
            ids, metadatas, texts: one per image (``None`` items take the defaults).
            embedder: has ``embed_images``, ``embed_documents`` and ``embed_query``.
            metric: ``"cosine"`` (default) or ``"dot"``.
            show_progress: a progress bar over images.

        Raises:
            TypeError: an embedder without ``embed_images``, or arguments of wrong kinds.
            ValueError: no images, mismatched lengths, duplicate ids.
            hybrid_retrievers.images.ImageError: an image that cannot be loaded (named).

        Example:
            >>> from PIL import Image
            >>> from hybrid_retrievers.models import ClipEmbedder
            >>> red = Image.new("RGB", (64, 48), (220, 30, 30))
            >>> index = VectorIndex.from_images([red], texts=["a red card"],
            ...                                 embedder=ClipEmbedder())  # doctest: +SKIP
            >>> index.search_image(red, k=1)[0].doc.text  # doctest: +SKIP
            'a red card'
        """
        index = cls(embedder=image_embedder(embedder, "from_images"), metric=metric)
        index.add_images(images, ids, metadatas, texts, show_progress=show_progress)
        return index

    # ------------------------------------------------------------------ editing

    # `add`, `add_docs`, `upsert`, `upsert_docs` and `delete` are `EditableIndex`'s, over
    # the hooks below; the ``*_vectors`` and ``*_images`` methods give the payload themselves.

    def add_vectors(self, vectors: Any, ids: Iterable[str] | None = None,
                    metadatas: Metadatas = None, texts: Iterable[str] | None = None, *,
                    docs: Iterable[Doc] | None = None) -> list[str]:
        """Add precomputed vectors with their ids (or `Doc` objects); return the ids."""
        matrix, docs = vectors_and_docs(vectors, ids, metadatas, texts, "add_vectors",
                                        docs=docs, taken=self._state.positions)
        if len(docs) != matrix.shape[0]:
            raise ValueError(
                f"got {matrix.shape[0]} vectors but {len(docs)} documents; pass one each"
            )
        self._state.check_new(docs)
        return self._write(docs, self._stored(docs, matrix), upsert=False)

    def add_images(self, images: Iterable[Any], ids: Iterable[str | None] | None = None,
                   metadatas: Metadatas = None, texts: Iterable[str | None] | None = None, *,
                   show_progress: bool = False) -> list[str]:
        """Embed and add images as documents (see `from_images`); return their ids.

        A given id already in the index is an error; a default (image) id already in it
        gets a ``#2``... suffix. A bad image anywhere leaves the index unchanged. The
        index's `EmbeddingCache` holds text vectors only: images are always embedded.
        """
        embedder = image_embedder(self._embedder, "add_images")
        docs, matrix = image_documents(embedder, images, ids, metadatas, texts,
                                       taken=self._state.positions, dimension=self._dim,
                                       show_progress=show_progress)
        return self._write(docs, self._stored(docs, matrix), upsert=False)

    def upsert_vectors(self, vectors: Any, ids: Iterable[str] | None = None,
                       metadatas: Metadatas = None,
                       texts: Iterable[str] | None = None) -> list[str]:
        """`upsert` with precomputed vectors."""
        matrix, docs = vectors_and_docs(vectors, ids, metadatas, texts, "upsert_vectors")
        return self._write(docs, self._stored(docs, matrix), upsert=True)

    def _payload(self, docs: DocColumns, show_progress: bool) -> NDArray[np.float32]:
        """The stored vectors of ``docs``' texts, through the cache (outside the lock)."""
        matrix = encode_docs(self._embedder, docs, cache=self._cache,
                             batch_size=self._batch_size, show_progress=show_progress,
                             dimension=self._dim)
        return self._stored(docs, matrix)

    def _stored(self, docs: DocColumns, matrix: NDArray[np.float32]) -> NDArray[np.float32]:
        """``matrix`` as the index stores it (checked, normalised for cosine)."""
        if not docs:
            return matrix
        self._check_dimension_of(matrix)
        return normalize(matrix) if self._metric == "cosine" else matrix

    def _written(self, state: Snapshot, docs: DocColumns, matrix: NDArray[np.float32],
                 rows: NDArray[np.int64] | None) -> Snapshot:
        """A new snapshot with ``docs`` and their stored vectors (`editing.inserted`); the
        first vectors of an index without a dimension set it."""
        if self._dim is None:
            self._dim = int(matrix.shape[1])
        self._check_dimension_of(matrix)  # another thread may have set it first
        return inserted(state, docs, matrix, self._dim, rows)

    def _deleted(self, state: Snapshot, alive: NDArray[np.bool_]) -> Snapshot:
        return deleted(state, alive)

    def _check_dimension_of(self, matrix: NDArray[np.float32]) -> None:
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise ValueError(
                f"vectors must be {self._dim}-d (this index's dimension), got {matrix.shape[1]}-d"
            )

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
        raw = self._require_embedder().embed_query(query)
        return self._search_block(self._query_matrix(raw, single=True, name="embed_query()"),
                                  k, filter, exact)[0]

    async def asearch(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """`search` for async callers: the event loop never runs the model or the search.

        The query and ``k`` are checked first, before any model call. When the embedder
        has an ``aembed_query`` coroutine (a framework model with a native async client,
        through `hybrid_retrievers.models.EmbedderAdapter`) it is awaited and the vector
        searched in a worker thread (`search_vector`); otherwise the whole `search`, model
        call included, runs in a worker thread. The hits are those of `search`.

        Example:
            >>> import asyncio
            >>> from hybrid_retrievers.models import HashingEmbedder
            >>> index = VectorIndex.from_texts(["a cat", "a dog"], ids=["c", "d"],
            ...                                embedder=HashingEmbedder(dimension=32))
            >>> [hit.id for hit in asyncio.run(index.asearch("cat", k=1))]
            ['c']
        """
        check_query(query)
        k = check_k(k)
        aembed = coroutine_method(self._require_embedder(), "aembed_query")
        if aembed is None:
            return await asyncio.to_thread(self.search, query, k, filter=filter, exact=exact)
        vector = await aembed(query)
        return await asyncio.to_thread(self.search_vector, vector, k, filter=filter, exact=exact)

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
        return self._search_block(self._query_matrix(vector, single=True), k, filter, exact)[0]

    def search_image(
        self,
        image: Any,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """The ``k`` documents most similar to ``image`` (embedded with ``embed_images``).

        Args:
            image: a path, file bytes, a data URI, a PIL image or a ``LoadedImage``.
            k, filter, exact: as for `search`.

        Raises:
            TypeError: the index has no embedder, or one without ``embed_images``.
            hybrid_retrievers.images.ImageError: the image cannot be loaded (named).
        """
        k = check_k(k)
        raw = embed_query_image(image_embedder(self._embedder, "search_image"), image)
        return self._search_block(self._query_matrix(raw, single=True, name="embed_images()"),
                                  k, filter, exact)[0]

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
        raw = embed_queries(self._require_embedder(), queries)
        q = self._query_matrix(raw, n=len(queries), name="query vectors")
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
        q = self._query_matrix(vectors)
        if q.shape[0] == 0:
            return []
        return self._search_block(q, k, filter, exact)

    def _search_block(self, q: NDArray[np.float32], k: int, filter: MetadataFilter | None,
                      exact: bool) -> list[list[Hit]]:
        return search_block(self._state, q, k, filter, exact, flat_faiss=self._flat_faiss)

    def _require_embedder(self) -> Any:
        if self._embedder is None:
            raise TypeError(
                "this index has no embedder, so it cannot encode text queries; pass embedder= "
                "when creating or loading it, or use search_vector()"
            )
        return self._embedder

    def _query_matrix(
        self, value: Any, *, n: int | None = None, single: bool = False, name: str = "vector"
    ) -> NDArray[np.float32]:
        return query_matrix(value, dim=self._dim, cosine=self._metric == "cosine", n=n,
                            single=single, name=name)

    # ------------------------------------------------------------------ backends

    def enable_ann(self, config: HNSWConfig | None = None, **params: Any) -> Self:
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
        require("faiss", extra="ann", feature="approximate vector search")
        with self._lock:
            self._state = ann_enabled(self._state, config)
        return self

    def disable_ann(self) -> None:
        """Drop the graph; searches are exact again."""
        with self._lock:
            self._state = self._state.derived(ann=None, graphs=GraphLineage())

    def build_ann(self) -> None:
        """Build the graph now (it is otherwise built by the first approximate search)."""
        graph_of(self._state)

    def enable_flat_faiss(self) -> Self:
        """Run unfiltered exact scans through faiss's flat kernel (the ``ann`` extra).

        Results are identical to the numpy path, ties and scores included (see
        `hybrid_retrievers.vector.flat_faiss`); only the speed differs, which depends on the
        BLAS faiss was built with: measure it with ``benchmarks/dense_search.py``.
        Filtered searches and approximate (HNSW) searches are unaffected. Returns
        ``self``; not saved with the index (it is a choice of kernel, not data).
        """
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
        """``"cosine"`` or ``"dot"``."""
        return self._metric

    @property
    def embedder(self) -> Any:
        """The embedder of texts and queries (or ``None``)."""
        return self._embedder

    @property
    def cache(self) -> EmbeddingCache | None:
        """The embedding cache (or ``None``)."""
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

    def _save_into(self, directory: Path) -> None:
        """Write the index files and their manifest into an existing empty directory.

        The manifest records the metric, dimension and model identity. An ANN graph is
        not saved, only its parameters: it is rebuilt on the first approximate search.
        """
        with self._lock:
            write_index(directory, self._state, metric=self._metric, dimension=self._dim,
                        model_id=self.model_id, embedder=self._embedder)

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
            embedder: for text queries and additions; its dimension must match
                (checked now when its model is loaded, else at the first query: a
                lazy model is not loaded just to learn its size).
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
        saved = read_saved(r, embedder, mmap=mmap, verify=verify, label=label)
        index = cls(embedder=None, metric=saved.metric, dimension=saved.dimension, cache=cache)
        index._embedder = embedder
        index._loaded_model_id = saved.model_id
        index._install(saved.vectors, saved.docs, ann=saved.ann)
        return index


def _check_dimension(dimension: Any) -> int:
    return check_number(dimension, "dimension", low=1, integer=True)
