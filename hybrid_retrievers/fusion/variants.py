"""Query variants: an LLM writes other phrasings of a query, each searched and fused.

Multi-query fusion (Raudaschl's RAG-Fusion; LlamaIndex's ``QueryFusionRetriever`` with
``num_queries > 1``): ask a language model for ``count`` more search queries related to
the user's, one per line, search every query with every retriever and fuse all the
lists (`FusionPlan.fuse_queries`). The prompt has two placeholders, ``{num_queries}``
(how many to write) and ``{query}``; the answer is read as QueryFusionRetriever reads
it: code fences stripped, one query per non-blank line, the first ``count`` kept.

Failure policy, as for HyDE: a query never fails because the LLM did. When the call
raises, times out (``timeout``, `hybrid_retrievers.timeout`) or yields no usable line,
the original query is searched alone, a warning is logged on
``hybrid_retrievers.fusion`` and the result says so (`QueryVariants.fallback`, ``error``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..timeout import DEFAULT_LLM_TIMEOUT, acall_with_timeout, call_with_timeout, check_timeout
from ..validation import check_k, check_query

__all__ = ["DEFAULT_QUERY_GEN_PROMPT", "QueryVariants", "check_query_prompt",
           "agenerate_query_variants", "generate_query_variants", "parse_query_variants"]

logger = logging.getLogger("hybrid_retrievers.fusion")

DEFAULT_QUERY_GEN_PROMPT = (
    "You are a helpful assistant that writes search queries for a single input query. "
    "Write {num_queries} search queries related to the input query below, one per line, "
    "with nothing else on the lines.\n"
    "Query: {query}\n"
    "Queries:\n"
)
"""The default prompt: what QueryFusionRetriever's default asks (``{num_queries}`` more
queries related to ``{query}``, one per line), in this package's words."""


@dataclass(frozen=True)
class QueryVariants:
    """The queries one call searches: the original, then the generated ones.

    Attributes:
        original: the user's query.
        generated: the LLM's queries that are used (empty on fallback), without repeats
            of the original or of each other.
        fallback: ``True`` when generation failed and the original is searched alone.
        error: on fallback, why (``"LLMTimeoutError: no answer within 30 s"``...).
    """

    original: str
    generated: tuple[str, ...] = ()
    fallback: bool = False
    error: str | None = None

    @property
    def queries(self) -> tuple[str, ...]:
        """Every query to search: the original first."""
        return (self.original, *self.generated)

    def as_dict(self) -> dict[str, Any]:
        """The provenance form: ``original``, ``generated``, ``fallback``, ``error``."""
        return {"original": self.original, "generated": list(self.generated),
                "fallback": self.fallback, "error": self.error}


def check_query_prompt(prompt: Any, name: str = "query_gen_prompt") -> str:
    """A query-generation prompt: a str formatting with ``{num_queries}`` and ``{query}``
    (``str.format``, as QueryFusionRetriever formats it); else TypeError / ValueError."""
    if not isinstance(prompt, str):
        raise TypeError(f"{name} must be a str with {{num_queries}} and {{query}}, got "
                        f"{type(prompt).__name__}")
    try:
        prompt.format(num_queries=3, query="q")
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"{name} must format with only {{num_queries}} and {{query}} "
                         f"(double other braces: {{{{ }}}}), got an error: "
                         f"{type(exc).__name__}: {exc}") from None
    if "{query}" not in prompt:
        raise ValueError(f"{name} must contain {{query}} (where the user's query goes)")
    return prompt


def parse_query_variants(text: Any, query: str, count: int) -> tuple[str, ...]:
    """The queries in an LLM answer, read as QueryFusionRetriever reads them: code
    fences (backticks) stripped, one query per non-blank line (stripped), the first
    ``count``; then repeats of ``query`` or of an earlier line are dropped (searching
    the same text twice adds nothing: QueryFusionRetriever keys its lists by the text).

    Example:
        >>> parse_query_variants("```\\nwing lift\\n\\nlift of wings\\nwing lift\\n```",
        ...                      "how do wings lift", 3)
        ('wing lift', 'lift of wings')
    """
    if not isinstance(text, str):
        raise TypeError(f"the LLM returned {type(text).__name__}, not str")
    lines = [line.strip() for line in text.strip("`").split("\n")]
    seen = {query}
    out = []
    for line in [line for line in lines if line][:count]:
        if line not in seen:
            seen.add(line)
            out.append(line)
    return tuple(out)


def generate_query_variants(
    generate: Callable[[str], Any], query: str, count: int, *,
    prompt: str = DEFAULT_QUERY_GEN_PROMPT, timeout: float | None = DEFAULT_LLM_TIMEOUT,
) -> QueryVariants:
    """Ask ``generate`` (a callable prompt -> str) for ``count`` more queries.

    Never raises for the generator: on an error, a timeout or an answer without a
    usable line, the result is the original query alone, ``fallback=True``.

    Example:
        >>> variants = generate_query_variants(lambda p: "wing lift\\nlift of a wing",
        ...                                    "how do wings lift", 3)
        >>> variants.queries
        ('how do wings lift', 'wing lift', 'lift of a wing')
    """
    rendered, count, timeout = _prepare(query, count, prompt, timeout)
    call = _sync_generator(generate)
    try:
        answer = call_with_timeout(call, rendered, timeout=timeout)
    except Exception as exc:
        return _fallback(query, exc)
    return _finish(query, answer, count)


async def agenerate_query_variants(
    generate: Callable[[str], Any], query: str, count: int, *,
    prompt: str = DEFAULT_QUERY_GEN_PROMPT, timeout: float | None = DEFAULT_LLM_TIMEOUT,
) -> QueryVariants:
    """Async `generate_query_variants`: an ``async def`` generator, or one with an
    ``agenerate`` method (a LlamaIndex LLM's ``acomplete``), is awaited; a plain
    callable runs in a daemon thread (`acall_with_timeout`)."""
    rendered, count, timeout = _prepare(query, count, prompt, timeout)
    agen = generate if inspect.iscoroutinefunction(generate) else getattr(
        generate, "agenerate", None)
    try:
        if callable(agen):
            answer = await acall_with_timeout(lambda: agen(rendered), None, timeout=timeout)
        else:
            answer = await acall_with_timeout(None, generate, rendered, timeout=timeout)
    except Exception as exc:
        return _fallback(query, exc)
    return _finish(query, answer, count)


def _prepare(query: str, count: int, prompt: str,
             timeout: float | None) -> tuple[str, int, float | None]:
    check_query(query)
    count = check_k(count, "count")
    return (check_query_prompt(prompt, "prompt").format(num_queries=count, query=query),
            count, check_timeout(timeout))


def _sync_generator(generate: Callable[[str], Any]) -> Callable[[str], Any]:
    if inspect.iscoroutinefunction(generate):
        return lambda prompt: asyncio.run(generate(prompt))
    if not callable(generate):
        raise TypeError(f"the query generator must be a callable prompt -> str, got "
                        f"{type(generate).__name__}")
    return generate


def _finish(query: str, answer: Any, count: int) -> QueryVariants:
    try:
        generated = parse_query_variants(answer, query, count)
    except Exception as exc:
        return _fallback(query, exc)
    if not generated:
        return _fallback(query, ValueError("the LLM wrote no new query"))
    return QueryVariants(query, generated)


def _fallback(query: str, exc: BaseException) -> QueryVariants:
    error = f"{type(exc).__name__}: {exc}"[:500]
    logger.warning("query generation failed for %r (%s); searching the original query alone",
                   query[:80], error)
    return QueryVariants(query, fallback=True, error=error)
