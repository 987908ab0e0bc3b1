"""Old import path of the HNSW backend, kept so existing imports keep working.

The code lives in `hybrid_retrievers.vector.ann`.
"""

from __future__ import annotations

from .vector.ann import FaissHNSW, HNSWConfig

__all__ = ["HNSWConfig", "FaissHNSW"]
