"""Edits of a `VectorIndex` as new snapshots: append, replace in place, delete.

`VectorIndex`'s ``add*``, ``upsert*`` and ``delete`` check their input, encode it
(`encode_docs`) and publish the snapshot these functions return (`inserted`, `deleted`)
under the index's writer lock.

Every function here returns a new `Snapshot` and leaves its input as it was, so a
search still reading the old one is unaffected: appends write rows past every published
snapshot's ``n`` (or into a new, larger matrix), replacements and deletions copy.
Also the shaping of precomputed-vector input (`docs_for_vectors`, `row_count`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..document_columns import DocColumns
from ..documents import check_docs, check_texts_argument, make_docs
from ..types import Doc
from .embedding import EmbeddingCache, check_matrix, embed_texts
from .kernels import max_row_norm
from .snapshot import GraphLineage, Snapshot

__all__ = ["Metadatas", "deleted", "docs_for_vectors", "edited", "encode_docs", "inserted",
           "row_count", "vectors_and_docs"]

Metadatas = Iterable[Mapping[str, Any] | None] | None
"""One metadata mapping (or ``None``) per document, or ``None`` for none at all."""


def encode_docs(
    embedder: Any,
    docs: DocColumns,
    *,
    cache: EmbeddingCache | None,
    batch_size: int,
    show_progress: bool,
    dimension: int | None,
) -> NDArray[np.float32]:
    """The vectors of ``docs``' texts (`embed_texts`), or an error naming the fix when the
    index has no embedder."""
    if embedder is None:
        raise TypeError(
            "this index has no embedder, so it cannot encode texts; pass embedder= when "
            "creating or loading it, or add precomputed vectors with add_vectors()"
        )
    return embed_texts(
        embedder, docs.texts(), cache=cache, batch_size=batch_size,
        show_progress=show_progress, dimension=dimension,
    )


def inserted(
    st: Snapshot, docs: DocColumns, matrix: NDArray[np.float32], dim: int,
    rows: NDArray[np.int64] | None,
) -> Snapshot:
    """A new snapshot with ``docs`` (rows of ``matrix``, already ``dim``-d and normalised
    as the index stores them): appended when ``rows`` is None (ids ``st`` does not hold),
    else each at ``rows[j]`` (`DocTable.upsert_rows`): a held id's row is replaced in
    place, a new id appended."""
    if rows is None:
        old, new = [], list(range(len(docs)))
    else:
        held = rows < len(st.docs)
        old, new = np.flatnonzero(held).tolist(), np.flatnonzero(~held).tolist()
    return edited(st, docs, matrix, old, new, dim)


_ANN_TAIL_MIN = 1024
_ANN_TAIL_SHARE = 64
"""Rows appended after the graph was built are scanned exactly; once there are more
than ``max(_ANN_TAIL_MIN, n // _ANN_TAIL_SHARE)`` of them, the next edit folds them
into a copy of the graph (HNSW graphs cannot be searched while rows are added)."""


def edited(
    st: Snapshot,
    docs: DocColumns,
    matrix: NDArray[np.float32],
    old: list[int],
    new: list[int],
    dim: int,
) -> Snapshot:
    """A new snapshot: ``docs[j]`` for ``j in old`` replace the documents (and rows)
    with their ids, ``docs[j]`` for ``j in new`` are appended. ``st`` is untouched."""
    n = st.n
    need = n + len(new)
    buf = st.buf if st.buf.shape[1] == dim else np.zeros((0, dim), dtype=np.float32)
    placed = np.empty(len(docs), dtype=np.int64)  # each document's row, as for `placed`
    graphs = st.graphs
    max_norm = st.known_max_norm()
    if old:
        # Copy-on-write: searches on older snapshots keep reading the old rows.
        grown = np.empty((_capacity(n, need), dim), dtype=np.float32)
        grown[:n] = buf[:n]
        rows = st.positions.find([docs.id(j) for j in old])
        grown[rows] = matrix[old]
        placed[old] = rows
        buf = grown
        graphs = GraphLineage()  # HNSW cannot replace vectors: rebuilt on demand
    if new:
        if need > buf.shape[0] or not buf.flags.writeable:
            grown = np.empty((_capacity(n, need), dim), dtype=np.float32)
            grown[:n] = buf[:n]
            buf = grown
        # Rows n.. are past every published snapshot's end: nobody reads them yet.
        added = matrix[new] if len(new) != len(docs) else matrix
        buf[n:need] = added
        placed[new] = np.arange(n, need, dtype=np.int64)
    if max_norm is not None:  # an upper bound is all rounding_margins needs
        max_norm = max(max_norm, max_row_norm(matrix))
    state = Snapshot(buf, need, st.docs.placed(docs, placed), ann=st.ann, graphs=graphs,
                     max_norm=max_norm)
    _fold_tail(state)
    return state


def deleted(st: Snapshot, alive: NDArray[np.bool_]) -> Snapshot:
    """A new snapshot holding the rows and documents of ``st`` where ``alive``."""
    buf = np.ascontiguousarray(st.vectors[alive])  # a copy: st is left as it was
    docs = st.docs.kept(alive)
    # A new graph lineage: HNSW cannot remove rows, so it is rebuilt on demand.
    # The old largest norm still bounds the remaining rows (see rounding_margins).
    return Snapshot(buf, len(docs), docs, ann=st.ann, max_norm=st.known_max_norm())


def _fold_tail(st: Snapshot) -> None:
    """Fold rows the graph lacks into a copy of it once they are too many to scan."""
    lineage = st.graphs
    graph = lineage.graph
    if st.ann is None or graph is None:
        return
    if st.n - len(graph) <= max(_ANN_TAIL_MIN, st.n // _ANN_TAIL_SHARE):
        return
    with lineage.lock:
        graph = lineage.graph
        if graph is not None and len(graph) < st.n:
            lineage.graph = graph.extended(st.buf[len(graph) : st.n])


def _capacity(n: int, need: int) -> int:
    return need if n == 0 else max(need, n + n // 2)


def vectors_and_docs(
    vectors: Any, ids: Iterable[str] | None, metadatas: Metadatas,
    texts: Iterable[str] | None, caller: str, *, docs: Iterable[Doc] | None = None,
    taken: Mapping[str, Any] | None = None,
) -> tuple[NDArray[np.float32], DocColumns]:
    """The checked matrix and documents of an ``add_vectors`` / ``upsert_vectors`` call."""
    matrix = check_matrix(vectors, row_count(vectors), "vectors")
    if docs is None:
        docs = docs_for_vectors(matrix.shape[0], ids, metadatas, texts, caller, taken=taken)
    return matrix, check_docs(docs)


def docs_for_vectors(
    n: int,
    ids: Iterable[str] | None,
    metadatas: Metadatas,
    texts: Iterable[str] | None,
    caller: str,
    taken: Mapping[str, Any] | None = None,
) -> DocColumns:
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


def row_count(vectors: Any) -> int:
    """The number of rows of an ``(n, d)`` vector input, or a clear error."""
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
