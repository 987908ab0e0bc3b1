"""Bundled test collections and the BEIR-format loader (``beir``: `load_beir`, `BeirDataset`).

The package ships a gzip-compressed copy of Cranfield (1400 docs, 225 queries, 1612 graded
judgments; see ``cranfield/SOURCE.md``) so the demo and the tests run from a clone or an
installed wheel without downloading anything. It is read through ``importlib.resources``,
so it works from a zip or wheel install, not only from a source checkout.

Example:
    >>> from hybrid_retrievers.datasets import available_datasets, load_dataset
    >>> available_datasets()
    ['cranfield']
    >>> load_dataset("cranfield")
    BeirDataset(name='cranfield', split='test', docs=1400, queries=225, qrels=1612)
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from .beir import BeirDataset, load_beir

__all__ = ["BeirDataset", "available_datasets", "load_beir", "load_dataset"]

_BUNDLED = ("cranfield",)


def available_datasets() -> list[str]:
    """Names of the datasets bundled with the package, sorted."""
    return sorted(_BUNDLED)


def load_dataset(name_or_path: str | os.PathLike[str], split: str = "test") -> BeirDataset:
    """Load a bundled dataset by name, or a BEIR folder by path.

    A plain string that equals a bundled name (case-insensitive) loads the bundled copy, even
    if a folder of that name exists in the working directory; pass ``Path("cranfield")`` or
    ``"./cranfield"`` to load such a folder instead. Any other string or ``os.PathLike`` is
    read with `load_beir`.

    Args:
        name_or_path: ``"cranfield"`` or the path of a BEIR folder.
        split: the qrels split to read (``qrels/<split>.tsv``).

    Raises:
        TypeError: ``name_or_path`` is neither a string nor a path.
        ValueError: a string that is neither a bundled name nor an existing folder; the
            message lists the bundled names.
    """
    if isinstance(name_or_path, str) and name_or_path.strip().lower() in _BUNDLED:
        name = name_or_path.strip().lower()
        folder = resources.files(__name__).joinpath(name)
        return load_beir(folder, split=split)
    if isinstance(name_or_path, os.PathLike):
        return load_beir(name_or_path, split=split)
    if not isinstance(name_or_path, str):
        raise TypeError(
            f"name_or_path must be a dataset name or a folder path, got "
            f"{type(name_or_path).__name__}: {name_or_path!r:.80}"
        )
    if Path(name_or_path).is_dir():
        return load_beir(name_or_path, split=split)
    raise ValueError(
        f"unknown dataset {name_or_path!r}: not a bundled name and not an existing folder; "
        f"bundled datasets: {available_datasets()}, or pass the path of a BEIR folder "
        "(corpus.jsonl, queries.jsonl, qrels/<split>.tsv)"
    )
