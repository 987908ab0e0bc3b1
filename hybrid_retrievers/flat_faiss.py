"""Old import path of the faiss flat kernel, kept so existing imports keep working.

The code lives in `hybrid_retrievers.vector.flat_faiss`.
"""

from __future__ import annotations

from .vector.flat_faiss import faiss_flat_topk

__all__ = ["faiss_flat_topk"]
