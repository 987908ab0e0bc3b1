"""Query encoders on ONNX Runtime and ``tokenizers`` alone: a search process without torch.

A command-line ``search`` is a new process per query. Encoding one query through
sentence-transformers first imports torch, transformers and sentence-transformers (10 s
and more on a busy laptop) for a few milliseconds of arithmetic. The same query vector
needs only the transformer's graph, the tokenizer and the pooling, so `export_query_encoder`
writes those once, while the model is loaded anyway (``hybrid-retrievers index``), and
`OnnxQueryEncoder` runs them with ``onnxruntime`` and ``tokenizers`` and nothing heavier
(about a second in a new process).

What is exported, and how the query side is computed:

- the transformer's graph: `hybrid_retrievers.models.onnx_backend.export_onnx`, the
  export of ``backend="onnx"`` (cached under a hash of the weights) without its offline
  fusions (they speed up batches, not one query, and cost memory while indexing);
- the tokenizer: the model's own fast tokenizer (its ``tokenizer.json``), with its padding
  off (all-MiniLM-L6-v2's pads every text to 128) and its truncation set to what
  sentence-transformers truncates a query to (``max_seq_length``); texts are padded to the
  longest of a batch with the tokenizer's pad id and given the attention mask;
- dense (`SentenceTransformerEmbedder`): the model's ``Pooling`` (mean over the tokens
  the mask keeps, or the first token) then, when the model or the embedder normalises,
  division by the L2 norm (``max(norm, 1e-12)``, as ``torch.nn.functional.normalize``);
- learned sparse (`SpladeEncoder`): sentence-transformers' ``SpladePooling`` over the
  masked-language-model logits, ``w_j = max_i log(1 + ReLU(logit_ij))`` over the tokens
  the mask keeps (Formal et al. 2021, SPLADE, SIGIR; ``"sum"`` pooling and the
  ``log1p_relu`` activation too). ``log(1 + ReLU(x))`` is non-decreasing, so the maximum is
  taken over the logits first and activated once: the same weights, without an activated
  copy of every token's logits. The weights become ``{token: weight}`` with the encoder's
  own token strings (saved with the export), as `SpladeEncoder` gives.

Only a pipeline these steps reproduce is exported: a first module that is a text
``Transformer`` (not an inference-free ``Router``), dense pooling ``mean`` or ``cls``,
no query prompt, no ``max_active_dims``. An export is checked before it is recorded: on
probe texts (cased, accented, longer than the truncation length) its vectors must match
the loaded model's (max abs difference 1e-4; for a ``torch-bf16`` model, whose own
vectors are bfloat16-rounded, a cosine of at least 0.999), else it is refused with the
difference. The folder (``query-<hash>`` beside the graphs in the ONNX cache,
``$HYBRID_RETRIEVERS_ONNX_CACHE`` or ``onnx/`` in the package's cache root, ``~/.cache/
hybrid-retrievers`` or ``$HYBRID_RETRIEVERS_CACHE_DIR``: `export.user_cache_dir`) holds
``query.json`` (the settings and the graph's path), ``tokenizer.json`` and, for a sparse
encoder, ``vocabulary.json``.

`OnnxQueryPath` puts an export in front of a (lazy) model wrapper: queries through
ONNX Runtime, documents and everything else through the wrapper, so an index loads with
it as with the wrapper. When the export or the runtime is missing it falls back to the
wrapper and says why (`OnnxQueryPath.fallback_reason`).

Example:
    >>> from hybrid_retrievers.models import SentenceTransformerEmbedder
    >>> from hybrid_retrievers.models.onnx_query import OnnxQueryPath
    >>> torch_side = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    >>> encoder = OnnxQueryPath(torch_side, "/nonexistent/query-export")
    >>> encoder.model_id == torch_side.model_id, encoder.is_loaded
    (True, False)
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..optional import require
from .export import cache_root, staged_entry

__all__ = ["FAST_PATH_HINT", "QUERY_FORMAT", "OnnxQueryEncoder", "OnnxQueryPath",
           "UnsupportedQueryEncoder", "export_query_encoder", "export_query_encoders",
           "missing_runtime", "read_settings", "torch_query_note"]

QUERY_FORMAT = 1
"""Version of ``query.json``; a folder of another version is not used (the CLI re-exports)."""

RUNTIME_MODULES = ("onnxruntime", "tokenizers")
"""What `OnnxQueryEncoder` imports (the ``onnx`` extra brings both)."""

EXPORT_MODULES = ("onnx", "onnxruntime", "tokenizers")
"""What `export_query_encoder` needs besides torch and sentence-transformers."""

FAST_PATH_HINT = ("for a search without torch, install the onnx extra (pip install "
                  "'hybrid-retrievers[onnx]') and run `hybrid-retrievers index` on this "
                  "index again: it exports the query encoders once")
"""How to get the torch-free query path (said when a search falls back)."""

_PROBES = (
    "what is the boundary layer",
    "  Why does the WING stall at High Angles of Attack?  ",
    "café naïve façade: Über-résumé",
    " ".join(["laminar flow over a flat plate at supersonic speed"] * 70),  # > 512 tokens
)
"""Texts an export is checked on: cased, spaced, accented, and longer than truncation."""


def missing_runtime(modules: Sequence[str] = RUNTIME_MODULES) -> list[str]:
    """The ``modules`` not installed (found without importing them)."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


