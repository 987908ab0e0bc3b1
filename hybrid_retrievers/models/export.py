"""What every exported backend needs from a loaded sentence-transformers model.

The ONNX Runtime backend (`hybrid_retrievers.models.onnx_backend`) and the OpenVINO one
(`hybrid_retrievers.models.openvino_backend`) both take the transformer out of an already
loaded ``SentenceTransformer`` or ``CrossEncoder``, convert it once into a cache folder
keyed by its weights, and put a forward in its place that takes and returns torch
tensors. This module holds the common steps: finding the transformer and its output,
the inputs the tokenizer produces, the weights' fingerprint, a probe batch for tracing,
the cache folder and an atomic move of a finished export into it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..optional import require

__all__ = ["TextTransformer", "cache_root", "feed_arrays", "fingerprint", "probe_inputs",
           "staged_entry", "text_transformer", "torch_threads"]


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


def cache_root(cache_dir: str | os.PathLike[str] | None, env: str, name: str) -> Path:
    """The cache folder: ``cache_dir``, else ``$env``, else
    ``$XDG_CACHE_HOME`` (or ``~/.cache``) ``/hybrid_retrievers/<name>``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    value = os.environ.get(env)
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hybrid_retrievers" / name


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
