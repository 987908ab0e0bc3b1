"""``search``'s and ``serve``'s argument parsing: fusion modes, ``--weights``, ``--filter``.

The index itself is `hybrid_retrievers.ingest.FolderIndex`: it loads the folder once,
searches with the mode, weights, filter, parent and rerank choices of one call, and
turns each hit into the `FolderResult` both the command line and the MCP server show.
"""

from __future__ import annotations

from typing import Any

from ..fusion import FusionMode

MODES = tuple(m.value for m in FusionMode)


def parse_weights(text: str | None, names: tuple[Any, ...]) -> list[float] | None:
    """``"bm25=1,dense=0.5"`` as one weight per leg (legs not named keep 1).

    Raises:
        ValueError: naming the bad part and the legs the index has.
    """
    if not text:
        return None
    weights = dict.fromkeys(map(str, names), 1.0)
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in weights:
            raise ValueError(f"--weights expects LEG=WEIGHT[,LEG=WEIGHT] with LEG one of "
                             f"{list(weights)}, got {part!r}")
        try:
            weights[name] = float(value)
        except ValueError:
            raise ValueError(f"--weights: {value!r} for {name} is not a number") from None
    return list(weights.values())


def parse_filters(items: list[str] | None) -> dict[str, Any] | None:
    """``["file=README.md", "page=3"]`` as an equality filter (numbers stay numbers)."""
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--filter expects KEY=VALUE, got {item!r}")
        out[key.strip()] = int(value) if value.strip().lstrip("-").isdigit() else value
    return out

