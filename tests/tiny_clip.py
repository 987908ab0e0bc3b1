"""Build a tiny CLIP in a folder, trained for a few seconds, so tests load a real model offline.

No CLIP checkpoint can be installed offline, so this writes one: a ``transformers``
``CLIPModel`` with a small seeded config (text tower: 32 wide, 2 layers, 2 heads; vision
tower: 32x32 images in 8x8 patches, 32 wide; 16-d joint space), a character-level
``CLIPTokenizer`` (a BPE vocabulary of single characters, with and without the ``</w>``
end-of-word mark, and no merges) and a ``CLIPImageProcessor`` for 32x32 inputs, saved
with ``CLIPProcessor.save_pretrained``. ``sentence_transformers.SentenceTransformer(folder)``
loads it as one ``Transformer`` module with the ``text`` and ``image`` modalities, which
is the real CLIP loading and encoding path.

A random CLIP would make text-to-image tests meaningless, so the builder then trains the
model contrastively (CLIP's own symmetric InfoNCE loss, ``CLIPModel(return_loss=True)``)
for `TRAIN_STEPS` steps on generated pairs: a picture of a coloured square at a random
place and size on a light background, captioned with the colour's name (`COLOURS`). After
that (about two seconds on a CPU) an image of a red square is nearer the text ``"red"``
than ``"blue"``, and images of one colour are nearer each other than to other colours.
Everything is seeded: the same seed gives the same model.

Importable from any test because ``tests/`` is on pytest's ``pythonpath``::

    from tiny_clip import build_tiny_clip
    folder = build_tiny_clip(tmp_path / "clip")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["COLOURS", "TRAIN_STEPS", "build_b32_shaped_clip", "build_tiny_clip", "draw_squares",
           "square_image"]

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 170, 40),
    "blue": (30, 50, 220),
    "yellow": (235, 215, 30),
    "black": (15, 15, 15),
    "purple": (140, 40, 170),
}
"""The colour names the model learns, and the RGB each is drawn with (jittered in training)."""

TRAIN_STEPS = 60
"""Contrastive training steps (one batch of every colour, several pictures each, per step)."""

_SPECIAL = ("<|startoftext|>", "<|endoftext|>")
_CHARS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789.,:;!?'-_/()")


def square_image(
    colour: tuple[int, int, int],
    *,
    size: tuple[int, int] = (48, 40),
    box: tuple[float, float, float] = (0.2, 0.2, 0.6),
    background: tuple[int, int, int] = (240, 240, 240),
) -> Any:
    """A PIL RGB image: a ``colour`` square on ``background``.

    Args:
        colour: the square's RGB.
        size: the image's (width, height).
        box: the square's left, top (fractions of the image) and side (fraction of the
            shorter side).
        background: the background's RGB.
    """
    from PIL import Image, ImageDraw

    width, height = size
    image = Image.new("RGB", size, background)
    side = max(2, int(box[2] * min(width, height)))
    left, top = int(box[0] * (width - side)), int(box[1] * (height - side))
    ImageDraw.Draw(image).rectangle([left, top, left + side - 1, top + side - 1], fill=colour)
    return image


def draw_squares(folder: Path, names: tuple[str, ...] = ("red", "blue", "green")) -> list[Path]:
    """``<colour>.png`` for each of ``names`` (`COLOURS`), a square drawn by `square_image`
    in ``folder`` (created if missing); their paths, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}.png" for name in names]
    for name, path in zip(names, paths):
        square_image(COLOURS[name]).save(path)
    return paths


def _vocabulary() -> dict[str, int]:
    tokens = [*_CHARS, *(c + "</w>" for c in _CHARS), *_SPECIAL]
    return {token: i for i, token in enumerate(tokens)}


