"""Query vectors for framework callers: async embedding, several texts as one vector.

`VectorIndex.search` embeds a query with the index's embedder synchronously. A framework
adapter answering an async call wants more: await the embedder's own coroutine
(``aembed_query`` / ``aembed_queries``, as `hybrid_retrievers.models.EmbedderAdapter`
has) when it has one, and keep the model and the search off the event loop otherwise
(`asearch_text`). Query transforms (LlamaIndex's ``custom_embedding_strs``, several
phrasings of one question) embed several texts and search with their mean
(`embed_queries`, `aembed_queries`, `mean_vector`). Written once here, so every adapter
embeds and searches the same way.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..types import Hit
from ..validation import check_query

__all__ = ["aembed_queries", "asearch_text", "coroutine_method", "embed_queries",
           "mean_vector"]


def coroutine_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """``obj.name`` when it is a coroutine function (an async embedder method), else ``None``."""
    method = getattr(obj, name, None)
    return method if method is not None and inspect.iscoroutinefunction(method) else None


def mean_vector(vectors: Any) -> NDArray[np.float32]:
    """The plain mean of ``(n, dimension)`` query vectors (LlamaIndex's ``mean_agg``).

    Raises:
        ValueError: for anything but a 2-d array of vectors.
    """
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
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


async def asearch_text(index: Any, query: str, k: int, **options: Any) -> list[Hit]:
    """``index.search(query, k, **options)`` for async callers (``index`` a `VectorIndex`).

    The query is checked first; then the embedder's ``aembed_query`` coroutine is awaited
    when it has one and the vector searched in a worker thread, else the whole search
    (model call included) runs in a worker thread: the event loop never runs the model
    or the search.
    """
    aembed = coroutine_method(index.embedder, "aembed_query")
    if aembed is None:
        return await asyncio.to_thread(index.search, query, k, **options)  # type: ignore[no-any-return]
    vector = await aembed(check_query(query))
    return await asyncio.to_thread(index.search_vector, vector, k, **options)  # type: ignore[no-any-return]
