"""LangChain `FusionRetriever`: fuse any LangChain retrievers with the core's fusion.

Planning, running and fusing are the core's (`hybrid_retrievers.fusion.FusionPlan`,
`CallRunner`); this module wraps each child as a core searcher for one call
(`ChildSearcher`), converts the fused hits, and saves and loads a fusion of this
package's retrievers in the core's format (`hybrid_retrievers.fusion.saving`). Unlike
``EnsembleRetriever``, documents are identified by ``Document.id``, sync children run
concurrently too, the result is cut to ``k``, and every result keeps its fused score and
provenance. For BM25 + dense over the same documents, `HybridRetriever` (``hybrid.py``)
is one core searcher instead.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import RetrieverLike
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from hybrid_retrievers.fusion import DEFAULT_K_RRF, Dedup, FusionMode, reciprocal_rank_fusion
from hybrid_retrievers.integration import (
    CallRunner,
    FusionCall,
    FusionPlan,
    Weights,
    check_k_rrf,
    check_weights_restorable,
    child_kind,
    core_index_dir,
    fusion_settings,
    gather_calls,
    load_children,
    parse_enum,
    read_fusion,
    save_fusion,
)
from hybrid_retrievers.types import Doc, Hit, SparseEmbedder

from ._base import StrictRetriever, accepts_k, count_validator, current_config
from ._convert import FUSION_KEY, SCORE_KEYS, check_score_key, document_to_hit, hit_to_document
from .bm25 import BM25Retriever, index_ids
from .dense import DenseRetriever
from .hybrid import HybridRetriever
from .sparse import SparseRetriever
from .vectorstores import with_store_scores

__all__ = ["FusionRetriever"]


class FusionRetriever(StrictRetriever):
    """Fuse the rankings of several LangChain retrievers into one (RRF by default).

    Each call asks every child whose weight is positive for its candidates, at the same
    time (threads carrying the LangChain context, at most ``max_concurrency``; async:
    ``asyncio.gather``), each as a child run tagged ``retriever_<n>`` as in
    ``EnsembleRetriever`` (see `ChildSearcher`), fuses the lists and returns the top
    ``k``: new documents (the best-ranked copy) with the fused score under ``score_key``,
    ``"rank"`` and the provenance under ``"fusion"`` (`hybrid_retrievers.fusion`).
    ``k``, ``weights``, ``mode`` and ``fetch_k`` can be overridden per call.

    How many candidates a child returns is the child's own ``k``, as in
    ``EnsembleRetriever`` (``bm25.k = 1`` means one document from it), unless you ask
    for more: ``fetch_k=n`` (a field, or per call) is passed as ``k=n`` to each child that
    takes ``k``. `weighted_reciprocal_rank` is ``EnsembleRetriever``'s method of that
    name: RRF over lists you already have, identity by ``page_content`` (or ``id_key``).

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_hybrid_retrievers import BM25Retriever, FusionRetriever
        >>> docs = [Document(id="a", page_content="wing lift at low speed"),
        ...         Document(id="b", page_content="lift of a flat plate"),
        ...         Document(id="c", page_content="bread dough")]
        >>> fused = FusionRetriever(
        ...     retrievers=[BM25Retriever.from_documents(docs),
        ...                 BM25Retriever.from_documents(docs[1:])],
        ...     names=["all", "some"], k=2,
        ... )
        >>> [(d.id, d.metadata["rank"]) for d in fused.invoke("wing lift")]
        [('b', 1), ('a', 2)]
        >>> [s["source"] for s in fused.invoke("wing lift")[0].metadata["fusion"]["sources"]]
        ['all', 'some']
    """

    retrievers: list[RetrieverLike]
    """The children: LangChain retrievers (or runnables from a query to documents)."""
    k: int = 4
    """Default number of fused documents to return (>= 1); override per call with ``k=``."""

    weights: Weights | None = None
    """One weight per child, or a callable ``weights(query)`` (see `FusionSearcher`)."""

    mode: FusionMode | str = FusionMode.RRF
    """The `hybrid_retrievers.FusionMode` (``"rrf"``, ``"relative_score"``, ...)."""

    k_rrf: float = Field(DEFAULT_K_RRF, alias="c")
    """The RRF constant (>= 0; 0 scores ``w / rank``), used by ``mode="rrf"``; ``c=`` is
    EnsembleRetriever's name."""

    id_key: str | None = None
    """EnsembleRetriever's ``id_key``: the metadata key whose value identifies a child's
    document (the fused result's ``Document.id`` is then that value); ``None``:
    ``Document.id`` (the content id of its text when it has none)."""

    fetch_k: int | None = None
    """Candidates asked of each child (``k=fetch_k`` to those that take ``k``); ``None``:
    each child returns its own ``k``, as in ``EnsembleRetriever``."""

    pass_fetch_k: bool | None = None
    """Pass ``k=`` to the children: ``None``: ``fetch_k`` to those that take ``k``, when
    ``fetch_k`` is set; ``True``: always (``fetch_k``, else ``max(k, 20)``, to every
    child); ``False``: never."""

    names: list[str] | None = None
    """One unique name per child, the provenance's ``"source"`` (default: its index)."""

    dedup: Dedup | str = Dedup.ID
    """``"id"`` (same ``Document.id``) or ``"content"`` (also the same text), `Dedup`."""

    score_key: str = "score"
    """Metadata key of the fused score (also the first key read as a child's score)."""

    model_config = ConfigDict(populate_by_name=True)

    _runner: CallRunner | None = PrivateAttr(default=None)
    _plan_cache: tuple[Any, FusionPlan] | None = PrivateAttr(default=None)
    _accepts: dict[Any, Any] = PrivateAttr(default_factory=dict)  # accepts_k per child

    @field_validator("retrievers", mode="before")
    @classmethod
    def _check_retrievers(cls, value: Any) -> Any:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise TypeError("retrievers must be a list of LangChain retrievers, got "
                            f"{type(value).__name__}; wrap a single retriever in a list")
        if not value:
            raise ValueError("retrievers must hold at least one retriever, got an empty list")
        return list(value)

    _check_k = count_validator("k")
    _check_fetch_k = count_validator("fetch_k", optional=True)

    @field_validator("mode", "dedup", mode="before")
    @classmethod
    def _check_enum(cls, value: Any, info: Any) -> Any:
        return parse_enum(FusionMode if info.field_name == "mode" else Dedup, value,
                          info.field_name)

    @field_validator("k_rrf", mode="before")
    @classmethod
    def _check_k_rrf(cls, value: Any) -> float:
        return check_k_rrf(value, "k_rrf")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        check_score_key(value)
        if value == FUSION_KEY:
            raise ValueError(f"score_key must differ from {FUSION_KEY!r} (the provenance's "
                             f"metadata key), got {value!r}; use e.g. 'fused_score'")
        return value

    @property
    def c(self) -> float:
        """EnsembleRetriever's name of ``k_rrf``."""
        return self.k_rrf

    def weighted_reciprocal_rank(self, doc_lists: list[list[Document]]) -> list[Document]:
        """``EnsembleRetriever.weighted_reciprocal_rank``: fuse ranked lists you already
        have, one per child, by weighted RRF (Cormack, Clarke & Büttcher 2009)::

            score(d) = Σ_i weights[i] / (c + rank_i(d))      (rank 1-based)

        computed by the core's `reciprocal_rank_fusion`. As there: a document is
        identified by its ``page_content`` (or ``metadata[id_key]`` when ``id_key`` is
        set), the first copy met (list 0 top to bottom, then list 1, ...) is returned,
        the very object given (no score or provenance is added), every fused document
        is returned, best first, and equal scores keep that first-appearance order
        (documents found only by lists of weight 0 come last, with score 0 there).
        Unlike there, a document repeated inside one list counts once, at its best
        position (the lists are rankings; the original's docstring asks for unique items).

        Example:
            >>> from langchain_core.documents import Document
            >>> from langchain_hybrid_retrievers import BM25Retriever, FusionRetriever
            >>> bm25 = BM25Retriever.from_texts(["1", "2"])
            >>> fusion = FusionRetriever(retrievers=[bm25, bm25], weights=[0.4, 0.5], c=0)
            >>> one, two = Document(page_content="1"), Document(page_content="2")
            >>> [d.page_content for d in fusion.weighted_reciprocal_rank([[one, two], [two, one]])]
            ['2', '1']

        Raises:
            ValueError: not one list per child, or weights that are a rule of the query.
            KeyError: a document without ``id_key`` in its metadata.
        """
        return weighted_reciprocal_rank(self, doc_lists)

    @model_validator(mode="after")
    def _check_plan(self) -> FusionRetriever:
        plan = self._plan()  # the core checks weights and names against the children
        if self.weights is not None and not callable(self.weights):
            self.weights = plan.weights
        return self

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None,
        weights: Weights | None = None, mode: FusionMode | str | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Invoke the children concurrently and return the fused top ``k``."""
        plan, call = self._resolve(query, k, weights, mode, fetch_k)
        config = current_config()
        depth = self._depth(call, fetch_k)
        children = _children_for(self, call, run_manager, config, depth, asynchronous=False)
        calls = [lambda c=c: c.search(query, depth) for c in children]
        with index_ids():  # id-less documents: one id from every child of this package
            results = self._run(calls, call, config.get("max_concurrency"))
        return self._documents(plan.fuse(call, results))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None, weights: Weights | None = None,
        mode: FusionMode | str | None = None, fetch_k: int | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: ``asyncio.gather`` of the children's ``ainvoke``."""
        plan, call = self._resolve(query, k, weights, mode, fetch_k)
        depth = self._depth(call, fetch_k)
        children = _children_for(self, call, run_manager, current_config(), depth,
                                 asynchronous=True)
        with index_ids():
            results = await gather_calls([c.asearch(query, depth) for c in children],
                                         self._note(call))
        return self._documents(plan.fuse(call, results))

    def save_local(self, folder_path: str | os.PathLike[str]) -> None:
        """Save every child index (this package's BM25, dense, sparse, hybrid or fusion
        retrievers, else `TypeError`) and the settings to one folder; models and a
        callable ``weights`` rule are not saved (pass them to `load_local`); ``k_rrf``
        (``c``) and ``id_key`` are."""
        children = []
        for i, child in enumerate(self.retrievers):
            kind = child_kind(i, child, {"bm25": BM25Retriever, "vector": DenseRetriever,
                                         "sparse": SparseRetriever,
                                         "fusion": (FusionRetriever, HybridRetriever)}, "save")
            children.append((kind, child.save_local, {"k": child.k}))
        # id_key only when set: the folder stays readable by LlamaIndex's FusionRetriever,
        # which refuses one that has it (it has no id_key).
        identity = {} if self.id_key is None else {"id_key": self.id_key}
        settings = fusion_settings(self._plan(), k=self.k, fetch_k=self.fetch_k,
                                   pass_fetch_k=self.pass_fetch_k, score_key=self.score_key,
                                   **identity)
        save_fusion(folder_path, children, settings)

    @classmethod
    def load_local(cls, folder_path: str | os.PathLike[str], embedding: Embeddings | Any = None,
                   *, sparse_embedding: SparseEmbedder | None = None,
                   **kwargs: Any) -> FusionRetriever:
        """Load a retriever saved with `save_local`; ``embedding`` is the dense children's
        model, ``sparse_embedding`` the learned sparse children's, ``**kwargs`` replace
        saved fields. `IndexFormatError` for a bad folder.

        Reads the core's `FusionSearcher.save` folders too (a saved `HybridRetriever`),
        and LlamaIndex's ``FusionRetriever.persist`` ones."""
        settings, entries = read_fusion(folder_path)
        located = [(kind, core_index_dir(folder_path, path, child), child)
                   for kind, path, child in entries]
        children = load_children(folder_path, located, {
            "bm25": lambda path, k: BM25Retriever.load_local(path, k=k),
            "vector": lambda path, k: DenseRetriever.load_local(path, embedding, k=k),
            "sparse": lambda path, k: SparseRetriever.load_local(path, sparse_embedding, k=k),
            "fusion": lambda path, k: FusionRetriever.load_local(
                path, embedding, sparse_embedding=sparse_embedding, k=k),
        }, model=embedding, model_arg="embedding", method="load_local",
            sparse_model=sparse_embedding, sparse_model_arg="sparse_embedding")
        check_weights_restorable(settings, kwargs, folder_path, "load_local")
        fields = {key: value for key, value in settings.items() if key in cls.model_fields}
        return cls(retrievers=children, **{**fields, **kwargs})

    def _plan(self) -> FusionPlan:
        """The core plan of the current fields (rebuilt only when a field changed)."""
        key = (len(self.retrievers), self.mode, self.weights, self.k_rrf, self.fetch_k,
               None if self.names is None else tuple(self.names), self.dedup)
        cached = self._plan_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        plan = FusionPlan(key[0], mode=self.mode, weights=self.weights, k_rrf=self.k_rrf,
                          fetch_k=self.fetch_k, names=self.names, dedup=self.dedup,
                          describe=functools.partial(_child_label, self))
        self._plan_cache = (key, plan)
        return plan

    def _resolve(self, query: str, k: Any, weights: Any, mode: Any,
                 fetch_k: Any) -> tuple[FusionPlan, FusionCall]:
        plan = self._plan()
        return plan, plan.resolve(query, self.k if k is None else k, weights=weights,
                                  fetch_k=fetch_k, mode=mode)

    def _depth(self, call: FusionCall, fetch_k: int | None) -> int | None:
        """The ``k=`` passed to the children this call: the asked ``fetch_k`` (per call,
        else the field); ``pass_fetch_k=True`` without one: ``max(k, 20)``; else ``None``
        (each child returns its own ``k``)."""
        if self.pass_fetch_k is False:
            return None
        if fetch_k is not None or self.fetch_k is not None or self.pass_fetch_k:
            return call.fetch_k
        return None

    def _run(self, calls: list[Any], call: FusionCall, max_concurrency: int | None) -> list[Any]:
        runner = self._runner
        if runner is None or runner.max_workers != len(self.retrievers):
            runner = self._runner = CallRunner(size=len(self.retrievers),
                                               name="FusionRetriever")
        return runner.run(calls, self._note(call), max_workers=max_concurrency)

    def _note(self, call: FusionCall) -> Any:  # names a failing child in the exception
        return lambda j: f"FusionRetriever child {_child_label(self, call.active[j])}"

    def _documents(self, hits: list[Hit]) -> list[Document]:
        """New documents for fused hits: score under ``score_key``, provenance under
        ``"fusion"``."""
        return [hit_to_document(h, self.score_key, {FUSION_KEY: h.explanation[FUSION_KEY]})
                for h in hits]



