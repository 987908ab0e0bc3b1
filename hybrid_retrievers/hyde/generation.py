"""HyDE generation: ``n`` hypothetical passages per query, their mean embedding.

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

Failure policy: a query never fails because the LLM did. When every generation raises,
times out or returns blank text, the raw query is used (the query's own embedding, the
unexpanded query), a warning is logged on ``hybrid_retrievers.hyde`` and the result
says so (``HyDEResult.fallback`` and ``error``). When some of the ``n`` generations
fail, the others are used and the errors are recorded.

Sync and async share one plan (`HyDE._plan`): it renders the prompt, consults the
passage cache, yields the prompt once, receives the ``n`` outcomes and turns them into
a `HyDEResult`. Only running the ``n`` calls differs between `HyDE.generate` and
`HyDE.agenerate`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..timeout import (
    DEFAULT_LLM_TIMEOUT,
    LLMTimeoutError,
    acall_with_timeout,
    check_timeout,
    start_daemon_call,
)
from ..validation import check_k, check_query
from .prompts import Prompt, check_prompt, prompt_label, render_prompt

__all__ = ["HyDE", "HyDEResult", "PassageCache"]

logger = logging.getLogger("hybrid_retrievers.hyde")


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


class PassageCache:
    """A thread-safe LRU of generated passages by ``(prompt key, query)``.

    Args:
        size: most entries kept; ``0`` keeps none (every lookup misses).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], n: int) -> tuple[str, ...] | None:
        """The first ``n`` cached passages for ``key``, or ``None`` (fewer than ``n`` miss)."""
        if not self.size:
            return None
        with self._lock:
            passages = self._entries.get(key)
            if passages is None or len(passages) < n:
                return None
            self._entries.move_to_end(key)
        return passages[:n]

    def put(self, key: tuple[str, str], passages: tuple[str, ...]) -> None:
        """Remember ``passages`` for ``key``, evicting the least recently used."""
        if not self.size:
            return
        with self._lock:
            self._entries[key] = passages
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()


def _cache_size(cache: Any) -> int:
    if isinstance(cache, bool):
        return 1024 if cache else 0
    if isinstance(cache, int) and cache >= 0:
        return cache
    raise TypeError(f"cache must be a bool or a non-negative int, got {cache!r}")


