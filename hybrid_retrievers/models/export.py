"""What every exported backend needs from a loaded sentence-transformers model.

The ONNX Runtime backend (`hybrid_retrievers.models.onnx_backend`) and the OpenVINO one
(`hybrid_retrievers.models.openvino_backend`) both take the transformer out of an already
loaded ``SentenceTransformer`` or ``CrossEncoder``, convert it once into a cache folder
keyed by its weights, and put a forward in its place that takes and returns torch
tensors. This module holds the common steps: finding the transformer and its output,
the inputs the tokenizer produces, the weights' fingerprint, a probe batch for tracing,
the package's one cache root (`user_cache_dir`), the cache folder of an
export and an atomic move of a finished export into it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..optional import require

__all__ = ["CACHE_ENV", "TextTransformer", "cache_root", "feed_arrays", "fingerprint",
           "probe_inputs", "staged_entry", "text_transformer", "torch_threads", "user_cache_dir"]


class TextTransformer:
    """The first module of a sentence-transformers model, its transformer and output name."""

    __slots__ = ("module", "hf", "output", "inputs")

    def __init__(self, module: Any, hf: Any, output: str, inputs: list[str]) -> None:
        self.module = module
        self.hf = hf
        self.output = output
        self.inputs = inputs


def text_transformer(st_model: Any, backend: str) -> TextTransformer:
    """The transformer inside ``st_model``, or a ValueError naming ``backend``.

    Raises:
        ValueError: the first module is not a text ``Transformer``, or its output is not
            a named tensor.
    """
    module = st_model[0]
    hf = getattr(module, "model", None)
    config = getattr(module, "modality_config", None)
    if hf is None or not isinstance(config, dict) or "text" not in config:
        raise ValueError(
            f"the {backend} backend needs a sentence-transformers model whose first module "
            f"is a text Transformer, got {type(module).__name__}"
        )
    output = config["text"].get("method_output_name")
    if not isinstance(output, str):
        raise ValueError(f"unsupported transformer output {output!r} for the {backend} backend")
    return TextTransformer(module, hf, output, _input_names(module, hf))


def _input_names(module: Any, hf: Any) -> list[str]:
    tokenizer = getattr(module, "tokenizer", None) or getattr(module, "processor", None)
    names = list(getattr(tokenizer, "model_input_names", None) or [])
    order = ["input_ids", "attention_mask", "token_type_ids"]  # the wrappers' parameter order
    wanted = [n for n in order if n in names or n in ("input_ids", "attention_mask")]
    if "token_type_ids" not in wanted and getattr(hf.config, "type_vocab_size", 0) > 1:
        wanted.append("token_type_ids")
    return wanted


def fingerprint(model: TextTransformer, recipe: str) -> str:
    """A hash of everything a converted model depends on: weights, config and ``recipe``."""
    hf = model.hf
    digest = hashlib.sha256()
    digest.update(f"{recipe}|{type(hf).__name__}|{model.output}|{model.inputs}".encode())
    digest.update(hf.config.to_json_string(use_diff=False).encode())
    for name, tensor in sorted(hf.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:24]


def probe_inputs(model: TextTransformer) -> dict[str, Any]:
    """A small padded batch (two rows of different length) as int64 arrays, per input."""
    torch = require("torch", extra="models", feature="exporting a model")
    tokenizer = getattr(model.module, "tokenizer", None) or model.module.processor
    probe = tokenizer(["an example input for the exporter", "a second, longer example input "
                       "so that the two rows differ in length"], padding=True, return_tensors="pt")
    return {n: (probe[n] if n in probe else torch.zeros_like(probe["input_ids"])).numpy()
            .astype(np.int64) for n in model.inputs}


def feed_arrays(inputs: list[str], kwargs: dict[str, Any], backend: str) -> dict[str, Any]:
    """The int64 numpy inputs of an exported graph from a transformer's keyword tensors."""
    import torch

    feed = {}
    for name in inputs:
        value = kwargs.get(name)
        if value is None:
            if name != "token_type_ids":
                raise ValueError(f"the {backend} backend needs {name!r} from the tokenizer")
            value = torch.zeros_like(kwargs["input_ids"])
        feed[name] = value.detach().cpu().numpy().astype(np.int64, copy=False)
    return feed


def torch_threads() -> int:
    """Torch's intra-op thread count: exported runtimes use as many as the torch backend."""
    torch = require("torch", extra="models", feature="an exported backend")
    return max(1, int(torch.get_num_threads()))


CACHE_ENV = "HYBRID_RETRIEVERS_CACHE_DIR"
"""Moves the package's one cache root (`user_cache_dir`): vector caches and exports alike."""


def user_cache_dir() -> Path:
    """The package's one cache root: ``$HYBRID_RETRIEVERS_CACHE_DIR``, else the platform's
    user cache folder (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches``
    on macOS, ``%LOCALAPPDATA%`` on Windows) + ``hybrid-retrievers``.

    Under it: ``embeddings/`` and ``sparse-embeddings/`` (the document vector caches of
    `hybrid_retrievers.ingest.folder_models`), ``onnx/`` and ``openvino/`` (converted
    models, `cache_root`).
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hybrid-retrievers"


def cache_root(cache_dir: str | os.PathLike[str] | None, env: str, name: str) -> Path:
    """The folder of the converted models called ``name`` (``"onnx"``, ``"openvino"``):
    ``cache_dir``, else ``$env``, the variable that moves that folder alone
    (``HYBRID_RETRIEVERS_ONNX_CACHE``, ``HYBRID_RETRIEVERS_OPENVINO_CACHE``), else
    ``user_cache_dir() / name``.

    Exports made before the one root (in ``~/.cache/hybrid_retrievers/<name>``) are not
    looked for: a model missing here is exported again, once; an index that recorded an
    old query-encoder folder keeps using it while it exists.
    """
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    value = os.environ.get(env)
    if value:
        return Path(value).expanduser()
    return user_cache_dir() / name


@contextmanager
def staged_entry(entry: Path, last_suffix: str) -> Iterator[Path]:
    """A temporary folder beside ``entry``; on success its files move into ``entry``.

    Files ending in ``last_suffix`` (the one a loader looks for) move last, so a present
    main file means a complete export; files already in ``entry`` are kept. The temporary
    folder is removed either way.
    """
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=entry.parent))
    try:
        yield tmp
        entry.mkdir(exist_ok=True)
        for file in sorted(tmp.iterdir(), key=lambda f: f.name.endswith(last_suffix)):
            if not (entry / file.name).exists():
                os.replace(file, entry / file.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
