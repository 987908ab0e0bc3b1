"""hybrid-retrievers: BM25, dense, fusion, parent-document, HyDE and reranking retrievers.

The core is framework-free (numpy and scipy); LangChain and LlamaIndex adapters live
in ``langchain_hybrid_retrievers`` and ``llama_index_hybrid_retrievers``.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from .vector import HNSWConfig
from .bm25 import BM25Index
from .vector import EmbeddingCache
from .bm25 import BM25Explanation, TermContribution
from .fusion import (
    FilteredSource,
    FusionMode,
    FusionSearcher,
    fuse,
    lexical_boost_rule,
    reciprocal_rank_fusion,
    score_fusion,
)
from .hyde import HYDE_PROMPTS, HyDE, HyDEResult, HyDESearcher
from .ids import content_id
from .parent import ParentChildSearcher, ParentStore
from .persistence import IndexFormatError
from .rerank import LLMReranker, Reranker, RerankingSearcher
from .bm25 import BM25Method
from .text.splitting import SentenceSplitter, split_parents
from .text import Analyzer, register_tokenizer
from .types import Doc, Embedder, Hit, MetadataFilter, PairScorer, Searcher, TextGenerator
from .vector import VectorIndex

try:
    __version__ = _metadata.version("hybrid-retrievers")
except _metadata.PackageNotFoundError:  # running from a source checkout
    __version__ = "0.1.0"

__all__ = [
    "Analyzer",
    "BM25Explanation",
    "BM25Index",
    "BM25Method",
    "content_id",
    "Doc",
    "Embedder",
    "EmbeddingCache",
    "FilteredSource",
    "fuse",
    "FusionMode",
    "FusionSearcher",
    "Hit",
    "HNSWConfig",
    "HyDE",
    "HYDE_PROMPTS",
    "HyDEResult",
    "HyDESearcher",
    "IndexFormatError",
    "lexical_boost_rule",
    "LLMReranker",
    "MetadataFilter",
    "PairScorer",
    "ParentChildSearcher",
    "ParentStore",
    "reciprocal_rank_fusion",
    "register_tokenizer",
    "Reranker",
    "RerankingSearcher",
    "score_fusion",
    "Searcher",
    "SentenceSplitter",
    "split_parents",
    "TermContribution",
    "TextGenerator",
    "VectorIndex",
    "__version__",
]
