"""LangChain integration for hybrid-retrievers.

Example:
    >>> from langchain_hybrid_retrievers import BM25Retriever
    >>> retriever = BM25Retriever.from_texts(["BM25 is a ranking function"], k=1)
    >>> retriever.invoke("ranking")[0].metadata["rank"]
    1
"""

from __future__ import annotations


from .dense import DenseRetriever
from .embeddings import LangChainEmbedder
from .retrievers import BM25Retriever

__all__ = ["BM25Retriever", "DenseRetriever", "LangChainEmbedder", "__version__"]

from hybrid_retrievers import __version__
