"""Pictures drawn with Pillow, with parameters: bar charts, flow diagrams, gradients, series.

Nothing is fetched: each function draws a deterministic RGB image (the same arguments give
the same pixels), so the CLIP tests and ``benchmarks/image_indexing.py`` index real,
varied pictures offline (`varied_image` gives as many distinct ones as needed).

Importable from any test because ``tests/`` is on pytest's ``pythonpath``::

    from image_series import bar_chart
    bar_chart().save(tmp_path / "chart.png")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["bar_chart", "flow_diagram", "gradient", "varied_image"]


def bar_chart(values: Sequence[float] = (3, 7, 5, 9, 2), *, size: tuple[int, int] = (160, 120),
              colour: tuple[int, int, int] = (40, 90, 200)) -> Any:
    """Vertical bars of ``values`` (scaled to the tallest) over axes on white."""
    from PIL import Image, ImageDraw

    width, height = size
    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    left, bottom = width // 10, height - height // 10
    draw.line([(left, height // 20), (left, bottom), (width - width // 20, bottom)],
              fill=(0, 0, 0), width=2)
    slot = (width - left - width // 20) / max(1, len(values))
    top = max(values) or 1
    for i, value in enumerate(values):
        x0 = int(left + i * slot + slot * 0.2)
        x1 = int(left + (i + 1) * slot - slot * 0.2)
        y0 = int(bottom - (bottom - height // 10) * value / top)
        draw.rectangle([x0, y0, x1, bottom - 1], fill=colour)
    return image


def flow_diagram(steps: int = 3, *, size: tuple[int, int] = (200, 80),
                 fill: tuple[int, int, int] = (255, 240, 200)) -> Any:
    """``steps`` outlined boxes (filled with ``fill``) joined left to right by arrows, on white."""
    from PIL import Image, ImageDraw

    width, height = size
    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    box_w = width // (2 * steps)
    gap = (width - steps * box_w) // (steps + 1)
    y0, y1 = height // 3, 2 * height // 3
    for i in range(steps):
        x0 = gap + i * (box_w + gap)
        draw.rectangle([x0, y0, x0 + box_w, y1], outline=(20, 20, 20), width=2,
                       fill=fill)
        if i + 1 < steps:
            ax0, ax1, ym = x0 + box_w + 2, x0 + box_w + gap - 2, (y0 + y1) // 2
            draw.line([(ax0, ym), (ax1, ym)], fill=(20, 20, 20), width=2)
            draw.polygon([(ax1, ym), (ax1 - 6, ym - 4), (ax1 - 6, ym + 4)], fill=(20, 20, 20))
    return image


def gradient(start: tuple[int, int, int] = (0, 0, 0), end: tuple[int, int, int] = (255, 255, 255),
             *, size: tuple[int, int] = (128, 96)) -> Any:
    """A left-to-right linear blend from ``start`` to ``end``."""
    import numpy as np
    from PIL import Image

    width, height = size
    t = np.linspace(0.0, 1.0, width)[None, :, None]
    row = (1 - t) * np.array(start, dtype=np.float64) + t * np.array(end, dtype=np.float64)
    pixels = np.repeat(row, height, axis=0).round().astype(np.uint8)
    return Image.fromarray(pixels, "RGB")


def varied_image(i: int, *, size: tuple[int, int] = (512, 384)) -> Any:
    """The ``i``-th of an endless, varied series: bar charts, flow diagrams and gradients
    with parameters drawn from ``i`` (for benchmarks that need many distinct images)."""
    kind = i % 3
    if kind == 0:
        values = [(i * 7 + j * 13) % 10 + 1 for j in range(3 + i % 5)]
        return bar_chart(values, size=size, colour=((i * 37) % 256, 90, (i * 11) % 256))
    if kind == 1:
        return flow_diagram(2 + i % 4, size=size, fill=(255, (i * 7) % 256, (i * 13) % 256))
    return gradient(((i * 29) % 256, (i * 53) % 256, 0), (0, (i * 17) % 256, 255), size=size)
