"""HyDE: search with hypothetical answers written by a language model (Gao et al. 2022).

* `prompts` — `HYDE_PROMPTS` and `render_prompt`: what the LLM is asked.
* `generation` — `HyDE`: ``n`` generations with a timeout, the fallback to the raw
  query, the passage cache, and the mean embedding; `HyDEResult` says what happened.
* `searcher` — `HyDESearcher`: the HyDE vector over a `VectorIndex`, the expanded
  query over a text searcher, or both fused with RRF; `HyDESearcher.from_docs` is the
  recipe the framework adapters call.

Warnings (a failed generation, a fallback) are logged on ``hybrid_retrievers.hyde``.
"""

from __future__ import annotations

from .generation import HyDE, HyDEResult, PassageCache
from .prompts import HYDE_PROMPTS, render_prompt
from .searcher import HYDE_OPTIONS, HyDESearcher

__all__ = [
    "HYDE_OPTIONS",
    "HYDE_PROMPTS",
    "HyDE",
    "HyDEResult",
    "HyDESearcher",
    "PassageCache",
    "render_prompt",
]
