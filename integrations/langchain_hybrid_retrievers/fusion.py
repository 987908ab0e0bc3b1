"""LangChain ensemble retrievers: fuse any LangChain retrievers with the core's fusion.

* `FusionRetriever` — fuses the answers of any retrievers (this package's, a vector
  store's ``as_retriever()``, Elasticsearch, another `FusionRetriever`...), running them
  concurrently, with the core's `hybrid_retrievers.fusion.fuse` (RRF by default).
* `HybridRetriever` — the 90% case in one call: BM25 + dense over the same documents,
  fused (``HybridRetriever.from_documents(docs, embedding=...)``).

The adapter runs the children, wires their callbacks and converts types; identity,
scoring, ties, dedup and the final top-k are the core's (`hybrid_retrievers.fusion`), so
LlamaIndex users of the same children get the same fused order. Compared with
LangChain's own ``EnsembleRetriever``: documents are identified by ``Document.id`` (not
by text), children run concurrently in the sync path too, the result is cut to ``k``,
and every result keeps its fused score and where it came from.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever, RetrieverLike
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ContextThreadPoolExecutor, patch_config
from pydantic import ConfigDict, field_validator, model_validator

from hybrid_retrievers import Analyzer
from hybrid_retrievers.validation import (
    check_k,
    check_k_rrf,
    check_names,
    check_query,
    check_weights,
    parse_enum,
)
from hybrid_retrievers.vector import DEFAULT_CHUNK, EmbeddingCache
from hybrid_retrievers.fusion import DEFAULT_K_RRF, Dedup, FusionMode, default_fetch_k, fuse
from hybrid_retrievers.types import Hit

from ._base import StrictRetriever, accepts_k, current_config
from ._convert import (
    FUSION_KEY,
    SCORE_KEYS,
    check_score_key,
    copy_metadatas,
    document_to_hit,
    documents_to_columns,
    hit_to_document,
)
from .dense import DenseRetriever
from .bm25 import BM25Retriever
from .vectorstores import with_store_scores

__all__ = ["FusionRetriever", "HybridRetriever"]

Weights = Sequence[float] | Callable[[str], Sequence[float]]

class FusionRetriever(StrictRetriever):
    """Fuse the rankings of several LangChain retrievers into one (RRF by default).

    Each call asks every child whose weight is positive for ``fetch_k`` candidates,
    runs the children at the same time (sync: the first in the calling thread, the
    others in threads that carry the LangChain context; async: ``asyncio.gather`` of
    their ``ainvoke``), fuses the lists with `hybrid_retrievers.fusion.fuse` and
    returns the top ``k``. Each child run is a child of the fusion run in callbacks and
    traces, tagged ``retriever_1``, ``retriever_2``... as in LangChain's own
    ``EnsembleRetriever``, and receives the caller's config (``configurable``,
    ``max_concurrency`` caps the threads).

    Reading the children's answers (`document_to_hit`): a document's identity is
    ``Document.id`` (two documents with the same text and different ids stay two; an
    id-less document gets a content id of its text); its score is the first number
    in its metadata under ``score_key``, ``"score"`` or ``"relevance_score"``. Scores
    are not needed for ``mode="rrf"``. For the score modes (``"relative_score"``,
    ``"zscore"``...), a vector store's plain ``as_retriever()`` child (which reports
    no scores) is searched with the store's ``similarity_search_with_relevance_scores``
    instead (`ScoredVectorStoreRetriever`: same store, search arguments, tags and run
    name); any other child whose documents carry no score gets a clear error.

    ``fetch_k`` reaches a child as ``invoke(query, k=fetch_k)`` when the child can take
    it: with ``pass_fetch_k=None`` (auto), when it is a `BaseRetriever` whose
    ``_get_relevant_documents`` (``_aget_relevant_documents`` when async) declares a
    ``k`` parameter or ``**kwargs`` (this package's retrievers and vector-store
    retrievers do), also behind ``with_config`` / ``bind`` / ``configurable_fields``
    (see `accepts_k`); other children return as many documents as they are configured
    to. ``pass_fetch_k=True`` always passes it, ``False`` never.

    Returned documents are new objects (the children's documents are not modified):
    ``id`` and ``page_content`` of the best-ranked copy, its metadata plus the fused
    score under ``score_key``, the 1-based rank under ``"rank"`` (both overwrite a
    child's own score and rank in the copy) and the provenance under ``"fusion"``: the
    mapping documented in `hybrid_retrievers.fusion` (``mode``, ``score``,
    ``best_rank``, ``k_rrf`` and, per child that returned the document, its
    ``source``, ``index``, ``id``, ``rank``, ``score``, ``weight`` and
    ``contribution``). A child that is itself a `FusionRetriever` keeps its own
    provenance, as that source's ``explanation``.

    ``k``, ``weights``, ``mode`` and ``fetch_k`` can be overridden per call:
    ``retriever.invoke(q, k=3, weights=[2, 1], mode="relative_score")``, and the same
    for ``ainvoke``. A per-call value of ``None`` means "use the retriever's field".

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

    model_config = ConfigDict(arbitrary_types_allowed=True, use_attribute_docstrings=True)

    retrievers: list[RetrieverLike]
    """The children: any LangChain retrievers (or runnables from a query string to a
    list of `Document`), in order."""

    k: int = 4
    """Default number of fused documents to return (>= 1); override per call with ``k=``."""

    weights: Weights | None = None
    """One weight (>= 0, at least one > 0) per child, or a callable
    ``weights(query) -> sequence`` such as `hybrid_retrievers.lexical_boost_rule`;
    a child whose weight is 0 for a query is not invoked. ``None``: all 1."""

    mode: FusionMode | str = FusionMode.RRF
    """The `hybrid_retrievers.FusionMode` (``"rrf"``, ``"relative_score"``,
    ``"dist_based_score"``, ``"zscore"``, ``"raw"``, ``"mean"``, ``"combsum"``,
    ``"combmnz"``)."""

    k_rrf: float = DEFAULT_K_RRF
    """The RRF constant (> 0) in ``Σ w_i / (k_rrf + rank_i)``; used by ``mode="rrf"``."""

    fetch_k: int | None = None
    """Candidates asked of each child; ``None``: `hybrid_retrievers.fusion.default_fetch_k`
    (``max(k, 20)``). See ``pass_fetch_k`` for which children receive it."""

    pass_fetch_k: bool | None = None
    """Pass ``k=fetch_k`` to the children: ``None`` when they declare it (see the class
    docstring), ``True`` always, ``False`` never."""

    names: list[str] | None = None
    """One unique name per child, reported as ``"source"`` in the provenance
    (default: the child's 0-based index)."""

    dedup: Dedup | str = Dedup.ID
    """``"id"``: same ``Document.id`` = same document; ``"content"``: also the same
    normalised text under different ids (the better-ranked copy is kept)."""

    score_key: str = "score"
    """Metadata key of the fused score in returned documents; it is also the first key
    read as a child document's score."""

    # ------------------------------------------------------------- validation

    @field_validator("retrievers", mode="before")
    @classmethod
    def _check_retrievers(cls, value: Any) -> Any:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise TypeError(
                "retrievers must be a list of LangChain retrievers, got "
                f"{type(value).__name__}; wrap a single retriever in a list"
            )
        if not value:
            raise ValueError("retrievers must hold at least one retriever, got an empty list")
        return list(value)

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> int:
        return check_k(value, name="k")

    @field_validator("fetch_k", mode="before")
    @classmethod
    def _check_fetch_k(cls, value: Any) -> int | None:
        return None if value is None else check_k(value, name="fetch_k")

    @field_validator("mode", mode="before")
    @classmethod
    def _check_mode(cls, value: Any) -> FusionMode:
        return parse_enum(FusionMode, value, "mode")

    @field_validator("dedup", mode="before")
    @classmethod
    def _check_dedup(cls, value: Any) -> Dedup:
        return parse_enum(Dedup, value, "dedup")

    @field_validator("k_rrf", mode="before")
    @classmethod
    def _check_k_rrf(cls, value: Any) -> float:
        return check_k_rrf(value, "k_rrf")

    @field_validator("score_key")
    @classmethod
    def _check_score_key(cls, value: str) -> str:
        check_score_key(value)
        if value == FUSION_KEY:
            raise ValueError(
                f"score_key must differ from {FUSION_KEY!r} (the provenance's metadata key), "
                f"got {value!r}; use e.g. 'fused_score'"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _check_counts(cls, values: Any) -> Any:
        if not isinstance(values, dict) or not isinstance(values.get("retrievers"), Sequence):
            return values  # the field validators report what is wrong
        n = len(values["retrievers"])
        weights = values.get("weights")
        if weights is not None and not callable(weights):
            values = {**values, "weights": check_weights(weights, n)}
        if values.get("names") is not None:
            values = {**values, "names": list(check_names(values["names"], n))}
        return values

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        weights: Weights | None = None,
        mode: FusionMode | str | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Invoke the children concurrently and return the fused top ``k``."""
        plan = self._plan(query, k, weights, mode, fetch_k, is_async=False)
        config = current_config()
        calls = [
            self._sync_call(i, child, query, config, run_manager, kwargs)
            for i, child, kwargs in plan.calls
        ]
        limit = config.get("max_concurrency")
        return self._fuse(plan, _run_concurrently(calls, limit))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        weights: Weights | None = None,
        mode: FusionMode | str | None = None,
        fetch_k: int | None = None,
    ) -> list[Document]:
        """Async `_get_relevant_documents`: ``asyncio.gather`` of the children's ``ainvoke``."""
        plan = self._plan(query, k, weights, mode, fetch_k, is_async=True)
        config = current_config()
        results = await asyncio.gather(*(
            _labelled_async(
                child.ainvoke(query, self._child_config(i, config, run_manager), **kwargs),
                self._label(i),
            )
            for i, child, kwargs in plan.calls
        ))
        return self._fuse(plan, list(results))

    # ------------------------------------------------------------- persistence

    def save_local(self, folder_path: str | os.PathLike[str]) -> None:
        """Save every child index and the fusion settings to one folder (no pickle).

        Works when every child is this package's `BM25Retriever`, `DenseRetriever` or
        `FusionRetriever` (so every `HybridRetriever`); any other child raises
        `TypeError`. Models are not saved: pass the embedding to `load_local`. A
        callable ``weights`` rule is not saved either (pass it to `load_local`).
        """
        from ._saving import save_fusion_retriever

        save_fusion_retriever(self, folder_path)

    @classmethod
    def load_local(
        cls, folder_path: str | os.PathLike[str], embedding: Embeddings | Any = None,
        **kwargs: Any,
    ) -> FusionRetriever:
        """Load a retriever saved with `save_local`.

        Args:
            folder_path: The folder written by `save_local`.
            embedding: The model the dense children were built with (required when
                there is one).
            **kwargs: Fields that replace the saved ones (``k``, ``weights``, ``tags``...).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: a missing, corrupt or
                foreign folder.
        """
        from ._saving import load_fusion_retriever

        return load_fusion_retriever(cls, folder_path, embedding, kwargs)

    # ------------------------------------------------------------- helpers

    def _plan(
        self,
        query: str,
        k: int | None,
        weights: Weights | None,
        mode: FusionMode | str | None,
        fetch_k: int | None,
        *,
        is_async: bool,
    ) -> _Plan:
        """Validate one call's arguments and decide which children get which kwargs."""
        check_query(query)
        top = check_k(self.k if k is None else k, name="k")
        chosen = self.mode if mode is None else parse_enum(FusionMode, mode, "mode")
        n = len(self.retrievers)
        raw = self.weights if weights is None else weights
        if callable(raw):
            w = check_weights(raw(query), n, "weights(query)")
        else:
            w = check_weights(raw, n)
        if fetch_k is not None:
            n_fetch = check_k(fetch_k, name="fetch_k")
        else:
            n_fetch = default_fetch_k(top) if self.fetch_k is None else self.fetch_k
        calls = []
        for i, child in enumerate(self.retrievers):
            if w[i] > 0:
                passes = self.pass_fetch_k
                if passes is None:
                    passes = accepts_k(child, asynchronous=is_async)
                if chosen is not FusionMode.RRF:
                    child = with_store_scores(child)  # a vector store's scores, not none
                calls.append((i, child, {"k": n_fetch} if passes else {}))
        return _Plan(top, chosen, w, calls)

    def _label(self, i: int) -> str:
        name = f" ({self.names[i]!r})" if self.names is not None else ""
        return f"retriever_{i + 1}{name}, {type(self.retrievers[i]).__name__}"

    def _child_config(self, i: int, config: RunnableConfig, run_manager: Any) -> RunnableConfig:
        return patch_config(config, callbacks=run_manager.get_child(tag=f"retriever_{i + 1}"))

    def _sync_call(
        self,
        i: int,
        child: Any,
        query: str,
        config: RunnableConfig,
        run_manager: CallbackManagerForRetrieverRun,
        kwargs: dict[str, Any],
    ) -> Callable[[], list[Document]]:
        label = self._label(i)
        child_config = self._child_config(i, config, run_manager)

        def call() -> list[Document]:
            try:
                return child.invoke(query, child_config, **kwargs)
            except Exception as exc:
                _add_note(exc, label)
                raise

        return call

    def _fuse(self, plan: _Plan, results: list[Any]) -> list[Document]:
        rankings: list[list[Hit]] = [[] for _ in self.retrievers]
        keys = (self.score_key, *(key for key in SCORE_KEYS if key != self.score_key))
        for (i, _, _), docs in zip(plan.calls, results):
            if isinstance(docs, (str, bytes, Mapping)) or not isinstance(docs, Sequence):
                raise TypeError(
                    f"child {self._label(i)} must return a list of Document, got "
                    f"{type(docs).__name__}"
                )
            rankings[i] = [document_to_hit(d, pos, keys) for pos, d in enumerate(docs, 1)]
            if plan.mode is not FusionMode.RRF:
                missing = next((h for h in rankings[i] if h.score is None), None)
                if missing is not None:
                    raise ValueError(
                        f"mode={plan.mode.value!r} fuses scores, but child {self._label(i)} "
                        f"returned document {missing.id!r} without a number under any of "
                        f"the metadata keys {list(keys)}; use mode='rrf' (ranks only) or a "
                        "retriever that reports its scores in the metadata"
                    )
        hits = fuse(
            rankings,
            plan.mode,
            weights=plan.weights,
            k_rrf=self.k_rrf,
            names=self.names,
            dedup=self.dedup,
            limit=plan.k,
        )
        out = []
        for hit in hits:
            document = hit_to_document(hit, self.score_key)
            document.metadata[FUSION_KEY] = hit.explanation[FUSION_KEY]
            out.append(document)
        return out


class _Plan:
    """One call's validated settings: final k, mode, weights and (index, child, kwargs)."""

    __slots__ = ("k", "mode", "weights", "calls")

    def __init__(
        self, k: int, mode: FusionMode, weights: tuple[float, ...],
        calls: list[tuple[int, Any, dict[str, Any]]],
    ) -> None:
        self.k, self.mode, self.weights, self.calls = k, mode, weights, calls


def _run_concurrently(calls: list[Callable[[], Any]], max_concurrency: int | None) -> list[Any]:
    """Run ``calls`` at once: the first in this thread, the others in context-copying threads.

    ``max_concurrency`` (from the caller's config) caps how many run at the same time,
    the calling thread included; 1 runs them one after another here.
    """
    workers = len(calls) - 1 if max_concurrency is None else min(len(calls), max_concurrency) - 1
    if workers <= 0:
        return [call() for call in calls]
    with ContextThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(call) for call in calls[1:]]
        try:
            first = calls[0]()
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return [first, *(future.result() for future in futures)]


async def _labelled_async(awaitable: Any, label: str) -> Any:
    try:
        return await awaitable
    except Exception as exc:
        _add_note(exc, label)
        raise


def _add_note(exc: BaseException, label: str) -> None:
    if hasattr(exc, "add_note"):  # Python 3.11+
        exc.add_note(f"raised by FusionRetriever child {label}")


class HybridRetriever(FusionRetriever):
    """BM25 + dense retrieval over the same documents, fused: the 90% case in one call.

    `from_documents` / `from_texts` index the documents twice, in a `BM25Retriever`
    and a `DenseRetriever` (same ids), and return a `FusionRetriever` over
    ``[bm25, dense]`` named ``"bm25"`` and ``"dense"`` in the provenance. Everything
    else is `FusionRetriever`'s: per-call ``k``/``weights``/``mode``/``fetch_k``, the
    returned metadata, async, callbacks. Because the BM25 child comes first,
    ``weights=hybrid_retrievers.lexical_boost_rule()`` favours it for queries with
    codes, numbers or quoted phrases.

    Example:
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from langchain_hybrid_retrievers import HybridRetriever
        >>> retriever = HybridRetriever.from_texts(
        ...     ["wings generate lift", "cats sleep all day", "lift and drag of wings"],
        ...     embedding=HashingEmbedder(dimension=64), ids=["a", "b", "c"], k=2,
        ... )
        >>> sorted(d.id for d in retriever.invoke("wing lift"))
        ['a', 'c']
    """

    @property
    def bm25(self) -> BaseRetriever:
        """The lexical child (``retrievers[0]``)."""
        return self.retrievers[0]  # type: ignore[return-value]

    @property
    def dense(self) -> BaseRetriever:
        """The dense child (``retrievers[1]``)."""
        return self.retrievers[1]  # type: ignore[return-value]

    @model_validator(mode="after")
    def _check_children(self) -> HybridRetriever:
        if len(self.retrievers) != 2:
            raise ValueError(
                "HybridRetriever needs exactly two retrievers [lexical, dense], got "
                f"{len(self.retrievers)}; use FusionRetriever for any other set"
            )
        return self

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        embedding: Embeddings | Any,
        metadatas: Iterable[Mapping[str, Any]] | None = None,
        ids: Iterable[str | None] | None = None,
        *,
        k: int = 4,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_CHUNK,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> HybridRetriever:
        """Index raw texts for BM25 and dense retrieval and fuse the two.

        Args:
            texts: The document texts.
            embedding: A LangChain `Embeddings` or a core `Embedder`.
            metadatas: One metadata mapping per text, or ``None``.
            ids: One id per text, or ``None`` for deterministic content ids (the two
                indexes get the same ids either way).
            k: Default number of fused documents per query.
            weights: ``[bm25, dense]`` weights, or a callable of the query.
            mode: The fusion mode (default RRF).
            k_rrf: The RRF constant.
            fetch_k: Candidates asked of each child (default ``max(k, 20)``).
            analyzer, k1, b, method, delta: BM25 settings (see `BM25Retriever.from_texts`).
            metric, cache, batch_size, show_progress: Dense settings (see
                `DenseRetriever.from_texts`).
            **kwargs: Other `FusionRetriever` fields (``names``, ``dedup``, ``score_key``,
                ``tags``...).
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, got a single str; wrap it in a list")
        text_list = list(texts)
        meta_list = copy_metadatas(metadatas)
        id_list = None if ids is None else list(ids)
        bm25 = BM25Retriever.from_texts(
            text_list, meta_list, id_list, k=k, analyzer=analyzer, k1=k1, b=b,
            method=method, delta=delta,
        )
        dense = DenseRetriever.from_texts(
            text_list, embedding, meta_list, id_list, k=k, metric=metric, cache=cache,
            batch_size=batch_size, show_progress=show_progress,
        )
        kwargs.setdefault("names", ["bm25", "dense"])
        return cls(
            retrievers=[bm25, dense], k=k, weights=weights, mode=mode, k_rrf=k_rrf,
            fetch_k=fetch_k, **kwargs,
        )

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        embedding: Embeddings | Any,
        *,
        k: int = 4,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None,
        analyzer: Analyzer | None = None,
        **kwargs: Any,
    ) -> HybridRetriever:
        """Index LangChain documents (keeping ``Document.id`` and metadata) twice and fuse.

        Documents whose ``id`` is ``None`` get deterministic content ids. Arguments are
        as for `from_texts` (``**kwargs`` takes its other BM25, dense and retriever
        settings).
        """
        texts, ids, metadatas = documents_to_columns(documents)
        return cls.from_texts(
            texts, embedding, metadatas, ids, k=k, weights=weights, mode=mode, k_rrf=k_rrf,
            fetch_k=fetch_k, analyzer=analyzer, **kwargs,
        )

