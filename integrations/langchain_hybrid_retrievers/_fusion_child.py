"""A LangChain retriever as a core searcher, for one `FusionRetriever` call.

The core plans and fuses (`hybrid_retrievers.fusion.FusionPlan`); what is LangChain's is
how a child is asked (``invoke`` / ``ainvoke`` with the caller's config, as a child run of
the fusion tagged ``retriever_<n>``, ``k=fetch_k`` when it takes it) and read back
(`document_to_hit`: ``Document.id`` is the identity, the score the first number under
the score keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config

from hybrid_retrievers.fusion import FusionCall, FusionMode
from hybrid_retrievers.types import Hit

from ._base import accepts_k
from ._convert import FUSION_KEY, SCORE_KEYS, document_to_hit, hit_to_document
from .vectorstores import with_store_scores

__all__ = ["ChildSearcher", "child_label", "children_for", "fused_documents"]


@dataclass(slots=True)
class ChildSearcher:
    """``search(query, k)`` / ``asearch`` over one LangChain child, for one fusion call."""

    child: Any
    config: RunnableConfig  # the caller's, with callbacks under the fusion run
    _: KW_ONLY
    pass_k: bool
    keys: Sequence[str]  # metadata keys read as the score, in order
    label: str

    def search(self, query: str, k: int) -> list[Hit]:
        kwargs = {"k": k} if self.pass_k else {}
        return self._hits(self.child.invoke(query, self.config, **kwargs))

    async def asearch(self, query: str, k: int) -> list[Hit]:
        kwargs = {"k": k} if self.pass_k else {}
        return self._hits(await self.child.ainvoke(query, self.config, **kwargs))

    def _hits(self, docs: Any) -> list[Hit]:
        if isinstance(docs, (str, bytes, Mapping)) or not isinstance(docs, Sequence):
            raise TypeError(f"child {self.label} must return a list of Document, got "
                            f"{type(docs).__name__}")
        return [document_to_hit(d, pos, self.keys) for pos, d in enumerate(docs, 1)]


def child_label(fusion: Any, i: int) -> str:
    """How error messages name child ``i``: ``retriever_<i + 1> ('name'), Type``."""
    name = f" ({fusion.names[i]!r})" if fusion.names is not None else ""
    return f"retriever_{i + 1}{name}, {type(fusion.retrievers[i]).__name__}"


def children_for(fusion: Any, call: FusionCall, run_manager: Any, config: RunnableConfig, *,
                 asynchronous: bool) -> list[ChildSearcher]:
    """The active children of one call of ``fusion`` (a `FusionRetriever`) as searchers.

    Child ``i`` runs as a child run tagged ``retriever_<i + 1>``, asked with
    ``k=fetch_k`` as ``pass_fetch_k`` says (``None``: when `accepts_k`). For the score
    modes, a plain ``as_retriever()`` child is searched as a `ScoredVectorStoreRetriever`.
    """
    keys = (fusion.score_key, *(key for key in SCORE_KEYS if key != fusion.score_key))
    out = []
    for i in call.active:
        child = fusion.retrievers[i]
        passes = fusion.pass_fetch_k
        if passes is None:
            passes = _accepts_k(fusion._accepts, child, asynchronous)
        if call.mode is not FusionMode.RRF:
            child = with_store_scores(child)
        child_run = patch_config(config, callbacks=run_manager.get_child(tag=f"retriever_{i + 1}"))
        out.append(ChildSearcher(child, child_run, pass_k=passes, keys=keys,
                                 label=child_label(fusion, i)))
    return out


def _accepts_k(cache: dict[Any, Any], child: Any, asynchronous: bool) -> bool:
    """`accepts_k`, remembered per child object (it reads signatures: ~60 µs a call)."""
    key = (id(child), asynchronous)
    hit = cache.get(key)
    if hit is None or hit[0] is not child:
        hit = cache[key] = (child, accepts_k(child, asynchronous=asynchronous))
    return hit[1]


def fused_documents(hits: Sequence[Hit], score_key: str) -> list[Document]:
    """New documents for fused hits: score under ``score_key``, provenance under ``"fusion"``."""
    return [hit_to_document(h, score_key, {FUSION_KEY: h.explanation[FUSION_KEY]}) for h in hits]
