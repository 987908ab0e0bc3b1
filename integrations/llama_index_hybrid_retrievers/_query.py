"""A query-type check that runs before LlamaIndex's instrumentation sees the query.

``BaseRetriever.retrieve(None)`` fails inside LlamaIndex with "2 validation errors for
RetrievalStartEvent", which names neither the argument nor the fix. `QueryChecked` is a
plain mixin placed before ``BaseRetriever`` in a retriever's bases: it checks the query and
then calls the real ``retrieve`` / ``aretrieve`` (so their spans and events are unchanged;
the mixin's own methods are not span-decorated, because it is not a ``BaseRetriever``).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import NodeWithScore, QueryBundle

__all__ = ["QueryChecked", "check_query_type"]


def check_query_type(query: Any) -> None:
    """Raise a TypeError naming the argument unless ``query`` is a str or a QueryBundle."""
    if isinstance(query, str):
        return
    if isinstance(query, QueryBundle):
        if not isinstance(query.query_str, str):
            raise TypeError(
                f"QueryBundle.query_str must be a str, got {type(query.query_str).__name__}"
            )
        return
    raise TypeError(
        "str_or_query_bundle must be a str or a llama_index QueryBundle, got "
        f"{type(query).__name__}: {query!r:.80}"
    )


class QueryChecked:
    """Mixin: ``retrieve`` / ``aretrieve`` refuse a query of the wrong type clearly."""

    def retrieve(self, str_or_query_bundle: Any) -> list[NodeWithScore]:
        check_query_type(str_or_query_bundle)
        return super().retrieve(str_or_query_bundle)  # type: ignore[misc]

    async def aretrieve(self, str_or_query_bundle: Any) -> list[NodeWithScore]:
        check_query_type(str_or_query_bundle)
        return await super().aretrieve(str_or_query_bundle)  # type: ignore[misc]
