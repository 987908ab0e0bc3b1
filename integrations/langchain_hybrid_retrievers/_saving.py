"""`FusionRetriever.save_local` / `load_local` in the core's format (`fusion.saved`).

Only fusions of this package's BM25, dense and fusion retrievers can be saved: a vector
store or a remote retriever has no index here to write.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hybrid_retrievers.fusion.saved import child_kind, read_fusion, save_fusion
from hybrid_retrievers.persistence import IndexFormatError, current_files
from hybrid_retrievers.persistence.composite import (
    check_weights_restorable,
    fusion_settings,
    load_children,
)

from .bm25 import BM25Retriever
from .dense import DenseRetriever

__all__ = ["load_fusion_retriever", "save_fusion_retriever"]


def save_fusion_retriever(retriever: Any, folder_path: str | os.PathLike[str]) -> None:
    from .fusion import FusionRetriever

    children = []
    for i, child in enumerate(retriever.retrievers):
        kind = child_kind(i, child, {"bm25": BM25Retriever, "vector": DenseRetriever,
                                     "fusion": FusionRetriever}, "save")
        children.append((kind, child.save_local, {"k": child.k}))
    settings = fusion_settings(
        retriever, retriever.k, fetch_k=retriever.fetch_k, pass_fetch_k=retriever.pass_fetch_k
    )
    settings["score_key"] = retriever.score_key
    save_fusion(folder_path, children, settings)


def load_fusion_retriever(
    cls: Any, folder_path: str | os.PathLike[str], embedding: Any, overrides: dict[str, Any]
) -> Any:
    from .fusion import FusionRetriever

    settings, entries = read_fusion(folder_path)
    located = [(kind, _core_index_dir(folder_path, path, child), child)
               for kind, path, child in entries]
    children = load_children(folder_path, located, {
        "bm25": lambda path, k: BM25Retriever.load_local(path, k=k),
        "vector": lambda path, k: DenseRetriever.load_local(path, embedding, k=k),
        "fusion": lambda path, k: FusionRetriever.load_local(path, embedding, k=k),
    }, model=embedding, model_arg="embedding", method="load_local")
    check_weights_restorable(settings, overrides, folder_path, "load_local")
    return cls(retrievers=children, **{**settings, **overrides})


def _core_index_dir(folder_path: Any, path: Path, child: dict[str, Any]) -> Path:
    """The child's core index folder: LlamaIndex wraps it in ``index/`` beside its node fields."""
    sub = child.get("index_dir")
    if sub is None:
        return path
    if sub != "index":
        raise IndexFormatError(f"{folder_path}: bad index_dir {sub!r:.60} in manifest.json")
    return current_files(path) / sub
