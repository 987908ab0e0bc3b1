"""How a `QueryBundle` becomes a query vector, as in LlamaIndex's ``VectorIndexRetriever``.

``bundle.custom_embedding_strs`` (set by query transforms such as
``HyDEQueryTransform``) are each embedded as a query and averaged (`mean_vector`,
LlamaIndex's ``mean_agg``); `embedding_strs` validates them. `coroutine_method` finds an
embedder's async methods.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from llama_index.core.schema import QueryBundle
from numpy.typing import NDArray

from hybrid_retrievers.validation import check_query

__all__ = ["coroutine_method", "embedding_strs", "mean_vector"]


def embedding_strs(query_bundle: QueryBundle) -> list[str] | None:
    """The bundle's custom embedding strings, validated; ``None`` when it has none."""
    strs = query_bundle.custom_embedding_strs
    if strs is None:
        return None
    if isinstance(strs, str):
        raise TypeError(
            "QueryBundle.custom_embedding_strs must be a list of str, got a single str; "
            "wrap it in a list"
        )
    strs = list(strs)
    if not strs:
        raise ValueError(
            "QueryBundle.custom_embedding_strs must hold at least one string, got []; "
            "leave it None to embed query_str"
        )
    return [check_query(s, name=f"custom_embedding_strs[{i}]") for i, s in enumerate(strs)]


def mean_vector(vectors: Any) -> NDArray[np.float32]:
    """LlamaIndex's ``mean_agg``: the plain mean of the query vectors."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"query vectors must have shape (n, dimension), got {matrix.shape}")
    return matrix.mean(axis=0)


def coroutine_method(obj: Any, name: str) -> Any:
    """``obj.name`` when it is a coroutine function (an async embedder method), else ``None``."""
    method = getattr(obj, name, None)
    return method if method is not None and inspect.iscoroutinefunction(method) else None
