"""LlamaIndex integration for hybrid-retrievers.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> from llama_index_hybrid_retrievers import BM25Retriever
    >>> retriever = BM25Retriever.from_defaults(nodes=[TextNode(text="BM25 ranking")])
    >>> retriever.retrieve("ranking")[0].score > 0
    True

The same classes import from LlamaIndex's integration paths:
``from llama_index.retrievers.hybrid import BM25Retriever, HybridRetriever, ...`` and
``from llama_index.postprocessor.hybrid import CrossEncoderRerank, LLMListwiseRerank,
LLMRerank, MMRPostprocessor, SentenceTransformerRerank, SourceCapPostprocessor``.
"""

from __future__ import annotations

from hybrid_retrievers.integration import require  # noqa: I001 (before the framework imports)

require("llama_index.core", extra="llama-index", feature="llama_index_hybrid_retrievers")

from hybrid_retrievers import __version__

from .bm25 import BM25Retriever
from .clip import ClipEmbedding
from .dense import DenseRetriever
from .diversity import MMRPostprocessor, SourceCapPostprocessor
from .embeddings import LlamaIndexEmbedder
from .evaluation import as_eval_callable
from .fusion import FusionRetriever
from .hybrid import HybridRetriever
from .hyde import HyDEQueryTransform, HyDERetriever
from .images import MultiModalLLMDescriber
from .multimodal import MultimodalRetriever
from .parent import ParentDocumentRetriever
from .postprocessors import (
    CrossEncoderRerank,
    LLMListwiseRerank,
    LLMRerank,
    SentenceTransformerRerank,
)
from .searcher import SearcherRetriever
from .sparse import SparseRetriever

__all__ = [
    "BM25Retriever",
    "ClipEmbedding",
    "CrossEncoderRerank",
    "DenseRetriever",
    "FusionRetriever",
    "HyDEQueryTransform",
    "HyDERetriever",
    "HybridRetriever",
    "LLMListwiseRerank",
    "LLMRerank",
    "LlamaIndexEmbedder",
    "MMRPostprocessor",
    "MultiModalLLMDescriber",
    "MultimodalRetriever",
    "ParentDocumentRetriever",
    "SearcherRetriever",
    "SentenceTransformerRerank",
    "SourceCapPostprocessor",
    "SparseRetriever",
    "__version__",
    "as_eval_callable",
]
