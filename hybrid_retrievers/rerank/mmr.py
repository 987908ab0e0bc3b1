"""`MMRReranker`: maximal marginal relevance, so near-duplicates do not fill the top k.

Carbonell & Goldstein (1998), "The use of MMR, diversity-based reranking for reordering
documents and producing summaries", SIGIR '98, eq. (1): the next result is

    argmax_{D_i in R \\ S} [ λ · Sim1(D_i, Q) − (1 − λ) · max_{D_j in S} Sim2(D_i, D_j) ]

where ``R`` is the candidate list, ``S`` the results chosen so far and ``λ`` (here
``lambda_mult``, LangChain's name for it) trades relevance for novelty: ``1`` is the input
order, ``0`` pure novelty.

* ``Sim1`` (relevance) is the candidate's own retrieval score, min-max scaled to [0, 1]
  over the candidates: the searcher in front (BM25, fused, cross-encoder) is the best
  judge of relevance we have, better than a query embedding's cosine that would throw
  a hybrid or reranked score away. Candidates given as `Doc`\\ s (no score) get their
  position instead: ``1 − (position − 1) / n``. Equal scores all get 1.
* ``Sim2`` (redundancy) is, from the first source available: the cosine of per-call
  ``doc_vectors``; of the rows of ``vectors`` (a `VectorIndex` holding the candidates);
  of ``embedder`` embeddings (through ``cache`` when given, so a text is embedded once);
  else the Jaccard overlap of the candidates' analysed term sets (``analyzer``, English by
  default): a lexical fallback that needs no model and catches the duplicates that hurt
  most (overlapping chunks, mirrored pages).

Each result's score is its MMR value when chosen; it never increases down the list (a
candidate's value only falls as ``S`` grows). Provenance: ``explanation["rerank"]`` holds
``method="mmr"``, ``relevance`` (scaled Sim1), ``redundancy`` (max Sim2 to the results
above it; 0 for the first), ``similarity`` (which source gave Sim2) and the usual
``previous_rank`` / ``previous_score``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..text.analyzer import Analyzer
from ..types import Hit
from ..validation import check_number
from .candidates import RerankInput, RerankItem, prepare, provenance

__all__ = ["MMRReranker", "mmr_order"]


def mmr_order(relevance: NDArray[np.float64], similarity: NDArray[np.float64],
              lambda_mult: float, top_n: int) -> list[tuple[int, float, float]]:
    """Greedy MMR selection: ``(index, mmr value, redundancy)`` of the chosen, in order.

    Ties go to the earlier candidate (``argmax`` takes the first maximum).

    Example:
        >>> rel = np.array([1.0, 0.9, 0.5])
        >>> sim = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=float)
        >>> [i for i, _, _ in mmr_order(rel, sim, 0.5, 3)]
        [0, 2, 1]
    """
    n = len(relevance)
    redundancy = np.zeros(n)
    available = np.ones(n, dtype=bool)
    chosen: list[tuple[int, float, float]] = []
    for _ in range(min(top_n, n)):
        value = lambda_mult * relevance - (1.0 - lambda_mult) * redundancy
        value[~available] = -np.inf
        best = int(np.argmax(value))
        chosen.append((best, float(value[best]), float(redundancy[best])))
        available[best] = False
        np.maximum(redundancy, similarity[best], out=redundancy)
    return chosen


def scaled_relevance(items: Sequence[RerankItem]) -> NDArray[np.float64]:
    """Sim1: retrieval scores min-max scaled to [0, 1]; positions when any score is missing."""
    n = len(items)
    scores = [it.previous_score for it in items]
    if any(s is None or not np.isfinite(s) for s in scores):
        return 1.0 - np.arange(n, dtype=np.float64) / n
    values = np.asarray(scores, dtype=np.float64)
    spread = values.max() - values.min()
    return np.ones(n) if spread == 0 else (values - values.min()) / spread


def cosine_matrix(vectors: Any, n: int, source: str) -> NDArray[np.float64]:
    """Pairwise cosine similarity of ``n`` vectors (a zero vector is similar to nothing)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != n:
        raise ValueError(f"{source} must be an (n, d) matrix with one row per candidate "
                         f"(n={n}), got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{source} holds NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1)
    unit = matrix / np.where(norms == 0, 1.0, norms)[:, None]
    return unit @ unit.T


def jaccard_matrix(term_sets: Sequence[set[str]]) -> NDArray[np.float64]:
    """Pairwise Jaccard overlap ``|A ∩ B| / |A ∪ B|`` of term sets (0 when both are empty)."""
    vocabulary: dict[str, int] = {}
    rows = [[vocabulary.setdefault(t, len(vocabulary)) for t in terms] for terms in term_sets]
    incidence = np.zeros((len(rows), len(vocabulary)), dtype=np.float64)
    for i, columns in enumerate(rows):
        incidence[i, columns] = 1.0
    shared = incidence @ incidence.T
    sizes = incidence.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - shared
    return np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)


