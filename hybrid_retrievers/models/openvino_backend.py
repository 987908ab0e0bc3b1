"""Run a loaded sentence-transformers model's transformer through OpenVINO (float32 or bfloat16).

Why: on a CPU with native bfloat16 but no AMX (AVX512-BF16: AMD Zen 4 and later, Intel
Cooper Lake), PyTorch's bfloat16 autocast speeds up the matrix products but not
attention, whose CPU flash kernel computes in float32 whatever its inputs
(``benchmarks/encoder_kernels.py``), so autocast stops near 2x. OpenVINO's CPU plugin runs
the whole graph, attention included, with its own bfloat16 kernels.

Why not ``SentenceTransformer(..., backend="openvino")``: that path goes through Optimum
Intel, which pins its own transformers range. Here the transformer of an already loaded
``SentenceTransformer`` or ``CrossEncoder`` is converted with ``openvino.convert_model``
(traced from the weights in memory, dynamic batch and sequence length; nothing is
downloaded), saved as OpenVINO IR in a cache folder keyed by a hash of the weights (float32
weights: ``compress_to_fp16`` is off), and compiled for the CPU with
``INFERENCE_PRECISION_HINT`` ``f32`` (``backend="openvino"``: torch's numbers to
rounding) or ``bf16`` (``"openvino-bf16"``: bfloat16 products and attention with float32
accumulation, close to ``"torch-bf16"``'s vectors), on torch's thread count. The
tokenizer, truncation, prompts, pooling, normalisation and the cross-encoder's
``predict`` stay sentence-transformers'.

Cache: ``cache_dir``, else ``$HYBRID_RETRIEVERS_OPENVINO_CACHE``, else ``openvino/`` in the
package's cache root (`hybrid_retrievers.models.export.user_cache_dir`).
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import hybrid_retrievers.models.export as export  # the module, not the models face

from ..optional import require

__all__ = ["install_openvino_backend"]

_RECIPE = "openvino-1"  # bump when the conversion changes: old cache entries are not reused


def install_openvino_backend(
    st_model: Any, *, bf16: bool = False, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Make ``st_model`` (a ``SentenceTransformer`` or ``CrossEncoder``) run on OpenVINO.

    The first module keeps its tokenizer and config; its transformer's ``forward`` is
    replaced by a compiled OpenVINO model. Returns the path of the IR (``.xml``) used.

    Raises:
        ImportError: naming the ``openvino`` extra when OpenVINO is missing.
        ValueError: for a model whose first module is not a text ``Transformer``.
    """
    ov = require("openvino", extra="openvino", feature="the OpenVINO backend")
    model = export.text_transformer(st_model, "OpenVINO")
    recipe = f"{_RECIPE}|{ov.__version__}"
    root = export.cache_root(cache_dir, "HYBRID_RETRIEVERS_OPENVINO_CACHE", "openvino")
    entry = root / export.fingerprint(model, recipe)
    path = entry / "model.xml"
    if not path.is_file():
        _convert(ov, model, entry)
    precision = "bf16" if bf16 else "f32"
    compiled = ov.Core().compile_model(str(path), "CPU", {
        "INFERENCE_PRECISION_HINT": precision,
        "INFERENCE_NUM_THREADS": export.torch_threads(),  # as many threads as torch uses
        "PERFORMANCE_HINT": "LATENCY",
    })
    model.hf.forward = _OpenVINOForward(compiled, model.inputs, model.output)
    return path


class _OpenVINOForward:
    """A drop-in for the transformer's ``forward``: torch tensors in, torch tensors out.

    One infer request per thread (a request is not safe to share between threads); the
    output is copied out of the request's buffer, which the next call overwrites.
    """

    def __init__(self, compiled: Any, inputs: list[str], output: str) -> None:
        self.compiled = compiled
        self.inputs = inputs
        self.output = output
        self._local = threading.local()

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        import torch

        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        result = request.infer(export.feed_arrays(self.inputs, kwargs, "OpenVINO"))
        out = np.array(result[self.compiled.output(0)], dtype=np.float32, copy=True)
        return {self.output: torch.from_numpy(out)}


def _convert(ov: Any, model: export.TextTransformer, entry: Path) -> None:
    """Convert the transformer to IR in ``entry`` atomically (the weights file moves in
    first, the graph last: a graph present means a complete entry)."""
    torch = require("torch", extra="models", feature="the OpenVINO backend")
    hf, output = model.hf, model.output
    names = model.inputs

    class Wrapped(torch.nn.Module):  # positional inputs, one named output
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return self.inner(**dict(zip(names, args)), return_dict=True)[output]

    example = tuple(torch.from_numpy(a) for a in export.probe_inputs(model).values())
    was_training = hf.training
    hf.eval()
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer warnings about data-dependent shapes
            converted = ov.convert_model(
                Wrapped(hf), example_input=example,
                input=[(ov.PartialShape([-1, -1]), ov.Type.i64) for _ in names])
    finally:
        hf.train(was_training)
    for port, name in zip(converted.inputs, names):
        port.get_tensor().set_names({name})
    with export.staged_entry(entry, ".xml") as tmp:
        ov.save_model(converted, str(tmp / "model.xml"), compress_to_fp16=False)

