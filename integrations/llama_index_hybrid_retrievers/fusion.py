"""LlamaIndex ensemble retrievers: fuse any LlamaIndex retrievers with the core's fusion.

* `FusionRetriever` — fuses the answers of any LlamaIndex retrievers (this package's,
  ``VectorStoreIndex.as_retriever()``, another `FusionRetriever`...), running them
  concurrently, with the core's `hybrid_retrievers.fusion.fuse` (RRF by default).
* `HybridRetriever` — the 90% case in one call: BM25 + dense over the same nodes, fused
  (``HybridRetriever.from_defaults(nodes=..., embed_model=...)``).

The adapter runs the children, converts types and keeps LlamaIndex's callbacks and
instrumentation spans nested; identity, scoring, ties, dedup and the final top-k are the
core's (`hybrid_retrievers.fusion`), so LangChain users of the same children get the same
fused order. Compared with LlamaIndex's own ``QueryFusionRetriever``: no LLM is needed,
weights count in RRF mode too, nodes are identified by ``node_id`` (not by a hash of
text and metadata), the caller's nodes and scores are never modified, and every result
says where it came from.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers import Analyzer
from hybrid_retrievers.validation import check_k, check_k_rrf, check_names, check_weights, parse_enum
from hybrid_retrievers.vector import DEFAULT_CHUNK, EmbeddingCache
from hybrid_retrievers.fusion import DEFAULT_K_RRF, Dedup, FusionMode, default_fetch_k, fuse
from hybrid_retrievers.types import Hit, MetadataFilter

from ._base import one_filter

from ._convert import FUSION_KEY, node_with_added_metadata, node_with_score_to_hit
from ._query import QueryChecked
from .dense import DenseRetriever
from .bm25 import BM25Retriever

__all__ = ["FUSION_KEY", "FusionRetriever", "HybridRetriever"]

Weights = Sequence[float] | Callable[[str], Sequence[float]]


class FusionRetriever(QueryChecked, BaseRetriever):
    """Fuse the rankings of several LlamaIndex retrievers into one (RRF by default).

    Each query goes to every child whose weight is positive, at the same time: in
    ``retrieve`` the first child runs in the calling thread and the others in worker
    threads that carry the caller's context (so LlamaIndex instrumentation spans and
    callback traces nest under the fusion's); in ``aretrieve`` the children's
    ``aretrieve`` coroutines are gathered. Each child receives its own copy of the
    `QueryBundle` (LlamaIndex's vector retriever writes the query embedding into the
    bundle it gets, which must not leak into a sibling using another model, nor into
    the caller's bundle). The lists are fused with `hybrid_retrievers.fusion.fuse` and
    cut to ``similarity_top_k``.

    How many candidates each child returns is the child's own ``similarity_top_k``
    (LlamaIndex retrievers have no per-call top-k); give each child the depth fusion
    should see (`HybridRetriever` uses ``max(similarity_top_k, 20)``).

    Reading the children's answers (`node_with_score_to_hit`): identity is
    ``node.node_id``, the score is ``NodeWithScore.score`` and the rank its position.
    Scores are not needed for ``mode="rrf"``; the score modes raise a clear error for a
    child that returns a node without a score.

    Returned nodes: new `NodeWithScore` objects whose score is the fused score and whose
    node is a **copy** of the best-ranked child node (same ``node_id``, text and
    relationships) with the provenance under ``metadata["fusion"]``: the mapping
    documented in `hybrid_retrievers.fusion` (``mode``, ``score``, ``best_rank``,
    ``k_rrf`` and, per child that returned the node, its ``source``, ``index``, ``id``,
    ``rank``, ``score``, ``weight`` and ``contribution``). That key is added to the
    copy's ``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys``, so it
    never reaches a prompt or a vector. The children's `NodeWithScore` and node objects
    are not modified. A child that is itself a `FusionRetriever` keeps its own
    provenance, as that source's ``explanation``.

    Args:
        retrievers: The children: any LlamaIndex `BaseRetriever` objects, in order.
        similarity_top_k: Number of fused nodes to return (>= 1).
        weights: One weight (>= 0, at least one > 0) per child, or a callable
            ``weights(query_str) -> sequence`` such as
            `hybrid_retrievers.lexical_boost_rule`; a child whose weight is 0 for a
            query is not called. ``None``: all 1.
        mode: A `hybrid_retrievers.FusionMode` or its value (``"rrf"``,
            ``"relative_score"``, ``"dist_based_score"``, ``"zscore"``, ``"raw"``,
            ``"mean"``, ``"combsum"``, ``"combmnz"``).
        k_rrf: The RRF constant (> 0), ``mode="rrf"`` only.
        names: One unique name per child, reported as ``"source"`` in the provenance
            (default: the child's 0-based index).
        dedup: ``"id"`` or ``"content"`` (also merge equal normalised texts).
        max_workers: Children run at the same time in ``retrieve``, at most (default:
            all; 1 runs them one after another in the calling thread).
        callback_manager: LlamaIndex callback manager.
        verbose: Passed to LlamaIndex's `BaseRetriever`.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from llama_index_hybrid_retrievers import BM25Retriever, FusionRetriever
        >>> nodes = [TextNode(id_="a", text="wing lift at low speed"),
        ...          TextNode(id_="b", text="lift of a flat plate"),
        ...          TextNode(id_="c", text="bread dough")]
        >>> fused = FusionRetriever(
        ...     [BM25Retriever.from_defaults(nodes=nodes),
        ...      BM25Retriever.from_defaults(nodes=nodes[1:])],
        ...     names=["all", "some"], similarity_top_k=2,
        ... )
        >>> results = fused.retrieve("wing lift")
        >>> [n.node.node_id for n in results]
        ['b', 'a']
        >>> [s["source"] for s in results[0].node.metadata["fusion"]["sources"]]
        ['all', 'some']
    """

    def __init__(
        self,
        retrievers: Sequence[BaseRetriever],
        *,
        similarity_top_k: int = 4,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        names: Sequence[str] | None = None,
        dedup: Dedup | str = Dedup.ID,
        max_workers: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if isinstance(retrievers, (str, bytes, Mapping, BaseRetriever)) or not isinstance(
            retrievers, Sequence
        ):
            raise TypeError(
                "retrievers must be a list of llama_index retrievers, got "
                f"{type(retrievers).__name__}; wrap a single retriever in a list"
            )
        children = tuple(retrievers)
        if not children:
            raise ValueError("retrievers must hold at least one retriever, got an empty list")
        for i, child in enumerate(children):
            if not isinstance(child, BaseRetriever):
                raise TypeError(
                    f"retrievers[{i}] must be a llama_index BaseRetriever, got "
                    f"{type(child).__name__}: {child!r:.80}"
                )
        n = len(children)
        self._retrievers = children
        self.similarity_top_k = similarity_top_k
        self._weights = weights if weights is None or callable(weights) else check_weights(
            weights, n
        )
        self._mode = parse_enum(FusionMode, mode, "mode")
        self._k_rrf = check_k_rrf(k_rrf, "k_rrf")
        self._names = None if names is None else check_names(names, n)
        self._dedup = parse_enum(Dedup, dedup, "dedup")
        self._max_workers = n if max_workers is None else check_k(max_workers, "max_workers")
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    # ------------------------------------------------------------ properties

    @property
    def retrievers(self) -> tuple[BaseRetriever, ...]:
        """The children, in order."""
        return self._retrievers

    @property
    def similarity_top_k(self) -> int:
        """Number of fused nodes to return; validated on every assignment."""
        return self._similarity_top_k

    @similarity_top_k.setter
    def similarity_top_k(self, value: int) -> None:
        self._similarity_top_k = check_k(value, name="similarity_top_k")

    @property
    def weights(self) -> Weights | None:
        """The weights as given (a tuple, a callable, or ``None`` for all 1)."""
        return self._weights

    @property
    def mode(self) -> FusionMode:
        return self._mode

    @property
    def k_rrf(self) -> float:
        return self._k_rrf

    @property
    def names(self) -> tuple[str, ...] | None:
        return self._names

    @property
    def dedup(self) -> Dedup:
        return self._dedup

    # --------------------------------------------------------------- editing

    def _editable_children(self) -> list[Any]:
        children = list(dict.fromkeys(self._retrievers))  # a child listed twice: once
        for child in children:
            if not (callable(getattr(child, "insert_nodes", None))
                    and callable(getattr(child, "delete_nodes", None))):
                raise TypeError(
                    f"cannot edit {type(self).__name__}: child {type(child).__name__} has no "
                    "insert_nodes / delete_nodes; edit the children yourself"
                )
        return children

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> list[str]:
        """Insert nodes into every child (each indexes them its own way); returns the ids.

        Raises:
            TypeError: a child that cannot be edited (nothing is inserted then).
            ValueError: an id already indexed (nothing is inserted then).
        """
        children = self._editable_children()
        node_list = list(nodes)
        done: list[Any] = []
        ids: list[str] = []
        try:
            for child in children:
                ids = child.insert_nodes(node_list, **insert_kwargs)
                done.append(child)
        except BaseException:
            for child in done:  # keep the children consistent with each other
                child.delete_nodes([n.node_id for n in node_list])
            raise
        return ids

    def delete_nodes(self, node_ids: Sequence[str], **delete_kwargs: Any) -> None:
        """Delete nodes by id from every child.

        Raises:
            KeyError: naming ids a child does not hold (checked in every child first
                when the children are this package's, so nothing is deleted then).
        """
        children = self._editable_children()
        ids = [node_ids] if isinstance(node_ids, str) else list(node_ids)
        for child in children:
            for index in getattr(child, "_editable_indexes", list)():
                unknown = [i for i in ids if i not in index]
                if unknown:
                    raise KeyError(f"{len(unknown)} node id(s) not in {type(child).__name__}: "
                                   f"{unknown[:5]}")
        for child in children:
            child.delete_nodes(ids, **delete_kwargs)

    # ----------------------------------------------------------- persistence

    def persist(self, persist_dir: str | os.PathLike[str]) -> None:
        """Save every child index and the fusion settings to one directory (no pickle).

        Works when every child is this package's `BM25Retriever`, `DenseRetriever` or
        `FusionRetriever` (so every `HybridRetriever`); any other child raises
        `TypeError`. Models are not saved: pass ``embed_model`` to `from_persist_dir`.
        A callable ``weights`` rule is not saved either (pass it back on load).
        """
        from ._saving import persist_fusion_retriever

        persist_fusion_retriever(self, persist_dir)

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike[str], *, embed_model: BaseEmbedding | Any = None,
        **kwargs: Any,
    ) -> FusionRetriever:
        """Load a retriever saved with `persist` (or the LangChain adapter's ``save_local``).

        Args:
            persist_dir: The directory written by `persist`.
            embed_model: The model the dense children were built with (required when
                there is one).
            **kwargs: Constructor arguments that replace the saved ones
                (``similarity_top_k``, ``weights``, ``callback_manager``...).

        Raises:
            hybrid_retrievers.persistence.IndexFormatError: a missing, corrupt or
                foreign directory.
        """
        from ._saving import load_fusion_retriever

        return load_fusion_retriever(cls, persist_dir, embed_model, kwargs)

    # ---------------------------------------------------------------- search

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        weights, active = self._plan(query_bundle)
        calls = [self._sync_call(i, query_bundle) for i in active]
        return self._fuse(weights, active, _run_concurrently(calls, self._max_workers))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        weights, active = self._plan(query_bundle)
        results = await asyncio.gather(*(
            _labelled_async(self._retrievers[i].aretrieve(_copy(query_bundle)), self._label(i))
            for i in active
        ))
        return self._fuse(weights, active, list(results))

    # --------------------------------------------------------------- helpers

    def _plan(self, query_bundle: QueryBundle) -> tuple[tuple[float, ...], list[int]]:
        n = len(self._retrievers)
        if callable(self._weights):
            weights = check_weights(self._weights(query_bundle.query_str), n, "weights(query)")
        else:
            weights = check_weights(self._weights, n)
        return weights, [i for i, w in enumerate(weights) if w > 0]

    def _label(self, i: int) -> str:
        name = f" ({self._names[i]!r})" if self._names is not None else ""
        return f"retrievers[{i}]{name}, {type(self._retrievers[i]).__name__}"

    def _sync_call(self, i: int, query_bundle: QueryBundle) -> Callable[[], Any]:
        child, label, bundle = self._retrievers[i], self._label(i), _copy(query_bundle)

        def call() -> Any:
            try:
                return child.retrieve(bundle)
            except Exception as exc:
                _add_note(exc, label)
                raise

        return call

    def _fuse(
        self, weights: tuple[float, ...], active: list[int], results: list[Any]
    ) -> list[NodeWithScore]:
        rankings: list[list[Hit]] = [[] for _ in self._retrievers]
        originals: dict[int, NodeWithScore] = {}  # id(core Doc) -> the child's result
        for i, nodes in zip(active, results):
            if isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Sequence):
                raise TypeError(
                    f"child {self._label(i)} must return a list of NodeWithScore, got "
                    f"{type(nodes).__name__}"
                )
            hits = [node_with_score_to_hit(nws, pos) for pos, nws in enumerate(nodes, 1)]
            for hit, nws in zip(hits, nodes):
                originals[id(hit.doc)] = nws
            if self._mode is not FusionMode.RRF:
                missing = next((h for h in hits if h.score is None), None)
                if missing is not None:
                    raise ValueError(
                        f"mode={self._mode.value!r} fuses scores, but child {self._label(i)} "
                        f"returned node {missing.id!r} with score None; use mode='rrf' "
                        "(ranks only) or a retriever that scores its nodes"
                    )
            rankings[i] = hits
        fused = fuse(
            rankings,
            self._mode,
            weights=weights,
            k_rrf=self._k_rrf,
            names=self._names,
            dedup=self._dedup,
            limit=self._similarity_top_k,
        )
        out = []
        for hit in fused:
            # The fused hit keeps the best-ranked copy's Doc object: map it back to the
            # node that child returned.
            source = originals[id(hit.doc)].node
            node = node_with_added_metadata(source, {FUSION_KEY: hit.explanation[FUSION_KEY]})
            out.append(NodeWithScore(node=node, score=float(hit.score)))
        return out


def _copy(query_bundle: QueryBundle) -> QueryBundle:
    """A shallow copy, so a child that sets ``bundle.embedding`` changes only its own."""
    copied = dataclasses.replace(query_bundle)
    if query_bundle.custom_embedding_strs is not None:
        copied.custom_embedding_strs = list(query_bundle.custom_embedding_strs)
    return copied


def _run_concurrently(calls: list[Callable[[], Any]], max_workers: int) -> list[Any]:
    """The first call in this thread, the others in threads running a copy of its context."""
    workers = min(len(calls), max_workers) - 1
    if workers <= 0:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="FusionRetriever") as pool:
        futures = [pool.submit(contextvars.copy_context().run, call) for call in calls[1:]]
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
    """BM25 + dense retrieval over the same nodes, fused: the 90% case in one call.

    `from_defaults` indexes the nodes twice, in a `BM25Retriever` and a
    `DenseRetriever`, each returning ``fetch_k`` candidates (default
    ``max(similarity_top_k, 20)``), and fuses ``[bm25, dense]`` (named ``"bm25"`` and
    ``"dense"`` in the provenance). Everything else is `FusionRetriever`'s. Because the
    BM25 child comes first, ``weights=hybrid_retrievers.lexical_boost_rule()`` favours
    it for queries with codes, numbers or quoted phrases. Setting
    ``similarity_top_k`` later changes the fused cut only; the children keep their
    candidate depth (``retriever.bm25.similarity_top_k``...).

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> from llama_index_hybrid_retrievers import HybridRetriever
        >>> retriever = HybridRetriever.from_defaults(
        ...     nodes=[TextNode(id_="a", text="wings generate lift"),
        ...            TextNode(id_="b", text="cats sleep all day"),
        ...            TextNode(id_="c", text="lift and drag of wings")],
        ...     embed_model=HashingEmbedder(dimension=64), similarity_top_k=2,
        ... )
        >>> sorted(n.node.node_id for n in retriever.retrieve("wing lift"))
        ['a', 'c']
    """

    def __init__(self, retrievers: Sequence[BaseRetriever], **kwargs: Any) -> None:
        if isinstance(retrievers, Sequence) and len(retrievers) != 2:
            raise ValueError(
                "HybridRetriever needs exactly two retrievers [lexical, dense], got "
                f"{len(retrievers)}; use FusionRetriever for any other set"
            )
        super().__init__(retrievers, **kwargs)

    @property
    def bm25(self) -> BaseRetriever:
        """The lexical child (``retrievers[0]``)."""
        return self.retrievers[0]

    @property
    def dense(self) -> BaseRetriever:
        """The dense child (``retrievers[1]``)."""
        return self.retrievers[1]

    @classmethod
    def from_defaults(
        cls,
        nodes: Iterable[BaseNode] | None = None,
        docstore: BaseDocumentStore | None = None,
        *,
        embed_model: BaseEmbedding | Any,
        similarity_top_k: int = 4,
        fetch_k: int | None = None,
        weights: Weights | None = None,
        mode: FusionMode | str = FusionMode.RRF,
        k_rrf: float = DEFAULT_K_RRF,
        names: Sequence[str] | None = ("bm25", "dense"),
        dedup: Dedup | str = Dedup.ID,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float | None = None,
        metric: str = "cosine",
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_CHUNK,
        filter: MetadataFilter | MetadataFilters | None = None,
        max_workers: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        filters: MetadataFilters | MetadataFilter | None = None,
    ) -> HybridRetriever:
        """Index nodes (or every node of a docstore) for BM25 and dense retrieval; fuse.

        Args:
            nodes: The nodes to index; ids are ``node.node_id``.
            docstore: Alternatively, a docstore whose ``docs`` are all indexed.
            embed_model: A LlamaIndex `BaseEmbedding` or a core `Embedder` (required).
            similarity_top_k: Number of fused nodes to return (>= 1).
            fetch_k: Candidates each child returns (default ``max(similarity_top_k, 20)``).
            weights, mode, k_rrf, names, dedup, max_workers: As for `FusionRetriever`
                (``weights`` is ``[bm25, dense]``).
            analyzer, k1, b, method, delta: BM25 settings (see `BM25Retriever.from_defaults`).
            metric, cache, batch_size: Dense settings (see `DenseRetriever.from_defaults`).
            filter: Applied by both children before their top-k (``filters`` is
                LlamaIndex's spelling).
            callback_manager: LlamaIndex callback manager (given to the children too).
            verbose: Also shows progress bars while indexing.

        Raises:
            ValueError: unless exactly one of ``nodes`` and ``docstore`` is given.
        """
        if nodes is not None and not isinstance(nodes, BaseNode):
            nodes = list(nodes)  # both children read them
        depth = default_fetch_k(check_k(similarity_top_k, name="similarity_top_k")) \
            if fetch_k is None else check_k(fetch_k, name="fetch_k")
        shared: dict[str, Any] = {
            "similarity_top_k": depth, "filter": one_filter(filter, filters),
            "callback_manager": callback_manager, "verbose": verbose,
        }
        bm25 = BM25Retriever.from_defaults(
            nodes, docstore, analyzer=analyzer, k1=k1, b=b, method=method, delta=delta,
            **shared,
        )
        dense = DenseRetriever.from_defaults(
            nodes, docstore, embed_model=embed_model, metric=metric, cache=cache,
            batch_size=batch_size, **shared,
        )
        return cls(
            [bm25, dense],
            similarity_top_k=similarity_top_k,
            weights=weights,
            mode=mode,
            k_rrf=k_rrf,
            names=names,
            dedup=dedup,
            max_workers=max_workers,
            callback_manager=callback_manager,
            verbose=verbose,
        )
