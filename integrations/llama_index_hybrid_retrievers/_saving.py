"""`FusionRetriever.persist` / `from_persist_dir`: the core's fusion format (`hybrid_retrievers.fusion.saved`).

Only fusions of this package's retrievers can be persisted (`BM25Retriever`,
`DenseRetriever`, and `FusionRetriever` / `HybridRetriever` over those); the folder is
the same one the LangChain adapter writes.
"""

from __future__ import annotations

import os
from typing import Any

from hybrid_retrievers.fusion.saved import child_kind, read_fusion, save_fusion

from .dense import DenseRetriever
from .bm25 import BM25Retriever

__all__ = ["persist_fusion_retriever", "load_fusion_retriever"]


def persist_fusion_retriever(retriever: Any, persist_dir: str | os.PathLike[str]) -> None:
    from .fusion import FusionRetriever

    children = []
    for i, child in enumerate(retriever.retrievers):
        kind = child_kind(i, child, {"bm25": BM25Retriever, "vector": DenseRetriever,
                                     "fusion": FusionRetriever}, "persist")
        # BM25/dense persist wraps the core index (in "index/") with the node fields;
        # "index_dir" lets the LangChain adapter load the core index alone.
        extra = {"k": child.similarity_top_k}
        if kind != "fusion":
            extra["index_dir"] = "index"
        children.append((kind, child.persist, extra))
    weights = retriever.weights
    settings = {
        "k": retriever.similarity_top_k,
        "weights": None if weights is None or callable(weights) else list(weights),
        "weights_callable": callable(weights),
        "mode": retriever.mode.value,
        "k_rrf": retriever.k_rrf,
        "names": None if retriever.names is None else list(retriever.names),
        "dedup": retriever.dedup.value,
    }
    save_fusion(persist_dir, children, settings)


def load_fusion_retriever(
    cls: Any, persist_dir: str | os.PathLike[str], embed_model: Any, overrides: dict[str, Any]
) -> Any:
    from .fusion import FusionRetriever

    settings, entries = read_fusion(persist_dir)
    children = []
    for kind, path, child in entries:
        top = child.get("k", 4)
        if kind == "bm25":
            children.append(BM25Retriever.from_persist_dir(path, similarity_top_k=top))
        elif embed_model is None:
            raise ValueError(
                f"{str(persist_dir)!r} holds a dense child: pass embed_model= (the model the "
                "index was built with) to from_persist_dir"
            )
        elif kind == "vector":
            children.append(DenseRetriever.from_persist_dir(
                path, embed_model=embed_model, similarity_top_k=top))
        else:
            children.append(FusionRetriever.from_persist_dir(
                path, embed_model=embed_model, similarity_top_k=top))
    if settings.pop("weights_callable", False) and "weights" not in overrides:
        raise ValueError(
            f"{str(persist_dir)!r} was saved with a callable weights rule, which is not saved; "
            "pass weights= (e.g. hybrid_retrievers.lexical_boost_rule()) to from_persist_dir"
        )
    # Only the keys the constructor knows; the LangChain adapter also writes its own.
    known = {"weights", "mode", "k_rrf", "names", "dedup"}
    kwargs = {key: value for key, value in settings.items() if key in known}
    kwargs["similarity_top_k"] = settings.get("k", 4)
    return cls(children, **{**kwargs, **overrides})
