"""Run a loaded sentence-transformers model's transformer through ONNX Runtime (optionally int8).

Why not ``SentenceTransformer(..., backend="onnx")``: that path needs Optimum
(``optimum-onnx``), whose releases pin ``transformers<4.58`` while sentence-transformers
6 runs on transformers 5, so the two cannot be installed together. This module does the
same job with what is installable: the transformer of an already loaded
``SentenceTransformer`` or ``CrossEncoder`` is exported with ``torch.onnx.export`` (the
TorchScript exporter, whose graph ONNX Runtime's transformer optimizer recognises; the
torch.export-based one, which needs ``onnxscript``, if that fails), fused by
``onnxruntime.transformers.optimizer`` for BERT-like models (one ``Attention`` op per
layer, ``SkipLayerNormalization``, ``BiasGelu``, ``EmbedLayerNormalization``: the fp32
graph gets faster and the int8 one quantizes each layer's Q/K/V projection as a single
``QAttention``; kept only if its output matches the unfused graph's, else the unfused
graph is used), optionally quantized with ONNX Runtime's dynamic int8 quantization
(``quantize_dynamic``: int8 weights, activations quantized per batch; what
sentence-transformers' ``export_dynamic_quantized_onnx_model`` does through Optimum),
and run by an ``onnxruntime.InferenceSession`` with as many threads as torch uses. Everything else stays sentence-transformers': the
tokenizer, truncation, prompts, pooling, normalisation and the cross-encoder's
``predict``, so only the transformer's arithmetic changes.

Exports are cached on disk (``cache_dir``, default ``$HYBRID_RETRIEVERS_ONNX_CACHE`` or
``onnx/`` in the package's one cache root, `hybrid_retrievers.models.export.user_cache_dir`:
``~/.cache/hybrid-retrievers/onnx`` on Linux) under a hash of the model's weights, so the same
model is exported once and a changed model is never served a stale graph. Nothing is
downloaded: the export starts from the weights already in memory.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..optional import require
from .export import (
    TextTransformer,
    cache_root,
    feed_arrays,
    fingerprint,
    probe_inputs,
    staged_entry,
    text_transformer,
    torch_threads,
)

__all__ = ["default_cache_dir", "export_onnx", "install_onnx_backend"]

_EXPORT_VERSION = "4"  # bump when the export recipe changes: old cache entries are not reused
_OPSET = 17  # the TorchScript exporter's newest well-supported opset
_FUSABLE = ("bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "mpnet")
"""``config.model_type`` values handed to ONNX Runtime's BERT fusions (others run unfused)."""


def default_cache_dir() -> Path:
    """Where exported models are kept: ``$HYBRID_RETRIEVERS_ONNX_CACHE``, else ``onnx/`` in
    the one cache root (`hybrid_retrievers.models.export.user_cache_dir`)."""
    return cache_root(None, "HYBRID_RETRIEVERS_ONNX_CACHE", "onnx")


def install_onnx_backend(
    st_model: Any, *, quantize: bool = False, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Make ``st_model`` (a ``SentenceTransformer`` or ``CrossEncoder``) run on ONNX Runtime.

    The model's first module (sentence-transformers' ``Transformer``) keeps its
    tokenizer and config; its transformer's ``forward`` is replaced by an ONNX Runtime
    session over the exported graph. Returns the path of the ``.onnx`` file used.

    Raises:
        ImportError: naming the ``onnx`` extra when onnxruntime, onnx or onnxscript is
            missing.
        ValueError: for a model whose first module is not a text ``Transformer``.
    """
    ort = require("onnxruntime", extra="onnx", feature="the ONNX Runtime backend")
    model = text_transformer(st_model, "ONNX")
    path = _exported(model, quantize, cache_dir)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = torch_threads()  # the same threads as the torch backend
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    model.hf.forward = _OrtForward(session, model.inputs, model.output)
    return path


def export_onnx(
    st_model: Any, *, quantize: bool = False, fuse: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The ``.onnx`` graph of ``st_model``'s transformer, exported now unless cached.

    The same export (and, with ``fuse``, the same cache entry) as `install_onnx_backend`;
    the torch-free query encoders (`hybrid_retrievers.models.onnx_query`) export with
    ``fuse=False``: the offline BERT fusions speed up batches, not one query, and cost
    ~0.6 GB of memory for all-MiniLM-L6-v2 (ONNX Runtime still applies its own fusions
    when it loads the graph). Its inputs are the tokenizer's (``input_ids``,
    ``attention_mask``, ``token_type_ids`` when the model has them), its output the
    transformer's per-token output (hidden states, or a masked-language-model head's
    logits).

    Raises:
        ImportError: naming the ``onnx`` extra when onnx (or torch) is missing.
        ValueError: for a model whose first module is not a text ``Transformer``.
    """
    return _exported(text_transformer(st_model, "ONNX"), quantize, cache_dir, fuse=fuse)


