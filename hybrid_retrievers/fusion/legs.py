"""The hybrid recipe's legs and how their votes are weighed and fused by default.

`FusionSearcher.hybrid` builds up to three legs over the same texts: ``"bm25"``,
``"dense"`` and ``"sparse"`` (a learned sparse model such as SPLADE). Two defaults are
decided here: the weights (`hybrid_weights`) and the fusion mode (`hybrid_mode`).

Weights. Fusion methods such as RRF (Cormack et al. 2009) treat each input ranking as
an independent vote. Two of these legs are not independent: BM25 and a learned sparse
model both score documents by the vocabulary terms they share with the query (SPLADE is
a lexical model with learned term weights and expansion, Formal et al. 2021), so their
rankings agree far more with each other than with a dense model's. With one vote each,
adding the sparse leg to BM25 + dense turns a 1:1 balance of the lexical and the
semantic view into 2:1, whatever the sparse model's quality; the issue measured what
that costs with a weak model (splade-tiny on CISI: 0.4407 -> 0.4212 nDCG@10). The
default therefore gives one vote to each *family* of representation, split evenly
among the family's legs: lexical (BM25, learned sparse) and semantic (dense). BM25 +
dense stays 1:1 (today's recipe, unchanged); all three get BM25 0.5, dense 1, sparse
0.5. A pair within one family (BM25 + sparse) is 0.5:0.5, the same ranking as equal
weights.

Mode. The family vote keeps the balance, but with RRF it does not keep a weak third
leg from hurting: RRF sees only ranks, and ranks discard how far apart a leg's scores
are, so a weak leg's flat, unsure ranking votes as loudly as a strong leg's confident
one. Score fusion keeps that information: ``relative_score`` (each leg's scores min-max
normalised over its candidates, then the weighted sum; Weaviate's
``relativeScoreFusion``, its hybrid default since v1.24 for this reason) lets a leg
whose top candidates are nearly tied move the fused order little. So three legs fuse
with ``relative_score`` by default; one or two legs keep RRF (two-way BM25 + dense is
exactly today's recipe). Measured with splade-tiny, weights 0.5 : 1 : 0.5, nDCG@10
(``benchmarks/sparse_quality.py``):

=========  ===============  ===============  ==========================
collection two-way RRF      three-way RRF    three-way relative_score
=========  ===============  ===============  ==========================
Cranfield  0.4199           0.4238           0.4263
CISI       0.4398           0.4234           0.4545
=========  ===============  ===============  ==========================

Three-way RRF costs 0.02 on CISI; three-way relative_score is above today's two-way
default on both collections (the benchmark reports the paired significance and
Recall@100 too). Users who know their sparse model is strong (SPLADE-v3, SPLADE++) may
pass ``weights=`` and ``mode=`` explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence

from .modes import FusionMode

__all__ = ["LEG_FAMILIES", "hybrid_mode", "hybrid_weights"]

LEG_FAMILIES = {"bm25": "lexical", "sparse": "lexical", "dense": "semantic"}
"""The family of each leg of the hybrid recipe: legs of one family share one vote."""


def hybrid_mode(legs: Sequence[str]) -> FusionMode:
    """The default fusion mode of the hybrid recipe's ``legs``: ``relative_score`` for
    three legs, RRF for fewer (see the module's docstring for why and what it measured).

    Example:
        >>> hybrid_mode(["bm25", "dense"]).value
        'rrf'
        >>> hybrid_mode(["bm25", "dense", "sparse"]).value
        'relative_score'

    Raises:
        ValueError: as `hybrid_weights`.
    """
    hybrid_weights(legs)  # the same check of the names
    return FusionMode.RELATIVE_SCORE if len(list(legs)) == 3 else FusionMode.RRF


def hybrid_weights(legs: Sequence[str]) -> list[float]:
    """The default fusion weights of the hybrid recipe's ``legs``: one vote per family.

    Example:
        >>> hybrid_weights(["bm25", "dense"])
        [1.0, 1.0]
        >>> hybrid_weights(["bm25", "dense", "sparse"])
        [0.5, 1.0, 0.5]

    Raises:
        ValueError: a leg that is not one of `LEG_FAMILIES`, or a leg named twice.
    """
    legs = list(legs)
    unknown = [leg for leg in legs if leg not in LEG_FAMILIES]
    if unknown or len(set(legs)) != len(legs):
        raise ValueError(
            f"legs must be distinct names from {sorted(LEG_FAMILIES)}, got {legs!r}"
        )
    families = [LEG_FAMILIES[leg] for leg in legs]
    return [1.0 / families.count(f) for f in families]