class MMRReranker:
    """Reorder candidates by maximal marginal relevance (Carbonell & Goldstein 1998).

    See the module docstring for the formula, what "relevance" and "similarity" are, and
    the provenance each result carries. It is a reranking stage: wrap a searcher with
    ``RerankingSearcher(searcher, MMRReranker(...), fetch_k=30)``.

    Args:
        lambda_mult: λ in [0, 1]: 1 keeps the input order, 0 picks only for novelty.
            0.5 (LangChain's default) is a balanced start; tune it against judgments.
        top_n: How many results to return (>= 1).
        vectors: A `VectorIndex` whose stored vectors give the candidates' similarity
            (candidates it does not hold are embedded by its embedder, if it has one).
        embedder: An `Embedder` for the candidates' texts when ``vectors`` is not given.
        cache: An `EmbeddingCache` for ``embedder`` (each text is embedded once).
        analyzer: The `Analyzer` of the lexical fallback (default: ``Analyzer()``).

    Example:
        >>> from hybrid_retrievers import Doc, Hit
        >>> hits = [Hit(Doc("a", "wing lift at low speed"), 3.0, 1),
        ...         Hit(Doc("b", "wing lift at low speed."), 2.9, 2),
        ...         Hit(Doc("c", "drag of a flat plate"), 1.0, 3)]
        >>> [h.id for h in MMRReranker(lambda_mult=0.5, top_n=2).rerank("wing lift", hits)]
        ['a', 'c']
    """

    def __init__(self, *, lambda_mult: float = 0.5, top_n: int = 10, vectors: Any = None,
                 embedder: Any = None, cache: Any = None, analyzer: Analyzer | None = None
                 ) -> None:
        self.lambda_mult = check_number(lambda_mult, "lambda_mult", low=0.0, high=1.0)
        self.top_n = check_number(top_n, "top_n", low=1, integer=True)
        if vectors is not None and not callable(getattr(vectors, "get_vector", None)):
            raise TypeError(f"vectors must be a VectorIndex (with get_vector(id)), got "
                            f"{type(vectors).__name__}; pass an embedder as embedder=")
        if embedder is not None and not callable(getattr(embedder, "embed_documents", None)):
            raise TypeError(f"embedder must have embed_documents(texts) (an Embedder), got "
                            f"{type(embedder).__name__}")
        if analyzer is not None and not isinstance(analyzer, Analyzer):
            raise TypeError(f"analyzer must be a hybrid_retrievers Analyzer, got "
                            f"{type(analyzer).__name__}")
        self.vectors, self.embedder, self.cache = vectors, embedder, cache
        self.analyzer = analyzer if analyzer is not None else Analyzer()

    @property
    def model_id(self) -> str:
        """``"mmr"`` plus λ, as recorded under ``explanation["rerank"]["model"]``."""
        return f"mmr(lambda_mult={self.lambda_mult:g})"

    def rerank(self, query: str, docs: Sequence[RerankInput], *, top_n: int | None = None,
               lambda_mult: float | None = None, doc_vectors: Any = None) -> list[Hit]:
        """The best ``top_n`` candidates in MMR order, as new hits.

        Args:
            query: The search query (relevance comes from the candidates' scores; the
                query is checked and recorded by the stage protocol).
            docs: Candidates (`Doc` or `Hit`) in retrieval order; a repeated id counts once.
            top_n: Per-call override of ``top_n``.
            lambda_mult: Per-call override of ``lambda_mult``.
            doc_vectors: One vector per distinct candidate, in input order (e.g. the
                embeddings a framework's nodes carry); overrides the other sources.
        """
        query, items, top_n = prepare(query, docs, top_n, self.top_n)
        lam = self.lambda_mult if lambda_mult is None else check_number(
            lambda_mult, "lambda_mult", low=0.0, high=1.0)
        if not items:
            return []
        similarity, source = self._similarity(items, doc_vectors)
        extra = {"method": "mmr", "model": self.model_id, "similarity": source}
        relevance = scaled_relevance(items)
        out = []
        for rank, (i, value, redundancy) in enumerate(
                mmr_order(relevance, similarity, lam, top_n), 1):
            info = {**extra, "relevance": float(relevance[i]), "redundancy": redundancy}
            out.append(Hit(items[i].doc, value, rank, provenance(items[i], value, info)))
        return out

    async def arerank(self, query: str, docs: Sequence[RerankInput], *,
                      top_n: int | None = None, lambda_mult: float | None = None,
                      doc_vectors: Any = None) -> list[Hit]:
        """Async `rerank` (embedding runs in a worker thread, off the event loop)."""
        return await asyncio.to_thread(self.rerank, query, docs, top_n=top_n,
                                       lambda_mult=lambda_mult, doc_vectors=doc_vectors)

    def _similarity(self, items: list[RerankItem], doc_vectors: Any
                    ) -> tuple[NDArray[np.float64], str]:
        n = len(items)
        if doc_vectors is not None:
            return cosine_matrix(doc_vectors, n, "doc_vectors"), "doc_vectors"
        if self.vectors is not None:
            stored = self._stored_vectors(items)
            if stored is not None:
                return cosine_matrix(stored, n, "the index's vectors"), "vectors"
        embedder = self.embedder if self.embedder is not None else getattr(
            self.vectors, "embedder", None)
        if embedder is not None:
            from ..vector.embedding import embed_texts

            cache = self.cache if self.cache is not None else getattr(self.vectors, "cache", None)
            matrix = embed_texts(embedder, [it.doc.text for it in items], cache=cache)
            return cosine_matrix(matrix, n, "the embedder's vectors"), "embedder"
        terms = self.analyzer.tokenize_many([it.doc.text for it in items])
        return jaccard_matrix([set(t) for t in terms]), "lexical"

    def _stored_vectors(self, items: list[RerankItem]) -> NDArray[np.float32] | None:
        """The index's rows for the candidates, or ``None`` when it lacks any of them."""
        rows = []
        for it in items:
            try:
                rows.append(self.vectors.get_vector(it.doc.id))
            except KeyError:
                return None
        return np.stack(rows)

    def __repr__(self) -> str:
        return f"MMRReranker(lambda_mult={self.lambda_mult:g}, top_n={self.top_n})"