def _exported(model: TextTransformer, quantize: bool,
              cache_dir: str | os.PathLike[str] | None, *, fuse: bool = True) -> Path:
    recipe = _EXPORT_VERSION if fuse else f"{_EXPORT_VERSION}-unfused"
    entry = cache_root(cache_dir, "HYBRID_RETRIEVERS_ONNX_CACHE", "onnx") / fingerprint(
        model, recipe)
    path = entry / ("model_int8.onnx" if quantize else "model.onnx")
    if not path.is_file():
        _export(model, entry, quantize, fuse)
    return path


class _OrtForward:
    """A drop-in for the transformer's ``forward``: torch tensors in, torch tensors out."""

    def __init__(self, session: Any, inputs: list[str], output: str) -> None:
        self.session = session
        self.inputs = inputs
        self.output = output

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        import torch

        (out,) = self.session.run([self.output], feed_arrays(self.inputs, kwargs, "ONNX"))
        return {self.output: torch.from_numpy(out)}


def _export(model: TextTransformer, entry: Path, quantize: bool, fuse: bool = True) -> None:
    """Export (and quantize) into ``entry`` atomically: a half-written graph is never used."""
    torch = require("torch", extra="models", feature="the ONNX Runtime backend")
    require("onnx", extra="onnx", feature="exporting a model to ONNX")
    fp32 = entry / "model.onnx"
    # External-data files first, the graph last: a graph present means it is complete.
    with staged_entry(entry, ".onnx") as tmp:
        source = fp32
        if not fp32.is_file():
            source = tmp / "model.onnx"
            _torch_export(torch, model, source)
            if fuse:
                _fuse(source, model.hf.config, model.inputs, model.output, probe_inputs(model))
        if quantize:
            _quantize(source, tmp / "model_int8.onnx", model.hf.config)


