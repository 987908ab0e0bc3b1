"""Old import path of the embedding cache, kept so existing imports keep working.

The code lives in `hybrid_retrievers.vector.cache` (`EmbeddingCache`, `text_key`) and
`hybrid_retrievers.vector.encoding` (`embed_texts`, `embedder_identity`, the batch size).
"""

from __future__ import annotations

from .vector.cache import EmbeddingCache, text_key
from .vector.encoding import DEFAULT_BATCH_SIZE, DEFAULT_CHUNK, embed_texts, embedder_identity

__all__ = ["EmbeddingCache", "embed_texts", "embedder_identity", "text_key",
           "DEFAULT_BATCH_SIZE", "DEFAULT_CHUNK"]
