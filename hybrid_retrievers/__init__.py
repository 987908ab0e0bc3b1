"""hybrid-retrievers: BM25, dense, fusion, parent-document, HyDE and reranking retrievers.

The core is framework-free (numpy and scipy); LangChain and LlamaIndex adapters live
in ``langchain_hybrid_retrievers`` and ``llama_index_hybrid_retrievers``.

This root holds the names a first task needs: the types, the two indexes, the searchers
that combine them and the one persistence error. Everything else lives on its
subpackage's face, one home per name (``tests/test_public_api.py`` pins these lists):

* ``hybrid_retrievers.bm25``: `BM25Method`, `BM25Explanation`, `TermContribution`...;
* ``hybrid_retrievers.vector``: `EmbeddingCache`, `HNSWConfig`...;
* ``hybrid_retrievers.sparse``: `SparseExplanation`, `SparseTermContribution`...;
* ``hybrid_retrievers.text``: `SentenceSplitter`, `split_parents`, `register_tokenizer`...;
* ``hybrid_retrievers.fusion``: `fuse`, `score_fusion`, `lexical_boost_rule`,
  `FilteredSource`...;
* ``hybrid_retrievers.hyde``: `HyDE`, `HyDEResult`, `HYDE_PROMPTS`;
* ``hybrid_retrievers.parent``: `ParentStore`...; ``hybrid_retrievers.ids``: `content_id`.

>>> from hybrid_retrievers import BM25Index
>>> index = BM25Index.from_texts(["wings generate lift", "cats sleep"], ids=["w", "c"])
>>> [hit.id for hit in index.search("wing lift", k=1)]
['w']
"""

from __future__ import annotations

from ._version import __version__

from .bm25 import BM25Index
from .fusion import FusionMode, FusionSearcher, reciprocal_rank_fusion
from .hyde import HyDESearcher
from .parent import ParentChildSearcher
from .persistence import IndexFormatError
from .query import Query
from .rerank import LLMReranker, Reranker, RerankingSearcher
from .sparse import SparseIndex
from .text import Analyzer
from .types import Doc, Embedder, Hit, MetadataFilter, PairScorer, Searcher, TextGenerator
from .vector import VectorIndex


__all__ = [
    "Analyzer",
    "BM25Index",
    "Doc",
    "Embedder",
    "FusionMode",
    "FusionSearcher",
    "Hit",
    "HyDESearcher",
    "IndexFormatError",
    "LLMReranker",
    "MetadataFilter",
    "PairScorer",
    "ParentChildSearcher",
    "Query",
    "Reranker",
    "RerankingSearcher",
    "Searcher",
    "SparseIndex",
    "TextGenerator",
    "VectorIndex",
    "__version__",
    "reciprocal_rank_fusion",
]
