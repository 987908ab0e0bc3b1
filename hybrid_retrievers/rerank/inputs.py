"""What the framework rerankers share: the cross-encoder recipe and positional inputs.

A LangChain compressor and a LlamaIndex postprocessor rerank their framework's objects
(documents, nodes) with the same core reranker. Written once here:

* `pair_reranker`: the "model" a user passes (a name, a local path, a loaded
  ``CrossEncoder`` or any scorer, see `as_pair_scorer`) and its loading options, as a
  `Reranker`;
* `positional_docs` / `input_position`: the inputs as `Doc`s whose ids are their
  positions, so every result maps back to exactly its own input object (framework objects
  may lack ids); a repeated id gets its first occurrence's position, so the core keeps
  only that one, as it does for repeated `Doc` ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..types import Doc, Hit
from .pointwise import Reranker, as_pair_scorer

__all__ = ["input_position", "pair_reranker", "positional_docs"]


def pair_reranker(model: Any, *, top_n: int = 3, score_threshold: float | None = None,
                  batch_size: int = 32, max_length: int | None = None,
                  device: str | None = None,
                  model_kwargs: Mapping[str, Any] | None = None) -> Reranker:
    """A `Reranker` over ``as_pair_scorer(model, ...)``; the loading options (``batch_size``,
    ``max_length``, ``device``, ``model_kwargs`` for ``CrossEncoder(...)``) apply to a
    model given by name, path or ``CrossEncoder``."""
    scorer = as_pair_scorer(model, batch_size=batch_size, max_length=max_length, device=device,
                            model_kwargs=model_kwargs)
    return Reranker(scorer, top_n=top_n, score_threshold=score_threshold)


def positional_docs(items: Iterable[tuple[Any, ...]]) -> list[Doc]:
    """``(id or None, text)`` or ``(id or None, text, metadata)`` tuples, in input order,
    as `Doc`s whose id is the position of the first input with the same id (its own
    position when the id is ``None``); the metadata (for stages such as `SourceCap`)
    is kept."""
    first: dict[str, int] = {}
    out = []
    for i, (item_id, text, *metadata) in enumerate(items):
        position = i if item_id is None else first.setdefault(item_id, i)
        out.append(Doc(str(position), text, *metadata))
    return out


def input_position(hit: Hit) -> int:
    """The 0-based input position of a hit reranked from `positional_docs`."""
    return int(hit.doc.id)
