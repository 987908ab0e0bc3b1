"""The saved form of a `VectorIndex`: ``vectors.npy`` + the documents + a manifest.

Format ``"vector"`` version 1 (see `hybrid_retrievers.persistence` for the directory
layout, checksums and atomic writes): the manifest records the metric, dimension,
document count, model identity, embedder class and ANN parameters (never the graph).
Nothing read back is trusted before it is checked.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._integrity import check_vectors
from ..document_columns import DocColumns
from ..persistence import IndexFormatError, IndexReader, IndexWriter
from ..persistence.documents import read_documents, write_documents
from .ann import HNSWConfig
from .embedding import embedder_dimension, embedder_identity
from .snapshot import Snapshot

__all__ = ["FORMAT_VERSION", "METRICS", "SavedIndex", "write_index", "read_saved"]

FORMAT_VERSION = 1
METRICS = ("cosine", "dot")


def write_index(
    directory: Path, st: Snapshot, *, metric: str, dimension: int | None,
    model_id: str | None, embedder: Any,
) -> None:
    """Write the files of ``st`` and their manifest into an existing empty directory."""
    w = IndexWriter(directory)
    layout = write_documents(w, st.docs)  # first: it is what refuses bad metadata
    w.array("vectors", st.buf[: st.n])
    w.manifest(
        "vector",
        FORMAT_VERSION,
        {
            "metric": metric,
            "dimension": dimension,
            "n_docs": st.n,
            "model_id": model_id,
            "embedder": None if embedder is None else type(embedder).__name__,
            "ann": None if st.ann is None else st.ann.to_config(),
            **layout,
        },
    )


@dataclass(frozen=True)
class SavedIndex:
    """What `read_saved` found: the checked parts a `VectorIndex` is made of."""

    metric: str
    dimension: int | None
    model_id: str | None
    vectors: NDArray[np.float32]
    docs: DocColumns
    ann: HNSWConfig | None


def read_saved(
    r: IndexReader, embedder: Any, *, mmap: bool, verify: bool, label: Any
) -> SavedIndex:
    """Read and check a saved vector index; ``embedder`` must match its dimension (when
    it is loaded: an embedder whose ``is_loaded`` is False is checked at its first query).

    Raises:
        IndexFormatError: a missing, corrupt, foreign or invalid part.
        ValueError: the embedder's dimension differs from the saved vectors'.
    """
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
    docs = read_documents(r, n_docs, mmap=mmap, verify=verify)
    if embedder is not None:
        # A model not loaded yet (a lazy embedder) is not loaded to learn its size: that
        # would cost a query-less load seconds; a query vector of another size is refused
        # when it comes (`search_vector`), and an added one by `add`.
        emb_dim = None if getattr(embedder, "is_loaded", True) is False \
            else embedder_dimension(embedder)
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
                stacklevel=6,
            )
    return SavedIndex(metric, dim, saved_id, vectors if mmap else np.ascontiguousarray(vectors),
                      docs, ann_config)
