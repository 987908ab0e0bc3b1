"""Model adapters: the only place torch and sentence-transformers are named.

Importing this package is cheap: `SentenceTransformerEmbedder`, `ClipEmbedder` (text and
images in one space), `SpladeEncoder` and `CrossEncoderScorer` import sentence-transformers
(and torch) only when their model is first used, and `HashingEmbedder` needs numpy alone. `EmbedderAdapter` is the shared base of the
framework embedding adapters (LangChain, LlamaIndex). `fine_tune_embedder` adapts a
bi-encoder to a corpus (pairs from `mine_pairs` or judgments, BM25 hard negatives) and
measures it before and after; it needs the ``train`` extra.
"""

from __future__ import annotations

from .framework import EmbedderAdapter, adapt_embedder
from .clip import ClipEmbedder
from .cross_encoder import CrossEncoderScorer
from .fake import HashingEmbedder, HashingSparseEmbedder
from .hub import ModelUnavailableError
from .finetune import FineTuneResult, fine_tune_embedder
from .local import local_minilm_path, local_splade_path
from .names import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_CROSS_ENCODER,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_SPARSE_MODEL,
    model_name,
)
from .pairs import TrainingPair, mine_pairs, split_queries
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
    "FineTuneResult",
    "HashingEmbedder",
    "HashingSparseEmbedder",
    "ModelUnavailableError",
    "SentenceTransformerEmbedder",
    "SpladeEncoder",
    "TrainingPair",
    "adapt_embedder",
    "fine_tune_embedder",
    "local_minilm_path",
    "local_splade_path",
    "mine_pairs",
    "model_name",
    "split_queries",
]
