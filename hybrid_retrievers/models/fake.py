"""Deterministic stand-in models for tests and examples (no downloads, no torch).

`HashingSparseEmbedder` is the sparse counterpart (`hybrid_retrievers.types.SparseEmbedder`):
each lowercase word is a token weighted ``log(1 + tf)``, and each word of five letters or
more also adds its four-letter prefix at half that weight, a small fixed "expansion"
so that documents and queries share terms neither spelled out, as SPLADE's do.

`HashingEmbedder` maps texts to vectors with the hashing trick: every lowercase word is
hashed (blake2b) to one of ``dimension`` buckets with a sign, the signed counts are
summed and the vector is L2-normalised. Texts that share words get similar vectors, so
retrieval over it behaves sensibly, and the same text always gets the same vector in
every process.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..validation import check_number

__all__ = ["HashingEmbedder", "HashingSparseEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """A bag-of-words hashing embedder: deterministic, normalised float32 vectors.

    It counts its calls (`calls`, `texts_embedded`) so tests can check that a cache
    kept the model from being called again.

    Args:
        dimension: vector length (number of hash buckets).
        seed: mixed into the hash, to get an independent embedder of the same size.

    Example:
        >>> emb = HashingEmbedder(dimension=64)
        >>> emb.embed_documents(["a cat", "a dog"]).shape
        (2, 64)
        >>> bool(np.allclose(emb.embed_query("a cat"), emb.embed_documents(["a cat"])[0]))
        True
    """

    def __init__(self, dimension: int = 256, *, seed: int = 0) -> None:
        self._dimension = check_number(dimension, "dimension", low=2, integer=True)
        self._seed = check_number(seed, "seed", integer=True)
        self._salt = str(self._seed).encode("ascii")
        self._buckets: dict[str, tuple[int, float]] = {}
        self.calls = 0
        self.texts_embedded = 0

    @property
    def dimension(self) -> int:
        """Vector length."""
        return self._dimension

    @property
    def model_id(self) -> str:
        """Identity of the embedding space (for caches and saved indexes)."""
        return f"hashing-embedder(dimension={self._dimension},seed={self._seed})"

    def _bucket(self, word: str) -> tuple[int, float]:
        hit = self._buckets.get(word)
        if hit is None:
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8, salt=self._salt).digest()
            value = int.from_bytes(digest, "little")
            hit = (value % self._dimension, 1.0 if (value >> 63) & 1 else -1.0)
            self._buckets[word] = hit
        return hit

    def _embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{row}] must be a str, got {type(text).__name__}")
            for word in _WORD.findall(text.lower()):
                j, sign = self._bucket(word)
                out[row, j] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # A text without words stays the zero vector (its similarity to anything is 0).
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors of ``texts``, shape ``(len(texts), dimension)``."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        texts = list(texts)
        self.calls += 1
        self.texts_embedded += len(texts)
        return self._embed(texts)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The vector of one query, shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._embed([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors of several queries at once."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        return self._embed(list(texts))

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self._dimension}, seed={self._seed})"


class HashingSparseEmbedder:
    """A deterministic sparse embedder: word weights ``log(1 + tf)`` plus prefix expansion.

    The sparse stand-in for tests and docs, as `HashingEmbedder` is the dense one (no
    model, no downloads, the same vectors in every process). A text's vector holds each
    lowercase word with weight ``ln(1 + tf)`` and, for every word of ``prefix + 1`` or
    more letters, its ``prefix``-letter prefix with half that weight ("wings" also
    weighs "wing"), so retrieval exercises expansion terms. Queries and documents are
    encoded alike. It counts its calls (`calls`, `texts_embedded`).

    Args:
        prefix: length of the expansion prefix (>= 1).

    Example:
        >>> emb = HashingSparseEmbedder()
        >>> {t: round(w, 3) for t, w in sorted(emb.embed_query("Wings lift").items())}
        {'lift': 0.693, 'wing': 0.347, 'wings': 0.693}
    """

    def __init__(self, prefix: int = 4) -> None:
        self._prefix = check_number(prefix, "prefix", low=1, integer=True)
        self.calls = 0
        self.texts_embedded = 0

    @property
    def model_id(self) -> str:
        """Identity of the vectors (saved with a `SparseIndex`)."""
        return f"hashing-sparse-embedder(prefix={self._prefix})"

    def _vector(self, text: Any, where: str) -> dict[str, float]:
        if not isinstance(text, str):
            raise TypeError(f"{where} must be a str, got {type(text).__name__}")
        vector: dict[str, float] = {}
        for word, tf in Counter(_WORD.findall(text.lower())).items():
            weight = math.log1p(tf)
            vector[word] = vector.get(word, 0.0) + weight
            if len(word) > self._prefix:
                head = word[: self._prefix]
                vector[head] = vector.get(head, 0.0) + 0.5 * weight
        return vector

    def embed_documents(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """The sparse vectors of ``texts``, in order."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        texts = list(texts)
        self.calls += 1
        self.texts_embedded += len(texts)
        return [self._vector(t, f"texts[{i}]") for i, t in enumerate(texts)]

    def embed_query(self, text: str) -> dict[str, float]:
        """The sparse vector of one query."""
        return self._vector(text, "text")

    def embed_queries(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """The sparse vectors of several queries at once."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
        return [self._vector(t, f"texts[{i}]") for i, t in enumerate(texts)]

    def __repr__(self) -> str:
        return f"HashingSparseEmbedder(prefix={self._prefix})"
