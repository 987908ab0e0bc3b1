"""A LangChain vector store or editable retriever as the core's child index.

`ParentDocumentRetriever.from_documents(vectorstore=...)` indexes its children in a LangChain
store; `LangChainChildIndex` gives the core's `ParentChildSearcher` the
``search``/``add_docs``/``delete`` it needs, and `as_child_searcher` picks it (or the
core index inside one of this package's retrievers) for a given ``vectorstore``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

from hybrid_retrievers import Doc
from hybrid_retrievers.types import Hit

from ._base import accepts_k
from ._convert import SCORE_KEYS, doc_to_document, document_score, document_to_doc
from ._runconfig import core_call_config
from .vectorstores import SCORED_SEARCH_TYPES

__all__ = ["LangChainChildIndex", "as_child_searcher"]


class LangChainChildIndex:
    """A LangChain vector store (or an editable retriever) as the core's child index.

    Search: a store's relevance-scored search (raw scores when it defines no relevance
    function), or a retriever's ``invoke(query, k=...)`` as a child run (scores from the
    metadata, else ``1 / rank``). A mapping filter goes to the store as ``filter=``, a
    callable one is applied to the children returned. Edits: ``add_documents`` / ``delete``.
    """

    def __init__(self, target: Any, *, search_kwargs: Mapping[str, Any] | None = None) -> None:
        if not (callable(getattr(target, "add_documents", None))
                and callable(getattr(target, "delete", None))):
            raise TypeError(
                f"vectorstore {type(target).__name__} cannot index children: pass a "
                "LangChain vector store (Chroma, PGVector, InMemoryVectorStore...), its "
                "as_retriever(), a retriever with add_documents() and delete(), or one of "
                "this package's retrievers"
            )
        self._store = target if isinstance(target, VectorStore) else None
        self._target = target
        self._kwargs = {k: v for k, v in (search_kwargs or {}).items() if k != "k"}
        self._ids: set[str] = set()

    def search(self, query: str, k: int, *, filter: Any = None) -> list[Hit]:
        """The top ``k`` children for ``query`` (see the class docstring)."""
        kwargs = dict(self._kwargs)
        predicate = filter if callable(filter) and not isinstance(filter, Mapping) else None
        if isinstance(filter, Mapping):
            kwargs["filter"] = dict(filter)
        if self._store is not None:
            try:
                pairs = self._store.similarity_search_with_relevance_scores(query, k=k, **kwargs)
            except NotImplementedError:
                pairs = self._store.similarity_search_with_score(query, k=k, **kwargs)
        else:
            config = core_call_config()
            if accepts_k(self._target, asynchronous=False):
                kwargs["k"] = k
            docs = self._target.invoke(query, config, **kwargs)
            pairs = [(d, document_score(d.metadata, SCORE_KEYS)) for d in docs]
        hits: list[Hit] = []
        for document, score in pairs:
            doc = document_to_doc(document)
            if predicate is not None and not predicate(doc):
                continue
            rank = len(hits) + 1
            hits.append(Hit(doc, 1.0 / rank if score is None else float(score), rank))
        return hits[:k]

    def add_docs(self, docs: Sequence[Doc]) -> list[str]:
        """Add children with ``add_documents`` (ids kept); returns their ids."""
        ids = [d.id for d in docs]
        self._target.add_documents([doc_to_document(d) for d in docs], ids=ids)
        self._ids.update(ids)
        return ids

    def delete(self, ids: Iterable[str]) -> None:
        """Remove children by id with the target's ``delete``."""
        ids = list(ids)
        self._target.delete(ids)
        self._ids.difference_update(ids)

    def __contains__(self, doc_id: object) -> bool:
        # Children added through this object; the store's own content is not listed.
        return doc_id in self._ids


def as_child_searcher(child: Any) -> Any:
    """A core child searcher for ``child``: a core index as it is, this package's retriever's
    core searcher, or a `LangChainChildIndex` over a LangChain store or retriever."""
    if isinstance(child, VectorStore):
        return LangChainChildIndex(child)
    if isinstance(child, VectorStoreRetriever):
        if child.search_type not in SCORED_SEARCH_TYPES:
            raise ValueError(
                f"vectorstore has search_type={child.search_type!r}; parent/child search "
                "needs ranked children: use 'similarity' (or pass the vector store itself)"
            )
        return LangChainChildIndex(child.vectorstore, search_kwargs=child.search_kwargs)
    if isinstance(child, BaseRetriever):
        for attr in ("searcher", "index"):
            inner = getattr(child, attr, None)
            if inner is not None and callable(getattr(inner, "search", None)):
                return inner
        return LangChainChildIndex(child)
    return child
