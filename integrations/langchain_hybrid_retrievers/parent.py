"""LangChain ``ParentDocumentRetriever`` over the core `ParentChildSearcher`.

Two ways to build one. LangChain's (a drop-in for ``langchain_classic.retrievers.
ParentDocumentRetriever``): ``ParentDocumentRetriever(vectorstore=..., docstore=...,
child_splitter=...)``, filled with ``add_documents``; the children are cut with
``child_splitter.split_documents`` and stored in LangChain's layout (their parent's id
under ``id_key``). This package's: ``from_documents`` (splitting, auto-merge and the
recipe are the core's, `ParentChildSearcher.from_docs`), over BM25, hybrid or any child
store. Searching is `MultiVectorRetriever`'s; the stores' adapters are in `.stores`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_core.stores import BaseStore
from pydantic import field_validator

from hybrid_retrievers import Doc
from hybrid_retrievers.parent import ParentChildSearcher, ParentStore
from hybrid_retrievers.text import PARENT_ID_KEY, as_splitter, child_id

from ._base import fields_factory
from ._convert import copy_metadata, documents_to_docs
from .embeddings import as_embedder
from .multi_vector import MATCHED_CHILDREN_KEY, MultiVectorRetriever
from .stores import LangChainChildIndex, LangChainParentStore, as_child_searcher, as_parent_store

__all__ = ["LangChainChildIndex", "LangChainParentStore", "MATCHED_CHILDREN_KEY",
           "ParentDocumentRetriever"]


def split_documents(splitter: Any, documents: list[Document]) -> list[Document]:
    """``splitter.split_documents(documents)`` for a LangChain text splitter; for another
    splitter the core accepts (a callable or ``split_text``), its chunks of each document
    with a copy of that document's metadata."""
    method = getattr(splitter, "split_documents", None)
    if callable(method):
        return list(method(documents))
    split = as_splitter(splitter)
    return [Document(page_content=chunk, metadata=copy_metadata(d.metadata))
            for d in documents for chunk in split(d.page_content)]


