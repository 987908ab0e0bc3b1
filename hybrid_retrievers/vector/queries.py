"""Query vectors: batches, async embedding, several texts as one vector.

`VectorIndex.search_many` embeds its queries in one batch when the embedder can
(`embed_queries`). An async caller (`VectorIndex.asearch`) awaits the embedder's own
coroutine (``aembed_query`` / ``aembed_queries``, as
`hybrid_retrievers.models.EmbedderAdapter` has) when it has one (`coroutine_method`),
and keeps the model off the event loop otherwise. Query transforms (LlamaIndex's
``custom_embedding_strs``, several phrasings of one question) embed several texts and
search with their mean (`embed_queries`, `aembed_queries`, `mean_vector`). Written once
here, so the index and every adapter embed the same way.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["aembed_queries", "coroutine_method", "embed_queries", "mean_vector"]


def coroutine_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """``obj.name`` when it is a coroutine function (an async embedder method), else ``None``."""
    method = getattr(obj, name, None)
    return method if method is not None and inspect.iscoroutinefunction(method) else None


def mean_vector(vectors: Any, dtype: Any = np.float32) -> NDArray[Any]:
    """The plain mean of ``(n, dimension)`` query vectors (LlamaIndex's ``mean_agg``),
    computed in ``dtype`` (``np.float64`` keeps a framework's float lists exact).

    Raises:
        ValueError: for anything but a non-empty 2-d array of vectors (vectors of
            different lengths included).
    """
    try:
        matrix = np.asarray(vectors, dtype=dtype)
    except ValueError:  # ragged rows: say so rather than numpy's "inhomogeneous shape"
        lengths = sorted({int(np.size(v)) for v in vectors})
        raise ValueError(
            f"query vectors must all have one dimension, got lengths {lengths}") from None
    if matrix.ndim != 2 or not matrix.size:
        raise ValueError(f"query vectors must have shape (n, dimension), got {matrix.shape}")
    return matrix.mean(axis=0)


def embed_queries(embedder: Any, texts: Sequence[str]) -> Any:
    """The query vectors of ``texts``: ``embedder.embed_queries`` when it has one (one
    batch), else ``embed_query`` per text."""
    batch = getattr(embedder, "embed_queries", None)
    return batch(texts) if callable(batch) else [embedder.embed_query(t) for t in texts]


async def aembed_queries(embedder: Any, texts: Sequence[str]) -> Any:
    """`embed_queries` for async callers: the embedder's ``aembed_queries`` coroutine,
    else its ``aembed_query`` per text, else `embed_queries` in a worker thread."""
    batch = coroutine_method(embedder, "aembed_queries")
    if batch is not None:
        return await batch(texts)
    one = coroutine_method(embedder, "aembed_query")
    if one is not None:
        return [await one(t) for t in texts]
    return await asyncio.to_thread(embed_queries, embedder, texts)
