"""Model adapters: torch and sentence-transformers are named here (and in `training`).

Importing this package is cheap: `SentenceTransformerEmbedder`, `ClipEmbedder` (text and
images in one space), `SpladeEncoder` and `CrossEncoderScorer` import sentence-transformers
(and torch) only when their model is first used, and `HashingEmbedder` needs numpy alone. `EmbedderAdapter` is the shared base of the
framework embedding adapters (LangChain, LlamaIndex). Fine-tuning a bi-encoder lives in
`hybrid_retrievers.training`, which uses these models; nothing here imports it, nor any
index, fusion or evaluation module.
"""

from __future__ import annotations

from .framework import EmbedderAdapter, adapt_embedder
from .clip import ClipEmbedder
from .cross_encoder import CrossEncoderScorer
from .fake import HashingEmbedder, HashingSparseEmbedder
from .hub import ModelUnavailableError
from .local import local_minilm_path, local_splade_path
from .names import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_CROSS_ENCODER,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_SPARSE_MODEL,
    model_name,
)
from .sentence_transformers import SentenceTransformerEmbedder
from .splade import SpladeEncoder

__all__ = [
    "DEFAULT_CLIP_MODEL",
    "DEFAULT_CROSS_ENCODER",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_SPARSE_MODEL",
    "ClipEmbedder",
    "CrossEncoderScorer",
    "EmbedderAdapter",
    "HashingEmbedder",
    "HashingSparseEmbedder",
    "ModelUnavailableError",
    "SentenceTransformerEmbedder",
    "SpladeEncoder",
    "adapt_embedder",
    "local_minilm_path",
    "local_splade_path",
    "model_name",
]
