"""Pointwise reranking: a `PairScorer` scores every ``(query, passage)`` pair.

`as_pair_scorer` is the one rule for turning what a user passes as "the model" (a name,
a local path, a loaded ``CrossEncoder`` or a scorer) into a `PairScorer`; both
framework adapters call it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..models.names import DEFAULT_CROSS_ENCODER, model_name
from ..types import Hit, PairScorer
from ..validation import check_k, check_scores, check_threshold
from .candidates import RerankInput, RerankItem, prepare, provenance

__all__ = ["Reranker", "as_pair_scorer"]


def as_pair_scorer(model: Any = None, **scorer_kwargs: Any) -> PairScorer:
    """``model`` as a `PairScorer`.

    Args:
        model: A model name or local path (a `CrossEncoderScorer`, loaded on first use),
            a loaded ``sentence_transformers.CrossEncoder`` (anything with ``predict``
            and no ``score``), or any object with ``score(pairs)``, returned as it is.
            ``None`` uses `DEFAULT_CROSS_ENCODER`.
        **scorer_kwargs: `CrossEncoderScorer` options (``batch_size``, ``max_length``,
            ``device``...); not used for a ready scorer.

    Raises:
        TypeError: for anything else.
    """
    if model is None:
        model = DEFAULT_CROSS_ENCODER
    if isinstance(model, str) or callable(getattr(model, "predict", None)) and not callable(
        getattr(model, "score", None)
    ):
        from ..models.cross_encoder import CrossEncoderScorer

        return CrossEncoderScorer(model, **scorer_kwargs)
    if callable(getattr(model, "score", None)):
        return model  # type: ignore[no-any-return]
    raise TypeError(
        "model must be a model name, a local path, a sentence_transformers "
        f"CrossEncoder or an object with score(pairs), got {type(model).__name__}: "
        f"{model!r:.80}"
    )


class Reranker:
    """Rerank candidates by a `PairScorer`'s relevance score (pointwise reranking).

    Args:
        scorer: Any object with ``score(pairs) -> array`` (a `PairScorer`), e.g.
            `hybrid_retrievers.models.CrossEncoderScorer`. Scores are read as float32,
            one per pair, higher = more relevant.
        top_n: How many candidates to keep (>= 1); more than the input keeps all.
        score_threshold: Drop candidates scoring below this (in the scorer's units: a
            probability for ``CrossEncoderScorer``'s default sigmoid), before ``top_n``.
            ``None`` keeps every score.

    Candidates are sorted by score, descending; equal scores keep the input order, and a
    NaN score sorts last (and fails any threshold). See `hybrid_retrievers.rerank` for
    the provenance every result carries.

    Example:
        >>> from hybrid_retrievers import Doc, Hit
        >>> class Length:
        ...     model_id = "length"
        ...     def score(self, pairs):
        ...         return [len(p) for _, p in pairs]
        >>> hits = [Hit(Doc("a", "short"), 9.0, 1), Hit(Doc("b", "much longer"), 4.0, 2)]
        >>> top = Reranker(Length(), top_n=1).rerank("q", hits)[0]
        >>> top.id, top.rank, top.explanation["rerank"]["previous_score"]
        ('b', 1, 4.0)
    """

    def __init__(
        self,
        scorer: PairScorer,
        *,
        top_n: int = 3,
        score_threshold: float | None = None,
    ) -> None:
        if not callable(getattr(scorer, "score", None)):
            raise TypeError(
                "scorer must have a score(pairs) method (a PairScorer), got "
                f"{type(scorer).__name__}; for a model name use Reranker.cross_encoder(name)"
            )
        self.scorer = scorer
        self.top_n = check_k(top_n, name="top_n")
        self.score_threshold = check_threshold(score_threshold)

    @classmethod
    def cross_encoder(
        cls,
        model: Any = None,
        *,
        top_n: int = 3,
        score_threshold: float | None = None,
        **scorer_kwargs: Any,
    ) -> Reranker:
        """A reranker over `hybrid_retrievers.models.CrossEncoderScorer` (loaded on first use).

        Args:
            model: A model name, a local path or a loaded ``CrossEncoder``; ``None`` uses
                ``cross-encoder/ms-marco-MiniLM-L-6-v2``.
            top_n, score_threshold: As for the constructor.
            **scorer_kwargs: ``batch_size``, ``max_length``, ``device``, ``activation``...
        """
        from ..models.cross_encoder import CrossEncoderScorer

        scorer = CrossEncoderScorer(DEFAULT_CROSS_ENCODER if model is None else model,
                                    **scorer_kwargs)
        return cls(scorer, top_n=top_n, score_threshold=score_threshold)

    @property
    def model_id(self) -> str:
        """The scorer's identity, as recorded under ``explanation["rerank"]["model"]``."""
        # Plain attributes only: a "model" property may load the model.
        return model_name(self.scorer)

    def rerank(
        self,
        query: str,
        docs: Sequence[RerankInput],
        *,
        top_n: int | None = None,
        score_threshold: float | None = None,
    ) -> list[Hit]:
        """Score every candidate against ``query`` and return the best, as new hits.

        Args:
            query: The search query.
            docs: Candidates (`Doc` or `Hit`), in retrieval order.
            top_n: Per-call override of ``top_n`` (``None``: the reranker's).
            score_threshold: Per-call override of ``score_threshold`` (``None``: the
                reranker's).

        Raises:
            TypeError, ValueError: for a bad query, candidate list or override, or a
                scorer that does not return one score per candidate.
        """
        query, items, top_n = prepare(query, docs, top_n, self.top_n)
        threshold = (self.score_threshold if score_threshold is None
                     else check_threshold(score_threshold))
        if not items:
            return []
        scores = self._score(query, items)
        # NaN last; stable sort keeps the input order among equal scores.
        keys = np.where(np.isnan(scores), np.inf, -scores)
        order = np.argsort(keys, kind="stable")
        if threshold is not None:
            order = order[scores[order] >= threshold]
        extra = {"method": "pointwise", "model": self.model_id}
        return [
            Hit(items[i].doc, float(scores[i]), rank,
                provenance(items[i], float(scores[i]), extra))
            for rank, i in enumerate(order[:top_n].tolist(), 1)
        ]

    async def arerank(
        self,
        query: str,
        docs: Sequence[RerankInput],
        *,
        top_n: int | None = None,
        score_threshold: float | None = None,
    ) -> list[Hit]:
        """Async `rerank`: the model runs in a worker thread, off the event loop."""
        return await asyncio.to_thread(
            self.rerank, query, docs, top_n=top_n, score_threshold=score_threshold
        )

    def _score(self, query: str, items: list[RerankItem]) -> np.ndarray:
        raw = self.scorer.score([(query, it.doc.text) for it in items])
        return check_scores(raw, len(items), f"scorer {type(self.scorer).__name__}.score")

    def __repr__(self) -> str:
        return (f"Reranker({self.model_id!r}, top_n={self.top_n}, "
                f"score_threshold={self.score_threshold!r})")