# ------------------------------------------------------------------ one child, one call


@dataclass(slots=True)
class ChildSearcher:
    """``search(query, k)`` / ``asearch`` over one LangChain child, for one fusion call.

    The core plans and fuses; what is LangChain's is how a child is asked (``invoke`` /
    ``ainvoke`` with the caller's config, as a child run of the fusion tagged
    ``retriever_<n>``, ``k=`` the asked depth when there is one and it takes ``k``)
    and read back (`document_to_hit`:
    ``Document.id`` is the identity, the score the first number under the score keys).
    """

    child: Any
    config: RunnableConfig  # the caller's, with callbacks under the fusion run
    _: KW_ONLY
    pass_k: bool
    keys: Sequence[str]  # metadata keys read as the score, in order
    label: str
    id_key: str | None = None  # the metadata key of the identity (None: Document.id)

    def search(self, query: str, k: int | None) -> list[Hit]:
        kwargs = {"k": k} if self.pass_k and k is not None else {}
        return self._hits(self.child.invoke(query, self.config, **kwargs))

    async def asearch(self, query: str, k: int | None) -> list[Hit]:
        kwargs = {"k": k} if self.pass_k and k is not None else {}
        return self._hits(await self.child.ainvoke(query, self.config, **kwargs))

    def _hits(self, docs: Any) -> list[Hit]:
        if isinstance(docs, (str, bytes, Mapping)) or not isinstance(docs, Sequence):
            raise TypeError(f"child {self.label} must return a list of Document, got "
                            f"{type(docs).__name__}")
        # A child that returns strings: each is a Document, as EnsembleRetriever reads it.
        docs = [Document(page_content=d) if isinstance(d, str) else d for d in docs]
        hits = [document_to_hit(d, pos, self.keys) for pos, d in enumerate(docs, 1)]
        if self.id_key is None:
            return hits
        out = []
        for hit, document in zip(hits, docs):
            if self.id_key not in document.metadata:
                raise KeyError(f"child {self.label} returned a document without the id_key "
                               f"{self.id_key!r} in its metadata (position {hit.rank})")
            doc = dataclasses.replace(hit.doc, id=str(document.metadata[self.id_key]))
            out.append(dataclasses.replace(hit, doc=doc))
        return out


