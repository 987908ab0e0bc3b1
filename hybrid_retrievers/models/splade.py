"""Learned sparse encoders (SPLADE and kin) behind the `SparseEmbedder` protocol, loaded on first use.

A SPLADE model (Formal et al. 2021, "SPLADE: Sparse Lexical and Expansion Model for First
Stage Ranking", SIGIR) runs a masked-language-model head over every token of a text and
keeps, per vocabulary entry, ``w_j = max_i log(1 + ReLU(logit_ij))``: a weight for the
text's own words and for related words it does not contain (expansion). The score of a
document for a query is the dot product of their weights. sentence-transformers'
``SparseEncoder`` computes these; this module turns its output into ``{token: weight}``
dicts (decoded vocabulary strings, Python floats > 0), which is what
`hybrid_retrievers.SparseIndex` indexes.

Queries and documents are encoded separately (``encode_query`` / ``encode_document``):
"inference-free" models such as OpenSearch's ``opensearch-neural-sparse-encoding-doc-v3-
distill`` run the transformer on documents only and weigh a query's own tokens from a
static table (IDF), which sentence-transformers models as a ``Router`` with a
``SparseStaticEmbedding`` query route. Whatever the loaded model does for each side is
what this encoder does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..optional import require
from ..validation import check_number, check_str_items
from .backends import EXACT_BACKENDS
from .lazy import LazyModel, check_loading_options, instance_name

if TYPE_CHECKING:
    from ..sparse.cache import SparseEmbeddingCache

__all__ = ["SpladeEncoder"]

DEFAULT_MAX_BATCH_TOKENS = 2048
"""`SpladeEncoder`'s default token budget per forward pass: 2,048 tokens of BERT-vocabulary
logits are 250 MB of float32 (32 texts of 250 tokens would be 1 GB, and the pooling step
used to make two more copies of them)."""

POOLING_CHUNK_TOKENS = 16
"""Sequence positions pooled at a time by `pool_in_chunks`."""


def pool_in_chunks(model: Any, chunk: int = POOLING_CHUNK_TOKENS) -> None:
    """Make ``model``'s SPLADE pooling run over ``chunk`` token positions at a time.

    sentence-transformers' ``SpladePooling`` masks, activates (``log(1 + ReLU(x))``)
    and max-pools the whole (texts, tokens, vocabulary) logits at once, making
    vocabulary-wide copies of every token's logits; with its own ``chunk_size`` option
    it takes the running maximum over slices of ``chunk`` positions, so the copies are
    ``chunk`` tokens wide. The vectors are the same to the bit (a maximum does not
    depend on the order it is taken in, and the per-element steps are unchanged).
    A pooling module that already has a chunk size keeps it.
    """
    for module in getattr(model, "modules", lambda: [])():
        if type(module).__name__ == "SpladePooling" and not getattr(module, "chunk_size", None):
            module.chunk_size = chunk


class SpladeEncoder(LazyModel):
    """A sentence-transformers ``SparseEncoder`` as a `SparseEmbedder` (``{token: weight}``).

    Args:
        model_name_or_path: a model name (``"naver/splade-v3"``,
            ``"prithivida/Splade_PP_en_v1"``,
            ``"opensearch-project/opensearch-neural-sparse-encoding-doc-v3-distill"``) or a
            local folder (`hybrid_retrievers.models.local_splade_path` for the offline
            splade-tiny), loaded on first use; or a loaded ``SparseEncoder``.
        backend: ``"torch"`` (default), ``"torch-bf16"``, ``"onnx"``, ``"onnx-int8"``,
            ``"openvino"`` or ``"openvino-bf16"``: the runtimes of
            `hybrid_retrievers.models.backends`, applied to the model's transformer (the
            ONNX and OpenVINO ones need a model whose first module is its transformer,
            not an inference-free ``Router``). Backends whose weights differ from
            torch's are part of `model_id`.
        query_model: a second model (name, path or loaded ``SparseEncoder``) whose
            ``encode_query`` encodes the queries, for a document model shipped without
            its query side; by default the model's own ``encode_query``.
        max_active_dims: keep only the this many largest weights per text (top-k
            pruning: shorter postings, smaller queries); ``None`` keeps the model's own
            setting (usually all non-zero weights). Part of `model_id`.
        batch_size: texts per forward pass (at most).
        max_batch_tokens: tokens per forward pass (at most; texts x longest of them): the
            masked-language-model head makes one vocabulary-wide row of logits per token
            (30,522 floats for BERT's vocabulary), so a batch of 32 texts of 250 tokens
            holds ~1 GB of logits. Texts are grouped by length into batches under this
            budget (a text longer than it goes alone). See `_batches`.
        device: ``"cpu"``, ``"cuda"``...; ``None`` lets sentence-transformers choose.
        model_id: the identity recorded in caches and saved indexes. Defaults to the name
            or path given (for an instance: its recorded name, else a name valid only in
            this process), plus every option that changes document vectors.
        cache: a `SparseEmbeddingCache`: a document text seen before under the same
            `model_id` is never encoded again.
        show_progress: show sentence-transformers' progress bar while encoding.
        model_kwargs: extra keyword arguments for ``SparseEncoder(...)``.
        onnx_cache_dir: where converted ONNX / OpenVINO models are kept.

    Tokens are what the tokenizer calls each id (``"diabetes"``, ``"##ing"``); an id
    whose string an earlier id already has (none in the WordPiece vocabularies of SPLADE
    models) is told apart as ``"string[id]"``, so dot products stay the model's.

    Example:
        >>> enc = SpladeEncoder("naver/splade-v3", max_active_dims=128)
        >>> enc.model_id  # nothing is loaded yet
        'naver/splade-v3{"max_active_dims": 128}'
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | Any,
        *,
        backend: str = "torch",
        query_model: str | os.PathLike[str] | Any | None = None,
        max_active_dims: int | None = None,
        batch_size: int = 32,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        device: str | None = None,
        model_id: str | None = None,
        cache: SparseEmbeddingCache | None = None,
        show_progress: bool = False,
        model_kwargs: Mapping[str, Any] | None = None,
        onnx_cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        backend, self._model_kwargs = check_loading_options(
            backend=backend, device=device, model_id=model_id, model_kwargs=model_kwargs)
        check_number(batch_size, "batch_size", low=1, integer=True)
        check_number(max_batch_tokens, "max_batch_tokens", low=1, integer=True)
        if max_active_dims is not None:
            check_number(max_active_dims, "max_active_dims", low=1, integer=True)
        if cache is not None and not all(
            callable(getattr(cache, m, None)) for m in ("encode", "get_many", "put_many")
        ):
            raise TypeError(
                f"cache must be a SparseEmbeddingCache, got {type(cache).__name__} (a dense "
                "EmbeddingCache holds matrices, not {token: weight} vectors)"
            )
        name, model = _name_or_model(model_name_or_path, backend, "model_name_or_path")
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.device = device
        self.max_active_dims = max_active_dims
        self.cache = cache
        self.show_progress = bool(show_progress)
        self._explicit_id = model_id
        self._init_model(name, model, backend=backend, onnx_cache_dir=onnx_cache_dir)
        self._query_encoder: SpladeEncoder | None = None
        if query_model is not None:
            self._query_encoder = SpladeEncoder(
                query_model, backend=backend if _is_name(query_model) else "torch",
                max_active_dims=max_active_dims, batch_size=batch_size, device=device,
                show_progress=show_progress, model_kwargs=model_kwargs,
                onnx_cache_dir=onnx_cache_dir)
        self._vocabulary: list[str] | None = None

    # ------------------------------------------------------------------ model

    def _build(self) -> Any:
        """A ``SparseEncoder`` loaded from the name or path given."""
        st = require("sentence_transformers", extra="models", feature="SpladeEncoder")
        if not hasattr(st, "SparseEncoder"):
            raise ImportError(
                "SpladeEncoder needs sentence-transformers >= 5 (its SparseEncoder); "
                "pip install -U 'hybrid-retrievers[models]'"
            )
        model = st.SparseEncoder(self._name, device=self.device, **self._model_kwargs)
        pool_in_chunks(model)
        return model

    @property
    def model_id(self) -> str:
        """Identity of the sparse space: model name plus the options that change vectors."""
        base = self._explicit_id or self._name or f"sparse-encoder@{id(self._model):x}"
        options: dict[str, Any] = {}
        if self.max_active_dims is not None:
            options["max_active_dims"] = self.max_active_dims
        if self.backend not in EXACT_BACKENDS:  # other (close) weights: never mixed
            options["backend"] = self.backend
        if self._query_encoder is not None:
            options["query_model"] = self._query_encoder.model_id
        if not options:
            return base
        return f"{base}{json.dumps(options, sort_keys=True, ensure_ascii=False)}"

    @property
    def vocabulary_size(self) -> int:
        """How many tokens the model weighs (loads the model)."""
        return len(self._tokens())

    def _tokens(self) -> list[str]:
        """Token string per vocabulary id (loads the model; computed once)."""
        if self._vocabulary is None:
            model = self.model
            # The MLM head's width: sentence-transformers reports the hidden size until
            # the first encode (SpladePooling learns its width then), 128 for splade-tiny.
            config = getattr(getattr(model[0], "auto_model", None), "config", None)
            size = getattr(config, "vocab_size", None) or len(model.tokenizer)
            tokens = list(model.tokenizer.convert_ids_to_tokens(list(range(size))))
            seen: set[str] = set()
            for j, token in enumerate(tokens):  # a dot product needs one string per id
                if token in seen:
                    tokens[j] = f"{token}[{j}]"
                seen.add(tokens[j])
            self._vocabulary = tokens
        return self._vocabulary

    # ------------------------------------------------------------------ encoding

    def _encode(self, texts: list[str], side: str) -> list[dict[str, float]]:
        """``{token: weight}`` per text from the model's ``encode_query`` / ``encode_document``."""
        if not texts:
            return []
        encode = getattr(self.model, f"encode_{side}")
        out: list[dict[str, float]] = [{} for _ in texts]
        for batch in self._batches(texts):
            vectors = encode([texts[i] for i in batch], batch_size=len(batch),
                             show_progress_bar=self.show_progress, convert_to_tensor=True,
                             convert_to_sparse_tensor=True, save_to_cpu=True,
                             max_active_dims=self.max_active_dims)
            for i, vector in zip(batch, self._decode(vectors.coalesce(), len(batch))):
                out[i] = vector
        return out

    def _batches(self, texts: list[str]) -> list[list[int]]:
        """Positions of ``texts`` in forward passes: sorted by token count, each batch at
        most `batch_size` texts and `max_batch_tokens` padded tokens (texts x the longest).

        The logits of a batch are (texts, longest, vocabulary) floats, the largest tensor
        an encoder makes; bounding their count bounds the memory whatever the texts.
        Sorting by length also wastes less on padding (sentence-transformers sorts within
        a call too). A model without a tokenizer (an inference-free query route) is given
        `batch_size` texts at a time.
        """
        model = self.model
        tokenizer = getattr(model, "tokenizer", None)
        if tokenizer is None or len(texts) == 1:
            return [list(range(i, min(i + self.batch_size, len(texts))))
                    for i in range(0, len(texts), self.batch_size)]
        limit = getattr(model, "max_seq_length", None) or None
        ids = tokenizer(texts, truncation=limit is not None, max_length=limit)["input_ids"]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        batches: list[list[int]] = []
        for i in order:  # ascending length: the text added is the batch's longest
            batch = batches[-1] if batches else None
            if (batch is None or len(batch) >= self.batch_size
                    or (len(batch) + 1) * len(ids[i]) > self.max_batch_tokens):
                batches.append([i])
            else:
                batch.append(i)
        return batches

    def _decode(self, embeddings: Any, n: int) -> list[dict[str, float]]:
        """Rows of a coalesced sparse (n, vocabulary) tensor as ``{token: weight}`` dicts."""
        import torch

        tokens = self._tokens()
        rows, ids = embeddings.indices().tolist()
        weights = embeddings.values().to(torch.float32).tolist()
        out: list[dict[str, float]] = [{} for _ in range(n)]
        for row, j, w in zip(rows, ids, weights):
            if w != w or w in (float("inf"), float("-inf")) or w < 0:
                raise ValueError(
                    f"model {self.model_id!r} gave token {tokens[j]!r} the weight {w!r}; "
                    "sparse weights must be finite and >= 0"
                )
            if w > 0:
                out[row][tokens[j]] = w
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """Document vectors, one ``{token: weight}`` dict per text (cached when a cache is set)."""
        texts = _check_texts(texts)
        if self.cache is not None:
            return self.cache.encode(self.model_id, texts, self._encode_documents)
        return self._encode_documents(texts)

    def _encode_documents(self, texts: list[str]) -> list[dict[str, float]]:
        return self._encode(texts, "document")

    def embed_queries(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """Query vectors, one ``{token: weight}`` dict per text (the model's query side)."""
        texts = _check_texts(texts)
        if self._query_encoder is not None:
            return self._query_encoder.embed_queries(texts)
        return self._encode(texts, "query")

    def embed_query(self, text: str) -> dict[str, float]:
        """One query's ``{token: weight}`` vector."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.embed_queries([text])[0]

    def __repr__(self) -> str:
        return (
            f"SpladeEncoder({self._name!r}, backend={self.backend!r}, "
            f"max_active_dims={self.max_active_dims}, batch_size={self.batch_size}, "
            f"max_batch_tokens={self.max_batch_tokens}, "
            f"device={self.device!r}, loaded={self.is_loaded})"
        )


def _is_name(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _name_or_model(value: Any, backend: str, arg: str) -> tuple[str | None, Any]:
    """``(name, None)`` for a name or path, ``(recorded name, model)`` for a loaded one."""
    if _is_name(value):
        name = os.fspath(value)
        if not name.strip():
            raise ValueError(f"{arg} must be a model name, a local path or a SparseEncoder")
        return name, None
    if callable(getattr(value, "encode_document", None)) and callable(
            getattr(value, "decode", None)):
        if backend != "torch":
            raise ValueError(
                f"backend={backend!r} applies when the encoder loads the model, but a loaded "
                "model was given; pass its name or local path instead"
            )
        return instance_name(value), value
    raise TypeError(
        f"{arg} must be a model name, a local path or a sentence-transformers SparseEncoder, "
        f"got {type(value).__name__}"
    )


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, not a single str; wrap it in a list")
    return check_str_items(texts, "texts")
