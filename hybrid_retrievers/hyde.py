"""HyDE: search with hypothetical answers written by a language model.

Gao et al. 2022, "Precise Zero-Shot Dense Retrieval without Relevance Labels"
(arXiv:2212.10496): ask an LLM to write ``n`` passages that answer the query, embed
them, and search with their mean embedding. The reference method also counts the query
itself as one more hypothesis::

    v = (f(q) + Σ_{i=1..n} f(d̂_i)) / (n + 1)        (include_query=True)
    v = (Σ_{i=1..n} f(d̂_i)) / n                     (include_query=False)

Here the passages are embedded with ``embed_documents`` (they are documents: HyDE's
point is document-document similarity, and asymmetric models such as E5 encode the
two sides differently) and the query with ``embed_query``. The mean is not
re-normalised; a cosine `VectorIndex` normalises the query vector itself.

`HyDESearcher` uses the vector with a `VectorIndex` (the vector side) and/or appends
the passages to the query of any text searcher (the query-expansion side, as in
query2doc, Wang et al. 2023): LLM-written text shares vocabulary with relevant
documents that the query lacks, which helps BM25. With both, the two lists are fused
with RRF.

Failure policy: a query never fails because the LLM did. When every generation raises,
times out or returns blank text, the raw query is used (the query's own embedding, the
unexpanded query), a warning is logged on ``hybrid_retrievers.hyde`` and the result
says so (``HyDEResult.fallback`` and ``error``). When some of the ``n`` generations
fail, the others are used and the errors are recorded.

Provenance: every hit of `HyDESearcher` carries ``explanation["hyde"]`` =
`HyDEResult.as_dict()`: ``query``, ``prompt`` (the rendered prompt), ``passages`` (the
generated texts used), ``fallback``, ``error``, ``errors``, ``cached`` and ``mode``,
plus the child hit's own explanation keys (e.g. ``"fusion"``, ``"bm25"``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .timeout import (
    DEFAULT_LLM_TIMEOUT,
    LLMTimeoutError,
    acall_with_timeout,
    check_timeout,
    start_daemon_call,
)
from .validation import check_k, check_query
from .types import Hit, MetadataFilter

__all__ = [
    "HYDE_PROMPTS",
    "HyDE",
    "HyDEResult",
    "HyDESearcher",
    "render_prompt",
]

logger = logging.getLogger(__name__)

HYDE_PROMPTS: Mapping[str, str] = {
    # The first five follow the instructions of Gao et al. 2022 (their Table 6 prompts).
    "web": "Please write a passage to answer the question.\nQuestion: {query}\nPassage:",
    "scientific": (
        "Please write a scientific paper passage to answer the question.\n"
        "Question: {query}\nPassage:"
    ),
    "claim": (
        "Please write a scientific paper passage to support/refute the claim.\n"
        "Claim: {query}\nPassage:"
    ),
    "financial": (
        "Please write a financial article passage to answer the question.\n"
        "Question: {query}\nPassage:"
    ),
    "news": "Please write a news passage about the topic.\nTopic: {query}\nPassage:",
    "argument": (
        "Please write a counter argument for the passage.\nPassage: {query}\n"
        "Counter Argument:"
    ),
    "legal": (
        "Please write a passage from a statute, regulation or court decision that answers "
        "the question, in formal legal language.\nQuestion: {query}\nPassage:"
    ),
    "technical": (
        "Please write a passage from technical documentation (a manual, a specification "
        "or an engineering report) that answers the question, using the precise terms "
        "of the field.\nQuestion: {query}\nPassage:"
    ),
    "biomedical": (
        "Please write a passage from a biomedical research article that answers the "
        "question.\nQuestion: {query}\nPassage:"
    ),
}
"""Built-in prompt templates by name; ``{query}`` is replaced by the query."""

def render_prompt(prompt: str | Callable[[str], str], query: str) -> str:
    """The prompt text for ``query``: a template name, a template with ``{query}``, or a callable.

    Only the ``{query}`` placeholder is substituted (other braces stay as written).

    Example:
        >>> render_prompt("Answer: {query}", "what is lift?")
        'Answer: what is lift?'
    """
    if callable(prompt):
        text = prompt(query)
        if not isinstance(text, str):
            raise TypeError(f"a prompt callable must return a str, got {type(text).__name__}")
        return text
    template = HYDE_PROMPTS.get(prompt, prompt)
    return template.replace("{query}", query)


def _check_prompt(prompt: Any) -> str | Callable[[str], str]:
    if callable(prompt):
        return prompt  # type: ignore[no-any-return]
    if not isinstance(prompt, str):
        raise TypeError(
            f"prompt must be a template name {sorted(HYDE_PROMPTS)}, a template str with "
            f"'{{query}}' or a callable(query) -> str, got {type(prompt).__name__}"
        )
    if prompt not in HYDE_PROMPTS and "{query}" not in prompt:
        raise ValueError(
            f"prompt must be one of {sorted(HYDE_PROMPTS)} or a template containing "
            f"'{{query}}', got {prompt!r:.80}"
        )
    return prompt


@dataclass(frozen=True)
class HyDEResult:
    """What HyDE generated for one query, and whether it fell back to the raw query.

    Attributes:
        query: the query as given.
        prompt: the rendered prompt sent to the generator.
        passages: the generated passages that were used (empty on fallback).
        fallback: ``True`` when no passage could be generated and the raw query was used.
        error: on fallback, why (the last failure); else ``None``.
        errors: every failed generation's error, also when others succeeded.
        cached: the passages came from the cache.
    """

    query: str
    prompt: str
    passages: tuple[str, ...]
    fallback: bool = False
    error: str | None = None
    errors: tuple[str, ...] = field(default_factory=tuple)
    cached: bool = False

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy (for hit explanations and logs)."""
        return {
            "query": self.query,
            "prompt": self.prompt,
            "passages": list(self.passages),
            "fallback": self.fallback,
            "error": self.error,
            "errors": list(self.errors),
            "cached": self.cached,
        }


