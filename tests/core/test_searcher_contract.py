"""Every core searcher keeps the one `SearcherContract` (tests/contract.py).

A new searcher gets its contract checked by adding one line to ``BUILDERS``.

`hybrid_retrievers.distributed.ShardedSearcher` keeps the same contract in
`tests/distributed/test_ray_sharding.py` (`TestShardedSearcherContract`), where a Ray
cluster is running anyway (starting one here would take four times this whole file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from hybrid_retrievers.bm25 import BM25Index
from hybrid_retrievers.fusion import FusionSearcher
from hybrid_retrievers.hyde import HyDE, HyDESearcher
from hybrid_retrievers.fusion import MultimodalSearcher
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from hybrid_retrievers.parent import ParentChildSearcher
from hybrid_retrievers.rerank import (
    LLMReranker,
    MMRReranker,
    Reranker,
    RerankingSearcher,
    SourceCap,
)
from hybrid_retrievers.sparse import SparseIndex
from hybrid_retrievers.types import Doc
from hybrid_retrievers.vector import VectorIndex

from contract import Contracted, SearcherContract
from corpora import WordOverlap

EMBEDDER = HashingEmbedder(64)


def passage(prompt: str) -> str:
    """A fake HyDE generator: the same neutral passage (no corpus word) for every prompt."""
    return "A short passage."


def ranking(prompt: str) -> str:
    """A fake listwise LLM: always prefers the second candidate, then the first."""
    return "[2] > [1]"


def bm25(docs: Sequence[Doc]) -> BM25Index:
    return BM25Index.from_docs(docs)


def vector(docs: Sequence[Doc]) -> VectorIndex:
    return VectorIndex.from_docs(docs, embedder=EMBEDDER)


BUILDERS: dict[str, Contracted] = {
    "bm25": Contracted(bm25, lexical=True),
    "vector": Contracted(vector),
    "sparse": Contracted(lambda d: SparseIndex.from_docs(d, embedder=HashingSparseEmbedder()),
                         lexical=True),
    "fusion-rrf": Contracted(lambda d: FusionSearcher([bm25(d), vector(d)])),
    "fusion-score": Contracted(
        lambda d: FusionSearcher([bm25(d), vector(d)], mode="relative_score")),
    # the hybrid recipe without its BM25 leg (issue 44): dense + learned sparse
    "hybrid-no-bm25": Contracted(lambda d: FusionSearcher.hybrid(
        [x.text for x in d], EMBEDDER, [x.id for x in d], [x.metadata for x in d],
        bm25=False, sparse=HashingSparseEmbedder())),
    "parent": Contracted(lambda d: ParentChildSearcher.from_docs(
        d, chunk_size=60, chunk_overlap=0), lexical=True),
    "parent-hybrid": Contracted(lambda d: ParentChildSearcher.from_docs(
        d, chunk_size=60, chunk_overlap=0, embedder=EMBEDDER)),
    "hyde": Contracted(lambda d: HyDESearcher.from_docs(d, embedder=EMBEDDER,
                                                        generate=passage)),
    "hyde-expansion": Contracted(
        lambda d: HyDESearcher(HyDE(passage, EMBEDDER), expand=bm25(d)), lexical=True),
    "rerank": Contracted(lambda d: RerankingSearcher(bm25(d), Reranker(WordOverlap())),
                         lexical=True),
    "rerank-listwise": Contracted(lambda d: RerankingSearcher(bm25(d), LLMReranker(ranking)),
                                  lexical=True),
    "mmr-lexical": Contracted(lambda d: RerankingSearcher(bm25(d), MMRReranker()), lexical=True),
    "mmr-vectors": Contracted(lambda d: (lambda v: RerankingSearcher(
        v, MMRReranker(vectors=v)))(vector(d))),
    "source-cap": Contracted(lambda d: RerankingSearcher(bm25(d), SourceCap("topic")),
                             lexical=True),
    # text queries: the text and descriptions routes of one index (no images here)
    "multimodal": Contracted(lambda d: MultimodalSearcher.from_index(bm25(d)), lexical=True),
    "multimodal-hybrid": Contracted(
        lambda d: MultimodalSearcher(FusionSearcher([bm25(d), vector(d)]))),
}


@pytest.fixture(scope="class", params=list(BUILDERS))
def contracted(request: pytest.FixtureRequest) -> Contracted:
    return BUILDERS[request.param]


class TestCoreSearchers(SearcherContract):
    """The contract, once per entry of ``BUILDERS``."""


def test_every_builder_builds_a_searcher() -> None:
    # Guards the dict itself: a builder that stopped returning a searcher would
    # otherwise fail every contract test with one confusing error each.
    for name, case in BUILDERS.items():
        built: Any = case.build([Doc("a", "wing lift", {"topic": "aero"})])
        assert callable(getattr(built, "search", None)), name
