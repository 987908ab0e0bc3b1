"""Build a tiny BERT cross-encoder in a folder, so tests load a real model with no network.

The folder holds what a Hugging Face cross-encoder checkpoint holds: a small
``BertConfig`` (with ``num_labels`` 1, or 2 for the two-logit variant), randomly
initialised ``BertForSequenceClassification`` weights (seeded, so every run gets the same
model), and a WordPiece ``vocab.txt`` with its tokenizer files. Loading it with
``sentence_transformers.CrossEncoder(folder)`` exercises the real loading and prediction
code path in a fraction of a second.

Importable from any test because ``tests/`` is on pytest's ``pythonpath``::

    from tiny_cross_encoder import build_tiny_cross_encoder
    folder = build_tiny_cross_encoder(tmp_path / "ce", num_labels=2)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_WORDS", "SAMPLE_PAIRS", "SAMPLE_TEXTS", "build_tiny_cross_encoder"]

SAMPLE_PAIRS = [
    ("what causes lift on a wing", "the wing lift increase with angle of attack"),
    ("why does bread rise", "sourdough bread rises because wild yeast ferment flour"),
    ("boundary layer", "x"),
    ("stall", "sudden loss of lift " * 20),
]
"""(query, passage) pairs of very different lengths, for comparing model backends."""

SAMPLE_TEXTS = ["the boundary layer separates near the trailing edge", "sourdough bread rises",
                "x", "a much longer text about supersonic shock waves near mach one " * 8]
"""Texts of very different lengths (one a single token), for comparing model backends."""

_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

DEFAULT_WORDS: tuple[str, ...] = tuple(
    """
    the a an of to in on and or is are was be by for with at as it its this that which
    what how why when does do from into than then over under high low air wing wings lift
    drag speed speeds airspeed angle attack density square swept delay onset
    compressibility subsonic airliners use them boundary layer separation upper surface
    causes stall sudden loss flaps slats increase maximum coefficient during take off
    landing supersonic aircraft experience shock waves sharply wave near mach one sourdough
    bread rises because wild yeast lactic acid bacteria ferment flour kneading develops
    gluten elastic network proteins traps gas dough hot oven steam first minutes baking give
    crisp crust tomatoes need full sun regular watering support stakes plants grow taller
    compost improves soil structure feeds microorganisms help plant roots pruning fruit
    trees late winter encourages strong growth better harvest heat exchangers transfer
    between two fluids without letting mix car radiator bm25 ranking function search
    engines rank documents dense retrieval encodes queries passages vectors cross encoder
    reranker reads query passage together scores relevance flow pressure temperature
    heat transfer
    """.split()
)
"""Words the default vocabulary covers (the shared test corpus and common query words)."""


def _vocabulary(words: Iterable[str]) -> list[str]:
    vocab: list[str] = list(_SPECIAL)
    seen = set(vocab)
    # Single characters and '##' continuations keep unknown words tokenisable into pieces.
    pieces = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    pieces += ["##" + p for p in pieces] + list(".,;:!?-'()")
    for token in [*pieces, *(w.lower() for w in words)]:
        for part in re.findall(r"\w+|[^\w\s]", token) if not token.startswith("##") else [token]:
            if part not in seen:
                seen.add(part)
                vocab.append(part)
    return vocab


def _tokenizer(cls: Any, vocab_file: Path, max_length: int) -> Any:
    """A WordPiece tokenizer over ``vocab_file``, whatever the transformers release.

    transformers 5 reads the vocabulary from ``vocab=``; 4.x from ``vocab_file=``. The
    one that really loaded every word wins.
    """
    size = sum(1 for _ in vocab_file.open(encoding="utf-8"))
    for key in ("vocab", "vocab_file"):
        try:
            tok = cls(**{key: str(vocab_file)}, do_lower_case=True, model_max_length=max_length)
        except TypeError:
            continue
        if len(tok) == size:
            return tok
    raise RuntimeError(f"could not build a WordPiece tokenizer from {vocab_file}")


def build_tiny_cross_encoder(
    folder: str | Path,
    *,
    num_labels: int = 1,
    words: Iterable[str] = DEFAULT_WORDS,
    hidden_size: int = 32,
    num_layers: int = 2,
    max_position_embeddings: int = 128,
    seed: int = 0,
) -> Path:
    """Write a tiny, seeded BERT cross-encoder checkpoint to ``folder`` and return its path.

    Args:
        folder: Where to write (created if missing).
        num_labels: 1 for a single relevance logit (the ms-marco cross-encoders' head),
            2 for a two-class (not relevant / relevant) head.
        words: Whole words of the WordPiece vocabulary (characters are always included, so
            any ASCII text tokenises).
        hidden_size: Width of the transformer (tiny: fast on any CPU).
        num_layers: Number of transformer layers.
        max_position_embeddings: Longest input in tokens; ``max_length`` is set to it.
        seed: Seed for the random weights (same seed, same model, same scores).
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(_vocabulary(words)) + "\n", encoding="utf-8")

    config = BertConfig(
        vocab_size=sum(1 for _ in vocab_file.open(encoding="utf-8")),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=max_position_embeddings,
        num_labels=num_labels,
        # A wide init spreads the random model's scores, so rankings depend on the input.
        initializer_range=0.2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForSequenceClassification(config)
    model.eval()
    model.save_pretrained(folder)
    tokenizer = _tokenizer(BertTokenizerFast, vocab_file, max_position_embeddings)
    tokenizer.save_pretrained(folder)
    return folder