class HyDE:
    """Hypothetical-document embeddings: generate ``n`` answers, average their vectors.

    Args:
        generate: the LLM: a callable ``prompt -> str`` (the `TextGenerator`
            protocol). An ``async def`` callable, or an object with an async
            ``agenerate(prompt)`` method, is awaited on the async path.
        embedder: an `Embedder` (``embed_documents`` / ``embed_query``).
        n: generations per query, 1..8 (the paper uses 8).
        include_query: also average in the query's own embedding (the reference method).
        prompt: a name from `HYDE_PROMPTS`, a template with ``{query}``, or a callable.
        timeout: seconds to wait for the generations (all of them together; default
            30); on timeout the ones not finished count as failed, and with none left
            the raw query is used. Generations run in daemon threads, so a hung LLM
            neither blocks the query nor keeps the process alive at exit. ``None``
            waits without limit (not recommended with a remote LLM).
        cache: keep generated passages by (prompt, query) in memory (``True``: up to
            1024 entries; an int: that many). Failures are not cached.

    Example:
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> hyde = HyDE(lambda p: "wings generate lift", HashingEmbedder(16), n=2)
        >>> vector, result = hyde.embed("how do planes fly?")
        >>> vector.shape, result.passages
        ((16,), ('wings generate lift', 'wings generate lift'))
    """

    def __init__(
        self,
        generate: Callable[[str], str] | Any,
        embedder: Any,
        *,
        n: int = 1,
        include_query: bool = True,
        prompt: str | Callable[[str], str] = "web",
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
        cache: bool | int = False,
    ) -> None:
        if not callable(generate) and not callable(getattr(generate, "agenerate", None)):
            raise TypeError(
                "generate must be a callable prompt -> str (an LLM wrapper or a function), "
                f"got {type(generate).__name__}"
            )
        if not (callable(getattr(embedder, "embed_documents", None))
                and callable(getattr(embedder, "embed_query", None))):
            raise TypeError(
                "embedder must have embed_documents(texts) and embed_query(text) (the "
                f"Embedder protocol), got {type(embedder).__name__}"
            )
        n = check_k(n, "n")
        if n > 8:
            raise ValueError(f"n must be between 1 and 8, got {n}; the paper uses 8")
        if not isinstance(include_query, bool):
            raise TypeError(f"include_query must be a bool, got {type(include_query).__name__}")
        timeout = check_timeout(timeout)
        if isinstance(cache, bool):
            size = 1024 if cache else 0
        elif isinstance(cache, int) and cache >= 0:
            size = cache
        else:
            raise TypeError(f"cache must be a bool or a non-negative int, got {cache!r}")
        self._generate = generate
        self._embedder = embedder
        self._n = n
        self._include_query = include_query
        self._prompt = _check_prompt(prompt)
        self._timeout = timeout
        self._cache_size = size
        self._cache: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
        self._cache_lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"HyDE(n={self._n}, include_query={self._include_query}, "
            f"prompt={self._prompt if isinstance(self._prompt, str) and self._prompt in HYDE_PROMPTS else 'custom'!r})"
        )

    @property
    def embedder(self) -> Any:
        """The embedder of queries and passages."""
        return self._embedder

    @property
    def n(self) -> int:
        """Generations per query."""
        return self._n

    @property
    def timeout(self) -> float | None:
        """Seconds to wait for the generations (``None``: no limit)."""
        return self._timeout

    @property
    def include_query(self) -> bool:
        """Whether the query's own embedding is averaged in."""
        return self._include_query

    def render(self, query: str) -> str:
        """The prompt that would be sent for ``query``."""
        return render_prompt(self._prompt, query)

    def clear_cache(self) -> None:
        """Forget cached passages."""
        with self._cache_lock:
            self._cache.clear()

    # ------------------------------------------------------------- generation

    def _cache_key(self, query: str) -> tuple[str, str]:
        p = self._prompt
        return (p if isinstance(p, str) else f"callable:{id(p)}", query)

    def _cached(self, query: str, prompt: str) -> HyDEResult | None:
        if not self._cache_size:
            return None
        with self._cache_lock:
            hit = self._cache.get(self._cache_key(query))
            if hit is None or len(hit) < self._n:
                return None
            self._cache.move_to_end(self._cache_key(query))
        return HyDEResult(query, prompt, hit[: self._n], cached=True)

    def _finish(self, query: str, prompt: str, outcomes: list[Any]) -> HyDEResult:
        passages: list[str] = []
        errors: list[str] = []
        for out in outcomes:
            if isinstance(out, BaseException):
                errors.append(_describe(out))
            elif not isinstance(out, str):
                errors.append(f"TypeError: the generator returned {type(out).__name__}, not str")
            elif not out.strip():
                errors.append("ValueError: the generator returned blank text")
            else:
                passages.append(out.strip())
        if not passages:
            error = errors[-1] if errors else "no generation"
            logger.warning(
                "HyDE generation failed for query %r (%s); falling back to the raw query",
                query[:80], error,
            )
            return HyDEResult(query, prompt, (), fallback=True, error=error, errors=tuple(errors))
        if errors:
            logger.warning(
                "HyDE: %d of %d generations failed for query %r (%s); using the others",
                len(errors), self._n, query[:80], errors[-1],
            )
        if self._cache_size and not errors:
            with self._cache_lock:
                self._cache[self._cache_key(query)] = tuple(passages)
                self._cache.move_to_end(self._cache_key(query))
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return HyDEResult(query, prompt, tuple(passages), errors=tuple(errors))

    def _prompt_for(self, query: str) -> str | HyDEResult:
        try:
            return self.render(query)
        except Exception as exc:  # a broken custom prompt is a generation failure too
            logger.warning("HyDE prompt failed for query %r (%s); using the raw query",
                           query[:80], _describe(exc))
            return HyDEResult(query, "", (), fallback=True, error=_describe(exc),
                              errors=(_describe(exc),))

    def generate(self, query: str) -> HyDEResult:
        """Generate the passages for ``query`` (never raises for a generator failure).

        With ``n > 1`` or a ``timeout`` the generations run in daemon threads, at the
        same time; a generation still running at the timeout is abandoned (it finishes
        in the background, and its answer is discarded).
        """
        check_query(query)
        prompt = self._prompt_for(query)
        if isinstance(prompt, HyDEResult):
            return prompt
        cached = self._cached(query, prompt)
        if cached is not None:
            return cached
        call = self._sync_call()
        if self._n == 1 and self._timeout is None:
            try:
                outcomes: list[Any] = [call(prompt)]
            except Exception as exc:
                outcomes = [exc]
            return self._finish(query, prompt, outcomes)
        # Daemon threads, not a ThreadPoolExecutor: the interpreter joins pool workers at
        # exit, so one hung generation would keep the process alive.
        futures = [start_daemon_call(call, prompt) for _ in range(self._n)]
        done, _ = concurrent.futures.wait(futures, timeout=self._timeout)
        outcomes = []
        for f in futures:
            if f in done:
                exc = f.exception()
                outcomes.append(exc if exc is not None else f.result())
            else:
                outcomes.append(LLMTimeoutError(f"no answer within {self._timeout:g} s"))
        return self._finish(query, prompt, outcomes)

    def _sync_call(self) -> Callable[[str], Any]:
        gen = self._generate
        if inspect.iscoroutinefunction(gen) or (
            not callable(gen) and callable(getattr(gen, "agenerate", None))
        ):
            agen = gen if inspect.iscoroutinefunction(gen) else gen.agenerate

            def run(prompt: str) -> Any:
                return asyncio.run(agen(prompt))

            return run
        return gen  # type: ignore[no-any-return]

    async def agenerate(self, query: str) -> HyDEResult:
        """Async `generate`: the ``n`` generations run concurrently.

        An async generator (``async def`` or an ``agenerate`` method) is awaited;
        a plain callable runs in daemon threads (not the loop's default executor, which
        ``asyncio.run`` would wait for at shutdown if a generation hung).
        """
        check_query(query)
        prompt = self._prompt_for(query)
        if isinstance(prompt, HyDEResult):
            return prompt
        cached = self._cached(query, prompt)
        if cached is not None:
            return cached
        gen = self._generate
        agen = getattr(gen, "agenerate", None)
        factory: Callable[[], Any] | None = None
        if inspect.iscoroutinefunction(gen):
            factory = lambda: gen(prompt)  # noqa: E731
        elif callable(agen):
            factory = lambda: agen(prompt)  # noqa: E731

        async def one() -> Any:
            try:
                return await acall_with_timeout(factory, gen, prompt, timeout=self._timeout)
            except Exception as exc:
                return exc

        outcomes = await asyncio.gather(*(one() for _ in range(self._n)))
        return self._finish(query, prompt, list(outcomes))

    # -------------------------------------------------------------- embedding

    def vector(self, query: str, result: HyDEResult) -> NDArray[np.float32]:
        """The HyDE vector for ``query`` from already generated passages (see module doc)."""
        rows: list[NDArray[np.float32]] = []
        if result.passages:
            docs = np.asarray(self._embedder.embed_documents(list(result.passages)), dtype=np.float32)
            if docs.ndim != 2 or docs.shape[0] != len(result.passages):
                raise ValueError(
                    f"embed_documents returned shape {docs.shape} for "
                    f"{len(result.passages)} passages; expected (n_passages, dimension)"
                )
            rows.extend(docs)
        if self._include_query or not rows:
            rows.insert(0, np.asarray(self._embedder.embed_query(query), dtype=np.float32).ravel())
        return np.mean(np.stack(rows), axis=0).astype(np.float32)

    def embed(self, query: str) -> tuple[NDArray[np.float32], HyDEResult]:
        """Generate and embed: ``(vector, result)``."""
        result = self.generate(query)
        return self.vector(query, result), result

    async def aembed(self, query: str) -> tuple[NDArray[np.float32], HyDEResult]:
        """Async `embed`: generations concurrent, the embedding in a worker thread."""
        result = await self.agenerate(query)
        return await asyncio.to_thread(self.vector, query, result), result

    def expand(self, query: str, result: HyDEResult, *, query_repeats: int = 1) -> str:
        """The expanded text query: the query (``query_repeats`` times), then the passages."""
        return "\n".join([query] * query_repeats + list(result.passages))


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
        k_rrf: float = 60.0,
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
        from .validation import check_k_rrf

        self._k_rrf = check_k_rrf(k_rrf, "k_rrf")

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
        n = k if mode != "hybrid" else max(k, self._fetch_k or 20)
        lists: list[list[Hit]] = []
        if self._index is not None:
            lists.append(self._index.search_vector(vector, n, filter=filter))
        if self._expand is not None:
            text = self._hyde.expand(query, result, query_repeats=self._repeats)
            lists.append(self._expand.search(text, n, filter=filter))
        if mode == "hybrid":
            from .fusion import fuse

            hits: Sequence[Hit] = fuse(lists, "rrf", k_rrf=self._k_rrf,
                                       names=["vector", "expansion"], limit=k)
        else:
            hits = lists[0][:k]
        return [
            Hit(h.doc, float(h.score), rank,
                {**dict(h.explanation), "hyde": {**result.as_dict(), "mode": mode}})
            for rank, h in enumerate(hits, 1)
        ]


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]
