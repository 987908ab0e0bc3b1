"""LangChain retriever over the core `BM25Index`.

A thin shell (see `_base`): scoring, top-k selection and filtering happen in the core,
so LangChain and LlamaIndex users get identical rankings.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from pydantic import model_validator

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.bm25 import BM25Params
from hybrid_retrievers.integration import is_content_id, query_field_weights
from hybrid_retrievers.types import Doc, Hit

from ._base import Filter, IndexRetriever
from ._convert import Ids, Metadatas, copy_metadata, copy_metadatas, hit_to_document

__all__ = ["BM25Retriever", "index_ids"]

_INDEX_IDS: ContextVar[bool] = ContextVar("langchain_hybrid_retrievers_bm25_index_ids",
                                          default=False)


@contextmanager
def index_ids() -> Iterator[None]:
    """Within: `BM25Retriever` returns every document under its index id (the content id
    of one given without an id, instead of ``None``). `FusionRetriever` asks its
    children inside it, so an id-less document from a BM25 child is the same document
    as from a dense or sparse child of this package, which return the index id."""
    token = _INDEX_IDS.set(True)
    try:
        yield
    finally:
        _INDEX_IDS.reset(token)


class BM25Retriever(IndexRetriever):
    """BM25 keyword retriever backed by `hybrid_retrievers.BM25Index`.

    Returned documents are new objects: the indexed ``id``, the stored metadata plus the
    BM25 score under ``score_key`` and the 1-based ``"rank"``. A document indexed
    without an id comes back with ``Document.id = None``, as from langchain-community's
    ``BM25Retriever`` (the index still keys it by its content id, `is_content_id`).
    Only documents matching a query term come back, so there may be fewer than ``k``. ``k`` and ``filter`` can be
    overridden per call (``invoke(q, k=3, filter={"source": "wiki"})``, and ``ainvoke``).

    A drop-in for ``langchain_community.retrievers.BM25Retriever``'s ``from_texts`` /
    ``from_documents``: ``k``, ``preprocess_func`` (the tokenizer, applied to documents
    and queries exactly as given: no lowercasing, stopwords or stemming are added),
    ``bm25_params`` and ``bm25_variant`` (``"okapi"``: Robertson's BM25 with rank_bm25's
    ``epsilon`` idf floor; ``"plus"``: BM25+), each meaning what rank_bm25 means by it.
    Refused: ``bm25_variant="l"`` (rank_bm25's BM25L multiplies by the term frequency
    once more than Lv & Zhai's BM25L, ``method="bm25l"`` here: no exact equivalent), and
    the constructor's ``vectorizer`` / ``docs`` (a rank_bm25 object, not an index: build
    with ``from_texts``). Kept on principle (docs/frameworks.md, "Differences from the originals"):
    without ``preprocess_func`` the analysis is this package's `Analyzer` (LangChain's is
    ``str.split``), without ``bm25_params`` / ``bm25_variant`` the variant is Lucene's;
    only documents matching a query term come back (no zero-score padding), best first
    with ties by index order; a callable ``preprocess_func`` works in memory, and
    `save_local` needs it registered (``hybrid_retrievers.text.register_tokenizer``).

    Fields (BM25F, see `hybrid_retrievers.bm25.fields`): ``from_documents(docs,
    fields={"title": 2.0, "text": 1.0})`` indexes ``Document.metadata["title"]`` as its
    own field beside ``page_content`` (the field ``"text"``), each length-normalised on
    its own; ``field_weights`` (a field, and per call: ``invoke(q, field_weights={"title":
    5.0})``) overrides weights for a query, fields left out keeping their build weight.
    `save_local` / `load_local` keep the fields (the core index saves them).

    Example:
        >>> from langchain_hybrid_retrievers import BM25Retriever
        >>> retriever = BM25Retriever.from_texts(
        ...     ["BM25 ranks documents by term frequency", "Cats sleep all day"],
        ...     metadatas=[{"topic": "ir"}, {"topic": "pets"}],
        ...     k=1,
        ... )
        >>> [d.metadata["topic"] for d in retriever.invoke("how does bm25 rank documents")]
        ['ir']
    """

    index: BM25Index
    """The core BM25 index that does all scoring; shared, not copied."""

    field_weights: dict[str, float] | None = None
    """Default per-query field weights on an index built with ``fields`` (``None``: the
    build-time weights); override per call with ``field_weights=``."""

    @model_validator(mode="after")
    def _check_field_weights(self) -> BM25Retriever:
        if self.field_weights is not None:
            query_field_weights(self.index.fields, self.field_weights)
        return self

    @property
    def docs(self) -> list[Document]:
        """The indexed documents in index order, as langchain-community's ``BM25Retriever.docs``
        holds them (a new list of new `Document`s: editing it changes nothing; use
        `add_documents` / `delete`); a document given without an id has ``id=None``, as
        there."""
        return [Document(id=_given_id(doc), page_content=doc.text,
                         metadata=copy_metadata(doc.metadata)) for doc in self.index.docs]

    def _documents(self, hits: Iterable[Hit]) -> list[Document]:
        if _INDEX_IDS.get():
            return super()._documents(hits)
        out = []
        for hit in hits:
            document = hit_to_document(hit, self.score_key)
            document.id = _given_id(hit.doc)
            out.append(document)
        return out

    def _search(self, query: str, k: int | None, filter: Filter | None,
                field_weights: Mapping[str, float] | None = None) -> list[Document]:
        top, where = self._resolve(k, filter)
        weights = self.field_weights if field_weights is None else field_weights
        return self._documents(self.index.search(query, top, filter=where,
                                                 field_weights=weights))

    async def _asearch(self, query: str, k: int | None, filter: Filter | None,
                       field_weights: Mapping[str, float] | None = None) -> list[Document]:
        return await asyncio.to_thread(self._search, query, k, filter, field_weights)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None,
        field_weights: Mapping[str, float] | None = None,
    ) -> list[Document]:
        """Return up to ``k`` documents for ``query``, best first (``field_weights``:
        this call's BM25F weights, see the class)."""
        return self._search(query, k, filter, field_weights)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None,
        field_weights: Mapping[str, float] | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`, in a worker thread."""
        return await self._asearch(query, k, filter, field_weights)

    @classmethod
    def from_texts(
        cls, texts: Iterable[str], metadatas: Metadatas = None, ids: Ids = None,
        bm25_params: Mapping[str, Any] | None = None,
        preprocess_func: Callable[[str], list[str]] | None = None, *,
        bm25_variant: str | None = None, analyzer: Analyzer | None = None,
        k1: float | None = None, b: float | None = None, method: str | None = None,
        delta: float | None = None, fields: Mapping[str, float] | None = None,
        **kwargs: Any,
    ) -> BM25Retriever:
        """Index raw texts (see `BM25Index.from_texts`) and return a retriever over them;
        ``**kwargs`` are retriever fields (``k``, ``filter``, ``score_key``, ``tags``...).

        ``bm25_params`` / ``bm25_variant`` / ``preprocess_func`` are LangChain's (see the
        class); ``analyzer``, ``k1``, ``b``, ``method``, ``delta`` are `BM25Index`'s, and
        so is ``fields`` (BM25F weights by field: ``"text"`` is the text, any other name
        the metadata value under it; see the class).

        Raises:
            TypeError: a ``bm25_params`` key the variant's rank_bm25 class does not take.
            ValueError: both spellings of one setting, or ``bm25_variant="l"`` / unknown.
        """
        if preprocess_func is not None:
            if analyzer is not None:
                raise ValueError("pass preprocess_func= or analyzer=, not both")
            if not callable(preprocess_func):
                raise TypeError(f"preprocess_func must be a callable str -> list[str], got "
                                f"{type(preprocess_func).__name__}")
            analyzer = Analyzer(tokenizer=preprocess_func, normalize=False, stopwords=None,
                                stemmer=None)
        params = _rank_bm25_params(bm25_params, bm25_variant,
                                  {"k1": k1, "b": b, "method": method, "delta": delta})
        keywords = {} if params is not None else {"k1": k1, "b": b, "method": method,
                                                  "delta": delta}
        index = BM25Index.from_texts(texts, ids=ids, metadatas=copy_metadatas(metadatas),
                                     analyzer=analyzer, params=params, fields=fields,
                                     **keywords)
        return cls(index=index, **kwargs)

    @classmethod
    def load_local(
        cls, folder_path: str | os.PathLike[str], *, mmap: bool = False, **kwargs: Any
    ) -> BM25Retriever:
        """Load a retriever saved with `save_local` (or any saved `BM25Index`, see
        `BM25Index.load`); ``**kwargs`` are retriever fields (``k``, ``filter``...)."""
        return cls(index=BM25Index.load(folder_path, mmap=mmap), **kwargs)


def _given_id(doc: Doc) -> str | None:
    """The id the caller gave ``doc``: ``None`` when the index made its content id."""
    return None if is_content_id(doc.id, doc.text, doc.metadata) else doc.id


# LangChain's bm25_variant -> (our method, the bm25_params keys its rank_bm25 class takes).
_VARIANTS = {"okapi": ("robertson", ("k1", "b", "epsilon")),
             "plus": ("bm25+", ("k1", "b", "delta"))}


def _rank_bm25_params(bm25_params: Mapping[str, Any] | None, bm25_variant: str | None,
                     keywords: Mapping[str, Any]) -> BM25Params | None:
    """The `BM25Params` of LangChain's ``bm25_params`` / ``bm25_variant`` (``None`` when
    neither is given). Either one means rank_bm25's world, so the variant defaults to
    ``"okapi"`` (rank_bm25's ``BM25Okapi``: ``method="robertson"`` with ``epsilon``).

    Raises:
        TypeError: ``bm25_params`` is not a mapping, or holds a key its class refuses.
        ValueError: ``bm25_variant`` is ``"l"`` or unknown, or a `BM25Index` keyword
            (``keywords``) is given too.
    """
    if bm25_params is None and bm25_variant is None:
        return None
    given = sorted(key for key, value in keywords.items() if value is not None)
    if given:
        raise ValueError(f"pass bm25_params= / bm25_variant= or {', '.join(given)}=, not both")
    variant = "okapi" if bm25_variant is None else bm25_variant
    if variant == "l":
        raise ValueError(
            "bm25_variant='l' (rank_bm25's BM25L) has no exact equivalent here: rank_bm25 "
            "multiplies Lv & Zhai's BM25L weight by the term frequency once more; pass "
            "method='bm25l' for the paper's formula, or bm25_variant='okapi' / 'plus'"
        )
    if variant not in _VARIANTS:
        raise ValueError(f"bm25_variant must be 'okapi', 'plus' or 'l', got {variant!r:.40}")
    method, accepted = _VARIANTS[variant]
    if bm25_params is None:
        bm25_params = {}
    if not isinstance(bm25_params, Mapping):
        raise TypeError(f"bm25_params must be a dict such as {{'k1': 1.2, 'b': 0.75}}, got "
                        f"{type(bm25_params).__name__}")
    unknown = sorted(set(bm25_params) - set(accepted))
    if unknown:
        hint = " (the tokenizer is preprocess_func=)" if "tokenizer" in unknown else ""
        raise TypeError(f"bm25_params for bm25_variant={variant!r} take {list(accepted)}, got "
                        f"unexpected {unknown}{hint}")
    return BM25Params(method, **bm25_params)