# ---------------------------------------------------------------------- runtime


class OnnxQueryEncoder:
    """The query side of an exported encoder, on ``onnxruntime`` + ``tokenizers`` only.

    Args:
        folder: a folder `export_query_encoder` wrote.
        threads: ONNX Runtime's intra-op threads (default: its own choice, the
            physical cores).

    Raises:
        ImportError: onnxruntime or tokenizers is missing (naming the ``onnx`` extra).
        FileNotFoundError: the folder, its ``query.json`` or its graph is gone.
        ValueError: a ``query.json`` of another format or kind.
    """

    def __init__(self, folder: str | os.PathLike[str], *, threads: int | None = None) -> None:
        ort = require("onnxruntime", extra="onnx", feature="the ONNX query encoder")
        tokenizers = require("tokenizers", extra="onnx", feature="the ONNX query encoder")
        self.folder = Path(folder)
        settings = read_settings(self.folder)
        self.kind: str = settings["kind"]
        self.settings = settings
        tokenizer = tokenizers.Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(int(settings["max_length"]))
        self._tokenizer = tokenizer
        graph = (self.folder / settings["graph"]).resolve()
        if not graph.is_file():
            raise FileNotFoundError(f"{self.folder}: the graph {graph} is gone")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = int(threads)
        self._session = ort.InferenceSession(str(graph), options,
                                             providers=["CPUExecutionProvider"])
        self._vocabulary: list[str] | None = None
        if self.kind == "sparse":
            with open(self.folder / "vocabulary.json", encoding="utf-8") as f:
                self._vocabulary = json.load(f)

    @property
    def dimension(self) -> int:
        """The vector length (dense) or vocabulary size (sparse)."""
        return int(self.settings["dimension"])

    def _features(self, encodings: list[Any]) -> dict[str, NDArray[np.int64]]:
        """The graph's inputs for tokenized texts: ids padded to the longest, the mask."""
        width = max(len(e.ids) for e in encodings)
        shape = (len(encodings), width)
        ids = np.full(shape, int(self.settings["pad_id"]), dtype=np.int64)
        mask = np.zeros(shape, dtype=np.int64)
        types = np.zeros(shape, dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        named = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: named[name] for name in self.settings["inputs"]}

    def encode(self, texts: Sequence[str], batch_size: int = 32,
               max_batch_tokens: int = 2048) -> NDArray[np.float32]:
        """Pooled query vectors, ``(len(texts), dimension)`` float32 (sparse: one weight
        per vocabulary entry, zeros included).

        At most ``batch_size`` texts and ``max_batch_tokens`` padded tokens (texts x the
        longest) per run of the graph, as `SpladeEncoder` batches: a masked-language
        model's output is a vocabulary-wide row per token (2,048 tokens of BERT's
        vocabulary: 250 MB).
        """
        encodings = self._tokenizer.encode_batch([str(t) for t in texts])
        out = np.zeros((len(encodings), self.dimension), dtype=np.float32)
        start = 0
        while start < len(encodings):
            end, width = start + 1, len(encodings[start].ids)
            while end < len(encodings) and end - start < batch_size:
                width = max(width, len(encodings[end].ids))
                if (end - start + 1) * width > max_batch_tokens:
                    break
                end += 1
            feed = self._features(encodings[start:end])
            (tokens,) = self._session.run([self.settings["output"]], feed)
            out[start:end] = self._pool(tokens, feed["attention_mask"])
            start = end
        return out

    def _pool(self, tokens: NDArray[Any], mask: NDArray[np.int64]) -> NDArray[np.float32]:
        tokens = tokens.astype(np.float32, copy=False)
        keep = mask[:, :, None].astype(bool)
        if self.kind == "sparse":
            if self.settings["pooling"] == "max":  # activation is monotone: max first
                tokens[mask == 0] = -np.inf  # padding never wins (in place: no copy)
                pooled = _splade_activation(tokens.max(axis=1), self.settings["activation"])
            else:  # "sum"
                pooled = (_splade_activation(tokens, self.settings["activation"])
                          * keep).sum(axis=1)
            return pooled.astype(np.float32)
        if self.settings["pooling"] == "cls":
            pooled = tokens[:, 0]
        else:  # mean over the kept tokens, as sentence-transformers' Pooling
            counts = np.clip(mask.sum(axis=1, keepdims=True).astype(np.float32), 1e-9, None)
            pooled = (tokens * keep).sum(axis=1) / counts
        if self.settings["normalize"]:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        return pooled.astype(np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Dense: an ``(n, dimension)`` matrix; sparse: one ``{token: weight}`` per text."""
        texts = _check_texts(texts)
        if not texts:
            return [] if self.kind == "sparse" else np.zeros((0, self.dimension), np.float32)
        matrix = self.encode(texts)
        if self.kind == "dense":
            return matrix
        return [self._token_weights(row) for row in matrix]

    def embed_query(self, text: str) -> Any:
        """One query's vector (dense) or ``{token: weight}`` (sparse)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.embed_queries([text])[0]

    def _token_weights(self, row: NDArray[np.float32]) -> dict[str, float]:
        assert self._vocabulary is not None
        if not np.all(np.isfinite(row)):
            raise ValueError(f"the ONNX query encoder in {self.folder} gave a weight that is "
                             "not finite")
        return {self._vocabulary[j]: float(row[j]) for j in np.flatnonzero(row > 0)}

    def __repr__(self) -> str:
        return f"OnnxQueryEncoder({str(self.folder)!r}, kind={self.kind!r})"


def _splade_activation(x: NDArray[Any], activation: str) -> NDArray[Any]:
    """``log(1 + ReLU(x))``, and once more ``log1p`` for ``"log1p_relu"``."""
    out = np.log1p(np.maximum(x, 0))
    return np.log1p(out) if activation == "log1p_relu" else out


def read_settings(folder: Path) -> dict[str, Any]:
    """``query.json`` of an export folder, checked.

    Raises:
        FileNotFoundError: no ``query.json`` there.
        ValueError: another format, or an unknown kind.
    """
    path = folder / "query.json"
    if not path.is_file():
        raise FileNotFoundError(f"no ONNX query encoder at {folder} (no query.json)")
    with open(path, encoding="utf-8") as f:
        settings = json.load(f)
    if not isinstance(settings, dict) or settings.get("format") != QUERY_FORMAT:
        raise ValueError(f"{path}: query encoder format {settings.get('format')!r}, this "
                         f"version reads {QUERY_FORMAT}; run `hybrid-retrievers index` again")
    if settings.get("kind") not in ("dense", "sparse"):
        raise ValueError(f"{path}: unknown kind {settings.get('kind')!r}")
    return settings


# ---------------------------------------------------------------------- the switch


class OnnxQueryPath:
    """``encoder`` with its queries encoded by the export in ``folder``, if it can be.

    Queries (`embed_query`, `embed_queries`) go through `OnnxQueryEncoder` once it
    loads; documents (`embed_documents`) and every other attribute through ``encoder``
    (a `SentenceTransformerEmbedder` or `SpladeEncoder`, typically not loaded), whose
    `model_id` this is. `warm_up` loads the ONNX encoder; when it cannot (the folder is
    gone, onnxruntime or tokenizers is not installed), it loads ``encoder`` instead and
    `fallback_reason` says why. Nothing is loaded before `warm_up` or the first query,
    and `dimension` (dense) comes from the export, so loading an index loads nothing.

    Args:
        encoder: the model wrapper the export was made from.
        folder: the export folder (`export_query_encoder`).
    """

    def __init__(self, encoder: Any, folder: str | os.PathLike[str]) -> None:
        self._encoder = encoder
        self.folder = Path(folder)
        self._onnx: OnnxQueryEncoder | None = None
        self._fell_back = False
        self.fallback_reason: str | None = None
        self._lock = threading.Lock()  # `serve` answers queries on several threads

    def __getattr__(self, name: str) -> Any:  # everything but the query side: the wrapper's
        if name.startswith("__") or name in ("_encoder", "_lock"):
            raise AttributeError(name)
        return getattr(self._encoder, name)

    @property
    def encoder(self) -> Any:
        """The wrapped model wrapper (documents, and queries on a fallback)."""
        return self._encoder

    @property
    def model_id(self) -> Any:
        """The wrapped encoder's identity (the export computes the same query vectors)."""
        return self._encoder.model_id

    @property
    def runtime(self) -> str | None:
        """``"onnx"`` or ``"torch"`` once loaded (the query side's runtime), else ``None``."""
        if self._onnx is not None:
            return "onnx"
        return "torch" if self._fell_back else None

    @property
    def is_loaded(self) -> bool:
        """Whether the query side is loaded (ONNX Runtime, or the fallback model)."""
        return self.runtime is not None

    @property
    def dimension(self) -> int:
        """The vector length, from the export when it is readable (nothing loaded)."""
        if self._onnx is not None:
            return self._onnx.dimension
        if not self._fell_back:
            try:
                settings = read_settings(self.folder)
            except (OSError, ValueError):
                pass
            else:
                if settings["kind"] == "dense":
                    return int(settings["dimension"])
        return int(self._encoder.dimension)

    def load_onnx(self) -> bool:
        """Load the ONNX query encoder if it can be (nothing else); whether it is loaded.

        When it cannot, `fallback_reason` says why and nothing is loaded: `warm_up` (or
        the first query) then loads the model. A caller that prepares the model's
        loading (quiets its progress bar, which imports transformers) does it only then.
        """
        with self._lock:
            return self._load_onnx()

    def _load_onnx(self) -> bool:
        if self._onnx is not None or self._fell_back:
            return self._onnx is not None
        missing = missing_runtime()
        if missing:
            self.fallback_reason = f"{' and '.join(missing)} not installed; {FAST_PATH_HINT}"
            return False
        try:
            self._onnx = OnnxQueryEncoder(self.folder)
        except (OSError, ValueError) as exc:
            self.fallback_reason = (f"the ONNX query encoder cannot be used ({exc}); "
                                    f"{FAST_PATH_HINT}")
            return False
        return True

    def warm_up(self) -> None:
        """Load the ONNX query encoder, or (saying why in `fallback_reason`) the model."""
        if self.is_loaded or self.load_onnx():
            return
        self._fell_back = True
        warm = getattr(self._encoder, "warm_up", None)
        if callable(warm):
            warm()

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Query vectors (ONNX Runtime, or the fallback model)."""
        self.warm_up()
        if self._onnx is not None:
            return self._onnx.embed_queries(texts)
        return self._encoder.embed_queries(texts)

    def embed_query(self, text: str) -> Any:
        """One query's vector (ONNX Runtime, or the fallback model)."""
        self.warm_up()
        if self._onnx is not None:
            return self._onnx.embed_query(text)
        return self._encoder.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        """Document vectors, always from the wrapped model."""
        return self._encoder.embed_documents(texts)

    def __repr__(self) -> str:
        return f"OnnxQueryPath({self._encoder!r}, {str(self.folder)!r}, runtime={self.runtime!r})"


# ---------------------------------------------------------------------- export


class UnsupportedQueryEncoder(ValueError):
    """The encoder's query side is not one `OnnxQueryEncoder` reproduces (the message says why)."""


def export_query_encoder(encoder: Any, *, cache_dir: str | os.PathLike[str] | None = None,
                         ) -> Path:
    """Export the query side of ``encoder`` (loaded now if it was not); return its folder.

    ``encoder``: a `SentenceTransformerEmbedder` or `SpladeEncoder`. The graph is
    `export_onnx`'s (cached by the weights); the folder is keyed by the graph, the
    tokenizer and the pooling settings, so the same model is exported once however many
    indexes use it. The export is checked on probe texts against ``encoder`` itself
    before its ``query.json`` is written (see the module doc).

    Raises:
        UnsupportedQueryEncoder: a pipeline this module does not reproduce, or an export
            whose vectors differ from the model's.
        ImportError: torch, onnx, onnxruntime or tokenizers missing.
    """
    from .onnx_backend import export_onnx
    from .splade import SpladeEncoder

    require("tokenizers", extra="onnx", feature="exporting a query encoder")
    sparse = isinstance(encoder, SpladeEncoder)
    settings, vocabulary = (_sparse_settings if sparse else _dense_settings)(encoder)
    st_model = encoder.model
    graph = export_onnx(st_model, fuse=False, cache_dir=cache_dir)
    module = st_model[0]
    tokenizer = getattr(module, "tokenizer", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or tokenizer.pad_token_id is None:
        raise UnsupportedQueryEncoder("the model has no fast tokenizer with a pad token "
                                      "(tokenizers' tokenizer.json)")
    tokenizer_json = _plain_tokenizer(backend.to_str())
    from .export import text_transformer

    transformer = text_transformer(st_model, "ONNX")
    settings.update(format=QUERY_FORMAT, inputs=transformer.inputs, output=transformer.output,
                    pad_id=int(tokenizer.pad_token_id), model_id=str(encoder.model_id))
    root = cache_root(cache_dir, "HYBRID_RETRIEVERS_ONNX_CACHE", "onnx")
    digest = hashlib.sha256()
    for part in (graph.parent.name, tokenizer_json, json.dumps(settings, sort_keys=True),
                 json.dumps(vocabulary)):
        digest.update(part.encode())
    folder = root / f"query-{digest.hexdigest()[:24]}"
    settings["graph"] = os.path.relpath(graph, folder)
    if (folder / "query.json").is_file():
        return folder
    with staged_entry(folder, "query.json") as tmp:
        (tmp / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
        if vocabulary is not None:
            (tmp / "vocabulary.json").write_text(json.dumps(vocabulary), encoding="utf-8")
        # the graph path is relative to the final folder, which sits beside tmp
        (tmp / "query.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
        _check_export(tmp, folder, encoder)
    return folder


def _dense_settings(encoder: Any) -> tuple[dict[str, Any], None]:
    if getattr(encoder, "query_prompt", None):
        raise UnsupportedQueryEncoder("a query prompt is not reproduced by the ONNX export")
    st_model = encoder.model
    modules = list(st_model)
    names = [type(m).__name__ for m in modules]
    if len(modules) < 2 or names[0] != "Transformer" or names[1] != "Pooling" \
            or any(n != "Normalize" for n in names[2:]):
        raise UnsupportedQueryEncoder(f"modules {names}: only Transformer, Pooling "
                                      "[, Normalize] are reproduced")
    pooling = _pooling_mode(modules[1])
    return {"kind": "dense", "pooling": pooling,
            "normalize": bool(encoder.normalize or len(modules) > 2),
            "max_length": _max_length(st_model, query=False),
            "dimension": int(encoder.dimension)}, None


def _pooling_mode(pooling: Any) -> str:
    mode = getattr(pooling, "pooling_mode", None)
    if mode is None:  # older sentence-transformers: one flag per mode
        flags = {m: getattr(pooling, f"pooling_mode_{m}", False)
                 for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")}
        on = [m for m, v in flags.items() if v]
        mode = {"cls_token": "cls", "mean_tokens": "mean"}.get(on[0]) if len(on) == 1 else None
    if mode not in ("mean", "cls"):
        raise UnsupportedQueryEncoder(f"pooling {mode!r}: only 'mean' and 'cls' are reproduced")
    if getattr(pooling, "include_prompt", True) is False:
        raise UnsupportedQueryEncoder("pooling that leaves the prompt out is not reproduced")
    return str(mode)


def _sparse_settings(encoder: Any) -> tuple[dict[str, Any], list[str]]:
    if getattr(encoder, "_query_encoder", None) is not None:
        raise UnsupportedQueryEncoder("a separate query model is not exported")
    if encoder.max_active_dims is not None:
        raise UnsupportedQueryEncoder("max_active_dims (top-k pruning) is not reproduced")
    st_model = encoder.model
    modules = list(st_model)
    names = [type(m).__name__ for m in modules]
    if names != ["Transformer", "SpladePooling"]:
        raise UnsupportedQueryEncoder(f"modules {names}: only Transformer, SpladePooling are "
                                      "reproduced (an inference-free Router is not)")
    if getattr(st_model, "max_active_dims", None):
        raise UnsupportedQueryEncoder("the model's max_active_dims is not reproduced")
    pooling = modules[1]
    strategy, activation = pooling.pooling_strategy, pooling.activation_function
    if strategy not in ("max", "sum") or activation not in ("relu", "log1p_relu"):
        raise UnsupportedQueryEncoder(f"SpladePooling({strategy!r}, {activation!r}) is not "
                                      "reproduced")
    # The pooling learns its width (the vocabulary) at its first text: encode one first.
    encoder.embed_queries([_PROBES[0]])
    vocabulary = list(encoder._tokens())
    return {"kind": "sparse", "pooling": strategy, "activation": activation,
            "max_length": _max_length(st_model, query=True),
            "dimension": len(vocabulary)}, vocabulary


def _max_length(st_model: Any, *, query: bool) -> int:
    """The tokens sentence-transformers keeps of a text: ``encode_query`` (``query``, what
    `SpladeEncoder` calls) caps at the module's ``query_length`` when it has one; plain
    ``encode`` (what `SentenceTransformerEmbedder` calls) at ``max_seq_length``."""
    module = st_model[0]
    length = getattr(module, "query_length", None) if query else None
    length = length or st_model.max_seq_length or module.tokenizer.model_max_length
    if getattr(module, "do_lower_case", False):
        raise UnsupportedQueryEncoder("do_lower_case on the Transformer module is not "
                                      "reproduced")
    return int(length)


def _plain_tokenizer(text: str) -> str:
    """The tokenizer's JSON without its padding and truncation settings."""
    data = json.loads(text)
    data["padding"] = None
    data["truncation"] = None
    return json.dumps(data, ensure_ascii=False)


def _check_export(staged: Path, folder: Path, encoder: Any) -> None:
    """Refuse an export whose probe vectors differ from ``encoder``'s own (module doc)."""
    settings = json.loads((staged / "query.json").read_text(encoding="utf-8"))
    settings["graph"] = str((folder / settings["graph"]).resolve())
    (staged / "query.json").write_text(json.dumps(settings), encoding="utf-8")
    try:
        onnx = OnnxQueryEncoder(staged)
        # One probe per forward pass on both sides: batched, the long probe pads the
        # others to its length, and a masked-language model's logits for 4 x 512 tokens
        # are 250 MB per copy (ONNX Runtime's and the model's alike): the check then
        # peaked a first sparse `index` at 1.6 GB; one at a time, a quarter of that.
        got = np.vstack([onnx.encode([probe]) for probe in _PROBES])
        wanted = [encoder.embed_queries([probe])[0] for probe in _PROBES]
        if settings["kind"] == "sparse":
            want = _dict_rows(wanted, onnx._vocabulary or [])
        else:
            want = np.asarray(wanted, dtype=np.float32)
    finally:
        settings["graph"] = os.path.relpath(settings["graph"], folder)
        (staged / "query.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    worst = float(np.abs(got - want).max())
    if getattr(encoder, "backend", "torch") in ("torch", "onnx", "openvino"):
        ok, said = worst <= 1e-4, f"max abs difference {worst:.2e} > 1e-4"
    else:  # bfloat16-rounded model vectors: close in angle
        cos = (got * want).sum(1) / np.maximum(
            np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1), 1e-12)
        ok, said = bool(cos.min() >= 0.999), f"cosine {cos.min():.5f} < 0.999"
    if not ok:
        raise UnsupportedQueryEncoder(f"the exported query encoder differs from the model "
                                      f"on probe texts ({said})")


def _dict_rows(rows: list[dict[str, float]], vocabulary: list[str]) -> NDArray[np.float32]:
    index = {t: j for j, t in enumerate(vocabulary)}
    out = np.zeros((len(rows), len(vocabulary)), dtype=np.float32)
    for i, row in enumerate(rows):
        for token, weight in row.items():
            out[i, index[token]] = weight
    return out


def export_query_encoders(
    encoders: Mapping[str, Any], previous: Mapping[str, Any] | None = None, *,
    log: Callable[[str], None] = print, cache_dir: str | os.PathLike[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """The query-encoder records of an index's legs: ``{leg: {"model_id", "folder"}}``
    (or ``{"model_id", "unsupported": why}``), exporting what is not yet exported.

    ``encoders``: ``{leg name: model wrapper or None}``; ``previous``: the records saved
    with the index. A record whose ``model_id`` is the encoder's and whose folder still
    holds a readable export is kept (nothing loaded); so is an ``unsupported`` one (the
    model is not loaded again to learn the same). Otherwise the encoder's query side is
    exported (`export_query_encoder`), loading its model if needed. Encoders that are
    not sentence-transformers wrappers get no record. When onnx, onnxruntime or
    tokenizers is missing, nothing is exported and ``log`` says so once; the records
    already made are kept. An export that fails otherwise (a full disk, an exporter
    error) is logged and left out, never raised: the index is saved all the same and
    the next run tries again.
    """
    from .sentence_transformers import SentenceTransformerEmbedder
    from .splade import SpladeEncoder

    previous = previous if isinstance(previous, Mapping) else {}
    out: dict[str, dict[str, Any]] = {}
    todo: list[tuple[str, Any]] = []
    for leg, encoder in encoders.items():
        if isinstance(encoder, OnnxQueryPath):  # an opened index's own model (an update)
            encoder = encoder.encoder
        if not isinstance(encoder, (SentenceTransformerEmbedder, SpladeEncoder)):
            continue
        model_id = str(encoder.model_id)
        old = previous.get(leg)
        if isinstance(old, Mapping) and old.get("model_id") == model_id and (
                old.get("unsupported") or _readable(old.get("folder"))):
            out[leg] = dict(old)
        else:
            todo.append((leg, encoder))
    missing = missing_runtime(EXPORT_MODULES) if todo else []
    if missing:
        log(f"query encoders not exported ({' and '.join(missing)} not installed): a search "
            "loads torch; pip install 'hybrid-retrievers[onnx]' and index again for a search "
            "without it")
        return out
    for leg, encoder in todo:
        model_id = str(encoder.model_id)
        try:
            folder = export_query_encoder(encoder, cache_dir=cache_dir)
        except UnsupportedQueryEncoder as exc:
            log(f"{leg}: query encoder not exported ({exc}); a search loads torch for it")
            out[leg] = {"model_id": model_id, "unsupported": str(exc)}
            continue
        except Exception as exc:  # noqa: BLE001 - the index is saved all the same
            log(f"{leg}: exporting the query encoder failed ({type(exc).__name__}: {exc}); "
                "a search loads torch for it, and the next index run tries again")
            continue
        out[leg] = {"model_id": model_id, "folder": str(folder)}
    return out


def torch_query_note(leg: str, encoder: Any, ingest: Mapping[str, Any]) -> str:
    """The line saying why ``leg``'s queries were encoded on torch, and how to avoid it.

    ``ingest``: the index's saved settings (their ``"query_encoders"`` records).
    """
    records = ingest.get("query_encoders")
    record = records.get(leg) if isinstance(records, Mapping) else None
    why = getattr(encoder, "fallback_reason", None)
    if why is None and isinstance(record, Mapping) and record.get("unsupported"):
        why = f"its model's query side cannot be exported ({record['unsupported']})"
    return f"{leg}: the query encoder runs on torch: {why or FAST_PATH_HINT}"


def _readable(folder: Any) -> bool:
    if not isinstance(folder, str):
        return False
    try:
        settings = read_settings(Path(folder))
    except (OSError, ValueError):
        return False
    return (Path(folder) / settings["graph"]).is_file()


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
    from ..validation import check_str_items

    return check_str_items(texts, "texts")
