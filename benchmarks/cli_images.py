"""Image indexing throughput through the command line, route by route.

A folder of N generated pictures (default 100 PNGs of 512x384: gradients, bars and
shapes drawn with Pillow, every one different) and two markdown notes is indexed with
``hybrid-retrievers index`` (in-process, `hybrid_retrievers.cli.main`), one route at a
time, then indexed again unchanged:

* ``describer``: ``--describer cli_images:instant`` (this module's describer answers at
  once from the pixels, so the row measures the CLI's own cost: loading and hashing each
  image, the description cache, the text legs), BM25 only;
* ``describer+dense``: the same into BM25 + the local all-MiniLM-L6-v2 (when installed);
* ``clip``: ``--clip-model`` a tiny CLIP (`tests/tiny_clip.py`, 32x32 inputs), or the
  model given with ``--clip-model`` (e.g. a ViT-B/32-shaped one, for a realistic cost).

Reported: seconds and images/s of the first build and of the unchanged re-run (which
asks no model: descriptions from the cache, vectors kept). No image-quality figure is
measured here (no real vision model or CLIP checkpoint is reachable offline).

Run: ``python benchmarks/cli_images.py [--n 100] [--clip-model PATH]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "integrations"), str(ROOT / "tests"),
                str(Path(__file__).resolve().parent)]

from hybrid_retrievers.cli import main  # noqa: E402


def instant(image, prompt: str) -> str:  # noqa: ANN001 - a Describer
    """A describer that answers at once: the picture's size and mean colour."""
    r, g, b = (int(v) for v in image.image.resize((1, 1)).getpixel((0, 0)))
    return f"A {image.size[0]}x{image.size[1]} picture with mean colour {r} {g} {b}."


def draw_folder(folder: Path, n: int, size: tuple[int, int]) -> None:
    from PIL import Image, ImageDraw

    (folder / "pics").mkdir(parents=True)
    (folder / "a.md").write_text("# Charts\n\nThe bar charts show sales per month.\n")
    (folder / "b.md").write_text("# Photos\n\nGradients stand in for photographs.\n")
    w, h = size
    for i in range(n):
        image = Image.linear_gradient("L").resize(size).convert("RGB")
        draw = ImageDraw.Draw(image)
        colour = ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256)
        for j in range(1 + i % 7):
            x = (j + 1) * w // 9
            draw.rectangle([x, h - (j + 1 + i % 5) * h // 14, x + w // 12, h - 5], fill=colour)
        draw.ellipse([i % w // 2, i % h // 2, i % w // 2 + 40, i % h // 2 + 40], outline=colour)
        image.save(folder / "pics" / f"p{i:04d}.png")


def run(args: list[str]) -> tuple[float, str]:
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    elapsed = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"index failed ({code}): {out.getvalue()[-500:]}")
    return elapsed, out.getvalue().strip().splitlines()[-1]


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="pictures (default: 100)")
    parser.add_argument("--clip-model", default=None,
                        help="CLIP model folder or name (default: build the tiny test CLIP)")
    options = parser.parse_args()
    from hybrid_retrievers.ingest.folder_models import dense_available

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        import os

        os.environ["HYBRID_RETRIEVERS_CACHE_DIR"] = str(root / "cache")
        src = root / "src"
        draw_folder(src, options.n, (512, 384))
        clip = options.clip_model
        if clip is None:
            from tiny_clip import build_tiny_clip

            t0 = time.perf_counter()
            clip = str(build_tiny_clip(root / "tiny_clip"))
            print(f"(tiny CLIP built in {time.perf_counter() - t0:.1f} s)")
        rows = [("describer", ["--bm25-only", "--describer", "cli_images:instant"])]
        if dense_available(None) is None:
            rows.append(("describer+dense", ["--no-sparse", "--describer", "cli_images:instant"]))
        rows.append(("clip", ["--bm25-only", "--clip-model", clip]))
        print(f"{options.n} PNGs of 512x384 + 2 notes; python {sys.version.split()[0]}\n")
        print("| route | first build s | images/s | unchanged re-run s | images/s |")
        print("|---|---|---|---|---|")
        for name, extra in rows:
            out = root / f"idx-{name}"
            first, line = run(["index", str(src), "--out", str(out), *extra])
            again, line2 = run(["index", str(src), "--out", str(out), *extra])
            print(f"| {name} | {first:.2f} | {options.n / first:.1f} | {again:.2f} | "
                  f"{options.n / again:.1f} |")
            print(f"<!-- {line}\n     {line2} -->")


if __name__ == "__main__":
    main_()