class ParentDocumentRetriever(MultiVectorRetriever):
    """Match small chunks, return their parent documents (backed by `ParentChildSearcher`).

    LangChain's way (a drop-in for ``langchain_classic.retrievers.ParentDocumentRetriever``):
    build it empty over a vector store and a docstore (or ``byte_store``) with a
    ``child_splitter`` (and optionally a ``parent_splitter``), then ``add_documents``.
    Children carry their document's metadata (only ``child_metadata_fields`` when given)
    and its id under ``id_key``; searching is `MultiVectorRetriever`'s (``search_kwargs["k"]``
    counts children unless ``k=`` asks for exactly ``k`` parents). This package's way:
    `from_documents` (BM25 or hybrid children by default; ``k`` counts parents).

    Each returned `Document` is a parent with its best child's score under ``score_key``,
    the ``"rank"`` and ``"matched_children"``.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.stores import InMemoryStore
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langchain_text_splitters import CharacterTextSplitter
        >>> from langchain_hybrid_retrievers import ParentDocumentRetriever
        >>> retriever = ParentDocumentRetriever(
        ...     vectorstore=InMemoryVectorStore(DeterministicFakeEmbedding(size=16)),
        ...     docstore=InMemoryStore(),
        ...     child_splitter=CharacterTextSplitter(separator=". ", chunk_size=20,
        ...                                          chunk_overlap=0))
        >>> retriever.add_documents(
        ...     [Document(page_content="Wings make lift. Flaps add lift.")], ids=["wings"])
        ['wings']
        >>> doc = retriever.invoke("Flaps add lift.")[0]
        >>> doc.id, doc.metadata["matched_children"][0]["id"]
        ('wings', 'wings:1')
        >>> fast = ParentDocumentRetriever.from_documents(
        ...     [Document(id="wings", page_content="Wings make lift. Flaps add lift."),
        ...      Document(id="bread", page_content="Yeast makes bread rise.")],
        ...     k=1, chunk_size=20, chunk_overlap=0,
        ... )
        >>> fast.invoke("flaps")[0].id
        'wings'
    """

    child_splitter: Any = None
    """Cuts each parent into children: a LangChain ``TextSplitter`` (its
    ``split_documents``), or any splitter the core accepts (a callable, ``split_text``)."""

    parent_splitter: Any = None
    """Cuts each added document into parents first; ``None`` keeps documents whole."""

    child_metadata_fields: Sequence[str] | None = None
    """Metadata keys copied from a parent to its children; ``None`` copies all."""

    langchain_arguments: ClassVar[tuple[str, ...]] = (
        *MultiVectorRetriever.langchain_arguments,
        "child_splitter", "parent_splitter", "child_metadata_fields")

    @field_validator("child_splitter", "parent_splitter")
    @classmethod
    def _check_splitter(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "split_documents", None)):
            as_splitter(value)  # its TypeError names what a splitter must be
        return value

    @field_validator("child_metadata_fields", mode="before")
    @classmethod
    def _check_fields(cls, value: Any) -> Any:
        if isinstance(value, str) or not (value is None or isinstance(value, Sequence)):
            raise TypeError(f"child_metadata_fields must be a list of metadata keys, got "
                            f"{value!r}; e.g. ['source']")
        return value

    @classmethod
    def _langchain_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        values = super()._langchain_form(values)
        if values.get("child_splitter") is None:
            raise TypeError(
                "ParentDocumentRetriever(vectorstore=...) needs child_splitter= (e.g. "
                "RecursiveCharacterTextSplitter(chunk_size=400)); or build it with "
                "ParentDocumentRetriever.from_documents(documents, ...)")
        return values

    @classmethod
    @fields_factory
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        k: int = 4,
        chunk_size: int = 400,
        chunk_overlap: int = 50,
        embedding: Any = None,
        child_splitter: Any = None,
        vectorstore: Any = None,
        parent_splitter: Any = None,
        docstore: BaseStore[str, Document] | ParentStore | None = None,
        **kwargs: Any,
    ) -> ParentDocumentRetriever:
        """Split parents into children, index the children, store the parents.

        The arguments are `ParentChildSearcher.from_docs`'s in LangChain's spelling:
        ``embedding`` makes the children hybrid; ``vectorstore`` (the name LangChain's own
        ``ParentDocumentRetriever`` gives the child store) indexes them in a LangChain
        vector store, its ``as_retriever()``, an editable retriever or one of this
        package's retrievers (`LangChainChildIndex`);
        ``docstore`` is a ``BaseStore[str, Document]`` or a core `ParentStore`.
        ``**kwargs`` are other retriever fields (``fetch_k``...).
        """
        searcher = ParentChildSearcher.from_docs(
            documents_to_docs(documents), chunk_size=chunk_size, chunk_overlap=chunk_overlap,
            splitter=child_splitter, parent_splitter=parent_splitter,
            embedder=None if embedding is None else as_embedder(embedding),
            child_searcher=None if vectorstore is None else as_child_searcher(vectorstore),
            parent_store=as_parent_store(docstore), k=k)
        return cls(searcher=searcher, k=k, **kwargs)

    def add_documents(
        self,
        documents: Iterable[Document],
        ids: Sequence[str] | None = None,
        add_to_docstore: bool = True,  # noqa: FBT001,FBT002 (LangChain's signature)
        **kwargs: Any,
    ) -> list[str]:
        """Add parents (split, children indexed); returns the parent ids.

        Args:
            documents: the documents (cut by ``parent_splitter`` first when set).
            ids: one id per parent (after ``parent_splitter``). Default: built LangChain's
                way, ``Document.id`` or a random UUID; from `from_documents`,
                ``Document.id`` or a content id.
            add_to_docstore: ``False`` when the parents are already in the docstore (then
                ``ids`` are needed, built LangChain's way): only children are indexed.

        Raises:
            ValueError: a parent id already present, or ``ids`` of the wrong length
                (nothing is added then).
            TypeError: other keyword arguments (LangChain passes them to the vector
                store's ``add_documents``; here the children are added with their ids).
        """
        if kwargs:
            raise TypeError(
                f"add_documents got unexpected argument(s) {', '.join(map(repr, kwargs))}: "
                "vector-store options are not passed on; add children yourself with "
                "vectorstore.add_documents(..., your options) naming their parent under "
                f"metadata[{self.id_key!r}] (see MultiVectorRetriever)")
        if self.vectorstore is None:
            parents = documents_to_docs(documents)
            if ids is not None:
                _check_ids(ids, parents)
                parents = [Doc(i, p.text, p.metadata) for i, p in zip(ids, parents)]
            return self.searcher.add(parents, store_parents=add_to_docstore)  # type: ignore[union-attr]
        parents, children = self._split_for_adding(list(documents), ids, add_to_docstore)
        with self._fields_in_force():
            return self.searcher.add(  # type: ignore[union-attr]
                parents, children=children, store_parents=add_to_docstore)

    async def aadd_documents(
        self,
        documents: Iterable[Document],
        ids: Sequence[str] | None = None,
        add_to_docstore: bool = True,  # noqa: FBT001,FBT002 (LangChain's signature)
        **kwargs: Any,
    ) -> list[str]:
        """`add_documents` in a worker thread (the event loop never runs the edit)."""
        return await asyncio.to_thread(self.add_documents, documents, ids, add_to_docstore,
                                       **kwargs)

    def _split_for_adding(self, documents: list[Document], ids: Sequence[str] | None,
                          add_to_docstore: bool) -> tuple[list[Doc], list[Doc]]:
        """LangChain's ``_split_docs_for_adding``: the parents and their children."""
        for n, document in enumerate(documents):
            if not isinstance(document, Document):
                raise TypeError(f"documents[{n}] must be a langchain_core Document, got "
                                f"{type(document).__name__}")
        if self.parent_splitter is not None:
            documents = split_documents(self.parent_splitter, documents)
        if ids is None:
            if not add_to_docstore:
                raise ValueError("add_to_docstore=False needs ids= (the ids of the parents "
                                 "already in the docstore)")
            ids = [d.id if d.id is not None else str(uuid.uuid4()) for d in documents]
        _check_ids(ids, documents)
        parents: list[Doc] = []
        children: list[Doc] = []
        for pid, document in zip(ids, documents):
            parents.append(Doc(pid, document.page_content, copy_metadata(document.metadata)))
            for n, chunk in enumerate(split_documents(self.child_splitter, [document])):
                children.append(Doc(child_id(pid, n), chunk.page_content,
                                    self._child_metadata(chunk.metadata, pid)))
        return parents, children

    def _child_metadata(self, metadata: Mapping[str, Any], pid: str) -> dict[str, Any]:
        """A child's metadata, LangChain's way: its own (``child_metadata_fields`` only,
        when set), its parent's id under ``id_key``; plus the core's ``parent_id`` link,
        which the child index does not store (see `LangChainChildIndex`)."""
        if self.child_metadata_fields is not None:
            missing = [key for key in self.child_metadata_fields if key not in metadata]
            if missing:
                raise KeyError(
                    f"child_metadata_fields names {missing}, which document {pid!r} lacks "
                    f"(its metadata keys: {sorted(metadata)})")
            metadata = {key: metadata[key] for key in self.child_metadata_fields}
        out = copy_metadata(metadata)
        if self.id_key != PARENT_ID_KEY and out.get(PARENT_ID_KEY, pid) != pid:
            raise ValueError(
                f"document {pid!r} has metadata {PARENT_ID_KEY!r}="
                f"{out[PARENT_ID_KEY]!r}, the key linking children to parents here; leave "
                f"it out with child_metadata_fields=, or use id_key={PARENT_ID_KEY!r}")
        out[self.id_key] = pid
        out[PARENT_ID_KEY] = pid
        return out

    def delete(self, ids: Sequence[str]) -> None:
        """Remove parents and all their children by parent id (children added through
        this retriever; others in the vector store stay, pointing at no parent).

        Raises:
            KeyError: naming unknown parent ids (nothing is deleted then).
        """
        self.searcher.delete(ids)  # type: ignore[union-attr]


def _check_ids(ids: Sequence[str], documents: Sequence[Any]) -> None:
    if isinstance(ids, str) or len(ids) != len(documents):
        raise ValueError(
            f"got {len(documents)} parent(s) and "
            f"{'a str' if isinstance(ids, str) else len(ids)} for ids=; pass one id per "
            "parent (after parent_splitter, if any)")
