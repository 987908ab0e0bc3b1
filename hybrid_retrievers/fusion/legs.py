"""The hybrid recipe's legs and how their votes are weighed by default (`hybrid_weights`).

`FusionSearcher.hybrid` builds up to three legs over the same texts: ``"bm25"``,
``"dense"`` and ``"sparse"`` (a learned sparse model such as SPLADE). Fusion methods
such as RRF (Cormack et al. 2009) treat each input ranking as an independent vote. Two
of these legs are not independent: BM25 and a learned sparse model both score documents
by the vocabulary terms they share with the query (SPLADE is a lexical model with
learned term weights and expansion, Formal et al. 2021), so their rankings agree far
more with each other than with a dense model's. With one vote each, adding the sparse
leg to BM25 + dense turns a 1:1 balance of the lexical and the semantic view into 2:1,
whatever the sparse model's quality; the issue measured what that costs with a weak
model (splade-tiny on CISI: 0.4407 -> 0.4212 nDCG@10).

The default therefore gives one vote to each *family* of representation, split evenly
among the family's legs: lexical (BM25, learned sparse) and semantic (dense). BM25 +
dense stays 1:1 (today's recipe, unchanged); all three get BM25 0.5, dense 1, sparse
0.5, which keeps the lexical/semantic balance and lets the sparse model refine the
lexical vote (a strong one, which agrees with BM25 where BM25 is right and adds
expansion matches where it is not, moves documents within that vote). A pair within one
family (BM25 + sparse) is 0.5:0.5, the same ranking as equal weights. Users who know
their sparse model is strong (SPLADE-v3, SPLADE++) pass ``weights=`` explicitly.
``benchmarks/sparse_quality.py`` measures this default against equal weights. Measured
with splade-tiny (RRF, nDCG@10): Cranfield 0.4237 (equal 0.4221, two-way 0.4201), CISI
0.4229 (equal 0.4226, two-way 0.4424): the family vote keeps the balance but does not by
itself keep a weak model from costing 0.02 on CISI.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LEG_FAMILIES", "hybrid_weights"]

LEG_FAMILIES = {"bm25": "lexical", "sparse": "lexical", "dense": "semantic"}
"""The family of each leg of the hybrid recipe: legs of one family share one vote."""


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
