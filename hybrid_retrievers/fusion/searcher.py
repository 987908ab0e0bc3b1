"""FusionSearcher: query several searchers concurrently and fuse their rankings.

Also the one hybrid recipe (`FusionSearcher.hybrid`: BM25, dense and learned sparse legs
over the same texts, any subset, which the CLI, parent-document search and both framework
adapters build), save/load
(`FusionSearcher.save` / `FusionSearcher.load`, the format of `fusion.saving`), and
`FilteredSource`, which turns one index plus a metadata filter into a source of its own,
so one index queried with several filters (text chunks next to image descriptions, say)
becomes separate lists with their own weights.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..bm25.index import BM25Index
from ..documents import make_docs, share_documents
from ..filters import check_filter, combine_filters
from ..persistence.composite import check_weights_restorable, fusion_settings, load_children
from ..types import Hit, MetadataFilter
from ..sparse.index import SparseIndex
from ..validation import check_k, check_keywords, check_queries, check_query
from ..vector.index import VectorIndex
from .candidates import Dedup
from .concurrency import CallRunner
from .legs import hybrid_mode, hybrid_weights
from .modes import FusionMode
from .plan import DEFAULT_MIN_FETCH_K, FusionCall, FusionPlan, Weights, default_fetch_k
from .rank import DEFAULT_K_RRF
from .saving import child_kind, core_index_dir, read_fusion, save_fusion

__all__ = ["FUSION_SETTINGS", "FusionSearcher", "FilteredSource", "combine_filters", "default_fetch_k",
           "DEFAULT_MIN_FETCH_K"]


class FilteredSource:
    """A searcher restricted by a fixed metadata filter: one source for `FusionSearcher`.

    A per-call ``filter`` is combined with the fixed one (both must hold).

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> index = BM25Index.from_texts(
        ...     ["a wing in a wind tunnel", "photo of a wing", "lift of a wing"],
        ...     ids=["t1", "i1", "t2"],
        ...     metadatas=[{"type": "text"}, {"type": "image"}, {"type": "text"}],
        ... )
        >>> images = FilteredSource(index, {"type": "image"}, name="images")
        >>> [h.id for h in images.search("wing", k=5)]
        ['i1']
    """

    def __init__(
        self, searcher: Any, filter: MetadataFilter, *, name: str | None = None
    ) -> None:
        """Args:
            searcher: any `Searcher` that accepts ``filter=`` (BM25Index, VectorIndex...).
            filter: a metadata equality mapping or a predicate over `Doc`.
            name: the source's name in fusion provenance (default: its index).
        """
        if not callable(getattr(searcher, "search", None)):
            raise TypeError(
                f"searcher must have a search(query, k, filter=...) method, got "
                f"{type(searcher).__name__}"
            )
        if filter is None:
            raise TypeError("filter must be a mapping or a callable(Doc) -> bool, got None; "
                            "use the searcher itself for an unfiltered source")
        check_filter(filter)
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"name must be a non-empty str or None, got {name!r}")
        self.searcher = searcher
        self.filter = dict(filter) if isinstance(filter, Mapping) else filter
        self.name = name

    def search(
        self, query: str, k: int = 10, *, filter: MetadataFilter | None = None
    ) -> list[Hit]:
        """The searcher's hits for ``query`` under the fixed filter (and ``filter``)."""
        check_filter(filter)
        return self.searcher.search(query, k, filter=combine_filters(self.filter, filter))

    def search_many(
        self, queries: Sequence[str], k: int = 10, *, filter: MetadataFilter | None = None
    ) -> list[list[Hit]]:
        """`search` for each query (batched when the searcher has ``search_many``)."""
        check_filter(filter)
        combined = combine_filters(self.filter, filter)
        many = getattr(self.searcher, "search_many", None)
        if callable(many):
            return many(queries, k, filter=combined)
        return [self.searcher.search(q, k, filter=combined) for q in check_queries(queries)]

    def __repr__(self) -> str:
        return f"FilteredSource({self.searcher!r}, {self.filter!r}, name={self.name!r})"


# ---------------------------------------------------------------------- the searcher