def _quantize(source: Path, target: Path, config: Any) -> None:
    """Dynamic int8 quantization of ``source``'s MatMuls (fused: also its Attention ops)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its "consider pre-processing" advice is for CNNs
    try:
        # Weights per output channel. QInt8: the fastest kernels on AVX2; QUInt8 weights
        # (no u8s8 saturation) gave nDCG@10 closer to torch (Cranfield +0.0011, CISI
        # +0.0049 vs -0.0027, +0.0087) but ran ~10% slower. The feed-forward output
        # projections stay float32: quantizing them too doubled the embedding error
        # (mean 1 - cos 0.0033 -> 0.0066 on MiniLM; with QUInt8, Cranfield -0.0054);
        # their inputs, after GELU, have the widest range. The embedding tables are not quantized (a lookup:
        # no faster, only less exact).
        quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul", "Attention"],
                         nodes_to_exclude=_feed_forward_outputs(source, config),
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        root.setLevel(level)


def _fuse(path: Path, config: Any, inputs: list[str], output: str, probe: dict[str, Any]) -> None:
    """Replace ``path`` by ONNX Runtime's fused transformer graph, if that is safe.

    Only for `_FUSABLE` model types, only when the optimizer is installed, and only when
    the fused graph's output on ``probe`` matches the unfused graph's (1e-4): otherwise
    ``path`` is left as exported, which is slower but the same arithmetic.
    """
    heads, hidden = getattr(config, "num_attention_heads", 0), getattr(config, "hidden_size", 0)
    if getattr(config, "model_type", None) not in _FUSABLE or not heads or not hidden:
        return
    try:
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError:
        return
    fused = path.with_name("fused-" + path.name)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # opt_level 0: the fusions only; ONNX Runtime's own passes run at load time.
            optimize_model(str(path), model_type="bert", num_heads=int(heads),
                           hidden_size=int(hidden), opt_level=0).save_model_to_file(str(fused))
        if _same_output(path, fused, inputs, output, probe):
            os.replace(fused, path)
    except Exception:  # noqa: BLE001 - an unfusable graph is served unfused, never fails
        pass
    finally:
        root.setLevel(level)
        fused.unlink(missing_ok=True)


def _same_output(a: Path, b: Path, inputs: list[str], output: str, probe: dict[str, Any]) -> bool:
    import onnxruntime as ort

    feed = {n: probe[n] for n in inputs}
    outs = [ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run([output], feed)[0]
            for p in (a, b)]
    return outs[0].shape == outs[1].shape and bool(np.allclose(outs[0], outs[1], atol=1e-4))


def _feed_forward_outputs(path: Path, config: Any) -> list[str]:
    """Names of the MatMuls projecting the feed-forward width back to the hidden size.

    Found by shape, not by name (exporters name nodes differently): the constant
    weight is ``(intermediate_size, hidden_size)``.
    """
    import onnx

    wide, hidden = getattr(config, "intermediate_size", None), getattr(config, "hidden_size", None)
    if not wide or not hidden or wide == hidden:
        return []
    graph = onnx.load(str(path), load_external_data=False).graph
    shapes = {t.name: tuple(t.dims) for t in graph.initializer}
    return [n.name for n in graph.node if n.op_type == "MatMul" and len(n.input) == 2
            and shapes.get(n.input[1]) == (wide, hidden)]


def _torch_export(torch: Any, model: TextTransformer, path: Path) -> None:
    hf, inputs, output = model.hf, model.inputs, model.output

    class Wrapped(torch.nn.Module):  # named parameters: the exporter maps dynamic axes by name
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              return_dict=True)[output]

    class WrappedTypes(Wrapped):
        def forward(self, input_ids: Any, attention_mask: Any,  # type: ignore[override]
                    token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids, return_dict=True)[output]

    args = tuple(torch.from_numpy(a) for a in probe_inputs(model).values())
    axes = {n: {0: "batch", 1: "sequence"} for n in inputs}
    wrapper = WrappedTypes if "token_type_ids" in inputs else Wrapped
    previous = getattr(hf.config, "_attn_implementation", None)
    setter = getattr(hf, "set_attn_implementation", None)
    if callable(setter):  # eager attention exports to plain ONNX ops on every runtime
        setter("eager")
    was_training = hf.training
    # A backend installed on the model (bfloat16 autocast, ONNX Runtime) replaces its
    # forward on the instance: the graph is the class's own float32 forward.
    installed = hf.__dict__.pop("forward", None)
    hf.eval()
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            kwargs = dict(input_names=inputs, output_names=[output], dynamic_axes=axes,
                          opset_version=_OPSET, verbose=False)
            try:  # the TorchScript exporter: the graph the fusions recognise
                torch.onnx.export(wrapper(hf), args, str(path), dynamo=False, **kwargs)
            except Exception:  # noqa: BLE001 - e.g. a torch without it: the dynamo exporter
                require("onnxscript", extra="onnx", feature="exporting a model to ONNX")
                torch.onnx.export(wrapper(hf), args, str(path), dynamo=True,
                                  external_data=False, **kwargs)
    finally:
        if callable(setter) and previous:
            setter(previous)
        if installed is not None:
            hf.forward = installed
        hf.train(was_training)
