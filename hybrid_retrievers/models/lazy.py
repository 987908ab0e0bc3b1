"""`LazyModel`: the load-on-first-use, thread-safe, load-once model slot both model wrappers share.

`SentenceTransformerEmbedder` and `CrossEncoderScorer` take either a model name (loaded by
sentence-transformers the first time it is needed, optionally moved onto another backend:
bfloat16 autocast, ONNX Runtime or OpenVINO) or an already loaded instance. The slot, the
lock, the backend step and the name recorded on a loaded instance are the same for both, so
they live here once; each wrapper says only how to build its model (`LazyModel._build`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from .backends import CPU_BACKENDS, check_backend, install_backend
from .hub import prepare_hub_load

__all__ = ["LazyModel", "check_loading_options", "instance_name"]


def check_loading_options(
    *, backend: Any, device: Any, model_id: Any, model_kwargs: Any,
) -> tuple[str, dict[str, Any]]:
    """The options both model wrappers take, checked: ``(backend, copy of model_kwargs)``.

    Raises:
        ValueError: an unknown backend, a CPU-only backend on another device, or a blank
            ``model_id``.
        TypeError: a ``device`` or ``model_id`` that is not a str, or ``model_kwargs``
            that is not a mapping.
    """
    backend = check_backend(backend)
    for name, value in (("device", device), ("model_id", model_id)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    if backend in CPU_BACKENDS and device is not None and not device.startswith("cpu"):
        raise ValueError(
            f"backend={backend!r} runs on the CPU, but device={device!r} was given; use "
            "backend='torch' or 'torch-bf16' on an accelerator"
        )
    if model_id is not None and not model_id.strip():
        raise ValueError("model_id must not be empty or blank; omit it to use the model name")
    if model_kwargs is not None and not isinstance(model_kwargs, Mapping):
        raise TypeError(f"model_kwargs must be a mapping, got {type(model_kwargs).__name__}")
    return backend, dict(model_kwargs or {})


class LazyModel:
    """A model given by name (loaded once, on first use) or as a loaded instance.

    Subclasses call `_init_model` from ``__init__`` and implement `_build` (the
    sentence-transformers constructor call); `model` loads under a lock, at most once.
    """

    _name: str | None
    _model: Any
    _model_kwargs: dict[str, Any]
    backend: str
    _onnx_cache_dir: str | os.PathLike[str] | None

    def _init_model(
        self,
        name: str | None,
        model: Any,
        *,
        backend: str,
        onnx_cache_dir: str | os.PathLike[str] | None,
    ) -> None:
        self._name, self._model = name, model
        self.backend = backend
        self._onnx_cache_dir = onnx_cache_dir
        self._lock = threading.Lock()

    def _build(self) -> Any:
        """Load the model named ``self._name`` (called once, under the lock)."""
        raise NotImplementedError

    @property
    def model(self) -> Any:
        """The model, loaded now if it was not yet (thread-safe, once)."""
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    # Offline, a hub name fails here at once instead of after a minute of
                    # huggingface_hub retries (a cached copy loads without calling out).
                    prepare_hub_load(self._name, self._model_kwargs, what=type(self).__name__)
                    loaded = self._build()
                    install_backend(loaded, self.backend, self._onnx_cache_dir)
                    self._model = loaded
                model = self._model
        return model

    def warm_up(self) -> None:
        """Load the model now (it is otherwise loaded on first use)."""
        _ = self.model

    @property
    def is_loaded(self) -> bool:
        """Whether the model has been loaded (or was given loaded)."""
        return self._model is not None


def instance_name(model: Any, *, config: bool = False) -> str | None:
    """A stable name recorded on a loaded model, if it has one.

    Looks at the model card (``base_model``, ``model_id``), then, with ``config=True``,
    the Hugging Face config's ``_name_or_path``, then ``name_or_path``.
    """
    card = getattr(model, "model_card_data", None)
    candidates = [getattr(card, "base_model", None), getattr(card, "model_id", None)]
    if config:
        candidates.append(getattr(getattr(model, "config", None), "_name_or_path", None))
    candidates.append(getattr(model, "name_or_path", None))
    for value in candidates:
        if isinstance(value, str) and value.strip():
            return value
    return None
