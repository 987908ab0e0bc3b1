"""Model adapters: the only place torch and sentence-transformers are named.

Importing this package is cheap: `SentenceTransformerEmbedder` imports
sentence-transformers (and torch) only when its model is first used, and
`HashingEmbedder` needs numpy alone.
"""

from __future__ import annotations

from .fake import HashingEmbedder
from .local import local_minilm_path
from .sentence_transformers import SentenceTransformerEmbedder

__all__ = ["HashingEmbedder", "SentenceTransformerEmbedder", "local_minilm_path"]
