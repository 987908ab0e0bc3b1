"""Reranking: reorder a short candidate list with a pair scorer or an LLM, keeping provenance.

Two rerankers share one result shape:

* `Reranker` (pointwise): a `PairScorer` (e.g. `hybrid_retrievers.models.CrossEncoderScorer`)
  scores every ``(query, passage)`` pair; candidates are sorted by that score.
* `MMRReranker` (diversity): maximal marginal relevance (Carbonell & Goldstein 1998)
  trades each candidate's score against its similarity to the results above it.
* `SourceCap` (diversity): at most ``n`` results per source (``metadata["parent_id"]``,
  a file...), keeping the input order.
* `ChoiceSelectReranker` (LLM choice select, LlamaIndex's ``LLMRerank`` algorithm): the
  LLM picks the relevant candidates of each batch and gives each a relevance score;
  unusable answers keep their batch in input order (`choice_select`).
* `LLMReranker` (listwise): a text generator is shown the numbered candidates and asked for
  their order (Sun et al. 2023, "Is ChatGPT Good at Search?", RankGPT, including its sliding
  window for long lists). Its output is parsed leniently by `parse_ranking`; when nothing
  usable comes back, or the generator raises, the input order is kept and the reason is
  recorded instead of failing the query.

Conventions:

* **Inputs** are `Doc`s or `Hit`s (mixed is fine), in their retrieval order. They are never
  mutated: every result is a new `Hit` with ranks 1..n. A document id seen twice counts
  once (its first, better-ranked occurrence).
* **Ties** keep the input order (the sort is stable).
* ``top_n`` larger than the input returns every candidate; an empty input returns ``[]``
  without calling the model.
* **Provenance**: every result's ``explanation`` is ``{"rerank": {...}}`` (key `RERANK_KEY`):

  ========================  ===================================================================
  key                       meaning
  ========================  ===================================================================
  ``method``                ``"pointwise"`` (`Reranker`), ``"listwise"`` (`LLMReranker`),
                            ``"choice_select"`` (`ChoiceSelectReranker`),
                            ``"mmr"`` or ``"source_cap"`` (their own keys: see `mmr`,
                            `source_cap`)
  ``model``                 the scorer's ``model_id`` (else its class name) / the LLM's name
  ``score``                 the rerank score (equal to ``hit.score``)
  ``previous_rank``         the candidate's rank before reranking: ``hit.rank`` for a `Hit`,
                            its 1-based input position for a `Doc`
  ``previous_score``        ``hit.score`` for a `Hit`, ``None`` for a `Doc`
  ``previous_explanation``  the input hit's own ``explanation`` (only when it was not empty)
  ``status``                listwise only: ``"ok"`` (a clean permutation), ``"repaired"``
                            (usable output with problems that were fixed, see ``detail``) or
                            ``"fallback"`` (unusable output or a raising LLM: input order kept)
  ``detail``                listwise only: what was repaired or why it fell back (``""`` if ok)
  ``llm_calls``             listwise only: how many prompts were sent
  ========================  ===================================================================

Example:
    >>> from hybrid_retrievers import Doc
    >>> class Overlap:  # any object with score(pairs) -> array is a PairScorer
    ...     def score(self, pairs):
    ...         return [len(set(q.split()) & set(p.split())) for q, p in pairs]
    >>> docs = [Doc("a", "cats sleep"), Doc("b", "wing lift and drag"), Doc("c", "lift")]
    >>> hits = Reranker(Overlap(), top_n=2).rerank("wing lift", docs)
    >>> [(h.id, h.score, h.explanation["rerank"]["previous_rank"]) for h in hits]
    [('b', 2.0, 2), ('c', 1.0, 3)]

Layout: `candidates` (input checks and provenance), `pointwise` (`Reranker`,
`as_pair_scorer`), `parsing` (`parse_ranking`), `listwise` (`LLMReranker` and its
prompt), `choice_select` (`ChoiceSelectReranker`), `mmr` (`MMRReranker`), `source_cap`
(`SourceCap`), `searcher` (`RerankingSearcher`, which wraps a searcher with any of these
stages). Warnings are logged on ``hybrid_retrievers.rerank``.
"""

from __future__ import annotations

from .candidates import RERANK_KEY, RerankInput, RerankItem
from .choice_select import (
    DEFAULT_CHOICE_SELECT_PROMPT,
    ChoiceSelectReranker,
    format_choice_batch,
    parse_choice_select_answer,
)
from .listwise import DEFAULT_LLM_RERANK_PROMPT, LLMReranker
from .mmr import MMRReranker
from .parsing import RankingParse, parse_ranking
from .pointwise import Reranker, as_pair_scorer
from .searcher import RerankingSearcher
from .source_cap import SourceCap

__all__ = [
    "DEFAULT_CHOICE_SELECT_PROMPT",
    "ChoiceSelectReranker",
    "DEFAULT_LLM_RERANK_PROMPT",
    "LLMReranker",
    "MMRReranker",
    "RERANK_KEY",
    "RankingParse",
    "RerankInput",
    "RerankItem",
    "Reranker",
    "RerankingSearcher",
    "SourceCap",
    "as_pair_scorer",
    "format_choice_batch",
    "parse_choice_select_answer",
    "parse_ranking",
]
