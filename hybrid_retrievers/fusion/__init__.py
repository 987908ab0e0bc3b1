"""Fusion: combine ranked lists from several searchers into one, and show the work.

Pure functions over ranked lists of `Hit` (`reciprocal_rank_fusion`, `score_fusion`,
`fuse`) and a `Searcher` that queries its children concurrently and fuses their answers
(`FusionSearcher`, with `FilteredSource` for one index under several filters and
`lexical_boost_rule` / `visual_intent_rule` for query-dependent weights), and
`MultimodalSearcher`, which fuses text and image queries over text, image descriptions
and CLIP vectors. `FusionPlan` (``plan.py``: per-call
weights, fetch depth, active children, checks) and `CallRunner` / `gather_calls`
(``concurrency.py``: children run at once, errors name the child) are the steps every
fusion shares (``variants.py``: an LLM's query variants for multi-query fusion);
`FusionSearcher`, `MultimodalSearcher` and the framework adapters' ``FusionRetriever``
use them, so fusion is planned in one place.

Modules: ``candidates`` (identity, dedup, ties, provenance), ``rank`` (RRF), ``score``
(normalisations, score fusion), ``modes`` (`FusionMode`, `fuse`), ``rules``
(`lexical_boost_rule`, `visual_intent_rule`), ``plan``, ``concurrency``, ``searcher``
(`FusionSearcher`, its hybrid recipe and save/load), ``multimodal``
(`MultimodalSearcher`, `ImageQuery`), ``saved`` (the saved format) and ``variants`` (an LLM's
query variants, `generate_query_variants`).

Conventions, shared by every mode:

* **Identity is the document id** (``dedup="id"``); with ``dedup="content"`` the same
  normalised text under different ids is also one document (the better-ranked copy is
  kept; blank texts are never merged).
* **Ranks are 1-based positions in the input lists**, not ``hit.rank``: the order of a
  list is its ranking. A document repeated inside one list counts once, at its best
  position.
* **Ties** (equal fused scores) go to the better best rank, then to first appearance
  (list 0 top to bottom, then list 1, ...). Per-document sums use `math.fsum`, so equal
  weights make the scores independent of the order of the lists.
* **Weights** are finite and >= 0, at least one positive; 0 switches a list off
  (``FusionSearcher`` then does not query that child at all).
* **Inputs are never mutated**: every fused hit is a new `Hit`, ranks 1..n, scores
  non-increasing, unique ids.

Provenance: every fused hit's ``explanation`` is ``{"fusion": {...}}`` with the keys

=================  ===========================================================================
key                meaning
=================  ===========================================================================
``mode``           the `FusionMode` value (``"rrf"``, ``"relative_score"``, ...); for a direct
                   `score_fusion` call, ``"<normalization>+<combination>"``
``score``          the fused score (equal to ``hit.score``)
``best_rank``      the document's best 1-based position in any list
``k_rrf``          the RRF constant (RRF only)
``normalization``  the `Normalization` value (score modes only)
``combination``    the `Combination` value (score modes only)
``sources``        one mapping per list that contains the document, in list order:
=================  ===========================================================================

and each ``sources`` entry holds

=================  ===========================================================================
``source``         the list's name (``names=``, a `FilteredSource`'s ``name``), else its index
``index``          the list's index among the inputs (or the searcher's children)
``id``             the id of the copy found in this list (differs from ``hit.id`` only when
                   ``dedup="content"`` merged two ids)
``rank``           its 1-based position in this list
``score``          its score in this list, as the child returned it
``weight``         this list's weight
``normalized``     its normalised score (score modes only)
``contribution``   what this list added to the fused score before any combination step
                   (RRF: ``weight / (k_rrf + rank)``; score modes: ``weight · normalized``)
``explanation``    the child hit's own ``explanation`` (only when it was not empty; e.g. a
                   BM25 per-term breakdown under ``"bm25"``)
=================  ===========================================================================
"""

from __future__ import annotations

from .candidates import Dedup, normalized_text_hash
from .concurrency import CallRunner, gather_calls, run_calls
from .legs import LEG_FAMILIES, hybrid_mode, hybrid_weights
from .modes import FusionMode, fuse
from .plan import FusionCall, FusionPlan
from .rank import DEFAULT_K_RRF, reciprocal_rank_fusion
from .rules import (
    EXACT_MATCH_PATTERN,
    VISUAL_WORDS,
    LexicalBoostRule,
    VisualIntentRule,
    lexical_boost_rule,
    visual_intent_rule,
)
from .score import (
    Combination,
    Normalization,
    dist_based_normalize,
    min_max_normalize,
    normalize_scores,
    score_fusion,
    z_score_normalize,
)
from .searcher import (
    DEFAULT_MIN_FETCH_K,
    FilteredSource,
    FusionSearcher,
    combine_filters,
    default_fetch_k,
)
from .multimodal import (
    IMAGE_ROUTES,
    MULTIMODAL_ROUTES,
    ImageQuery,
    MultimodalSearcher,
    default_multimodal_rule,
)
from .variants import (
    DEFAULT_QUERY_GEN_PROMPT,
    QueryVariants,
    agenerate_query_variants,
    check_query_prompt,
    generate_query_variants,
    parse_query_variants,
)

__all__ = [
    "CallRunner",
    "Combination",
    "DEFAULT_K_RRF",
    "DEFAULT_MIN_FETCH_K",
    "DEFAULT_QUERY_GEN_PROMPT",
    "Dedup",
    "EXACT_MATCH_PATTERN",
    "FilteredSource",
    "FusionCall",
    "FusionMode",
    "FusionPlan",
    "FusionSearcher",
    "IMAGE_ROUTES",
    "ImageQuery",
    "LEG_FAMILIES",
    "LexicalBoostRule",
    "MULTIMODAL_ROUTES",
    "MultimodalSearcher",
    "Normalization",
    "QueryVariants",
    "VISUAL_WORDS",
    "VisualIntentRule",
    "agenerate_query_variants",
    "check_query_prompt",
    "combine_filters",
    "default_fetch_k",
    "default_multimodal_rule",
    "dist_based_normalize",
    "fuse",
    "gather_calls",
    "generate_query_variants",
    "hybrid_mode",
    "hybrid_weights",
    "lexical_boost_rule",
    "min_max_normalize",
    "normalize_scores",
    "normalized_text_hash",
    "parse_query_variants",
    "reciprocal_rank_fusion",
    "run_calls",
    "score_fusion",
    "visual_intent_rule",
    "z_score_normalize",
]
