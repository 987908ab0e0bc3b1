"""A sentence-transformers ``CrossEncoder`` behind the `PairScorer` protocol, loaded on first use.

Nothing here imports torch or sentence-transformers at import time: the model is loaded
(and the libraries imported) by the first `CrossEncoderScorer.score` call, so building a
reranker is free and a process that never reranks never pays for torch.

What it adds to calling ``CrossEncoder.predict`` yourself:

* **Length-sorted batches.** Pairs are sorted by length (longest first) before they are cut
  into batches of ``batch_size``, so each batch pads to a similar length, and the scores
  are put back in input order. The batches are formed here, whatever the installed
  sentence-transformers does inside ``predict`` (older releases do not sort at all).
* **One score per pair, whatever the head.** A one-logit model's logit is its relevance
  log-odds. A two-logit (not relevant / relevant) model contributes its positive-class
  log-odds ``logit[1] - logit[0]``; with ``activation="sigmoid"`` that becomes
  ``sigmoid(logit[1] - logit[0]) = softmax(logits)[1]``, the probability of "relevant".
  Both activations therefore rank identically, for either head. (LangChain's
  ``HuggingFaceCrossEncoder`` takes ``logit[1]`` alone, which is not shift-invariant.)
* **float32 scores, a fixed contract.** ``score(pairs)`` returns a float32 array of shape
  ``(len(pairs),)``; an empty input returns an empty array without loading the model.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..optional import require
from ..progress import progress
from ..validation import check_number
from .lazy import LazyModel, check_loading_options, instance_name
from .names import DEFAULT_CROSS_ENCODER

__all__ = ["ACTIVATIONS", "DEFAULT_CROSS_ENCODER", "CrossEncoderScorer"]

ACTIVATIONS: tuple[str | None, ...] = ("sigmoid", None)
"""Valid ``activation`` values: ``"sigmoid"`` (probabilities in (0, 1)) or ``None`` (log-odds)."""


class CrossEncoderScorer(LazyModel):
    """Scores (query, passage) pairs with a sentence-transformers ``CrossEncoder``.

    Args:
        model: A model name or local path (loaded on the first `score` call), or a loaded
            ``sentence_transformers.CrossEncoder``. Defaults to
            ``cross-encoder/ms-marco-MiniLM-L-6-v2``.
        batch_size: Pairs per forward pass (>= 1).
        max_length: Longest input in tokens (longer pairs are truncated); ``None`` keeps
            the model's own limit. Applies when this scorer loads the model.
        device: ``"cpu"``, ``"cuda"``, ...; ``None`` lets sentence-transformers choose.
            Applies when this scorer loads the model.
        activation: ``"sigmoid"`` returns relevance probabilities in (0, 1); ``None``
            returns the raw log-odds (see the module docstring for two-logit models).
        show_progress: Show a progress bar over batches (needs ``tqdm``).
        sort_by_length: Sort pairs by length before batching (less padding, same scores).
            Turn off only to measure what the sorting saves.
        model_id: The identity recorded in rerank explanations; defaults to the name or
            path given (for an instance: its recorded path, else a name valid only in this
            process).
        model_kwargs: Extra keyword arguments for ``CrossEncoder(...)`` when loading.
        backend: ``"torch"`` (default); ``"torch-bf16"`` (bfloat16 autocast; scores
            differ slightly); ``"onnx"`` (ONNX Runtime; the same scores to ~1e-5);
            ``"onnx-int8"`` (dynamically int8-quantized weights; scores differ
            slightly); ``"openvino"`` (OpenVINO float32; the same scores to ~1e-5); or
            ``"openvino-bf16"`` (OpenVINO bfloat16: the fastest on CPUs with native
            bfloat16; scores differ slightly). The ONNX and OpenVINO backends need the
            ``onnx`` / ``openvino`` extra; the model is converted once from its loaded
            weights into ``onnx_cache_dir``. See `hybrid_retrievers.models.backends`.
            Applies when this scorer loads the model.
        onnx_cache_dir: where converted models are kept (default: see
            `SentenceTransformerEmbedder`).

    Raises:
        TypeError: for a ``model`` that is neither a string nor a ``CrossEncoder``-like
            object with ``predict``, or options of the wrong kind.
        ValueError: for a non-positive ``batch_size`` / ``max_length``, an unknown
            ``activation``, or loading options given with an already loaded model.

    Example:
        >>> scorer = CrossEncoderScorer(batch_size=16)
        >>> scorer.model_id, scorer.is_loaded  # nothing is loaded yet
        ('cross-encoder/ms-marco-MiniLM-L-6-v2', False)
    """

    def __init__(
        self,
        model: Any = DEFAULT_CROSS_ENCODER,
        *,
        batch_size: int = 32,
        max_length: int | None = None,
        device: str | None = None,
        activation: str | None = "sigmoid",
        show_progress: bool = False,
        sort_by_length: bool = True,
        model_id: str | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
        backend: str = "torch",
        onnx_cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        backend, self._model_kwargs = check_loading_options(
            backend=backend, device=device, model_id=model_id, model_kwargs=model_kwargs)
        self.batch_size = check_number(batch_size, "batch_size", low=1, integer=True)
        if max_length is not None:
            max_length = check_number(max_length, "max_length", low=1, integer=True)
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {ACTIVATIONS!r}, got {activation!r}; use 'sigmoid' "
                "for probabilities or None for raw log-odds"
            )

        name: str | None
        if isinstance(model, str):
            if not model.strip():
                raise ValueError(
                    "model must be a model name, a local path or a CrossEncoder, got ''; "
                    f"e.g. {DEFAULT_CROSS_ENCODER!r}"
                )
            _refuse_bi_encoder(model)
            name, model = model, None
        elif callable(getattr(model, "predict", None)):
            loading = {"max_length": max_length, "device": device, "model_kwargs": model_kwargs,
                       "backend": None if backend == "torch" else backend}
            given = [k for k, v in loading.items() if v is not None]
            if given:
                raise ValueError(
                    f"{', '.join(given)} only apply when the scorer loads the model, but a "
                    "loaded CrossEncoder was given; configure that instance instead (e.g. "
                    "CrossEncoder(path, max_length=..., device=...)) or pass its name or path"
                )
            name = instance_name(model, config=True)
        else:
            raise TypeError(
                "model must be a model name, a local path or a sentence_transformers "
                f"CrossEncoder, got {type(model).__name__}: {model!r:.80}"
            )
        self.max_length = max_length
        self.device = device
        self.activation = activation
        self.show_progress = bool(show_progress)
        self.sort_by_length = bool(sort_by_length)
        self._explicit_id = model_id
        self._init_model(name, model, backend=backend, onnx_cache_dir=onnx_cache_dir)
        self._raw_kwargs: dict[str, Any] | None = None

    # ------------------------------------------------------------------ model

    def _build(self) -> Any:
        """A ``CrossEncoder`` loaded from the name or path given."""
        st = require("sentence_transformers", extra="models", feature="CrossEncoderScorer")
        kwargs = dict(self._model_kwargs)
        if self.max_length is not None:
            kwargs["max_length"] = self.max_length
        return st.CrossEncoder(self._name, device=self.device, **kwargs)

    @property
    def model_id(self) -> str:
        """The model's identity, as recorded in rerank explanations."""
        return self._explicit_id or self._name or f"cross-encoder@{id(self._model):x}"

    # ---------------------------------------------------------------- scoring

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]:
        """Relevance scores of ``(query, passage)`` pairs, float32, shape ``(len(pairs),)``.

        Higher is more relevant. Scores come back in input order whatever the batching.

        Raises:
            TypeError: if ``pairs`` is not a sequence of ``(str, str)`` pairs.
            ValueError: for a model with more than two output logits.
        """
        pairs = _check_pairs(pairs)
        n = len(pairs)
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        model = self.model
        torch = require("torch", extra="models", feature="CrossEncoderScorer")
        if self.sort_by_length:
            # Longest first (as sentence-transformers does): a batch that does not fit in
            # memory fails at once, not after minutes of work. sorted() is stable, so
            # equal lengths keep their input order.
            order = sorted(range(n), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
        else:
            order = list(range(n))
        starts = range(0, n, self.batch_size)
        starts = progress(starts, show=self.show_progress, desc="Reranking", unit="batch")
        out = np.empty(n, dtype=np.float32)
        with torch.inference_mode():
            for start in starts:
                idx = order[start:start + self.batch_size]
                logits = self._predict_raw(model, [pairs[i] for i in idx])
                out[idx] = _log_odds(logits, len(idx))
        if self.activation == "sigmoid":
            # A stable sigmoid: exp of a non-positive number never overflows.
            pos = out >= 0
            e = np.exp(-np.abs(out))
            out = np.where(pos, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)
        return out

    def _predict_raw(self, model: Any, batch: list[tuple[str, str]]) -> NDArray[np.float32]:
        """Raw logits of one batch through ``CrossEncoder.predict`` (its real tokenisation)."""
        if self._raw_kwargs is None:
            self._raw_kwargs = _identity_activation_kwargs(model)
        raw = model.predict(
            batch,
            batch_size=len(batch),
            show_progress_bar=False,
            convert_to_numpy=True,
            **self._raw_kwargs,
        )
        try:
            return np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:  # e.g. strings from a CrossEncoder look-alike
            raise TypeError(
                f"{type(model).__name__}.predict must return numeric logits (one row per "
                f"pair), got {type(raw).__name__}: {raw!r:.60} ({exc})"
            ) from None

    def __repr__(self) -> str:
        return (
            f"CrossEncoderScorer({self.model_id!r}, batch_size={self.batch_size}, "
            f"activation={self.activation!r}, loaded={self.is_loaded})"
        )


def _refuse_bi_encoder(name: str) -> None:
    """Refuse a local bi-encoder folder: as a CrossEncoder it would get a random head.

    sentence-transformers loads any BERT-like folder as a ``CrossEncoder`` and silently
    adds an untrained classification head, so a reranker built on an embedding model
    (such as ``local_minilm_path()``) returns scores that mean nothing.
    """
    import json
    from pathlib import Path

    folder = Path(name).expanduser()
    if not folder.is_dir():
        return  # a hub name, checked by sentence-transformers when it loads
    archs = None
    try:
        archs = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures")
    except (OSError, ValueError, AttributeError):
        pass
    modules = folder / "modules.json"
    if isinstance(archs, list) and archs:
        bi_encoder = not any(str(a).endswith("ForSequenceClassification") for a in archs)
    else:
        bi_encoder = modules.is_file() and "Pooling" in modules.read_text(encoding="utf-8")
    if bi_encoder:
        raise ValueError(
            f"{name!r} is a bi-encoder (an embedding model: architectures {archs}, "
            f"{'with' if modules.is_file() else 'without'} a sentence-transformers modules.json), "
            "not a cross-encoder: as a CrossEncoder it would get an untrained, random "
            f"classification head whose scores mean nothing. Pass a cross-encoder checkpoint "
            f"such as {DEFAULT_CROSS_ENCODER!r} (or its local folder); use a bi-encoder "
            "for dense retrieval (SentenceTransformerEmbedder) instead"
        )


def _identity_activation_kwargs(model: Any) -> dict[str, Any]:
    """Keyword arguments that make ``predict`` return raw logits, for this ST release."""
    import torch

    params = inspect.signature(model.predict).parameters
    # sentence-transformers >= 4 calls it activation_fn, 3.x activation_fct.
    for name in ("activation_fn", "activation_fct"):
        if name in params:
            kwargs: dict[str, Any] = {name: torch.nn.Identity()}
            if "apply_softmax" in params:
                kwargs["apply_softmax"] = False
            return kwargs
    return {}


def _log_odds(logits: NDArray[np.float32], n: int) -> NDArray[np.float32]:
    """One log-odds score per pair from ``(n,)``, ``(n, 1)`` or ``(n, 2)`` logits."""
    if logits.ndim == 2 and logits.shape[1] == 1:
        logits = logits[:, 0]
    elif logits.ndim == 2 and logits.shape[1] == 2:
        # log(p1 / p0) for a softmax head: the positive-class log-odds.
        logits = logits[:, 1] - logits[:, 0]
    elif logits.ndim != 1:
        raise ValueError(
            f"CrossEncoderScorer supports models with 1 or 2 output logits, got logits of "
            f"shape {logits.shape}; use a reranking cross-encoder (e.g. "
            f"{DEFAULT_CROSS_ENCODER!r})"
        )
    if logits.shape[0] != n:
        raise ValueError(f"the model returned {logits.shape[0]} scores for {n} pairs")
    return logits


def _check_pairs(pairs: Any) -> list[tuple[str, str]]:
    if isinstance(pairs, tuple) and len(pairs) == 2 and all(isinstance(p, str) for p in pairs):
        raise TypeError("pairs must be a list of (query, passage) pairs, got a single pair; "
                        "wrap it in a list")
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise TypeError(
            f"pairs must be a list of (query, passage) pairs, got {type(pairs).__name__}"
        )
    out = []
    for i, pair in enumerate(pairs):
        if (isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2
                or not isinstance(pair[0], str) or not isinstance(pair[1], str)):
            raise TypeError(
                f"pairs[{i}] must be a (query, passage) pair of two str, got {pair!r:.80}"
            )
        out.append((pair[0], pair[1]))
    return out
