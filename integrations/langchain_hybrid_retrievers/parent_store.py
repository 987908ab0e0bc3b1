"""A LangChain ``BaseStore[str, Document]`` as the core's parent store.

`ParentDocumentRetriever` keeps its parents in a core `ParentStore` by default; given a
LangChain docstore (``InMemoryStore``, a Redis or SQL store...), it wraps it in
`LangChainParentStore`, which speaks the core's `ParentStoreLike` protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.stores import BaseStore

from hybrid_retrievers import Doc
from hybrid_retrievers.parent import ParentStore

from ._convert import copy_metadata, doc_to_document

__all__ = ["LangChainParentStore", "as_parent_store"]


class LangChainParentStore:
    """A LangChain ``BaseStore[str, Document]`` (``InMemoryStore``, a Redis or SQL
    store...) as the core's parent store; parents are stored as `Document`s, ``id`` set."""

    def __init__(self, store: BaseStore[str, Document]) -> None:
        if not isinstance(store, BaseStore):
            raise _not_a_docstore(store)
        self.store = store

    def get_many(self, ids: Sequence[str]) -> list[Doc | None]:
        """The parents for ``ids`` in order, ``None`` for ids the store lacks."""
        out: list[Doc | None] = []
        for i, value in zip(ids, self.store.mget(list(ids))):
            if value is None:
                out.append(None)
            elif isinstance(value, Document):
                out.append(Doc(i, value.page_content, copy_metadata(value.metadata)))
            else:
                raise TypeError(
                    f"the docstore holds a {type(value).__name__} under {i!r}; a parent "
                    "store must hold langchain Documents"
                )
        return out

    def put_many(self, docs: Sequence[Doc]) -> None:
        """Insert or replace parents (by id) as `Document` objects."""
        self.store.mset([(d.id, doc_to_document(d)) for d in docs])

    def delete(self, ids: Iterable[str]) -> None:
        """Remove parents by id."""
        self.store.mdelete(list(ids))

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.store.mget([doc_id])[0] is not None



def as_parent_store(docstore: Any) -> Any:
    """The core parent store for ``docstore``: a new `ParentStore` for ``None``, a
    `LangChainParentStore` for a LangChain ``BaseStore``, a core store as it is."""
    if docstore is None:
        return ParentStore()
    if isinstance(docstore, BaseStore):
        return LangChainParentStore(docstore)
    if all(callable(getattr(docstore, m, None)) for m in ("get_many", "put_many", "delete")):
        return docstore
    raise _not_a_docstore(docstore)


def _not_a_docstore(value: Any) -> TypeError:
    return TypeError("docstore must be a langchain_core.stores.BaseStore[str, Document] (e.g. "
                     f"InMemoryStore()) or a hybrid_retrievers ParentStore, got "
                     f"{type(value).__name__}")
