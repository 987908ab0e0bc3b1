"""Hard negatives for training pairs, mined with our BM25 index.

MultipleNegativesRankingLoss already treats the other positives of a batch as negatives
(in-batch negatives); a *hard* negative is a passage that shares the anchor's words but
is not its answer, which teaches the encoder what lexical overlap does not tell
(Karpukhin et al. 2020, "Dense Passage Retrieval for Open-Domain Question Answering",
EMNLP, §3.2: one BM25 negative per question helped most).

For each pair, the anchor is searched with BM25 over the corpus and the top hits are
taken in rank order, skipping every document that is a positive of that anchor (any
pair with the same anchor) and every near-duplicate of one of those positives: the same
text after normalisation, or a token-set Jaccard similarity of at least
``near_duplicate`` (a copy of the positive with a changed header is not a negative).
A pair for which fewer than ``n`` negatives are found is dropped (training needs a fixed
number of columns), and the count is logged.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from ..bm25 import BM25Index
from ..types import Doc
from ..validation import check_k, check_number
from .pairs import TrainingPair, normalize_text

__all__ = ["add_hard_negatives"]

logger = logging.getLogger("hybrid_retrievers.models")


def add_hard_negatives(
    pairs: Sequence[TrainingPair],
    corpus: Sequence[Doc],
    n: int = 1,
    *,
    index: BM25Index | None = None,
    near_duplicate: float = 0.9,
    skip: int = 0,
) -> list[TrainingPair]:
    """``pairs`` with ``n`` BM25 hard negatives each (pairs short of ``n`` are dropped).

    Args:
        pairs: the training pairs (their ``doc_id`` must be corpus ids).
        corpus: the documents to draw negatives from.
        n: negatives per pair (0 returns the pairs unchanged).
        index: a `BM25Index` over ``corpus`` to search (built when ``None``).
        near_duplicate: token-set Jaccard similarity to a positive at or above which
            a hit is a near-duplicate, not a negative.
        skip: top non-positive hits to pass over first (unjudged relevant documents
            crowd the very top; 0 takes the hardest).

    Example:
        >>> docs = [Doc("a", "lift of a swept wing"), Doc("b", "drag of a swept wing"),
        ...         Doc("c", "bread rises")]
        >>> pair = TrainingPair("swept wing lift", "a", "lift of a swept wing", "user")
        >>> add_hard_negatives([pair], docs, 1)[0].negatives
        ('drag of a swept wing',)
    """
    n = check_number(n, "n", low=0, integer=True)
    skip = check_number(skip, "skip", low=0, integer=True)
    near_duplicate = check_number(near_duplicate, "near_duplicate", low=0.0, high=1.0)
    pairs = list(pairs)
    if n == 0 or not pairs:
        return pairs
    if index is None:
        index = BM25Index.from_docs(corpus)
    analyzer = index.analyzer
    positives: dict[str, set[str]] = defaultdict(set)
    positive_texts: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for p in pairs:
        key = normalize_text(p.anchor)
        positives[key].add(p.doc_id)
        positive_texts[key][normalize_text(p.positive)] = set(analyzer.tokenize(p.positive))
    texts = {d.id: d.text for d in corpus}
    anchors = [p.anchor for p in pairs]
    width = max(len(v) for v in positives.values())
    hits = index.search_many(anchors, k=check_k(n + skip + width + 10))
    out, short = [], 0
    for p, found in zip(pairs, hits):
        key = normalize_text(p.anchor)
        excluded, near = positives[key], positive_texts[key]
        chosen: list[str] = []
        passed = 0
        for hit in found:
            if hit.id in excluded:
                continue
            text = texts.get(hit.id, hit.doc.text)
            terms = set(analyzer.tokenize(text))
            if normalize_text(text) in near or any(
                    _jaccard(t, terms) >= near_duplicate for t in near.values()):
                continue
            if passed < skip:
                passed += 1
                continue
            chosen.append(text)
            if len(chosen) == n:
                break
        if len(chosen) < n:
            short += 1
            continue
        out.append(replace(p, negatives=tuple(chosen)))
    if short:
        logger.warning("%d of %d pairs had fewer than %d BM25 hard negatives and were "
                       "dropped", short, len(pairs), n)
    return out


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
