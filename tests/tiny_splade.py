"""Build a tiny SPLADE (sentence-transformers ``SparseEncoder`` folder) in a temp dir, offline.

The same seeded tiny BERT and WordPiece vocabulary as `tiny_bi_encoder`, with its
masked-language-model head (``BertForMaskedLM``), loaded by ``SparseEncoder`` as SPLADE
models are (Transformer -> SpladePooling: ``max log(1 + ReLU(logits))`` over the tokens)
and saved: what `SpladeEncoder(folder)` loads. Texts are truncated to 64 tokens.

    from tiny_splade import build_tiny_splade
    folder = build_tiny_splade(tmp_path / "splade")
"""

from __future__ import annotations

from pathlib import Path

from tiny_bi_encoder import save_tiny_bert

__all__ = ["build_tiny_splade"]


def build_tiny_splade(folder: str | Path, *, hidden_size: int = 32, seed: int = 0) -> Path:
    """Write a tiny, seeded SPLADE model to ``folder``; return its path."""
    from sentence_transformers import SparseEncoder

    folder = Path(folder)
    hf = save_tiny_bert(folder.parent / f"{folder.name}-hf", "BertForMaskedLM",
                        hidden_size=hidden_size, seed=seed)
    model = SparseEncoder(str(hf), device="cpu")
    model.max_seq_length = 64
    model.save(str(folder))
    return folder
