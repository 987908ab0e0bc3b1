"""`HyDESearcher`: search with HyDE's vector, its expanded query, or both fused.

`HyDESearcher` uses the vector with a `VectorIndex` (the vector side) and/or appends
the passages to the query of any text searcher (the query-expansion side, as in
query2doc, Wang et al. 2023): LLM-written text shares vocabulary with relevant
documents that the query lacks, which helps BM25. With both, the two lists are fused
with RRF.

Provenance: every hit carries ``explanation["hyde"]`` = `HyDEResult.as_dict()`:
``query``, ``prompt`` (the rendered prompt), ``passages`` (the generated texts used),
``fallback``, ``error``, ``errors``, ``cached`` and ``mode``, plus the child hit's own
explanation keys (e.g. ``"fusion"``, ``"bm25"``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..fusion import DEFAULT_K_RRF, default_fetch_k, fuse
from ..timeout import DEFAULT_LLM_TIMEOUT
from ..types import Doc, Hit, MetadataFilter
from ..validation import check_k, check_k_rrf, check_query
from .generation import HyDE, HyDEResult
from .prompts import Prompt

__all__ = ["HYDE_OPTIONS", "HyDESearcher"]

HYDE_OPTIONS = ("n", "include_query", "prompt", "timeout", "cache", "expand_with_bm25")
"""The keyword options of `HyDESearcher.from_index` / `from_docs` besides the model and
embedder: adapters pass these through to the recipe instead of listing them again."""


class HyDESearcher:
    """Search with HyDE: a vector index, query expansion of a text searcher, or both.

    Args:
        hyde: the `HyDE` generator and embedder.
        index: a `VectorIndex` (anything with ``search_vector``) searched with the
            HyDE vector; its embedder should be the HyDE embedder.
        expand: a text searcher (`BM25Index`, `FusionSearcher`, ...) whose query gets
            the generated passages appended.
        query_repeats: how many times the query is repeated before the passages in the
            expanded query (query2doc repeats it 5 times for BM25 so long passages
            do not drown it out; default 1).
        fetch_k: with both sides, hits asked of each before fusion (default
            ``max(k, 20)``).
        k_rrf: the RRF constant when both sides are fused.

    Example:
        >>> from hybrid_retrievers import BM25Index
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> bm25 = BM25Index.from_texts(["wings generate lift", "bread rises"], ids=["w", "b"])
        >>> hyde = HyDE(lambda p: "an aircraft wing generates lift", HashingEmbedder(32))
        >>> [h.id for h in HyDESearcher(hyde, expand=bm25).search("how do planes fly?", k=1)]
        ['w']
    """

    def __init__(
        self,
        hyde: HyDE,
        index: Any = None,
        *,
        expand: Any = None,
        query_repeats: int = 1,
        fetch_k: int | None = None,
        k_rrf: float = float(DEFAULT_K_RRF),
    ) -> None:
        if not isinstance(hyde, HyDE):
            raise TypeError(f"hyde must be a hybrid_retrievers.hyde.HyDE, got {type(hyde).__name__}")
        if index is None and expand is None:
            raise ValueError(
                "pass index= (a VectorIndex searched with the HyDE vector), expand= (a text "
                "searcher queried with the expanded query), or both; got neither"
            )
        if index is not None and not callable(getattr(index, "search_vector", None)):
            raise TypeError(
                f"index must have search_vector(vector, k, filter=...) (a VectorIndex), "
                f"got {type(index).__name__}; pass a text searcher as expand= instead"
            )
        if expand is not None and not callable(getattr(expand, "search", None)):
            raise TypeError(
                f"expand must have search(query, k, filter=...), got {type(expand).__name__}"
            )
        self._hyde = hyde
        self._index = index
        self._expand = expand
        self._repeats = check_k(query_repeats, "query_repeats")
        self._fetch_k = None if fetch_k is None else check_k(fetch_k, "fetch_k")
        self._k_rrf = check_k_rrf(k_rrf, "k_rrf")

    # ----------------------------------------------------------------- recipes

    @classmethod
    def from_docs(
        cls, docs: Iterable[Doc], *, embedder: Any, generate: Any, **options: Any
    ) -> HyDESearcher:
        """Embed and index ``docs`` in a new `VectorIndex` and search it with HyDE.

        The recipe both framework adapters use. ``embedder`` embeds the documents, the
        queries and the hypothetical passages; ``options`` are `from_index`'s
        (`HYDE_OPTIONS`: ``n``, ``include_query``, ``prompt``, ``timeout``, ``cache``,
        ``expand_with_bm25``).
        """
        from ..vector import VectorIndex

        index = VectorIndex.from_docs(docs, embedder=embedder)
        return cls.from_index(index, generate=generate, embedder=embedder, **options)

    @classmethod
    def from_index(
        cls,
        index: Any,
        *,
        generate: Any,
        embedder: Any = None,
        n: int = 1,
        include_query: bool = True,
        prompt: Prompt = "web",
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
        cache: bool | int = False,
        expand_with_bm25: bool = False,
    ) -> HyDESearcher:
        """HyDE over an existing `VectorIndex` (``embedder=None``: the index's own).

        With ``expand_with_bm25`` a `BM25Index` of the same documents is also queried
        with the expanded query, and the two lists are fused with RRF. The other
        arguments are `HyDE`'s.

        Raises:
            ValueError: when neither ``embedder`` nor the index has an embedder.
        """
        if embedder is None:
            embedder = getattr(index, "embedder", None)
            if embedder is None:
                raise ValueError(
                    "the vector index has no embedder; HyDE needs one to embed passages")
        expand = None
        if expand_with_bm25:
            from ..bm25 import BM25Index

            expand = BM25Index.from_docs(index.docs)
        hyde = HyDE(generate, embedder, n=n, include_query=include_query, prompt=prompt,
                    timeout=timeout, cache=cache)
        return cls(hyde, index, expand=expand)

    # -------------------------------------------------------------- properties

    @property
    def hyde(self) -> HyDE:
        """The HyDE generator and embedder."""
        return self._hyde

    @property
    def index(self) -> Any:
        """The vector index (or ``None``)."""
        return self._index

    @property
    def expansion_searcher(self) -> Any:
        """The text searcher that receives expanded queries (or ``None``)."""
        return self._expand

    @property
    def mode(self) -> str:
        """``"vector"``, ``"expansion"`` or ``"hybrid"`` (both, fused with RRF)."""
        if self._index is not None and self._expand is not None:
            return "hybrid"
        return "vector" if self._index is not None else "expansion"

    def __repr__(self) -> str:
        return f"HyDESearcher({self._hyde!r}, mode={self.mode!r})"

    # ------------------------------------------------------------------ search

    def search(
        self, query: str, k: int = 10, *, filter: MetadataFilter | None = None
    ) -> list[Hit]:
        """The top ``k`` for ``query``; each hit's ``explanation["hyde"]`` shows the passages."""
        check_query(query)
        k = check_k(k)
        result = self._hyde.generate(query)
        vector = self._hyde.vector(query, result) if self._index is not None else None
        return self._search(query, k, filter, result, vector)

    async def asearch(
        self, query: str, k: int = 10, *, filter: MetadataFilter | None = None
    ) -> list[Hit]:
        """Async `search`: generations run concurrently; embedding and search in threads."""
        check_query(query)
        k = check_k(k)
        result = await self._hyde.agenerate(query)
        vector = None
        if self._index is not None:
            vector = await asyncio.to_thread(self._hyde.vector, query, result)
        return await asyncio.to_thread(self._search, query, k, filter, result, vector)

    def _search(
        self,
        query: str,
        k: int,
        filter: MetadataFilter | None,
        result: HyDEResult,
        vector: NDArray[np.float32] | None,
    ) -> list[Hit]:
        mode = self.mode
        if mode != "hybrid":
            n = k
        else:
            n = default_fetch_k(k) if self._fetch_k is None else max(k, self._fetch_k)
        lists: list[list[Hit]] = []
        if self._index is not None:
            lists.append(self._index.search_vector(vector, n, filter=filter))
        if self._expand is not None:
            text = self._hyde.expand(query, result, query_repeats=self._repeats)
            lists.append(self._expand.search(text, n, filter=filter))
        if mode == "hybrid":
            hits: Sequence[Hit] = fuse(lists, "rrf", k_rrf=self._k_rrf,
                                       names=["vector", "expansion"], limit=k)
        else:
            hits = lists[0][:k]
        return [
            Hit(h.doc, float(h.score), rank,
                {**dict(h.explanation), "hyde": {**result.as_dict(), "mode": mode}})
            for rank, h in enumerate(hits, 1)
        ]
