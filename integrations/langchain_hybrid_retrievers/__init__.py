"""LangChain integration for hybrid-retrievers.

Example:
    >>> from langchain_hybrid_retrievers import BM25Retriever
    >>> retriever = BM25Retriever.from_texts(["BM25 is a ranking function"], k=1)
    >>> retriever.invoke("ranking")[0].metadata["rank"]
    1
"""

from __future__ import annotations

from hybrid_retrievers.integration import require  # noqa: I001 (before the framework imports)

require("langchain_core", extra="langchain", feature="langchain_hybrid_retrievers")

from hybrid_retrievers import __version__

from .bm25 import BM25Retriever
from .clip import ClipEmbeddings
from .compressors import (
    CrossEncoderReranker,
    LLMChoiceRerankCompressor,
    LLMRerankCompressor,
    RerankingRetriever,
)
from .dense import DenseRetriever
from .diversity import MMRCompressor, SourceCapCompressor
from .embeddings import LangChainEmbedder
from .evaluation import as_eval_callable
from .fusion import FusionRetriever
from .hybrid import HybridRetriever
from .hyde import HyDERetriever, HypotheticalDocumentEmbedder
from .images import ChatModelDescriber
from .multimodal import ImageRetriever, MultimodalRetriever
from .multi_vector import MultiVectorRetriever
from .parent import LangChainParentStore, ParentDocumentRetriever
from .searcher import SearcherRetriever
from .sparse import SparseRetriever
from .vectorstores import ScoredVectorStoreRetriever

__all__ = [
    "BM25Retriever",
    "ChatModelDescriber",
    "ClipEmbeddings",
    "CrossEncoderReranker",
    "DenseRetriever",
    "FusionRetriever",
    "HyDERetriever",
    "HybridRetriever",
    "HypotheticalDocumentEmbedder",
    "ImageRetriever",
    "LLMChoiceRerankCompressor",
    "LLMRerankCompressor",
    "LangChainEmbedder",
    "LangChainParentStore",
    "MMRCompressor",
    "MultiVectorRetriever",
    "MultimodalRetriever",
    "ParentDocumentRetriever",
    "RerankingRetriever",
    "ScoredVectorStoreRetriever",
    "SearcherRetriever",
    "SourceCapCompressor",
    "SparseRetriever",
    "__version__",
    "as_eval_callable",
]
