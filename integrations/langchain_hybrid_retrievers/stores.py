"""LangChain stores as the core parent/child searcher's two halves.

A LangChain docstore (``BaseStore[str, Document]``, or a bytes store through
``create_kv_docstore``) becomes the core's parent store (`LangChainParentStore`); a vector
store or an editable retriever becomes its child index (`LangChainChildIndex`), in this
package's layout (children name their parent under ``parent_id``) or in LangChain's
``MultiVectorRetriever`` layout (under ``id_key``, ``"doc_id"`` by default). The
retrievers over them are in `.multi_vector` and `.parent`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import BaseStore
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

from hybrid_retrievers import Doc
from hybrid_retrievers.integration import content_id
from hybrid_retrievers.parent import ParentStore
from hybrid_retrievers.text import PARENT_ID_KEY
from hybrid_retrievers.types import Hit

from ._base import accepts_k, checks_keywords, core_call_config
from ._convert import SCORE_KEYS, copy_metadata, doc_to_document, document_score

__all__ = ["SEARCH_TYPES", "LangChainChildIndex", "LangChainParentStore", "as_child_searcher",
           "as_parent_store", "check_search_type", "kv_docstore", "search_vector_store"]

SEARCH_TYPES = ("similarity", "similarity_score_threshold", "mmr")
"""LangChain's ``MultiVectorRetriever.search_type`` values (its ``SearchType`` enum)."""


# --------------------------------------------- a LangChain docstore as parents

