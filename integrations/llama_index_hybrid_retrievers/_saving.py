"""`FusionRetriever.persist` / `from_persist_dir`: the core's fusion format (`hybrid_retrievers.fusion.saved`).

Only fusions of this package's retrievers can be persisted (`BM25Retriever`,
`DenseRetriever`, and `FusionRetriever` / `HybridRetriever` over those); the folder is
the same one the LangChain adapter writes. Imported by ``fusion.py`` on first use.
"""

from __future__ import annotations

import os
from typing import Any

from hybrid_retrievers.fusion.saved import child_kind, read_fusion, save_fusion
from hybrid_retrievers.persistence.composite import (
    check_weights_restorable,
    fusion_settings,
    load_children,
)

from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .fusion import FusionRetriever

__all__ = ["persist_fusion_retriever", "load_fusion_retriever"]

_KINDS = {"bm25": BM25Retriever, "vector": DenseRetriever, "fusion": FusionRetriever}
# The saved settings the constructor takes (the LangChain adapter also writes its own).
_CONSTRUCTOR_KEYS = ("weights", "mode", "k_rrf", "names", "dedup")


def persist_fusion_retriever(retriever: Any, persist_dir: str | os.PathLike[str]) -> None:
    children = []
    for i, child in enumerate(retriever.retrievers):
        kind = child_kind(i, child, _KINDS, "persist")
        # BM25/dense persist wraps the core index (in "index/") with the node fields;
        # "index_dir" lets the LangChain adapter load the core index alone.
        extra = {"k": child.similarity_top_k}
        if kind != "fusion":
            extra["index_dir"] = "index"
        children.append((kind, child.persist, extra))
    save_fusion(persist_dir, children, fusion_settings(retriever, retriever.similarity_top_k))


def load_fusion_retriever(
    cls: Any, persist_dir: str | os.PathLike[str], embed_model: Any, overrides: dict[str, Any]
) -> Any:
    settings, entries = read_fusion(persist_dir)
    children = load_children(persist_dir, entries, {
        "bm25": lambda path, top: BM25Retriever.from_persist_dir(path, similarity_top_k=top),
        "vector": lambda path, top: DenseRetriever.from_persist_dir(
            path, embed_model=embed_model, similarity_top_k=top),
        "fusion": lambda path, top: FusionRetriever.from_persist_dir(
            path, embed_model=embed_model, similarity_top_k=top),
    }, model=embed_model, model_arg="embed_model", method="from_persist_dir")
    check_weights_restorable(settings, overrides, persist_dir, "from_persist_dir")
    kwargs = {key: value for key, value in settings.items() if key in _CONSTRUCTOR_KEYS}
    kwargs["similarity_top_k"] = settings.get("k", 4)
    return cls(children, **{**kwargs, **overrides})