class HyDE:
    """Hypothetical-document embeddings: generate ``n`` answers, average their vectors.

    Args:
        generate: the LLM: a callable ``prompt -> str`` (the `TextGenerator`
            protocol). An ``async def`` callable, or an object with an async
            ``agenerate(prompt)`` method, is awaited on the async path.
        embedder: an `Embedder` (``embed_documents`` / ``embed_query``), or ``None`` for
            generation only (`generate`; a query transform that leaves the embedding to
            the retriever, as LlamaIndex's ``HyDEQueryTransform`` does).
        n: generations per query, 1..8 (the paper uses 8).
        include_query: also average in the query's own embedding (the reference method).
        prompt: a name from `HYDE_PROMPTS`, a template with ``{query}``, a callable, or
            ``None`` (the generator receives the query and formats its own prompt).
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
        prompt: Prompt = "web",
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
        cache: bool | int = False,
    ) -> None:
        if not callable(generate) and not callable(getattr(generate, "agenerate", None)):
            raise TypeError(
                "generate must be a callable prompt -> str (an LLM wrapper or a function), "
                f"got {type(generate).__name__}"
            )
        if embedder is not None and not (callable(getattr(embedder, "embed_documents", None))
                                         and callable(getattr(embedder, "embed_query", None))):
            raise TypeError(
                "embedder must have embed_documents(texts) and embed_query(text) (the "
                f"Embedder protocol) or be None (generation only), got {type(embedder).__name__}"
            )
        n = check_k(n, "n")
        if n > 8:
            raise ValueError(f"n must be between 1 and 8, got {n}; the paper uses 8")
        if not isinstance(include_query, bool):
            raise TypeError(f"include_query must be a bool, got {type(include_query).__name__}")
        self._timeout = check_timeout(timeout)
        self._cache = PassageCache(_cache_size(cache))
        self._generate = generate
        self._embedder = embedder
        self._n = n
        self._include_query = include_query
        self._prompt = check_prompt(prompt)

    def __repr__(self) -> str:
        return (f"HyDE(n={self._n}, include_query={self._include_query}, "
                f"prompt={prompt_label(self._prompt)!r})")

    @property
    def embedder(self) -> Any:
        """The embedder of queries and passages (``None``: generation only)."""
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
        self._cache.clear()

    # ------------------------------------------------------------- generation

    def _cache_key(self, query: str) -> tuple[str, str]:
        p = self._prompt
        label = p if isinstance(p, str) else "generator" if p is None else f"callable:{id(p)}"
        return (label, query)

    def _plan(self, query: str) -> Generator[str, list[Any], HyDEResult]:
        """Yield the prompt once, receive the ``n`` outcomes, return the result.

        Returns at once (without yielding) for a cached query or a broken prompt.
        """
        check_query(query)
        try:
            prompt = self.render(query)
        except Exception as exc:  # a broken custom prompt is a generation failure too
            logger.warning("HyDE prompt failed for query %r (%s); using the raw query",
                           query[:80], _describe(exc))
            return HyDEResult(query, "", (), fallback=True, error=_describe(exc),
                              errors=(_describe(exc),))
        cached = self._cache.get(self._cache_key(query), self._n)
        if cached is not None:
            return HyDEResult(query, prompt, cached, cached=True)
        outcomes = yield prompt
        return self._finish(query, prompt, outcomes)

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
        else:
            self._cache.put(self._cache_key(query), tuple(passages))
        return HyDEResult(query, prompt, tuple(passages), errors=tuple(errors))

    def generate(self, query: str) -> HyDEResult:
        """Generate the passages for ``query`` (never raises for a generator failure).

        With ``n > 1`` or a ``timeout`` the generations run in daemon threads, at the
        same time; a generation still running at the timeout is abandoned (it finishes
        in the background, and its answer is discarded).
        """
        plan = self._plan(query)
        try:
            prompt = next(plan)
            plan.send(self._run(prompt))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        raise AssertionError("HyDE._plan yields once")  # pragma: no cover

    async def agenerate(self, query: str) -> HyDEResult:
        """Async `generate`: the ``n`` generations run concurrently.

        An async generator (``async def`` or an ``agenerate`` method) is awaited;
        a plain callable runs in daemon threads (not the loop's default executor, which
        ``asyncio.run`` would wait for at shutdown if a generation hung).
        """
        plan = self._plan(query)
        try:
            prompt = next(plan)
            plan.send(await self._arun(prompt))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        raise AssertionError("HyDE._plan yields once")  # pragma: no cover

    def _run(self, prompt: str) -> list[Any]:
        """The ``n`` outcomes (answers or exceptions) of the sync generator."""
        call = self._sync_call()
        if self._n == 1 and self._timeout is None:
            try:
                return [call(prompt)]
            except Exception as exc:
                return [exc]
        # Daemon threads, not a ThreadPoolExecutor: the interpreter joins pool workers at
        # exit, so one hung generation would keep the process alive.
        futures = [start_daemon_call(call, prompt) for _ in range(self._n)]
        done, _ = concurrent.futures.wait(futures, timeout=self._timeout)
        outcomes: list[Any] = []
        for f in futures:
            if f in done:
                exc = f.exception()
                outcomes.append(exc if exc is not None else f.result())
            else:
                outcomes.append(LLMTimeoutError(f"no answer within {self._timeout:g} s"))
        return outcomes

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

    async def _arun(self, prompt: str) -> list[Any]:
        """The ``n`` outcomes, awaited concurrently (sync generators in daemon threads)."""
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

        return list(await asyncio.gather(*(one() for _ in range(self._n))))

    # -------------------------------------------------------------- embedding

    def vector(self, query: str, result: HyDEResult) -> NDArray[np.float32]:
        """The HyDE vector for ``query`` from already generated passages (see module doc).

        Raises:
            ValueError: when this HyDE was made without an embedder (generation only).
        """
        if self._embedder is None:
            raise ValueError("this HyDE has no embedder (it was made for generation only); "
                             "pass embedder= to embed queries")
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


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]