class LangChainParentStore:
    """A LangChain ``BaseStore[str, Document]`` (``InMemoryStore``, ``create_kv_docstore(
    LocalFileStore(...))``, a Redis or SQL store...) as the core's parent store; parents
    are stored as `Document`s, ``id`` set.

    A ``str`` value is read as a document with that text and no metadata: LangChain's
    multimodal recipes put raw texts and base64 images in the docstore of a
    ``MultiVectorRetriever``.
    """

    @checks_keywords()
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
            elif isinstance(value, str):
                out.append(Doc(i, value))
            else:
                raise TypeError(
                    f"the docstore holds a {type(value).__name__} under {i!r}; a parent "
                    "store must hold langchain Documents (or str)"
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


def kv_docstore(byte_store: Any) -> BaseStore[str, Document]:
    """``byte_store`` (a ``ByteStore`` such as ``LocalFileStore``) as a document store, with
    langchain-classic's ``create_kv_docstore``, as LangChain's ``byte_store=`` does (so
    either retriever reads what the other wrote)."""
    if not isinstance(byte_store, BaseStore):
        raise TypeError("byte_store must be a langchain_core.stores.ByteStore (e.g. "
                        f"LocalFileStore(path)), got {type(byte_store).__name__}")
    try:
        from langchain_classic.storage import create_kv_docstore
    except ImportError:
        raise ImportError(
            "byte_store= stores documents with langchain-classic's create_kv_docstore: "
            "pip install langchain-classic, or pass docstore= (e.g. InMemoryStore())"
        ) from None
    return create_kv_docstore(byte_store)


def _not_a_docstore(value: Any) -> TypeError:
    return TypeError("docstore must be a langchain_core.stores.BaseStore[str, Document] (e.g. "
                     f"InMemoryStore()) or a hybrid_retrievers ParentStore, got "
                     f"{type(value).__name__}")


# ------------------------------------- a vector store or retriever as children

def check_search_type(value: Any) -> str:
    """A ``search_type`` (str or LangChain's ``SearchType`` enum) as its str; else ValueError."""
    if isinstance(value, Enum):
        value = value.value
    if value not in SEARCH_TYPES:
        raise ValueError(f"search_type must be one of {', '.join(map(repr, SEARCH_TYPES))}, "
                         f"got {value!r}")
    return str(value)


def search_vector_store(store: VectorStore, query: str, k: int, search_type: str,
                        kwargs: Mapping[str, Any]) -> list[tuple[Document, float | None]]:
    """The top ``k`` (document, score) pairs of ``store`` for ``search_type``.

    ``"similarity"`` uses the store's relevance-scored search, else its raw-scored one,
    else plain ``similarity_search`` (the only search a LangChain vector store must have;
    scores ``None``); ``"mmr"`` is ``max_marginal_relevance_search`` (scores ``None``);
    ``"similarity_score_threshold"`` is ``similarity_search_with_relevance_scores`` (with
    ``score_threshold`` from ``kwargs``).
    """
    if search_type == "mmr":
        return [(d, None) for d in store.max_marginal_relevance_search(query, k=k, **kwargs)]
    if search_type == "similarity_score_threshold":
        return list(store.similarity_search_with_relevance_scores(query, k=k, **kwargs))
    for scored in (store.similarity_search_with_relevance_scores,
                   store.similarity_search_with_score):
        try:
            return list(scored(query, k=k, **kwargs))
        except NotImplementedError:  # the base class's: this store has no such search
            continue
    return [(d, None) for d in store.similarity_search(query, k=k, **kwargs)]


_Settings = tuple[str, dict[str, Any], str | None]  # search_type, search kwargs, id_key

# The settings of the retriever calling a child index, for that index only (see `using`).
_CALLER: ContextVar[tuple[Any, _Settings] | None] = ContextVar(
    "langchain_child_index_settings", default=None)


class LangChainChildIndex:
    """A LangChain vector store (or an editable retriever) as the core's child index.

    Layout: with ``id_key=None`` (this package's), each child is stored with all the
    core's child metadata (``parent_id``, ``child_index``, ``start_index``); with an
    ``id_key`` (LangChain's ``MultiVectorRetriever`` layout), a child is stored with its
    own metadata and its parent's id under ``id_key``, and a stored document without
    ``id_key`` is skipped when searching (it belongs to no parent), as LangChain does.

    Search: a store's search for ``search_type`` (`search_vector_store`), or a
    retriever's ``invoke(query, k=...)`` as a child run (scores from the metadata, else
    ``1 / rank``, also for a store search without scores). A mapping filter goes to the
    store as ``filter=``, a callable one is applied to the children returned. Edits:
    ``add_documents`` / ``delete`` (ids the store returns for added children are
    remembered, so a store that assigns its own ids can still delete them).
    """

    def __init__(self, target: Any, *, search_kwargs: Mapping[str, Any] | None = None,
                 search_type: str = "similarity", id_key: str | None = None) -> None:
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
        self._settings: _Settings = _settings(search_type, search_kwargs, id_key)
        self._store_ids: dict[str, str] = {}  # our child id -> the id the store gave it

    @contextmanager
    def using(self, *, search_type: Any, search_kwargs: Mapping[str, Any] | None,
              id_key: str | None) -> Iterator[None]:
        """Search and store with these settings instead of the constructor's, for calls
        in this block (thread and task local): a retriever passes its fields as they are
        at each call, as LangChain reads them (``retriever.search_type = "mmr"`` works),
        even when copies of it share this index."""
        token = _CALLER.set((self, _settings(search_type, search_kwargs, id_key)))
        try:
            yield
        finally:
            _CALLER.reset(token)

    def _current(self) -> _Settings:
        caller = _CALLER.get()
        return caller[1] if caller is not None and caller[0] is self else self._settings

    def search(self, query: str, k: int, *, filter: Any = None) -> list[Hit]:
        """The top ``k`` children for ``query`` (see the class docstring)."""
        search_type, kwargs, id_key = self._current()
        kwargs = dict(kwargs)
        predicate = filter if callable(filter) and not isinstance(filter, Mapping) else None
        if isinstance(filter, Mapping):
            kwargs["filter"] = dict(filter)
        if self._store is not None:
            pairs = search_vector_store(self._store, query, k, search_type, kwargs)
        else:
            config = core_call_config()
            if accepts_k(self._target, asynchronous=False):
                kwargs["k"] = k
            docs = self._target.invoke(query, config, **kwargs)
            pairs = [(d, document_score(d.metadata, SCORE_KEYS)) for d in docs]
        hits: list[Hit] = []
        for document, score in pairs:
            doc = _child(document, id_key)
            if doc is None or (predicate is not None and not predicate(doc)):
                continue
            rank = len(hits) + 1
            hits.append(Hit(doc, 1.0 / rank if score is None else float(score), rank))
        return hits[:k]

    def add_docs(self, docs: Sequence[Doc]) -> list[str]:
        """Add children with ``add_documents`` (our ids passed); returns our ids."""
        id_key = self._current()[2]
        ids = [d.id for d in docs]
        given = self._target.add_documents([_document(d, id_key) for d in docs], ids=ids)
        if not (isinstance(given, list) and len(given) == len(ids)):
            given = ids
        self._store_ids.update(zip(ids, map(str, given)))
        return ids

    def delete(self, ids: Iterable[str]) -> None:
        """Remove children by id with the target's ``delete``."""
        ids = list(ids)
        self._target.delete([self._store_ids.get(i, i) for i in ids])
        for i in ids:
            self._store_ids.pop(i, None)

    def __contains__(self, doc_id: object) -> bool:
        # Children added through this object; the store's own content is not listed.
        return doc_id in self._store_ids


def _settings(search_type: Any, search_kwargs: Mapping[str, Any] | None,
              id_key: str | None) -> _Settings:
    kwargs = {k: v for k, v in (search_kwargs or {}).items() if k != "k"}
    return check_search_type(search_type), kwargs, id_key


def _child(document: Document, id_key: str | None) -> Doc | None:
    """A stored child as a core child (``parent_id`` set), ``None`` for no parent."""
    doc_id = str(document.id) if document.id is not None else content_id(document.page_content)
    if id_key is None:
        return Doc(doc_id, document.page_content, document.metadata)
    parent = document.metadata.get(id_key)
    if parent is None:
        return None
    if not isinstance(parent, str):
        raise ValueError(
            f"child {doc_id!r} names its parent under {id_key!r} as a "
            f"{type(parent).__name__} ({parent!r}); parent ids must be str"
        )
    metadata = copy_metadata(document.metadata)
    metadata[PARENT_ID_KEY] = parent
    return Doc(doc_id, document.page_content, metadata)


def _document(doc: Doc, id_key: str | None) -> Document:
    """A core child as the `Document` stored for it (see `LangChainChildIndex`'s layouts)."""
    if id_key is None:
        return doc_to_document(doc)
    metadata = copy_metadata(doc.metadata)
    metadata[id_key] = metadata.pop(PARENT_ID_KEY)
    return Document(id=doc.id, page_content=doc.text, metadata=metadata)


def as_child_searcher(child: Any) -> Any:
    """A core child searcher for ``child``: a core index as it is, this package's retriever's
    core searcher, or a `LangChainChildIndex` over a LangChain store or retriever (a
    ``VectorStoreRetriever``'s store, with its ``search_type`` and ``search_kwargs``)."""
    if isinstance(child, VectorStore):
        return LangChainChildIndex(child)
    if isinstance(child, VectorStoreRetriever):
        return LangChainChildIndex(child.vectorstore, search_kwargs=child.search_kwargs,
                                   search_type=child.search_type)
    if isinstance(child, BaseRetriever):
        for attr in ("searcher", "index"):
            inner = getattr(child, attr, None)
            if inner is not None and callable(getattr(inner, "search", None)):
                return inner
        return LangChainChildIndex(child)
    return child
