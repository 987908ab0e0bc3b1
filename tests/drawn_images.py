"""Images drawn with Pillow for the image tests (never fetched): a bar chart, a flow
diagram, a photo-like gradient, and a red PNG and a blue JPEG chart; and `seen_chart`,
what a fake vision model says about the image bytes it received (so a test fails when the
bytes or the MIME type do not reach the model intact)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

BAR_BLUE = (30, 90, 200)
ARROW_RED = (200, 30, 30)


def bar_chart() -> Any:
    image = Image.new("RGB", (120, 80), "white")
    draw = ImageDraw.Draw(image)
    for i, height in enumerate((20, 45, 70)):
        draw.rectangle((10 + 35 * i, 78 - height, 35 + 35 * i, 78), fill=BAR_BLUE)
    return image


def flow_diagram() -> Any:
    image = Image.new("RGB", (160, 60), "white")
    draw = ImageDraw.Draw(image)
    for x in (5, 60, 115):
        draw.rectangle((x, 15, x + 40, 45), outline="black", width=2)
    for x in (45, 100):
        draw.line((x, 30, x + 15, 30), fill=ARROW_RED, width=3)
    return image


def gradient_photo() -> Any:
    image = Image.new("RGB", (64, 48))
    image.putdata([(x * 4 % 256, 120, y * 5 % 256) for y in range(48) for x in range(64)])
    return image


def png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def red_and_blue_charts(folder: Path) -> list[Path]:
    """``red.png`` (40x30) and ``blue.jpg`` (24x16) written in ``folder``."""
    red, blue = folder / "red.png", folder / "blue.jpg"
    Image.new("RGB", (40, 30), (230, 10, 10)).save(red, format="PNG")
    Image.new("RGB", (24, 16), (10, 10, 230)).save(blue, format="JPEG", quality=95)
    return [red, blue]


def seen_chart(data: bytes, mime_type: str) -> str:
    """What a fake vision model says of the image ``data`` it was sent as ``mime_type``:
    ``"A red png chart, 40 by 30 pixels."``."""
    image = Image.open(io.BytesIO(data))
    colour = "red" if image.convert("RGB").getpixel((0, 0))[0] > 200 else "blue"
    return f"A {colour} {mime_type.split('/')[1]} chart, {image.size[0]} by {image.size[1]} pixels."
