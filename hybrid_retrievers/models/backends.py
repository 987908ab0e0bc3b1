"""The runtimes a sentence-transformers model can be served on, and the step that installs one.

``backend=`` on `SentenceTransformerEmbedder` and `CrossEncoderScorer` picks one of
`BACKENDS`. Each one changes only the transformer's arithmetic. The tokenizer, truncation,
pooling, normalisation and ``predict`` stay sentence-transformers' own.

- ``"torch"``: PyTorch float32, as loaded.
- ``"torch-bf16"``: PyTorch under ``torch.autocast`` in bfloat16. Matrix products run in
  bfloat16 with float32 accumulation. LayerNorm, softmax and the weights stay float32.
  On a CPU with native bfloat16 (AVX512-BF16 or AMX: Intel Sapphire Rapids and later,
  AMD Zen 4 and later) this is the fastest backend that needs no extra, at torch's
  quality: MiniLM vectors move by a mean 1 - cos of about 1e-5. Attention is not sped up
  (PyTorch's CPU kernel computes it in float32; ``benchmarks/encoder_kernels.py``). Without
  native support, oneDNN emulates bfloat16 and it can be slower than float32, so a warning
  says so.
- ``"onnx"`` / ``"onnx-int8"``: ONNX Runtime, float32 or with dynamically int8-quantized
  weights (`hybrid_retrievers.models.onnx_backend`; the ``onnx`` extra).
- ``"openvino"`` / ``"openvino-bf16"``: OpenVINO's CPU plugin in float32 or bfloat16
  (`hybrid_retrievers.models.openvino_backend`; the ``openvino`` extra). In bfloat16 it
  also runs attention in bfloat16, which PyTorch's CPU kernel does not, so on a CPU with
  native bfloat16 it is the fastest backend at torch-bf16's quality.
- ``"auto"`` (`SentenceTransformerEmbedder`'s default): ``"torch-bf16"`` when the CPU has
  native bfloat16 (`cpu_has_native_bf16`) and the model is one whose bfloat16 quality was
  checked (`BF16_CHECKED_MODELS`: all-MiniLM-L6-v2, measured on Cranfield at 2.2x
  float32's documents/s with nDCG@10 within 0.001, ``benchmarks/encoder_backends.py``);
  ``"torch"`` (float32) everywhere else, including a GPU device, a model given loaded,
  and any other or fine-tuned model (its bfloat16 quality is unmeasured). `resolve_backend`
  makes the choice and says why; the embedder records the backend it actually uses, so
  its ``model_id`` (and the embedding cache) keys on it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["AUTO_BACKEND", "BACKENDS", "BF16_CHECKED_MODELS", "CPU_BACKENDS", "EXACT_BACKENDS",
           "bf16_checked", "check_backend", "cpu_has_native_bf16", "install_backend",
           "native_bf16", "resolve_backend"]

BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8", "openvino", "openvino-bf16")
"""Valid ``backend`` values: the runtimes above."""

EXACT_BACKENDS = frozenset({"torch", "onnx", "openvino"})
"""Backends whose outputs match torch float32 to rounding (~1e-6). The others produce
other, close vectors, so an embedder on them records the backend in its ``model_id``
and its vectors are never mixed with torch's in one cache or index."""

AUTO_BACKEND = "auto"
"""The default of `SentenceTransformerEmbedder`: `resolve_backend` picks a `BACKENDS` entry."""

BF16_CHECKED_MODELS = frozenset({"sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"})
"""Models whose bfloat16 vectors and retrieval quality were checked against float32
(``tests/models/test_bf16_backend.py``, ``benchmarks/encoder_backends.py``); the local
folder of `local_minilm_path` counts as the first. ``backend="auto"`` uses bfloat16 only
for these."""

CPU_BACKENDS = frozenset({"onnx", "onnx-int8", "openvino", "openvino-bf16"})
"""Backends that run on the CPU only (their runtimes are set up for the CPU here)."""


def check_backend(backend: Any) -> str:
    """``backend`` if it is one of `BACKENDS`, else a ValueError naming the choices."""
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {BACKENDS!r}, got {backend!r}; the 'onnx*' backends "
            "need the onnx extra, the 'openvino*' ones the openvino extra (pip install "
            "'hybrid-retrievers[onnx]' or '[openvino]')"
        )
    return str(backend)


def bf16_checked(model: str) -> bool:
    """Whether ``model`` (a name or local folder) is one of `BF16_CHECKED_MODELS`."""
    if model in BF16_CHECKED_MODELS:
        return True
    from .local import local_minilm_path

    local = local_minilm_path()
    if local is None:
        return False
    try:
        return Path(model).expanduser().resolve() == Path(local).resolve()
    except (OSError, ValueError):
        return False


