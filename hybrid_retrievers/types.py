"""Core value types and the protocols every searcher and model adapter satisfies.

`Doc` and `Hit` are frozen: searchers hand out new objects and never edit what the
caller passed in. Identity is the document id, never its text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Doc",
    "Hit",
    "MetadataFilter",
    "Searcher",
    "Embedder",
    "SparseEmbedder",
    "PairScorer",
    "TextGenerator",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Doc:
    """A document: a string id, its text and free-form metadata.

    Example:
        >>> Doc("d1", "BM25 is a ranking function", {"source": "wiki"}).id
        'd1'
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise TypeError(f"Doc.id must be a str, got {type(self.id).__name__}: {self.id!r}")
        if not isinstance(self.text, str):
            raise TypeError(
                f"Doc.text must be a str, got {type(self.text).__name__} for doc {self.id!r}"
            )
        if type(self.metadata) is not MappingProxyType:  # (the ABC check below is slow)
            if not isinstance(self.metadata, Mapping):
                raise TypeError(
                    f"Doc.metadata must be a mapping, got {type(self.metadata).__name__} "
                    f"for doc {self.id!r}"
                )
            # A read-only copy: later edits to the caller's dict cannot change the index.
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the document, its score and its 1-based rank.

    `explanation` carries where the score came from (per-term BM25 contributions,
    per-source ranks after fusion, the previous rank after reranking); it is empty
    when the searcher was not asked to explain.
    """

    doc: Doc
    score: float
    rank: int
    explanation: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def id(self) -> str:
        """The document id (shortcut for ``hit.doc.id``)."""
        return self.doc.id


MetadataFilter = Union[Mapping[str, Any], Callable[[Doc], bool]]
"""A metadata equality mapping (every key must equal) or a predicate over `Doc`."""


@runtime_checkable
class Searcher(Protocol):
    """Anything that answers a text query with ranked hits."""

    def search(
        self, query: str, k: int = 10, *, filter: MetadataFilter | None = None
    ) -> list[Hit]: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors (documents and queries may differ)."""

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]: ...

    def embed_query(self, text: str) -> NDArray[np.float32]: ...


@runtime_checkable
class SparseEmbedder(Protocol):
    """Turns texts into sparse vectors: ``{token: weight}`` dicts (learned sparse, SPLADE).

    Tokens are the model's vocabulary strings (``"diabetes"``, ``"##ing"``); weights are
    finite and > 0 (zeros are left out). ``model_id`` names the model, so a saved index
    and a cache know which vectors they hold. Documents and queries may be encoded
    differently (inference-free models encode queries with a tokenizer and an idf
    table). An ``embed_queries(texts)`` method, when present, encodes a batch of queries
    (`SparseIndex.search_many` uses it).
    """

    model_id: str

    def embed_documents(self, texts: Sequence[str]) -> list[dict[str, float]]: ...

    def embed_query(self, text: str) -> dict[str, float]: ...


@runtime_checkable
class PairScorer(Protocol):
    """Scores (query, passage) pairs; higher is more relevant."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]: ...


@runtime_checkable
class TextGenerator(Protocol):
    """Generates text from a prompt (an LLM, or any callable str -> str)."""

    def __call__(self, prompt: str) -> str: ...
