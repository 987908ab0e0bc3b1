"""The card of a fine-tuned model folder (``model_card.json``): reading it, and its identity.

`fine_tune_embedder` writes the card next to the sentence-transformers files: the base
model, the training data, the hyper-parameters, the metrics before and after, and the
SHA-256 of every file. `SentenceTransformerEmbedder` reads the weights' hashes from it,
so a tuned model's ``model_id`` (and the embedding cache key) changes with its weights,
not only with its folder name.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CARD_FILE", "read_card", "weights_fingerprint"]

CARD_FILE = "model_card.json"
"""The card's file name inside the model folder."""


def read_card(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``model_card.json`` of a model folder written by `fine_tune_embedder`, or ``None``.

    Example:
        >>> read_card("/no/such/folder") is None
        True
    """
    card = Path(path) / CARD_FILE
    if not card.is_file():
        return None
    try:
        data = json.loads(card.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def weights_fingerprint(card: Mapping[str, Any]) -> str | None:
    """A short hash of a card's weight files: the tuned model's identity for caches.

    Example:
        >>> weights_fingerprint({"files": {"model.safetensors": "ab" * 32}})
        '40757c30bef007e5'
    """
    files = card.get("files")
    if not isinstance(files, Mapping):
        return None
    weights = sorted(f"{k}:{v}" for k, v in files.items()
                     if str(k).endswith((".safetensors", ".bin")))
    if not weights:
        return None
    return hashlib.sha256("\n".join(weights).encode()).hexdigest()[:16]
