"""sentence-transformers models behind the `Embedder` protocol, loaded on first use.

Nothing here imports torch or sentence-transformers at import time: the model is
loaded (and the libraries imported) the first time it is needed, so building an
embedder is free and a process that never encodes never pays for torch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..optional import require
from ..validation import check_number, check_str_items
from .backends import EXACT_BACKENDS, resolve_backend
from .lazy import LazyModel, check_loading_options, instance_name

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder(LazyModel):
    """A sentence-transformers bi-encoder as an `Embedder` (documents and queries).

    Args:
        model: a model name or local path (loaded on first use), or a loaded
            ``SentenceTransformer`` instance.
        batch_size: texts per forward pass.
        device: ``"cpu"``, ``"cuda"``...; ``None`` lets sentence-transformers choose.
        normalize: L2-normalise the vectors (what cosine similarity needs).
        query_prompt: text prepended to queries, for models trained with
            instructions (e5: ``"query: "``; BGE: ``"Represent this sentence for
            searching relevant passages: "``).
        document_prompt: text prepended to documents (e5: ``"passage: "``).
        show_progress: show sentence-transformers' progress bar while encoding.
        model_id: the identity recorded in caches and saved indexes. Defaults to the
            name or path given (for an instance: its recorded name, else a name valid
            only in this process), plus every option that changes document vectors.
        model_kwargs: extra keyword arguments for ``SentenceTransformer(...)``.
        backend: ``"auto"`` (default: ``"torch-bf16"`` on a CPU with native bfloat16
            for all-MiniLM-L6-v2, whose bfloat16 quality is checked; ``"torch"``
            elsewhere; see `hybrid_retrievers.models.backends.resolve_backend`;
            `backend` then holds the choice and `backend_reason` why); ``"torch"``
            (float32); ``"torch-bf16"`` (bfloat16 autocast, vectors
            within ~1e-5 of torch's); ``"onnx"`` (ONNX Runtime, the same vectors to
            ~1e-6); ``"onnx-int8"`` (ONNX Runtime with dynamically int8-quantized
            weights); ``"openvino"`` (OpenVINO float32, the same vectors to ~1e-6); or
            ``"openvino-bf16"`` (OpenVINO bfloat16, attention included: the fastest on
            CPUs with native bfloat16, vectors as close as torch-bf16's). Backends
            whose vectors differ from torch's are part of `model_id`. The ONNX and
            OpenVINO backends need the ``onnx`` / ``openvino`` extra; the model is
            converted once from the loaded weights into ``onnx_cache_dir``. See
            `hybrid_retrievers.models.backends`. Applies when this embedder loads the
            model.
        onnx_cache_dir: where converted models are kept (default
            ``$HYBRID_RETRIEVERS_ONNX_CACHE`` or ``onnx/`` for ONNX,
            ``$HYBRID_RETRIEVERS_OPENVINO_CACHE`` or ``openvino/`` for OpenVINO, in
            the package's cache root `hybrid_retrievers.models.export.user_cache_dir`).

    Example:
        >>> emb = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
        >>> emb.model_id  # nothing is loaded yet
        'sentence-transformers/all-MiniLM-L6-v2'
    """

    def __init__(
        self,
        model: Any,
        *,
        batch_size: int = 32,
        device: str | None = None,
        normalize: bool = True,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        show_progress: bool = False,
        model_id: str | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
        backend: str = "auto",
        onnx_cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        auto_name = model if isinstance(model, str) else None
        backend, self.backend_reason = resolve_backend(backend, auto_name, device)
        backend, self._model_kwargs = check_loading_options(
            backend=backend, device=device, model_id=model_id, model_kwargs=model_kwargs)
        check_number(batch_size, "batch_size", low=1, integer=True)
        for name, value in (("query_prompt", query_prompt), ("document_prompt", document_prompt)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
        name: str | None
        if isinstance(model, str):
            if not model.strip():
                raise ValueError(
                    "model must be a model name, a local path or a SentenceTransformer"
                )
            name, model = model, None
        elif hasattr(model, "encode"):
            if backend != "torch":
                raise ValueError(
                    f"backend={backend!r} applies when the embedder loads the model, but a "
                    "loaded model was given; pass its name or local path instead"
                )
            name = instance_name(model)
        else:
            raise TypeError(
                "model must be a model name, a local path or a SentenceTransformer instance, "
                f"got {type(model).__name__}"
            )
        self.batch_size = batch_size
        self.device = device
        self.normalize = bool(normalize)
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self.show_progress = bool(show_progress)
        self._explicit_id = model_id
        self._fingerprint = _tuned_fingerprint(name) if model is None else None
        self._init_model(name, model, backend=backend, onnx_cache_dir=onnx_cache_dir)

    # ------------------------------------------------------------------ model

    def _build(self) -> Any:
        """A ``SentenceTransformer`` loaded from the name or path given."""
        st = require("sentence_transformers", extra="models",
                     feature="SentenceTransformerEmbedder")
        return st.SentenceTransformer(self._name, device=self.device, **self._model_kwargs)

    @property
    def dimension(self) -> int:
        """Vector length (loads the model)."""
        model = self.model
        get = (getattr(model, "get_embedding_dimension", None)
               or model.get_sentence_embedding_dimension)
        dim = get()
        if dim is None:
            dim = int(self._encode(["dimension probe"], None).shape[1])
        return int(dim)

    @property
    def model_id(self) -> str:
        """Identity of the embedding space: model name plus vector-changing options."""
        base = self._explicit_id or self._name or f"sentence-transformer@{id(self._model):x}"
        if self._fingerprint is not None and self._explicit_id is None:
            base = f"{base}@{self._fingerprint}"
        options: dict[str, Any] = {}
        if not self.normalize:
            options["normalize"] = False
        if self.document_prompt:
            options["document_prompt"] = self.document_prompt
        if self.backend not in EXACT_BACKENDS:  # other (close) vectors: never mixed
            options["backend"] = self.backend
        if not options:
            return base
        return f"{base}{json.dumps(options, sort_keys=True, ensure_ascii=False)}"

    # ------------------------------------------------------------------ encoding

    def _encode(self, texts: list[str], prompt: str | None) -> NDArray[np.float32]:
        out = self.model.encode(
            texts,
            prompt=prompt,
            batch_size=self.batch_size,
            show_progress_bar=self.show_progress,
            convert_to_numpy=True,
            normalize_embeddings=self.normalize,
        )
        return np.asarray(out, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Document vectors, shape ``(len(texts), dimension)``; the document prompt applies."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._encode(texts, self.document_prompt)

    def embed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Query vectors, shape ``(len(texts), dimension)``; the query prompt applies."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._encode(texts, self.query_prompt)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """One query vector, shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._encode([text], self.query_prompt)[0]

    def __repr__(self) -> str:
        return (
            f"SentenceTransformerEmbedder({self._name!r}, batch_size={self.batch_size}, "
            f"device={self.device!r}, normalize={self.normalize}, backend={self.backend!r}, "
            f"loaded={self.is_loaded})"
        )


def _tuned_fingerprint(name: str | None) -> str | None:
    """The weights hash of a folder `fine_tune_embedder` wrote (its card), else ``None``."""
    if name is None or not os.path.isdir(name):
        return None
    from .card import read_card, weights_fingerprint

    card = read_card(name)
    return weights_fingerprint(card) if card is not None else None


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
    texts = check_str_items(texts, "texts")
    return texts