def _child_label(fusion: Any, i: int) -> str:
    """How error messages name child ``i``: ``retriever_<i + 1> ('name'), Type``."""
    name = f" ({fusion.names[i]!r})" if fusion.names is not None else ""
    return f"retriever_{i + 1}{name}, {type(fusion.retrievers[i]).__name__}"


def _children_for(fusion: Any, call: FusionCall, run_manager: Any, config: RunnableConfig,
                  depth: int | None, *, asynchronous: bool) -> list[ChildSearcher]:
    """The active children of one call of ``fusion`` (a `FusionRetriever`) as searchers.

    Child ``i`` runs as a child run tagged ``retriever_<i + 1>``, asked with
    ``k=depth`` (none when ``depth`` is ``None``) as ``pass_fetch_k`` says (``None``:
    when `accepts_k`). For the score modes, a plain ``as_retriever()`` child is
    searched as a `ScoredVectorStoreRetriever`.
    """
    keys = (fusion.score_key, *(key for key in SCORE_KEYS if key != fusion.score_key))
    out = []
    for i in call.active:
        child = fusion.retrievers[i]
        passes = fusion.pass_fetch_k
        if passes is None:
            passes = depth is not None and _accepts_k(fusion._accepts, child, asynchronous)
        if call.mode is not FusionMode.RRF:
            child = with_store_scores(child)
        child_run = patch_config(config, callbacks=run_manager.get_child(tag=f"retriever_{i + 1}"))
        out.append(ChildSearcher(child, child_run, pass_k=passes, keys=keys,
                                 label=_child_label(fusion, i), id_key=fusion.id_key))
    return out


