"""Reading a corpus for distributed builds: Ray Datasets, iterables, Parquet and JSONL.

Rows become `Doc` objects by one rule, whatever the source: ``text_column`` is the
text (required), ``id_column`` the id (missing or empty: a deterministic content id),
and the metadata is the ``metadata`` column when it is a mapping, else every other
column. A BEIR corpus (``_id``, ``title``, ``text``) reads with ``id_column="_id"``.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..ids import content_id
from ..types import Doc

__all__ = ["iter_doc_batches", "row_to_doc", "is_ray_dataset", "in_corpus_order", "META_JSON"]

META_JSON = "_hr_metadata_json"
"""Column carrying a row's metadata as JSON inside our Ray Data pipelines."""


def is_ray_dataset(value: Any) -> bool:
    """True for a ``ray.data.Dataset`` (checked without importing Ray)."""
    return type(value).__module__.startswith("ray.data") and hasattr(value, "iter_batches")


@contextmanager
def in_corpus_order(dataset: Any) -> Iterator[Any]:
    """Make iterating ``dataset`` (a ``ray.data.Dataset``) yield rows in corpus order.

    Ray Data may emit an actor pool's batches in the order they finish. Its ordering
    switch is read from the context the dataset captured when it was *created*, not
    from ``DataContext.get_current()`` at run time, so it is set on
    ``dataset.context`` for the duration of the block and then restored (a dataset
    derived from a caller's shares the caller's context).
    """
    options = dataset.context.execution_options
    saved = options.preserve_order
    options.preserve_order = True
    try:
        yield dataset
    finally:
        options.preserve_order = saved


def row_to_doc(row: Any, *, text_column: str = "text", id_column: str = "id") -> Doc:
    """A `Doc` from a `Doc`, a str, or a mapping row (see the module docstring)."""
    if isinstance(row, Doc):
        return row
    if isinstance(row, str):
        return Doc(content_id(row), row)
    if not isinstance(row, Mapping):
        raise TypeError(
            f"corpus rows must be Doc objects, strings or mappings, got {type(row).__name__}"
        )
    if text_column not in row:
        raise ValueError(
            f"corpus row has no {text_column!r} column (columns: {sorted(row)[:10]}); "
            "pass text_column= naming the text"
        )
    text = row[text_column]
    if not isinstance(text, str):
        raise TypeError(f"column {text_column!r} must hold str, got {type(text).__name__}")
    meta = row.get("metadata")
    if META_JSON in row:  # rows that went through a Ray Data pipeline of ours
        meta = json.loads(row[META_JSON])
    if not isinstance(meta, Mapping):
        meta = {k: v for k, v in row.items() if k not in (text_column, id_column, "metadata")}
    doc_id = row.get(id_column)
    if doc_id is None or doc_id == "":
        doc_id = content_id(text, meta)
    return Doc(str(doc_id), text, dict(meta))


def iter_doc_batches(
    corpus: Any,
    batch_size: int = 1000,
    *,
    text_column: str = "text",
    id_column: str = "id",
) -> Iterator[list[Doc]]:
    """Yield the corpus as lists of at most ``batch_size`` documents, in order.

    Args:
        corpus: a ``ray.data.Dataset``, a path to a ``.parquet`` file or folder or to a
            ``.jsonl`` / ``.jsonl.gz`` file, or an iterable of `Doc`, str or mappings.
    """
    for rows in _iter_row_batches(corpus, batch_size):
        yield [row_to_doc(r, text_column=text_column, id_column=id_column) for r in rows]


def _iter_row_batches(corpus: Any, batch_size: int) -> Iterator[list[Any]]:
    if is_ray_dataset(corpus):
        with in_corpus_order(corpus):
            for table in corpus.iter_batches(batch_size=batch_size, batch_format="pyarrow"):
                yield table.to_pylist()
        return
    if isinstance(corpus, (str, os.PathLike)):
        path = Path(corpus)
        if not path.exists():
            raise FileNotFoundError(f"no corpus at {str(path)!r}")
        name = path.name.lower()
        if path.is_dir() or name.endswith(".parquet"):
            import pyarrow.parquet as pq

            files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
            for f in files:
                for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_size):
                    yield batch.to_pylist()
            return
        if name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as fh:
                yield from _chunks((json.loads(line) for line in fh if line.strip()), batch_size)
            return
        raise ValueError(f"unsupported corpus file {str(path)!r}: use .parquet or .jsonl(.gz)")
    if isinstance(corpus, Mapping) or not isinstance(corpus, Iterable):
        raise TypeError(
            "corpus must be a ray.data.Dataset, a .parquet/.jsonl path or an iterable of "
            f"Doc, str or mapping rows, got {type(corpus).__name__}"
        )
    yield from _chunks(iter(corpus), batch_size)


def _chunks(rows: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