def resolve_backend(backend: str, model: str | None, device: str | None) -> tuple[str, str]:
    """``(backend to use, why)`` for ``backend`` (``"auto"`` chosen here; others as given).

    Example:
        >>> resolve_backend("torch", "any/model", None)
        ('torch', 'asked for')
        >>> resolve_backend("auto", "my/other-model", "cpu")[0]
        'torch'
    """
    if backend != AUTO_BACKEND:
        return check_backend(backend), "asked for"
    if device is not None and not device.startswith("cpu"):
        return "torch", f"auto: float32 on device {device!r} (bfloat16 is chosen for CPUs only)"
    if model is None:
        return "torch", "auto: float32 for a model given loaded"
    if not bf16_checked(model):
        return "torch", ("auto: float32, bfloat16 quality is checked for all-MiniLM-L6-v2 "
                         "only (pass backend='torch-bf16' to choose it)")
    if not cpu_has_native_bf16():
        return "torch", "auto: float32, this CPU has no native bfloat16 (AVX512-BF16 / AMX)"
    return "torch-bf16", ("auto: bfloat16, this CPU has native bfloat16 and the model's "
                          "bfloat16 quality is checked (about 2x float32's speed)")


def install_backend(st_model: Any, backend: str,
                    cache_dir: str | os.PathLike[str] | None = None) -> None:
    """Move a loaded ``SentenceTransformer`` or ``CrossEncoder`` onto ``backend``, in place."""
    if backend == "torch":
        return
    if backend == "torch-bf16":
        install_bf16_autocast(st_model)
        return
    if backend.startswith("openvino"):
        from .openvino_backend import install_openvino_backend

        bf16 = backend == "openvino-bf16"
        if bf16:
            _warn_if_emulated(backend)
        install_openvino_backend(st_model, bf16=bf16, cache_dir=cache_dir)
        return
    from .onnx_backend import install_onnx_backend

    install_onnx_backend(st_model, quantize=backend == "onnx-int8", cache_dir=cache_dir)


def install_bf16_autocast(st_model: Any) -> None:
    """Run ``st_model``'s transformer under bfloat16 autocast; its outputs stay float32.

    The transformer is the first module's; in a model whose first module is a
    ``Router`` (an asymmetric model, such as an inference-free sparse encoder whose
    queries skip the transformer), every route's transformer.

    Raises:
        ValueError: for a model without a transformer (``.model``) in its first module.
    """
    first = st_model[0]
    routes = getattr(first, "sub_modules", None)
    modules = [first] if routes is None else [m for route in routes.values() for m in route]
    transformers = [hf for hf in (getattr(m, "model", None) for m in modules)
                    if hf is not None and callable(getattr(hf, "forward", None))]
    if not transformers:
        raise ValueError(
            f"backend='torch-bf16' needs a sentence-transformers model whose first module "
            f"is a Transformer (or a Router with one), got {type(first).__name__}"
        )
    for hf in transformers:
        device = next(hf.parameters()).device.type
        if device == "cpu":
            _warn_if_emulated("torch-bf16")
        hf.forward = _Bf16Forward(hf.forward, device)


def _warn_if_emulated(backend: str) -> None:
    if not native_bf16():
        warnings.warn(
            f"backend={backend!r}: this CPU reports no native bfloat16 (AVX512-BF16 or "
            "AMX), so bfloat16 is emulated and may be slower than float32",
            RuntimeWarning, stacklevel=5,
        )


class _Bf16Forward:
    """The transformer's own ``forward`` under autocast, floating outputs cast to float32."""

    def __init__(self, forward: Any, device: str) -> None:
        self.forward = forward
        self.device = device

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        with torch.autocast(self.device, dtype=torch.bfloat16):
            out = self.forward(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            return _float32(torch, out)
        if isinstance(out, tuple):
            return tuple(_float32(torch, v) for v in out)
        for key, value in out.items():  # a ModelOutput: set items keep its attributes in step
            out[key] = _float32(torch, value)
        return out


def _float32(torch: Any, value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype == torch.bfloat16:
        return value.float()
    return value


@lru_cache(maxsize=1)
def cpu_has_native_bf16() -> bool:
    """Whether this CPU certainly has native bfloat16 arithmetic; ``False`` when unknown.

    Linux: the ``avx512_bf16`` / ``amx_bf16`` (x86) or ``bf16`` (Arm) flag in
    ``/proc/cpuinfo``. macOS: ``sysctl hw.optional.arm.FEAT_BF16`` (Apple M2 and later).
    Elsewhere ``False``, so ``backend="auto"`` stays on float32 where it cannot tell.
    """
    flags = _cpuinfo_flags()
    if flags is not None:
        return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "hw.optional.arm.FEAT_BF16"],
                                 capture_output=True, text=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            return False
        return out.stdout.strip() == "1"
    return False


def _cpuinfo_flags() -> set[str] | None:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags.update(line.partition(":")[2].split())
    return flags


@lru_cache(maxsize=1)
def native_bf16() -> bool:
    """Whether this CPU advertises native bfloat16 arithmetic (Linux ``/proc/cpuinfo``).

    Elsewhere (no ``/proc/cpuinfo``) it answers True: the warning it gates is advice, and
    a false alarm on, say, an Apple CPU with native bfloat16 would be worse than none.
    """
    flags = _cpuinfo_flags()
    if flags is None:
        return True
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})
