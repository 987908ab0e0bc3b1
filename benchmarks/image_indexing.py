"""Indexing images: images/s through the CLIP route (and the description route, when present).

Usage::

    python benchmarks/image_indexing.py [--images 200] [--size 512x384] [--rounds 3]
                                        [--models tiny,b32] [--batch-size 32]
                                        [--describe-latency 0.2] [--describe-images 40]
                                        [--workers 1,4,8]

For the record: no competitor exists offline (no CLIP checkpoint can be downloaded, and
the frameworks' multimodal indexes call hosted models), so this measures our own pipeline.

* **Images**: ``--images`` distinct pictures drawn with Pillow (bar charts, flow diagrams
  and gradients: ``tests/image_series.py``), ``--size`` pixels, saved as PNG files, which
  is what indexing a folder reads.
* **load only**: `hybrid_retrievers.images.load_images` over the files (read, check,
  decode to RGB, hash): the floor under every route.
* **CLIP route**: `VectorIndex.from_images(paths, embedder=ClipEmbedder(...))`, the model
  already loaded: loading, ids and metadata, CLIP preprocessing (resize, crop,
  normalise) and the image tower, in batches. Two models: ``tiny`` (the 16-d test CLIP
  of ``tests/tiny_clip.py``, 32x32 inputs: what is left is our pipeline and the
  preprocessing) and ``b32`` (an untrained CLIP of ``clip-ViT-B-32``'s shape: 224x224
  inputs, 12-layer ViT; its speed is the real model's, its vectors are noise). Beside
  each, the model alone: ``SentenceTransformer.encode`` on the images already decoded
  (no reading, checks or documents), so the difference is what our route adds.
* **description route** (when `hybrid_retrievers.images.describe` exists):
  `describe_images` with an instant describer (a callable returning a fixed sentence
  per image, so the number is our overhead, not a vision model's), then
  `BM25Index.from_docs` over the descriptions.
* **overlapping describer calls**: `describe_images` over ``--describe-images`` distinct
  pictures (64x48, in memory) with a describer that sleeps ``--describe-latency`` seconds per image (a vision
  model behind an API: the time is spent waiting, not computing), with each
  ``max_workers`` of ``--workers``: wall seconds, and the speed-up over one worker.

Each number is the median of ``--rounds`` runs, with the spread. The table is printed
and written to ``benchmarks/results/image_indexing.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import environment_lines, markdown_table, median, quiet_third_party, write_results  # noqa: E402,I001


def _rate(n: int, func: Callable[[], Any], rounds: int) -> tuple[float, float, float]:
    """(median, min, max) items/s of ``func`` over ``rounds`` runs."""
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        func()
        rates.append(n / (time.perf_counter() - start))
    return median(rates), min(rates), max(rates)


def _row(what: str, n: int, rates: tuple[float, float, float]) -> list[str]:
    mid, low, high = rates
    return [what, str(n), f"{mid:,.1f}", f"{low:,.1f}-{high:,.1f}", f"{1000 / mid:,.2f}"]


def _overlapping_calls(count: int, latency: float, workers: list[int],
                       rounds: int) -> list[list[str]]:
    """Rows (max_workers, wall seconds, range, speed-up over the first) of `describe_images`
    over ``count`` distinct small pictures with a describer that sleeps ``latency``
    seconds per image."""
    from image_series import varied_image

    from hybrid_retrievers.images.describe import describe_images

    pictures = []
    for i in range(count):
        picture = varied_image(i, size=(64, 48))
        picture.putpixel((0, 0), (i % 256, i // 256, 0))  # the series repeats its diagrams
        pictures.append(picture)

    def waiting(image: Any, prompt: str) -> str:
        time.sleep(latency)
        return f"a {image.size[0]}x{image.size[1]} picture of a chart or a diagram"

    rows, first = [], None
    for n_workers in workers:
        seconds = []
        for _ in range(rounds):
            start = time.perf_counter()
            docs = describe_images(pictures, waiting, max_workers=n_workers)
            seconds.append(time.perf_counter() - start)
            assert len(docs) == count, "the pictures must be distinct"
        mid = median(seconds)
        first = first or mid
        rows.append([str(n_workers), f"{mid:.2f}", f"{min(seconds):.2f}-{max(seconds):.2f}",
                     f"{first / mid:.1f}x"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--size", default="512x384")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="tiny,b32")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--describe-latency", type=float, default=0.2)
    parser.add_argument("--describe-images", type=int, default=40)
    parser.add_argument("--workers", default="1,4,8")
    args = parser.parse_args(argv)
    quiet_third_party()
    width, height = (int(v) for v in args.size.lower().split("x"))

    from image_series import varied_image
    from tiny_clip import build_b32_shaped_clip, build_tiny_clip

    from hybrid_retrievers import BM25Index, VectorIndex
    from hybrid_retrievers.images import load_images
    from hybrid_retrievers.models import ClipEmbedder

    rows: list[list[str]] = []
    overlap_rows: list[list[str]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="image-indexing-") as tmp:
        folder = Path(tmp) / "images"
        folder.mkdir()
        paths = []
        for i in range(args.images):
            path = folder / f"image_{i:05d}.png"
            varied_image(i, size=(width, height)).save(path)
            paths.append(str(path))
        kilobytes = sum(os.path.getsize(p) for p in paths) / 1e3
        n = len(paths)
        rows.append(_row("load_images (read, check, decode, hash)", n,
                         _rate(n, lambda: load_images(paths), args.rounds)))

        builders = {"tiny": ("tiny CLIP (16-d, 32x32 input)", build_tiny_clip),
                    "b32": ("ViT-B/32-shaped CLIP (512-d, 224x224 input)",
                            build_b32_shaped_clip)}
        for key in [m for m in args.models.split(",") if m]:
            label, build = builders[key]
            model_dir = build(Path(tmp) / key)
            clip = ClipEmbedder(str(model_dir), device=args.device, batch_size=args.batch_size)
            clip.embed_images(paths[:2])  # load the model and warm up outside the timing
            decoded = [image.image for image in load_images(paths)]
            rows.append(_row(f"  model only: SentenceTransformer.encode(decoded), {key}", n,
                             _rate(n, lambda clip=clip: clip.model.encode(
                                 decoded, batch_size=args.batch_size), args.rounds)))
            rows.append(_row(f"VectorIndex.from_images, {label}", n, _rate(
                n, lambda clip=clip: VectorIndex.from_images(paths, embedder=clip),
                args.rounds)))

        if importlib.util.find_spec("hybrid_retrievers.images.describe") is None:
            notes.append("description route: skipped (hybrid_retrievers.images.describe is "
                         "not in this checkout)")
        else:
            from hybrid_retrievers.images.describe import describe_images

            def instant(image: Any, prompt: str) -> str:
                return f"a {image.size[0]}x{image.size[1]} picture of a chart or a diagram"

            def described() -> None:
                docs = describe_images(paths, instant)
                BM25Index.from_docs(docs)

            rows.append(_row("describe_images (instant describer) + BM25Index.from_docs", n,
                             _rate(n, described, args.rounds)))
            overlap_rows = _overlapping_calls(
                args.describe_images, args.describe_latency,
                [int(w) for w in args.workers.split(",") if w], args.rounds)

    lines = [
        "# Image indexing throughput",
        "",
        f"{n} PNG images of {width}x{height} ({kilobytes:,.0f} kB on disk; bar charts, flow "
        f"diagrams, gradients), batch size {args.batch_size}, device {args.device}, median of "
        f"{args.rounds} rounds.",
        "",
        markdown_table(["route", "images", "images/s", "range", "ms/image"], rows),
        "",
        *([(f"Overlapping describer calls: `describe_images(max_workers=N)`, a describer "
             f"sleeping {args.describe_latency:g} s per image, "
             f"{args.describe_images} images, median of {args.rounds} rounds."), "",
            markdown_table(["max_workers", "wall s", "range", "speed-up"], overlap_rows), ""]
          if overlap_rows else []),
        *[f"* {note}" for note in notes],
        "",
        *environment_lines(),
    ]
    text = "\n".join(lines)
    print(text)
    write_results("image_indexing", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
