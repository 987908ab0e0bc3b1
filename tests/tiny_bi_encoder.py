"""Build a tiny BERT bi-encoder (sentence-transformers folder) in a temp dir, with no network.

The same seeded tiny BERT and WordPiece vocabulary as `tiny_cross_encoder`, saved as a
sentence-transformers model (Transformer -> mean Pooling -> Normalize): what
``SentenceTransformer(folder)`` and `fine_tune_embedder` load. Training it for a few steps
takes well under a second on a CPU.

    from tiny_bi_encoder import build_tiny_bi_encoder
    folder = build_tiny_bi_encoder(tmp_path / "bi")
"""

from __future__ import annotations

from pathlib import Path

from tiny_cross_encoder import DEFAULT_WORDS, _tokenizer, _vocabulary

__all__ = ["build_tiny_bi_encoder", "save_tiny_bert"]


def save_tiny_bert(hf: Path, model_class: str = "BertModel", *, hidden_size: int = 32,
                   seed: int = 0) -> Path:
    """Save a seeded 2-layer ``transformers`` BERT (``model_class``: ``"BertModel"``,
    ``"BertForMaskedLM"``) and its WordPiece tokenizer over the tiny vocabulary into ``hf``."""
    import torch
    import transformers
    from transformers import BertConfig, BertTokenizerFast

    hf.mkdir(parents=True, exist_ok=True)
    vocab_file = hf / "vocab.txt"
    vocab_file.write_text("\n".join(_vocabulary(DEFAULT_WORDS)) + "\n", encoding="utf-8")
    config = BertConfig(
        vocab_size=sum(1 for _ in vocab_file.open(encoding="utf-8")), hidden_size=hidden_size,
        num_hidden_layers=2, num_attention_heads=2, intermediate_size=2 * hidden_size,
        max_position_embeddings=128)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        getattr(transformers, model_class)(config).save_pretrained(hf)
    _tokenizer(BertTokenizerFast, vocab_file, 128).save_pretrained(hf)
    return hf


def build_tiny_bi_encoder(folder: str | Path, *, hidden_size: int = 32, seed: int = 0) -> Path:
    """Write a tiny, seeded sentence-transformers bi-encoder to ``folder``; return its path."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6 moved the modules here
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:  # pragma: no cover - older releases
        from sentence_transformers import models

    folder = Path(folder)
    hf = save_tiny_bert(folder.parent / f"{folder.name}-hf", hidden_size=hidden_size, seed=seed)
    model = SentenceTransformer(modules=[models.Transformer(str(hf), max_seq_length=64),
                                         models.Pooling(hidden_size, "mean"), models.Normalize()],
                                device="cpu")
    model.save(str(folder))
    return folder
