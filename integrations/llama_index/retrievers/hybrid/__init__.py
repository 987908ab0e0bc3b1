"""hybrid-retrievers' LlamaIndex retrievers (and the model adapters they take: the
embedder, the CLIP image embedder, the image describer) under LlamaIndex's integration path.

``from llama_index.retrievers.hybrid import BM25Retriever`` is the same class as
``from llama_index_hybrid_retrievers import BM25Retriever`` (``llama_index`` and
``llama_index.retrievers`` are namespace packages shared with llama-index-core and the
other integrations, so this package adds ``hybrid`` without an ``__init__.py`` above it).

Example:
    >>> from llama_index.core.schema import TextNode
    >>> from llama_index.retrievers.hybrid import BM25Retriever
    >>> BM25Retriever.from_defaults(nodes=[TextNode(text="BM25 ranking")]).retrieve(
    ...     "ranking")[0].score > 0
    True
"""

from llama_index_hybrid_retrievers import (
    BM25Retriever,
    ClipEmbedding,
    DenseRetriever,
    FusionRetriever,
    HybridRetriever,
    HyDERetriever,
    LlamaIndexEmbedder,
    MultiModalLLMDescriber,
    MultimodalRetriever,
    ParentDocumentRetriever,
    SearcherRetriever,
    SparseRetriever,
    __version__,
)

__all__ = [
    "BM25Retriever",
    "ClipEmbedding",
    "DenseRetriever",
    "FusionRetriever",
    "HyDERetriever",
    "HybridRetriever",
    "LlamaIndexEmbedder",
    "MultiModalLLMDescriber",
    "MultimodalRetriever",
    "ParentDocumentRetriever",
    "SearcherRetriever",
    "SparseRetriever",
    "__version__",
]
