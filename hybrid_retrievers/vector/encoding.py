"""From texts to a validated vector matrix: the one encoding path of dense retrieval.

`embed_texts` drops duplicate texts, takes cached ones from an `EmbeddingCache`, sorts the
rest by length (so batches pad less), calls the embedder in batches (with an optional
progress bar), checks shape and finiteness and restores the input order. `check_matrix`
is the shape and finiteness check every vector input goes through.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..documents import check_unicode
from ..progress import progress
from ..validation import check_str_items

if TYPE_CHECKING:
    from .cache import EmbeddingCache

__all__ = ["embed_texts", "check_matrix", "check_model_id", "embedder_identity",
           "embedder_dimension", "DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE = 1024
"""Texts per ``embed_documents`` call."""


def check_model_id(model_id: Any) -> str:
    if not isinstance(model_id, str) or not model_id.strip():
        raise TypeError(f"model_id must be a non-empty str, got {model_id!r}")
    if not model_id.isascii():
        check_unicode(None, model_id, None, "model_id")
    return model_id


def embedder_identity(embedder: Any, model_id: str | None = None) -> str | None:
    """The identity under which ``embedder``'s vectors are cached and saved.

    ``model_id`` wins when given; otherwise the embedder's own ``model_id`` attribute,
    when it is a non-empty str; otherwise ``None`` (unknown: not cacheable).
    """
    if model_id is not None:
        return check_model_id(model_id)
    value = getattr(embedder, "model_id", None)
    if isinstance(value, str) and value.strip():
        return check_model_id(value)
    return None


def embed_texts(
    embedder: Any,
    texts: Sequence[str],
    *,
    cache: EmbeddingCache | None = None,
    model_id: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    show_progress: bool = False,
    dimension: int | None = None,
) -> NDArray[np.float32]:
    """Embed ``texts`` as documents into a validated C-contiguous float32 matrix.

    Each distinct text is encoded once (cached texts not at all); texts go to
    ``embedder.embed_documents`` longest first in chunks of ``batch_size`` (so the
    model pads less and a progress bar can advance), and the rows come back in input
    order.

    Args:
        embedder: anything with ``embed_documents(texts) -> (n, d)``.
        texts: the texts, in order.
        cache: reuse and record vectors here; needs a model identity (see module doc).
        model_id: overrides the embedder's ``model_id`` for the cache.
        batch_size: texts per ``embed_documents`` call.
        show_progress: show a tqdm bar (the ``progress`` extra) over the texts.
        dimension: the required vector length, when known.

    Raises:
        TypeError: texts not a list of str; ``embedder`` without ``embed_documents``.
        ValueError: a cache without a model identity, a wrong shape, NaN or inf.
    """
    if isinstance(texts, str) or not isinstance(texts, Iterable):
        raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
    texts = check_str_items(texts, "texts")
    if not callable(getattr(embedder, "embed_documents", None)):
        raise TypeError(
            "embedder must have an embed_documents(texts) method (the Embedder protocol), "
            f"got {type(embedder).__name__}"
        )
    if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
            or batch_size < 1):
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    identity = embedder_identity(embedder, model_id)
    if cache is not None and identity is None:
        raise ValueError(
            f"cannot cache embeddings of {type(embedder).__name__}: it has no model_id "
            "attribute naming its model; pass model_id='...' (the model name plus any option "
            "that changes its vectors) or drop the cache"
        )
    unique: dict[str, int] = {}
    inverse = np.fromiter((unique.setdefault(t, len(unique)) for t in texts), np.intp, len(texts))
    distinct = list(unique)
    vectors: NDArray[np.float32] | None = None
    missing = list(range(len(distinct)))
    if cache is not None and distinct:
        vectors, found = cache.get_many(identity, distinct)  # type: ignore[arg-type]
        missing = np.flatnonzero(~found).tolist()
        with cache._lock:
            cache.hits += len(distinct) - len(missing)
            cache.misses += len(missing)
    if missing:
        todo = sorted(missing, key=lambda j: -len(distinct[j]))
        fresh = _encode_chunks(embedder, [distinct[j] for j in todo], batch_size, show_progress)
        if dimension is not None and fresh.shape[1] != dimension:
            raise ValueError(
                f"the embedder returned {fresh.shape[1]}-d vectors but {dimension}-d ones are "
                "needed (the index's dimension); use the embedder the index was built with"
            )
        if vectors is None or vectors.shape[1] != fresh.shape[1]:
            if vectors is not None and len(missing) < len(distinct):
                raise ValueError(
                    f"cached vectors for {identity!r} are {vectors.shape[1]}-d but the embedder "
                    f"now returns {fresh.shape[1]}-d ones; its model_id must change with its model"
                )
            vectors = np.zeros((len(distinct), fresh.shape[1]), dtype=np.float32)
        vectors[todo] = fresh
        if cache is not None:
            cache.put_many(identity, [distinct[j] for j in todo], fresh)  # type: ignore[arg-type]
    if vectors is None:  # no texts at all
        return np.zeros((0, dimension or 0), dtype=np.float32)
    if dimension is not None and vectors.shape[1] != dimension:
        raise ValueError(
            f"cached vectors are {vectors.shape[1]}-d but {dimension}-d ones are needed"
        )
    if len(distinct) == len(texts):
        return np.ascontiguousarray(vectors)
    return np.ascontiguousarray(vectors[inverse])


def _encode_chunks(
    embedder: Any, texts: list[str], batch_size: int, show_progress: bool
) -> NDArray[np.float32]:
    bar = progress(total=len(texts), show=show_progress, desc="embedding", unit="text")
    try:
        parts = []
        for start in range(0, len(texts), batch_size):
            chunk = texts[start : start + batch_size]
            out = check_matrix(embedder.embed_documents(chunk), len(chunk), "embed_documents()",
                                offset=start, texts=chunk)
            if parts and out.shape[1] != parts[0].shape[1]:
                raise ValueError(
                    f"embed_documents() returned {out.shape[1]}-d vectors after "
                    f"{parts[0].shape[1]}-d ones; an embedder must keep one dimension"
                )
            parts.append(out)
            bar.update(len(chunk))
    finally:
        bar.close()
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def check_matrix(
    value: Any,
    n: int,
    name: str,
    *,
    offset: int = 0,
    texts: Sequence[str] | None = None,
) -> NDArray[np.float32]:
    """``value`` as a finite (n, d) C-contiguous float32 matrix, or a clear error."""
    try:
        matrix = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a 2-d array of floats, got {type(value).__name__} ({exc})"
        ) from None
    if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] < 1:
        raise ValueError(
            f"{name} must have shape ({n}, dimension), one row per text, got shape {matrix.shape}"
        )
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        what = f" (text {texts[bad]!r:.60})" if texts is not None else ""
        raise ValueError(
            f"{name} row {offset + bad}{what} holds NaN or infinite values; vectors must be finite"
        )
    return np.ascontiguousarray(matrix)


def embedder_dimension(embedder: Any) -> int | None:
    """The embedder's ``dimension`` attribute when it has a usable one."""
    value = getattr(embedder, "dimension", None)
    if callable(value):
        value = value()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
        return int(value)
    return None