def _tokenizer(folder: Path) -> Any:
    """A character-level CLIP BPE tokenizer, whatever the transformers release.

    transformers 5 reads the vocabulary from ``vocab=`` / ``merges=``; 4.x from
    ``vocab_file=`` / ``merges_file=``. The one that really tokenises into our
    characters wins.
    """
    from transformers import CLIPTokenizer

    vocab = _vocabulary()
    vocab_file, merges_file = folder / "vocab.json", folder / "merges.txt"
    vocab_file.write_text(json.dumps(vocab), encoding="utf-8")
    merges_file.write_text("#version: 0.2\n", encoding="utf-8")
    expected = [vocab["<|startoftext|>"], vocab["o"], vocab["k</w>"], vocab["<|endoftext|>"]]
    for files in ({"vocab": vocab, "merges": []},
                  {"vocab_file": str(vocab_file), "merges_file": str(merges_file)}):
        try:
            tokenizer = CLIPTokenizer(**files, model_max_length=32)
        except TypeError:
            continue
        if tokenizer("ok")["input_ids"] == expected:
            return tokenizer
    raise RuntimeError(f"could not build a character-level CLIP tokenizer in {folder}")


def _processor(folder: Path, side: int = 32) -> Any:
    import transformers
    from transformers import CLIPProcessor

    # The PIL processor where transformers has one: the default class warns on every load
    # without torchvision ("falling back to CLIPImageProcessorPil").
    cls = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    images = cls(size={"shortest_edge": side}, crop_size={"height": side, "width": side})
    return CLIPProcessor(image_processor=images, tokenizer=_tokenizer(folder))


def _config(vocab: dict[str, int]) -> Any:
    from transformers import CLIPConfig

    start, end = vocab["<|startoftext|>"], vocab["<|endoftext|>"]
    text = dict(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=32,
                bos_token_id=start, eos_token_id=end, pad_token_id=end)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=2, image_size=32, patch_size=8)
    return CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)


def _training_batch(processor: Any, rng: Any, per_colour: int) -> dict[str, Any]:
    """One batch: ``per_colour`` jittered squares of every colour, each with its name."""
    images, texts = [], []
    for name, rgb in COLOURS.items():
        for _ in range(per_colour):
            jitter = rng.integers(-20, 21, size=3)
            colour = tuple(int(min(255, max(0, c + j))) for c, j in zip(rgb, jitter))
            size = (int(rng.integers(24, 80)), int(rng.integers(24, 80)))
            box = (float(rng.random()), float(rng.random()), float(rng.uniform(0.3, 0.9)))
            grey = int(rng.integers(200, 256))
            images.append(square_image(colour, size=size, box=box, background=(grey,) * 3))
            texts.append(name)
    return dict(processor(text=texts, images=images, return_tensors="pt", padding=True))


def build_tiny_clip(folder: str | Path, *, seed: int = 0, steps: int = TRAIN_STEPS) -> Path:
    """Write a tiny CLIP checkpoint, trained on coloured squares, to ``folder``; return it.

    Args:
        folder: where to write (created if missing).
        seed: seeds the initial weights and the training pictures.
        steps: contrastive training steps; ``0`` leaves the random (seeded) model.
    """
    import numpy as np
    import torch
    from transformers import CLIPModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    processor = _processor(folder)
    rng = np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CLIPModel(_config(_vocabulary()))
        if steps:
            optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
            model.train()
            for _ in range(steps):
                batch = _training_batch(processor, rng, per_colour=3)
                # Several pictures share one caption, so the "right" pairs are not only the
                # diagonal; CLIP's loss still pulls each picture to its colour's name.
                loss = model(**batch, return_loss=True).loss
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
    model.eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def build_b32_shaped_clip(folder: str | Path, *, seed: int = 0) -> Path:
    """Write an untrained CLIP of ViT-B/32's shape to ``folder`` and return it (benchmarks).

    The vision tower is ``clip-ViT-B-32``'s (224x224 inputs, 32x32 patches, 12 layers,
    768 wide, 512-d projection) and the text tower is its 12-layer, 512-wide transformer
    over this module's character vocabulary, with random (seeded) weights: it encodes
    exactly as much as the real model, so its images/s are the real model's, while its
    vectors mean nothing. ~600 MB on disk.
    """
    import torch
    from transformers import CLIPConfig, CLIPModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    processor = _processor(folder, side=224)
    vocab = _vocabulary()
    start, end = vocab["<|startoftext|>"], vocab["<|endoftext|>"]
    config = CLIPConfig(
        text_config=dict(vocab_size=len(vocab), max_position_embeddings=77,
                         bos_token_id=start, eos_token_id=end, pad_token_id=end),
        vision_config=dict(image_size=224, patch_size=32),
        projection_dim=512,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CLIPModel(config)
    model.eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
