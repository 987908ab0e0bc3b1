"""LangChain `HybridRetriever`: BM25 + dense (+ learned sparse) over the same documents, fused.

A retriever over ONE core `FusionSearcher` built by the core's hybrid recipe
(`FusionSearcher.hybrid`): per query one core call and one conversion of the fused hits
to documents, as for `BM25Retriever`. `FusionRetriever` (``fusion.py``) is for fusing
framework retrievers (vector stores, remote engines).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import field_validator

from hybrid_retrievers import BM25Index, SparseIndex, VectorIndex
from hybrid_retrievers.fusion import FusionMode, FusionSearcher
from hybrid_retrievers.integration import (
    FUSION_KEYWORDS,
    Weights,
    add_to_all,
    child_leaves,
    current_files,
    delete_from_all,
    field_names,
    keyword_names,
    make_docs,
    read_fusion,
)
from hybrid_retrievers.types import Hit, SparseEmbedder

from ._base import ARGUMENT_HINTS, CoreRetriever, Filter, check_arguments, checks_keywords
from ._convert import FUSION_KEY, Ids, Metadatas, copy_metadatas, documents_to_columns
from .embeddings import as_embedder

__all__ = ["HybridRetriever"]


class HybridRetriever(CoreRetriever):
    """BM25 + dense retrieval over the same documents, fused: the 90% case in one call.

    `from_documents` / `from_texts` build one core `FusionSearcher` with the core's
    hybrid recipe (`FusionSearcher.hybrid`: a `BM25Index` and a `VectorIndex` over the
    same ids, named ``"bm25"`` and ``"dense"`` in the provenance; ``sparse=`` adds a
    learned sparse `SparseIndex` leg, ``"sparse"``, fused by the core's three-way default,
    see `FusionSearcher.hybrid`). Each query is one
    call to it and one conversion of the fused hits: new documents with the fused score
    under ``score_key``, ``"rank"`` and the provenance under ``"fusion"``
    (`hybrid_retrievers.fusion`). ``k``, ``filter``, ``weights``, ``mode`` and
    ``fetch_k`` can be overridden per call.

    Trade-off: the children are core indexes, not LangChain retrievers, so LangChain
    traces show one ``HybridRetriever`` run and no per-child ``retriever_1`` /
    ``retriever_2`` runs. For those, fuse LangChain retrievers with `FusionRetriever`
    (at the cost of a framework round trip per child).

    Example:
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from langchain_hybrid_retrievers import HybridRetriever
        >>> retriever = HybridRetriever.from_texts(
        ...     ["wings generate lift", "cats sleep all day", "lift and drag of wings"],
        ...     embedding=HashingEmbedder(dimension=64), ids=["a", "b", "c"], k=2,
        ... )
        >>> sorted(d.id for d in retriever.invoke("wing lift"))
        ['a', 'c']
        >>> retriever.searcher.names
        ('bm25', 'dense')

    Three legs, with a learned sparse model (`hybrid_retrievers.models.SpladeEncoder` for a
    real one):

        >>> from hybrid_retrievers.models import HashingSparseEmbedder
        >>> three = HybridRetriever.from_texts(
        ...     ["wings generate lift", "cats sleep all day", "lift and drag of wings"],
        ...     embedding=HashingEmbedder(dimension=64), sparse=HashingSparseEmbedder(),
        ...     ids=["a", "b", "c"], k=2,
        ... )
        >>> three.searcher.names, three.searcher.plan.mode.value
        (('bm25', 'dense', 'sparse'), 'relative_score')
    """

    searcher: FusionSearcher
    """The core fusion that does all the work (children: its BM25 and dense indexes);
    shared, not copied."""

    reserved_key: ClassVar[str | None] = FUSION_KEY

    @field_validator("searcher", mode="before")
    @classmethod
    def _check_searcher(cls, value: Any) -> FusionSearcher:
        if not isinstance(value, FusionSearcher):
            raise TypeError(
                "searcher must be a hybrid_retrievers.FusionSearcher, got "
                f"{type(value).__name__}; build one with HybridRetriever.from_texts(...) "
                "or FusionSearcher.hybrid(...), or wrap another searcher in SearcherRetriever"
            )
        return value

    # ------------------------------------------------------------------ build

    @classmethod
    @checks_keywords(lambda cls: field_names(cls) | FUSION_KEYWORDS | {"c"})
    def from_texts(
        cls, texts: Iterable[str], embedding: Embeddings | Any, metadatas: Metadatas = None,
        ids: Ids = None, *, bm25: Mapping[str, Any] | bool | None = None,
        dense: Mapping[str, Any] | None = None,
        sparse: SparseEmbedder | Mapping[str, Any] | None = None, k: int = 4, **fusion: Any,
    ) -> HybridRetriever:
        """Index raw texts for BM25, dense (and learned sparse) retrieval and fuse them.

        Args:
            texts, metadatas, ids: the documents (``None`` ids: content ids; metadata is
                copied, nested values too).
            embedding: a LangChain `Embeddings` or a core `Embedder`.
            bm25: `BM25Index.from_texts` options (``k1``, ``b``, ``method``, ``delta``,
                ``analyzer``); ``False``: no BM25 leg (``bm25`` is then ``None``).
            dense: `VectorIndex.from_texts` options (``metric``, ``batch_size``,
                ``cache``).
            sparse: the learned sparse leg: its model (a `SparseEmbedder` such as
                `hybrid_retrievers.models.SpladeEncoder`), or `SparseIndex.from_texts`
                options with the model as ``"embedder"``; ``None``: two legs.
            k: the default number of fused documents.
            **fusion: `FusionSearcher` arguments (``mode``, ``weights``, ``k_rrf`` or
                EnsembleRetriever's ``c``,
                ``fetch_k``, ``names``, ``dedup``, ``max_workers``); the retriever's own
                fields (``filter``, ``score_key``, ``tags``...) are taken out first.
        """
        fields = {key: fusion.pop(key) for key in list(fusion) if key in cls.model_fields}
        if "c" in fusion:  # EnsembleRetriever's name of the RRF constant
            if "k_rrf" in fusion:
                raise ValueError("pass c= (EnsembleRetriever's name) or k_rrf=, not both")
            fusion["k_rrf"] = fusion.pop("c")
        # A LangChain community spelling (``c``, ``top_k``...): refused with its hint.
        check_arguments(cls, {key: value for key, value in fusion.items()
                              if key in ARGUMENT_HINTS})
        searcher = FusionSearcher.hybrid(texts, as_embedder(embedding), ids,
                                         copy_metadatas(metadatas), bm25=bm25, dense=dense,
                                         sparse=sparse, **fusion)
        return cls(searcher=searcher, k=k, **fields)

    @classmethod
    @checks_keywords(lambda cls: keyword_names(cls.from_texts) - {"texts", "metadatas", "ids"}
                     | field_names(cls) | FUSION_KEYWORDS | {"c"})
    def from_documents(cls, documents: Iterable[Document], embedding: Embeddings | Any,
                       **kwargs: Any) -> HybridRetriever:
        """`from_texts` over LangChain documents, keeping ``Document.id`` (content ids
        otherwise) and metadata."""
        texts, ids, metadatas = documents_to_columns(documents)
        return cls.from_texts(texts, embedding, metadatas, ids, **kwargs)

    # ------------------------------------------------------------------ children

    @property
    def bm25(self) -> BM25Index | None:
        """The core BM25 index: the leg named ``"bm25"``, or ``None`` when there is none
        (built with ``bm25=False``, or with other ``names=``: then ``searcher.leg(name)``)."""
        return self.searcher.leg("bm25")  # type: ignore[no-any-return]

    @property
    def dense(self) -> VectorIndex | None:
        """The core dense index (the leg named ``"dense"``), or ``None`` without one."""
        return self.searcher.leg("dense")  # type: ignore[no-any-return]

    @property
    def sparse(self) -> SparseIndex | None:
        """The core learned sparse index (the leg named ``"sparse"``), or ``None``."""
        return self.searcher.leg("sparse")  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ search

    def _extra(self, hit: Hit) -> Mapping[str, Any]:
        return {FUSION_KEY: hit.explanation[FUSION_KEY]}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None, weights: Weights | None = None,
        mode: FusionMode | str | None = None, fetch_k: int | None = None,
    ) -> list[Document]:
        """The fused top ``k`` for ``query``: one core call, one conversion."""
        top, where = self._resolve(k, filter)
        return self._documents(self.searcher.search(query, top, filter=where, weights=weights,
                                                    mode=mode, fetch_k=fetch_k))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, filter: Filter | None = None, weights: Weights | None = None,
        mode: FusionMode | str | None = None, fetch_k: int | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`, in a worker thread (the event loop never
        runs the search)."""
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager,  # type: ignore[arg-type]
            k=k, filter=filter, weights=weights, mode=mode, fetch_k=fetch_k)

    # ------------------------------------------------------------------ edits

    def add_documents(self, documents: Iterable[Document]) -> list[str]:
        """Add documents to both indexes; returns their ids (``Document.id`` or content ids).

        Raises:
            ValueError: if an id is already indexed (nothing is added then).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return self.add_texts(texts, metadatas, ids)

    def add_texts(self, texts: Iterable[str], metadatas: Metadatas = None,
                  ids: Ids = None) -> list[str]:
        """Add raw texts to both indexes (all or nothing); returns the ids added."""
        return add_to_all(child_leaves(self.searcher),
                          make_docs(texts, ids, copy_metadatas(metadatas)))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove documents by id from both indexes.

        Raises:
            KeyError: naming unknown ids (nothing is deleted then).
        """
        id_list = [ids] if isinstance(ids, str) else list(ids)
        delete_from_all(child_leaves(self.searcher), id_list, "the index")

    # ------------------------------------------------------------------ persistence

    def save_local(self, folder_path: str | os.PathLike[str]) -> None:
        """Save the fusion to a folder: `FusionSearcher.save` (every index and the fusion
        settings; JSON + ``.npy``, no pickle, no model). Query-time settings (``k``,
        ``filter``, ``score_key``) are not saved: pass them to `load_local`."""
        self.searcher.save(folder_path)

    @classmethod
    def load_local(cls, folder_path: str | os.PathLike[str], embedding: Embeddings | Any = None,
                   *, sparse_embedding: SparseEmbedder | None = None, mmap: bool = False,
                   **kwargs: Any) -> HybridRetriever:
        """Load a retriever saved with `save_local` (`FusionSearcher.load`; a LlamaIndex
        ``HybridRetriever.persist`` folder too) with the models it was built with
        (``embedding``: the dense leg's, ``sparse_embedding``: the learned sparse leg's);
        ``**kwargs`` are retriever fields. `IndexFormatError` for a bad folder."""
        folder = _fusion_folder(folder_path)
        check_models(folder, "HybridRetriever.load_local", embedding=embedding,
                     sparse_embedding=sparse_embedding)
        searcher = FusionSearcher.load(
            folder, None if embedding is None else as_embedder(embedding),
            sparse_embedder=sparse_embedding, mmap=mmap)
        return cls(searcher=searcher, **kwargs)


def check_models(folder: str | os.PathLike[str], method: str, **models: Any) -> None:
    """Refuse, naming the argument of ``method``, a saved fusion whose dense (``vector``)
    or learned sparse child has no model among ``models`` (``embedding``,
    ``sparse_embedding``). A bad folder is left to the loader's own error."""
    try:
        kinds = {kind for kind, _, _ in read_fusion(folder)[1]}
    except ValueError:
        return
    for kind, argument, what in (("vector", "embedding", "a dense index"),
                                 ("sparse", "sparse_embedding", "a learned sparse index")):
        if kind in kinds and models.get(argument) is None:
            raise ValueError(f"{str(folder)!r} holds {what}: pass {argument}= (the model "
                             f"the index was built with) to {method}")


def _fusion_folder(folder: str | os.PathLike[str]) -> Path:
    """The core fusion folder: ``folder``, or the ``index/`` that LlamaIndex's persisted
    ``HybridRetriever`` keeps beside its node fields."""
    path = Path(folder)
    try:
        kind = json.loads((path / "manifest.json").read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return path
    return current_files(path) / "index" if kind == "llama_index_retriever" else path
