"""The one recipe for a parent/child searcher: split, index the children, store the parents.

`from_docs` is `ParentChildSearcher.from_docs` (and `from_texts` its raw-text form);
the LangChain and LlamaIndex ``ParentDocumentRetriever`` factories convert their
documents, stores and indexes and call it instead of repeating these steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..documents import check_docs, make_docs
from ..text.splitting import (
    CHILD_INDEX_KEY,
    PARENT_ID_KEY,
    START_INDEX_KEY,
    SentenceSplitter,
    split_parents,
)
from ..types import Doc
from .store import ParentStoreLike, check_parent_store

if TYPE_CHECKING:
    from .searcher import ParentChildSearcher

__all__ = ["SOURCE_ID_KEY", "default_child_index", "from_docs", "from_texts", "split_into_parents"]

SOURCE_ID_KEY = "source_id"
"""Metadata key of a parent cut by ``parent_splitter``: the id of the document it came from."""

_CHILD_KEYS = (PARENT_ID_KEY, CHILD_INDEX_KEY, START_INDEX_KEY)

P = TypeVar("P", bound="ParentChildSearcher")


def default_child_index(children: list[Doc], embedder: Any = None) -> Any:
    """BM25 over ``children``; with an ``embedder``, RRF of BM25 and dense (`FusionSearcher`)."""
    from ..bm25 import BM25Index

    bm25 = BM25Index.from_docs(children)
    if embedder is None:
        return bm25
    from ..fusion import FusionSearcher
    from ..vector import VectorIndex

    dense = VectorIndex.from_docs(children, embedder=embedder)
    return FusionSearcher([bm25, dense], names=["bm25", "dense"])


def split_into_parents(docs: Iterable[Doc], parent_splitter: Any) -> list[Doc]:
    """Cut whole documents into parents (LangChain's ``parent_splitter`` step).

    Each parent chunk gets id ``"<document id>:p<i>"`` and its document's metadata plus
    ``source_id`` (the document's id), so the chunks can be traced back.
    """
    out = []
    for chunk in split_parents(docs, parent_splitter):
        metadata = {k: v for k, v in chunk.metadata.items() if k not in _CHILD_KEYS}
        source = chunk.metadata[PARENT_ID_KEY]
        metadata[SOURCE_ID_KEY] = source
        position = chunk.metadata[CHILD_INDEX_KEY]
        out.append(Doc(f"{source}:p{position}", chunk.text, metadata))
    return out


def from_docs(
    cls: type[P],
    parents: Iterable[Doc],
    *,
    chunk_size: int = 400,
    chunk_overlap: int = 50,
    splitter: Any = None,
    parent_splitter: Any = None,
    embedder: Any = None,
    child_index: Callable[[list[Doc]], Any] | None = None,
    child_searcher: Any = None,
    parent_store: ParentStoreLike | None = None,
    k: int = 4,
    fetch_k: int | None = None,
    merge_threshold: float | None = None,
) -> P:
    """Split ``parents``, index the children and store the parents.

    Args:
        parents: the parent documents (ids are kept).
        chunk_size, chunk_overlap: for the default `SentenceSplitter` (characters).
        splitter: any splitter instead (then ``chunk_size``/``chunk_overlap`` are unused).
        parent_splitter: cut ``parents`` into smaller parents first (any splitter);
            see `split_into_parents` for their ids and ``source_id`` metadata.
        embedder: when given, children are indexed hybrid: a `FusionSearcher` (RRF)
            over a `BM25Index` and a `VectorIndex` with this embedder; otherwise BM25.
        child_index: a factory ``children -> searcher`` overriding both defaults.
        child_searcher: an existing editable index (or `FusionSearcher`) to add the
            children to instead of building one (``embedder`` is then unused); the
            parents are added as by `ParentChildSearcher.add`.
        parent_store: default a new `ParentStore`.
        k, fetch_k, merge_threshold: as for the constructor.

    Raises:
        ValueError: no parents, duplicate ids, no parent with any text (when the
            child index is built here), or both ``child_index`` and ``child_searcher``.
    """
    if child_index is not None and child_searcher is not None:
        raise ValueError("pass child_index= (a factory) or child_searcher= (an index), not both")
    parents = check_docs(parents)
    if not parents:
        raise ValueError("parents must hold at least one document, got none")
    if parent_splitter is not None:
        parents = split_into_parents(parents, parent_splitter)
    if splitter is None:
        splitter = SentenceSplitter(chunk_size, chunk_overlap)
    options = {"k": k, "fetch_k": fetch_k, "splitter": splitter, "merge_threshold": merge_threshold}
    if child_searcher is not None:
        searcher = cls(child_searcher, parent_store, **options)
        searcher.add(parents)
        return searcher
    children = split_parents(parents, splitter)
    if not children:
        raise ValueError("no parent has any text to split into children")
    index = default_child_index(children, embedder) if child_index is None else child_index(children)
    parent_store = check_parent_store(parent_store)
    parent_store.put_many(parents)
    return cls(index, parent_store, **options)


def from_texts(
    cls: type[P],
    texts: Iterable[str],
    ids: Iterable[str] | None = None,
    metadatas: Iterable[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> P:
    """`from_docs` for raw texts (missing ids become content ids)."""
    return from_docs(cls, make_docs(texts, ids, metadatas), **kwargs)
