"""Model adapters: the only place torch and sentence-transformers are named.

Importing this package is cheap: `SentenceTransformerEmbedder`, `SpladeEncoder` and
`CrossEncoderScorer` import sentence-transformers (and torch) only when their model is
first used, and `HashingEmbedder` needs numpy alone. `EmbedderAdapter` is the shared base of the
framework embedding adapters (LangChain, LlamaIndex).
"""

from __future__ import annotations

from .adapter import EmbedderAdapter, adapt_embedder
from .cross_encoder import CrossEncoderScorer
from .fake import HashingEmbedder, HashingSparseEmbedder
from .local import local_minilm_path, local_splade_path
from .names import (
    DEFAULT_CROSS_ENCODER,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_SPARSE_MODEL,
    model_name,
)
from .sentence_transformers import SentenceTransformerEmbedder
from .splade import SpladeEncoder

__all__ = [
    "DEFAULT_CROSS_ENCODER",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_SPARSE_MODEL",
    "CrossEncoderScorer",
    "EmbedderAdapter",
    "HashingEmbedder",
    "HashingSparseEmbedder",
    "SentenceTransformerEmbedder",
    "SpladeEncoder",
    "adapt_embedder",
    "local_minilm_path",
    "local_splade_path",
    "model_name",
]
