"""Kept for compatibility: the BM25 variants live in `hybrid_retrievers.bm25.scoring`."""

from __future__ import annotations

from .bm25.scoring import *  # noqa: F403
from .bm25.scoring import FloatArray, IdfFn, TfwFn, __all__  # noqa: F401
