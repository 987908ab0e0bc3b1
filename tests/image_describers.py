"""Describers for the CLI image tests, importable by ``--describer image_describers:NAME``.

``tests/`` is on pytest's ``pythonpath``, so the command line run in-process by the tests
imports this module as a user's own describer module. Each describer looks at the
pixels (no model is reachable offline): `colours` says the picture's dominant colour and
size, which is what the tests then search for. Calls are recorded in `CALLS` so a test can
count them.

* ``counting``: `colours`, recorded;
* ``picky``: fails (raises) on images whose file name contains ``broken``;
* ``hanging``: never answers for images whose file name contains ``slow`` (a test's
  ``--describe-timeout`` cuts it short);
* ``Captioner`` (a class) and ``make_describer`` (a zero-argument function): factories,
  called once by the CLI to make the describer.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["CALLS", "Captioner", "colours", "counting", "hanging", "make_describer", "picky"]

CALLS: list[str] = []
"""The file name of every image a describer here was asked about, in order."""

PALETTE = {
    "red": (220, 30, 30),
    "green": (30, 170, 40),
    "blue": (30, 50, 220),
    "yellow": (235, 215, 30),
    "black": (15, 15, 15),
    "white": (250, 250, 250),
}

_NEVER = threading.Event()


def colours(image: Any) -> str:
    """``"A 64x48 picture, mostly red."``: the palette colour nearest to the most common
    non-white pixels (white is background unless it is everything)."""
    import numpy as np

    small = np.asarray(image.image.convert("RGB").resize((32, 32))).reshape(-1, 3)
    counts: dict[str, int] = {}
    for pixel in small.tolist():
        name = min(PALETTE, key=lambda c: sum((a - b) ** 2 for a, b in zip(pixel, PALETTE[c])))
        counts[name] = counts.get(name, 0) + 1
    foreground = {c: n for c, n in counts.items() if c != "white"} or counts
    colour = max(sorted(foreground), key=foreground.__getitem__)
    width, height = image.size
    return f"A {width}x{height} picture, mostly {colour}."


def counting(image: Any, prompt: str) -> str:
    CALLS.append(image.name)
    return colours(image)


def picky(image: Any, prompt: str) -> str:
    CALLS.append(image.name)
    if "broken" in image.name:
        raise RuntimeError("the vision model refused this image")
    return colours(image)


def hanging(image: Any, prompt: str) -> str:
    CALLS.append(image.name)
    if "slow" in image.name:
        _NEVER.wait(30)  # a model that never answers; the CLI's timeout gives up first
    return colours(image)


class Captioner:
    """A describer class: ``--describer image_describers:Captioner`` makes one."""

    name = "captioner-v2"

    def __call__(self, image: Any, prompt: str) -> str:
        CALLS.append(image.name)
        return "Caption: " + colours(image)


def make_describer() -> Any:
    """A zero-argument factory, as a user's module would build a chat model."""
    return Captioner()