def weighted_reciprocal_rank(fusion: Any, doc_lists: Any) -> list[Document]:
    """`FusionRetriever.weighted_reciprocal_rank` (see there): the lists as core rankings
    under one internal id per identity, fused by the core, back to the first copies."""
    if isinstance(doc_lists, (str, bytes, Mapping)) or not isinstance(doc_lists, Sequence):
        raise TypeError(f"doc_lists must be a list of lists of Document, got "
                        f"{type(doc_lists).__name__}")
    n = len(fusion.retrievers)
    if len(doc_lists) != n:
        raise ValueError(f"doc_lists must hold one ranked list per retriever: expected {n}, "
                         f"got {len(doc_lists)} (Number of rank lists must be equal to the "
                         "number of weights)")
    if callable(fusion.weights):
        raise ValueError("weights is a rule of the query (a callable); "
                         "weighted_reciprocal_rank has no query: set weights to a list")
    ids: dict[Any, str] = {}  # identity -> internal id, in first-appearance order
    first: list[Document] = []  # the first copy of each identity
    rankings = []
    for i, docs in enumerate(doc_lists):
        if isinstance(docs, (str, bytes, Mapping)) or not isinstance(docs, Sequence):
            raise TypeError(f"doc_lists[{i}] must be a list of Document, got "
                            f"{type(docs).__name__}")
        hits = []
        for pos, document in enumerate(docs, 1):
            key = _identity(document, fusion.id_key, f"doc_lists[{i}][{pos - 1}]")
            if key not in ids:
                ids[key] = str(len(ids))
                first.append(document)
            hits.append(Hit(Doc(ids[key], ""), None, pos))  # type: ignore[arg-type]
        rankings.append(hits)
    weights = None if fusion.weights is None else fusion._plan().weights
    fused = reciprocal_rank_fusion(rankings, k_rrf=fusion.k_rrf, weights=weights)
    # Equal scores: first appearance (the original's stable sort), not the core's best rank.
    fused.sort(key=lambda hit: (-hit.score, int(hit.id)))
    order = [int(hit.id) for hit in fused]
    # Documents only in weight-0 lists score 0 there and come last, in first appearance.
    seen = set(order)
    order += [i for i in range(len(first)) if i not in seen]
    return [first[i] for i in order]


def _identity(document: Any, id_key: str | None, where: str) -> Any:
    """EnsembleRetriever's identity of a document: ``page_content``, or the ``id_key``
    metadata value."""
    if not isinstance(document, Document):
        raise TypeError(f"{where} must be a Document, got {type(document).__name__}: "
                        f"{document!r:.80}")
    if id_key is None:
        return document.page_content
    if id_key not in document.metadata:
        raise KeyError(f"{where} has no id_key {id_key!r} in its metadata")
    key = document.metadata[id_key]
    try:
        hash(key)
    except TypeError:
        raise TypeError(f"{where}: the id_key {id_key!r} value must be hashable, got "
                        f"{type(key).__name__}") from None
    return key


def _accepts_k(cache: dict[Any, Any], child: Any, asynchronous: bool) -> bool:
    """`accepts_k`, remembered per child object (it reads signatures: ~60 µs a call)."""
    key = (id(child), asynchronous)
    hit = cache.get(key)
    if hit is None or hit[0] is not child:
        hit = cache[key] = (child, accepts_k(child, asynchronous=asynchronous))
    return hit[1]
