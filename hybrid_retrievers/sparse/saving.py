"""Saving and loading a `SparseIndex`: one directory, no pickle, nothing trusted on load.

Format ``"sparse"`` version 1 (see `hybrid_retrievers.persistence` for the directory
layout, checksums and atomic writes): the documents
(`hybrid_retrievers.persistence.documents`), ``vocabulary.json`` (tokens in term-id order), the impact postings as ``.npy`` arrays (``postings_indptr``,
``postings_docs``, ``postings_weights`` in float32, ``doc_lengths``: each document's
number of tokens), written and checked by the same code as BM25's postings
(`inverted.saving.write_postings` / `read_postings`), and a checksummed manifest with the
model identity (``model_id``) and the embedder's class name; and, optional (readers
before it ignore it), the score cache's arrays and manifest entry
(`inverted.cache_saving`: each token's largest weight, the kernels' block metadata), so a
memory-mapped index reads only its queries' postings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..inverted.backend import Backend
from ..inverted.cache_saving import read_score_cache, write_score_cache
from ..inverted.postings import Snapshot
from ..inverted.saving import read_postings, write_postings
from ..inverted.scorer import ImpactScorer
from ..persistence import IndexFormatError, IndexReader, IndexWriter

__all__ = ["FORMAT_VERSION", "KIND", "write", "read"]

FORMAT_VERSION = 1
KIND = "sparse"
_VALUES = "postings_weights"
_SCORER = ImpactScorer()


def write(directory: Path, st: Snapshot, *, model_id: str | None, embedder: Any,
          backend: Backend | None = None) -> None:
    """Write the index files and their manifest into an existing empty directory.

    ``backend``: the saving index's (whether the kernels' metadata is worth saving).
    """
    w = IndexWriter(directory)
    counts = write_postings(w, st, values=_VALUES)
    cache = write_score_cache(w, st, _SCORER, None, backend or Backend())
    w.manifest(KIND, FORMAT_VERSION, {
        "model_id": model_id,
        "embedder": None if embedder is None else type(embedder).__name__,
        "scorer": "impact",
        **counts,
        **cache,
    })


def read(r: IndexReader, *, mmap: bool, verify: bool,
         backend: Backend | None = None) -> tuple[Snapshot, str | None]:
    """The checked snapshot of a saved sparse index and its recorded ``model_id``.

    The snapshot gets its saved score cache when it applies (`read_score_cache`).

    Raises:
        IndexFormatError: anything missing, corrupt, inconsistent or invalid.
    """
    model_id = r.manifest.get("model_id")
    if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
        raise IndexFormatError(f"{r.where()}: invalid model_id {model_id!r} in manifest")
    if r.manifest.get("scorer", "impact") != "impact":
        raise IndexFormatError(f"{r.where()}: unknown scorer {r.manifest.get('scorer')!r}")
    state = read_postings(r, mmap=mmap, verify=verify, values=_VALUES)
    read_score_cache(r, state, _SCORER, backend or Backend(), mmap=mmap, verify=verify)
    return state, model_id
