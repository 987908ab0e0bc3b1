"""Old import path of the embedding cache, kept so existing imports keep working.

The code lives in `hybrid_retrievers.vector.embedding`.
"""

from __future__ import annotations

from .vector.embedding import (
    DEFAULT_BATCH_SIZE,
    EmbeddingCache,
    embed_texts,
    embedder_identity,
    text_key,
)

__all__ = ["EmbeddingCache", "embed_texts", "embedder_identity", "text_key",
           "DEFAULT_BATCH_SIZE"]
