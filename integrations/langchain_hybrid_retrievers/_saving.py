"""`FusionRetriever.save_local` / `load_local`: the core's fusion format (`hybrid_retrievers.fusion.saved`).

Only fusions of this package's retrievers can be saved (`BM25Retriever`,
`DenseRetriever`, and `FusionRetriever` / `HybridRetriever` over those): a vector store
or a remote retriever has no index here to write.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hybrid_retrievers.fusion.saved import child_kind, read_fusion, save_fusion
from hybrid_retrievers.persistence import IndexFormatError, current_files

from .dense import DenseRetriever
from .bm25 import BM25Retriever

__all__ = ["save_fusion_retriever", "load_fusion_retriever"]


def save_fusion_retriever(retriever: Any, folder_path: str | os.PathLike[str]) -> None:
    from .fusion import FusionRetriever

    children = []
    for i, child in enumerate(retriever.retrievers):
        kind = child_kind(i, child, {"bm25": BM25Retriever, "vector": DenseRetriever,
                                     "fusion": FusionRetriever}, "save")
        children.append((kind, child.save_local, {"k": child.k}))
    weights = retriever.weights
    settings = {
        "k": retriever.k,
        "weights": None if weights is None or callable(weights) else list(weights),
        "weights_callable": callable(weights),
        "mode": retriever.mode.value,
        "k_rrf": retriever.k_rrf,
        "fetch_k": retriever.fetch_k,
        "pass_fetch_k": retriever.pass_fetch_k,
        "names": None if retriever.names is None else list(retriever.names),
        "dedup": retriever.dedup.value,
        "score_key": retriever.score_key,
    }
    save_fusion(folder_path, children, settings)


def load_fusion_retriever(
    cls: Any, folder_path: str | os.PathLike[str], embedding: Any, overrides: dict[str, Any]
) -> Any:
    from .fusion import FusionRetriever

    settings, entries = read_fusion(folder_path)
    children = []
    for kind, path, child in entries:
        k = child.get("k", 4)
        path = _core_index_dir(folder_path, path, child)
        if kind == "bm25":
            children.append(BM25Retriever.load_local(path, k=k))
        elif embedding is None:
            raise ValueError(
                f"{str(folder_path)!r} holds a dense child: pass embedding= (the model the "
                "index was built with) to load_local"
            )
        elif kind == "vector":
            children.append(DenseRetriever.load_local(path, embedding, k=k))
        else:
            children.append(FusionRetriever.load_local(path, embedding, k=k))
    if settings.pop("weights_callable", False) and "weights" not in overrides:
        raise ValueError(
            f"{str(folder_path)!r} was saved with a callable weights rule, which is not saved; "
            "pass weights= (e.g. hybrid_retrievers.lexical_boost_rule()) to load_local"
        )
    return cls(retrievers=children, **{**settings, **overrides})


def _core_index_dir(folder_path: Any, path: Path, child: dict[str, Any]) -> Path:
    """The child's core index folder: LlamaIndex wraps it in ``index/`` beside its node fields."""
    sub = child.get("index_dir")
    if sub is None:
        return path
    if sub != "index":
        raise IndexFormatError(f"{folder_path}: bad index_dir {sub!r:.60} in manifest.json")
    return current_files(path) / sub