class FusionSearcher:
    """Fuse several searchers (BM25, dense, filtered sources...) into one `Searcher`.

    Each search asks every child with a positive weight for ``fetch_k`` candidates, runs
    the children concurrently (one in the calling thread, the rest in a thread pool owned
    by this searcher; numpy releases the GIL inside its array kernels, so the native
    work of different children can overlap), fuses the lists with ``mode`` and returns
    the top ``k``. Every hit carries the provenance described in
    `hybrid_retrievers.fusion`.

    Concurrency turns the sum of the children's latencies into their maximum when each
    child waits (a remote vector store or search engine, a model server) or runs
    GIL-free native code on a core of its own. On a machine without spare cores,
    in-process CPU-bound children gain nothing and a thread hand-off can cost a
    scheduler time slice; ``max_workers=1`` runs them inline, one after the other
    (``benchmarks/fusion_latency.py`` measures both).

    Concurrency: many threads may search one `FusionSearcher` at once, also while its
    indexes are edited; it keeps no per-search state. Each child answers from its
    own consistent snapshot (`BM25Index` and `VectorIndex` take one per search), so
    every fused hit was live, and passed the filter, in the child that returned it.
    The children are separate indexes: an edit applied to them one after another
    may, while it runs, show in some children's lists and not in others'.

    Example:
        >>> from hybrid_retrievers import BM25Index, Analyzer
        >>> texts = ["wing lift at low speed", "lift of a flat plate", "bread dough"]
        >>> stemmed = BM25Index.from_texts(texts, ids=["a", "b", "c"])
        >>> plain = BM25Index.from_texts(texts, ids=["a", "b", "c"],
        ...                              analyzer=Analyzer(stemmer=None))
        >>> hybrid = FusionSearcher([stemmed, plain], names=["stemmed", "plain"])
        >>> hits = hybrid.search("wing lift", k=2)
        >>> [h.id for h in hits]
        ['a', 'b']
        >>> [s["source"] for s in hits[0].explanation["fusion"]["sources"]]
        ['stemmed', 'plain']
    """

    def __init__(
        self,
        searchers: Sequence[Any],
        mode: FusionMode | str = FusionMode.RRF,
        weights: Weights | None = None,
        k_rrf: float = DEFAULT_K_RRF,
        fetch_k: int | None = None,
        names: Sequence[str] | None = None,
        max_workers: int | None = None,
        dedup: Dedup | str = Dedup.ID,
    ) -> None:
        """Args:
            searchers: the children: anything with ``search(query, k, filter=...)``,
                including `FilteredSource` and other `FusionSearcher` objects.
            mode: a `FusionMode` or its value (``"rrf"``, ``"relative_score"``, ...).
            weights: one non-negative weight per child, or a callable
                ``weights(query) -> sequence`` (see `lexical_boost_rule`); a child whose
                weight is 0 for a query is not asked at all. Default: all 1.
            k_rrf: the RRF constant (``mode="rrf"`` only).
            fetch_k: candidates asked of each child; default `default_fetch_k`
                (``max(k, 20)``).
            names: one unique name per child, reported as ``"source"`` in the provenance
                (default: a `FilteredSource`'s own ``name``, else the child's index).
            max_workers: children run at the same time, at most (default: all of them;
                1 runs them one after another in the calling thread).
            dedup: ``"id"`` (default) or ``"content"`` (see `Dedup`).

        Raises:
            TypeError: a child without ``search``; wrong kinds of arguments.
            ValueError: no children, a weights/names length mismatch, negative, NaN or
                all-zero weights, ``k_rrf <= 0``, ``fetch_k`` or ``max_workers`` < 1, an
                unknown mode or dedup.
        """
        if isinstance(searchers, (str, bytes, Mapping)) or not isinstance(searchers, Sequence):
            raise TypeError(
                "searchers must be a list of searchers, got " f"{type(searchers).__name__}"
            )
        children = list(searchers)
        if not children:
            raise ValueError("searchers must hold at least one searcher, got an empty list")
        for i, child in enumerate(children):
            if not callable(getattr(child, "search", None)):
                raise TypeError(
                    f"searchers[{i}] must have a search(query, k, filter=...) method, got "
                    f"{type(child).__name__}"
                )
        self._children = tuple(children)
        if names is None:
            names = [c.name if isinstance(c, FilteredSource) else None for c in children]
            names = None if all(v is None for v in names) else \
                [i if v is None else v for i, v in enumerate(names)]
        self._plan = FusionPlan(len(children), mode=mode, weights=weights, k_rrf=k_rrf,
                                fetch_k=fetch_k, names=names, dedup=dedup)
        self._max_workers = None if max_workers is None else check_k(max_workers, "max_workers")
        self._runner = CallRunner(self._max_workers, size=len(children),
                                  name="FusionSearcher")

    @classmethod
    def from_filters(
        cls,
        searcher: Any,
        filters: Mapping[str, MetadataFilter],
        *,
        weights: Mapping[str, float] | None = None,
        **options: Any,
    ) -> FusionSearcher:
        """One index queried once per named filter, fused with per-source weights.

        Example:
            >>> from hybrid_retrievers import BM25Index
            >>> index = BM25Index.from_texts(
            ...     ["wing section drawing", "photo of a wing", "wing lift text"],
            ...     ids=["t1", "i1", "t2"],
            ...     metadatas=[{"type": "text"}, {"type": "image"}, {"type": "text"}],
            ... )
            >>> both = FusionSearcher.from_filters(
            ...     index, {"text": {"type": "text"}, "images": {"type": "image"}},
            ...     weights={"text": 1.0, "images": 0.5},
            ... )
            >>> sorted(h.id for h in both.search("wing", k=3))
            ['i1', 't1', 't2']

        Args:
            searcher: the index (any searcher that accepts ``filter=``).
            filters: source name -> filter, in the order the sources should be listed.
            weights: source name -> weight (missing names get 1).
            **options: the other `FusionSearcher` arguments (``mode``, ``fetch_k``...).
        """
        if not isinstance(filters, Mapping) or not filters:
            raise TypeError(
                "filters must be a non-empty mapping of source name -> filter, got "
                f"{type(filters).__name__}: {filters!r:.80}"
            )
        if weights is not None:
            if not isinstance(weights, Mapping):
                raise TypeError(
                    f"weights must be a mapping of source name -> weight, got "
                    f"{type(weights).__name__}"
                )
            unknown = sorted(set(weights) - set(filters))
            if unknown:
                raise ValueError(
                    f"weights names sources that filters does not define: {unknown}; "
                    f"the sources are {list(filters)}"
                )
        sources = [FilteredSource(searcher, f, name=name) for name, f in filters.items()]
        w = None if weights is None else [weights.get(name, 1.0) for name in filters]
        return cls(sources, weights=w, names=list(filters), **options)

    @classmethod
    def hybrid(
        cls,
        texts: Iterable[str],
        embedder: Any = None,
        ids: Iterable[str] | None = None,
        metadatas: Iterable[Mapping[str, Any] | None] | None = None,
        *,
        bm25: Mapping[str, Any] | bool | None = None,
        dense: Mapping[str, Any] | None = None,
        sparse: Any = None,
        show_progress: bool = False,
        **fusion: Any,
    ) -> FusionSearcher:
        """The hybrid recipe: BM25, dense and learned sparse indexes over the same texts, fused.

        The 90% case of this package in one call, and the only place it is written:
        the CLI, parent-document search and both framework adapters' ``HybridRetriever``
        call it, so they all build the same thing. Every leg gets the same ids and
        metadata; the legs are named ``"bm25"``, ``"dense"`` and ``"sparse"``, in that
        order (BM25 first, so `lexical_boost_rule` favours it for queries with codes,
        numbers or quotes). Any subset of the legs can be built: BM25 unless
        ``bm25=False``, dense when an ``embedder`` is given, sparse when ``sparse`` is.
        The indexes' settings are passed through, not listed again here, so a new index
        option needs no change to the recipe.

        Default weights (`hybrid_weights`): one vote per family of representation,
        split among its legs: lexical (BM25 and the learned sparse leg, which both match
        vocabulary terms) and semantic (dense). BM25 + dense is 1:1; all three are
        0.5 : 1 : 0.5, so a third leg never shifts the lexical/semantic balance.
        Default mode (`hybrid_mode`): RRF for one or two legs (BM25 + dense exactly as
        before the sparse leg existed); ``relative_score`` (min-max score fusion) for
        three, since ranks hide how unsure a weak leg is. Measured with splade-tiny
        (nDCG@10, ``benchmarks/sparse_quality.py``): two-way RRF Cranfield 0.4199, CISI
        0.4398; three-way RRF 0.4238, 0.4234 (worse on CISI); three-way relative_score
        0.4263, 0.4545 (better on both). ``hybrid_retrievers.fusion.legs`` gives the
        argument. Pass ``weights=`` / ``mode=`` to choose others (equal RRF:
        ``weights=[1, 1, 1], mode="rrf"``).

        Example:
            >>> from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
            >>> texts = ["wings generate lift", "cats sleep", "lift and drag"]
            >>> hybrid = FusionSearcher.hybrid(texts, HashingEmbedder(dimension=64),
            ...                                ids=["a", "b", "c"])
            >>> sorted(h.id for h in hybrid.search("wing lift", k=2))
            ['a', 'c']
            >>> hybrid.names
            ('bm25', 'dense')
            >>> three = FusionSearcher.hybrid(texts, HashingEmbedder(dimension=64),
            ...                               ids=["a", "b", "c"],
            ...                               sparse=HashingSparseEmbedder())
            >>> three.names, three.plan.weights, three.plan.mode.value
            (('bm25', 'dense', 'sparse'), (0.5, 1.0, 0.5), 'relative_score')
            >>> [s["source"] for s in three.search("wing lift", k=1)[0]
            ...  .explanation["fusion"]["sources"]]
            ['bm25', 'dense', 'sparse']

        Args:
            texts: the document texts (read once; every leg gets the same ids).
            embedder: the dense model (a core `Embedder`); ``None``: no dense leg.
            ids, metadatas: as for `BM25Index.from_texts` (``None`` ids: content ids).
            bm25: keyword arguments of `BM25Index.from_texts` (``analyzer``, ``k1``,
                ``b``, ``method``, ``delta``); ``False``: no BM25 leg.
            dense: keyword arguments of `VectorIndex.from_texts` (``metric``,
                ``batch_size``, ``cache``).
            sparse: the learned sparse leg: its model (a `SparseEmbedder`, such as
                `hybrid_retrievers.models.SpladeEncoder`), or the keyword arguments of
                `SparseIndex.from_texts` with the model as ``"embedder"``; ``None``: no
                sparse leg.
            show_progress: progress bars while indexing (every index).
            **fusion: the constructor's arguments (``mode``, ``weights``, ``fetch_k``...;
                ``names`` defaults to the legs' names, ``weights`` to `hybrid_weights`,
                ``mode`` to `hybrid_mode`).

        Raises:
            ValueError: no leg at all, or ``dense`` options without an ``embedder``.
            TypeError: leg options of the wrong kind.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, got a single str; wrap it in a list")
        if bm25 is not False and bm25 is not None and not isinstance(bm25, Mapping):
            raise TypeError(f"bm25 must be a mapping of keyword arguments, None or False, "
                            f"got {type(bm25).__name__}: {bm25!r:.80}")
        if embedder is None and dense is not None:
            raise ValueError("dense options were given but no embedder: pass the dense "
                             "model as embedder=, or drop dense=")
        bm25_options = None if bm25 is False else _options(bm25 or None, "bm25")
        dense_options = None if embedder is None else _options(dense, "dense")
        sparse_options = None if sparse is None else _sparse_options(sparse)
        # One document table (content ids computed once), shared by every leg: an edit
        # of one leg later gives it a new table and leaves the others' as they were.
        docs = make_docs(texts, ids, metadatas)
        legs: dict[str, Any] = {}
        if bm25_options is not None:
            legs["bm25"] = BM25Index.from_docs(docs, show_progress=show_progress,
                                               **bm25_options)
        if dense_options is not None:
            legs["dense"] = VectorIndex.from_docs(docs, embedder=embedder,
                                                  show_progress=show_progress, **dense_options)
        if sparse_options is not None:
            legs["sparse"] = SparseIndex.from_docs(docs, show_progress=show_progress,
                                                   **sparse_options)
        if not legs:
            raise ValueError("the hybrid recipe needs at least one leg: bm25 (not False), "
                             "an embedder (dense) or sparse=")
        fusion.setdefault("names", list(legs))
        fusion.setdefault("mode", hybrid_mode(list(legs)))
        if "weights" not in fusion:
            weights = hybrid_weights(list(legs))
            if any(w != 1.0 for w in weights):
                fusion["weights"] = weights
        return cls(list(legs.values()), **fusion)

    # ------------------------------------------------------------------ properties

    @property
    def searchers(self) -> tuple[Any, ...]:
        """The children, in order."""
        return self._children

    @property
    def plan(self) -> FusionPlan:
        """The fusion settings (``mode``, ``weights``, ``k_rrf``, ``fetch_k``, ``names``,
        ``dedup``), checked once at construction."""
        return self._plan

    @property
    def names(self) -> tuple[Any, ...]:
        """What each child is called in the provenance (a name, or its index)."""
        return self._plan.names

    @property
    def fetch_k(self) -> int | None:
        """Candidates asked of each child (``None``: the default for each ``k``)."""
        return self._plan.fetch_k

    def leg(self, name: str | int) -> Any | None:
        """The child named ``name`` in `names`, or ``None`` when no child has that name.

        The one way to find a leg: by its name, never by its position, since a recipe
        built without a leg (``hybrid(..., bm25=False)``) moves the others up. An unnamed
        child's name is its index. Only this searcher's own children are looked at (not
        those of a nested `FusionSearcher`).

        Example:
            >>> from hybrid_retrievers.models import HashingEmbedder
            >>> dense_only = FusionSearcher.hybrid(["wings make lift"], HashingEmbedder(64),
            ...                                    bm25=False)
            >>> type(dense_only.leg("dense")).__name__, dense_only.leg("bm25")
            ('VectorIndex', None)
        """
        if isinstance(name, bool) or not isinstance(name, (str, int)):
            raise TypeError(f"name must be a leg's name (a str, or an unnamed child's index), "
                            f"got {type(name).__name__}: {name!r:.80}")
        names = self._plan.names
        return self._children[names.index(name)] if name in names else None

    def replace(self, **settings: Any) -> FusionSearcher:
        """A searcher over the same children with the given settings changed.

        ``settings`` are constructor arguments (``mode``, ``weights``, ``k_rrf``,
        ``fetch_k``, ``names``, ``max_workers``, ``dedup``); every one not given keeps
        this searcher's value, so a changed mode or weights never drops the rest of the
        plan. The children are shared, not copied: an edit to an index shows in both.

        Example:
            >>> from hybrid_retrievers.models import HashingEmbedder
            >>> hybrid = FusionSearcher.hybrid(["wings make lift", "cats sleep"],
            ...                                HashingEmbedder(64), k_rrf=10, fetch_k=5)
            >>> scored = hybrid.replace(mode="relative_score", weights=[2, 1])
            >>> scored.plan.mode.value, scored.plan.weights, scored.plan.k_rrf, scored.fetch_k
            ('relative_score', (2.0, 1.0), 10.0, 5)
            >>> scored.leg("bm25") is hybrid.leg("bm25")
            True

        Raises:
            TypeError: a keyword that is not a setting (naming the nearest one); the
                constructor's errors for a bad value.
        """
        check_keywords("FusionSearcher.replace", settings, FUSION_SETTINGS)
        plan = self._plan
        current = {"mode": plan.mode, "weights": plan.weights, "k_rrf": plan.k_rrf,
                   "fetch_k": plan.fetch_k, "names": plan.names,
                   "max_workers": self._max_workers, "dedup": plan.dedup}
        return FusionSearcher(self._children, **{**current, **settings})

    def __repr__(self) -> str:
        kids = ", ".join(type(c).__name__ for c in self._children)
        return f"FusionSearcher([{kids}], mode={self._plan.mode.value!r})"

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        weights: Weights | None = None,
        fetch_k: int | None = None,
        mode: FusionMode | str | None = None,
    ) -> list[Hit]:
        """The fused top ``k`` for ``query``.

        Args:
            query: the query, passed to every child.
            k: how many fused hits at most.
            filter: passed to every child (combined with a `FilteredSource`'s own).
            weights: overrides the constructor's weights for this call.
            fetch_k: overrides the candidates asked of each child for this call.
            mode: overrides the constructor's `FusionMode` for this call.
        """
        check_query(query)
        check_filter(filter)
        call = self._plan.resolve(query, k, weights=weights, fetch_k=fetch_k, mode=mode,
                                  check=False)
        children = self._children
        calls = [_caller(children[i], query, call.fetch_k, filter) for i in call.active]
        return self._plan.fuse(call, self._runner.run(calls, self._label(call.active)))

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        filter: MetadataFilter | None = None,
        weights: Weights | None = None,
        fetch_k: int | None = None,
    ) -> list[list[Hit]]:
        """`search` for each query, in order; each child answers all queries in one call
        (its ``search_many`` when it has one, so a dense index does one matrix product)."""
        queries = check_queries(queries)
        k = check_k(k)
        check_filter(filter)
        if not queries:
            return []
        plan = self._plan
        per_query = [plan.weights_for(q, weights) for q in queries]
        n_fetch = plan.fetch_for(k, fetch_k)
        active = tuple(i for i in range(plan.size) if any(w[i] > 0 for w in per_query))
        calls = [_many_caller(self._children[i], queries, n_fetch, filter) for i in active]
        results = self._runner.run(calls, self._label(active))
        lists: dict[int, Sequence[Sequence[Hit]]] = {}
        for i, batch in zip(active, results):
            if not isinstance(batch, Sequence) or len(batch) != len(queries):
                raise TypeError(
                    f"searcher {plan.names[i]!r}: search_many must return one list per query "
                    f"({len(queries)}), got {type(batch).__name__} of length "
                    f"{len(batch) if hasattr(batch, '__len__') else '?'}"
                )
            lists[i] = batch
        out = []
        for qi, (query, w) in enumerate(zip(queries, per_query)):
            call = FusionCall(query, k, plan.mode, w, active, n_fetch)
            out.append(plan.fuse(call, [lists[i][qi] for i in active]))  # checks each list
        return out

    # ------------------------------------------------------------------ threads

    def close(self) -> None:
        """Shut the thread pool down (a later search starts a new one)."""
        self._runner.close()

    def __enter__(self) -> FusionSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ persistence

    def save(
        self, path: str | os.PathLike[str], *, extra_settings: Mapping[str, Any] | None = None
    ) -> None:
        """Save the children and the fusion settings to the folder ``path``.

        ``extra_settings`` (JSON data) is recorded beside the fusion settings under its
        own keys, for the saver to read back with `read_fusion` (the ``index`` command
        keeps its chunking settings there); `load` ignores keys it does not know.

        The format is `hybrid_retrievers.fusion.saving`'s (the one both framework
        adapters write too): one sub-folder per child, each saved by its own ``save``
        (a `BM25Index`, a `VectorIndex`, a `SparseIndex` or a nested `FusionSearcher`),
        bound by the fusion's manifest. The save is atomic and checksummed like every
        index save (`hybrid_retrievers.persistence`); no pickle, and no model: pass the
        embedder (and the sparse one) to `load`. A callable ``weights`` rule is not saved
        either (`load` asks for it).

        Raises:
            TypeError: naming the child, for a child that is not one of those four
                (a `FilteredSource`, a foreign searcher); nothing is written then.
        """
        kinds = {"bm25": BM25Index, "vector": VectorIndex, "sparse": SparseIndex,
                 "fusion": FusionSearcher}
        children = [(child_kind(i, child, kinds, "save"), child.save, {})
                    for i, child in enumerate(self._children)]
        own = fusion_settings(self._plan, fetch_k=self._plan.fetch_k,
                              max_workers=self._max_workers)
        clash = sorted(set(extra_settings or {}) & set(own))
        if clash:
            raise ValueError(f"extra_settings must not redefine the fusion settings {clash}")
        save_fusion(path, children, {**own, **(extra_settings or {})})

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        embedder: Any = None,
        *,
        sparse_embedder: Any = None,
        mmap: bool = False,
        **options: Any,
    ) -> FusionSearcher:
        """Load a fusion saved by `save` (or by an adapter's ``save_local`` / ``persist``).

        Example:
            >>> import tempfile
            >>> from hybrid_retrievers.models import HashingEmbedder
            >>> embedder = HashingEmbedder(dimension=64)
            >>> hybrid = FusionSearcher.hybrid(["wings make lift", "cats sleep"], embedder,
            ...                                ids=["a", "b"])
            >>> with tempfile.TemporaryDirectory() as folder:
            ...     hybrid.save(folder + "/hybrid")
            ...     again = FusionSearcher.load(folder + "/hybrid", embedder)
            >>> [h.id for h in again.search("wing lift", k=1)]
            ['a']

        Args:
            embedder: the model the dense children were built with (as for
                `VectorIndex.load`); required when the fusion holds one.
            sparse_embedder: the model the learned sparse children were built with (as
                for `SparseIndex.load`: its ``model_id`` must be the saved one);
                required when the fusion holds one.
            mmap: memory-map the children's arrays (see `BM25Index.load`).
            **options: constructor arguments that replace the saved ones (``weights``
                must be given again when the fusion had a callable rule).

        Raises:
            IndexFormatError: a missing, corrupt, foreign or tampered folder (a child
                swapped for another saved index included).
            ValueError: a dense child and no ``embedder``, a sparse child and no
                ``sparse_embedder`` (or another model); a callable weights rule that
                ``options`` does not give back.
        """
        return cls.from_saved(path, read_fusion(path), embedder,
                              sparse_embedder=sparse_embedder, mmap=mmap, **options)

    @classmethod
    def from_saved(
        cls,
        path: str | os.PathLike[str],
        saved: tuple[dict[str, Any], list[tuple[str, Any, dict[str, Any]]]],
        embedder: Any = None,
        *,
        sparse_embedder: Any = None,
        mmap: bool = False,
        **options: Any,
    ) -> FusionSearcher:
        """`load` from the manifest ``saved`` that `fusion.saving.read_fusion` already read
        from ``path``: for a caller that reads the settings first (to choose the models,
        as `hybrid_retrievers.ingest.FolderIndex` does) and reads the manifest only once.
        """
        settings, entries = dict(saved[0]), saved[1]
        located = [(kind, core_index_dir(path, folder, child), child)
                   for kind, folder, child in entries]
        children = load_children(path, located, {
            "bm25": lambda folder, _k: BM25Index.load(folder, mmap=mmap),
            "vector": lambda folder, _k: VectorIndex.load(folder, embedder, mmap=mmap),
            "sparse": lambda folder, _k: SparseIndex.load(folder, sparse_embedder, mmap=mmap),
            "fusion": lambda folder, _k: cls.load(folder, embedder,
                                                  sparse_embedder=sparse_embedder, mmap=mmap),
        }, model=embedder, model_arg="embedder", method="FusionSearcher.load",
            sparse_model=sparse_embedder, sparse_model_arg="sparse_embedder")
        check_weights_restorable(settings, options, path, "FusionSearcher.load")
        share_documents(children)  # the legs of a saved hybrid: one table again
        restored = {key: settings[key] for key in FUSION_SETTINGS if key in settings}
        return cls(children, **{**restored, **options})

    def _label(self, active: Sequence[int]) -> Callable[[int], str]:
        names = self._plan.names
        return lambda j: f"FusionSearcher source {names[active[j]]!r}"


FUSION_SETTINGS = ("mode", "weights", "k_rrf", "fetch_k", "names", "max_workers", "dedup")
"""The constructor's arguments besides the searchers: what `FusionSearcher.replace` changes,
what a saved fusion restores (an adapter's fusion saves more) and what the adapters' hybrid
factories hand on in their ``**fusion``."""


def _options(options: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"{name} must be a mapping of keyword arguments (e.g. {name}="
                        f"{{...}}) or None, got {type(options).__name__}: {options!r:.80}")
    return dict(options)


def _sparse_options(sparse: Any) -> dict[str, Any]:
    """``SparseIndex.from_texts`` keyword arguments from ``hybrid``'s ``sparse=``."""
    if isinstance(sparse, Mapping):
        if "embedder" not in sparse:
            raise TypeError("sparse= as a mapping of SparseIndex.from_texts arguments must "
                            "name the model: sparse={'embedder': SpladeEncoder(...), ...}")
        return dict(sparse)
    if callable(getattr(sparse, "embed_documents", None)):
        return {"embedder": sparse}
    raise TypeError(
        "sparse must be a sparse model (a SparseEmbedder such as SpladeEncoder) or a "
        f"mapping of SparseIndex.from_texts arguments, got {type(sparse).__name__}"
    )


def _caller(child: Any, query: str, k: int, filter: Any) -> Callable[[], list[Hit]]:
    if filter is None:
        return lambda: child.search(query, k)
    return lambda: child.search(query, k, filter=filter)


def _many_caller(
    child: Any, queries: list[str], k: int, filter: Any
) -> Callable[[], list[list[Hit]]]:
    many = getattr(child, "search_many", None)
    kwargs = {} if filter is None else {"filter": filter}
    if callable(many):
        return lambda: many(queries, k, **kwargs)
    return lambda: [child.search(q, k, **kwargs) for q in queries]
