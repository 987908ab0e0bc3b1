"""A persisted LlamaIndex retriever: its core index(es), its settings and its node fields.

Layout of ``persist_dir`` (written atomically; data only, never pickle)::

    manifest.json     kind "llama_index_retriever", the retriever class, the index names
    retriever.json    similarity_top_k, the filter (when it is data) and other settings
    nodes.json        node fields by id (see `NodeCache.to_json`)
    index/            the core index, in the core's own format (``BM25Index.load`` reads it)

A folder holding a bare core index (``BM25Index.save``..., and the children of a fusion
folder saved by the LangChain adapter or the core) loads too: its nodes come back as
`TextNode`s and the settings are the defaults.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_retrievers.integration import IndexReader, IndexWriter, atomic_index_dir, read_index
from hybrid_retrievers.persistence import IndexFormatError

KIND = "llama_index_retriever"
FORMAT_VERSION = 1


def filter_to_json(filter: Any) -> Any:
    """The filter as JSON data, or ``None`` (with a warning) for one that is code."""
    if filter is None:
        return None
    if isinstance(filter, MetadataFilters):
        return {"type": "MetadataFilters", "value": filter.model_dump(mode="json")}
    if isinstance(filter, Mapping):
        try:
            json.dumps(dict(filter))
        except (TypeError, ValueError):
            pass
        else:
            return {"type": "mapping", "value": dict(filter)}
    warnings.warn(
        f"the retriever's filter ({filter!r:.60}) is code or not JSON data and is not "
        "saved; pass filters= to from_persist_dir again (or use MetadataFilters, which "
        "are saved)",
        UserWarning,
        stacklevel=3,
    )
    return None


def filter_from_json(data: Any, where: str) -> Any:
    """Inverse of `filter_to_json`."""
    if data is None:
        return None
    try:
        if data["type"] == "MetadataFilters":
            return MetadataFilters.model_validate(data["value"])
        if data["type"] == "mapping" and isinstance(data["value"], dict):
            return data["value"]
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{where}: unreadable filter ({exc})") from None
    raise IndexFormatError(f"{where}: unknown filter {data!r:.80}")


def write_retriever(
    persist_dir: str | os.PathLike[str],
    retriever_class: str,
    settings: Mapping[str, Any],
    nodes: Mapping[str, Any],
    indexes: Mapping[str, Callable[[Path], None]],
) -> None:
    """Write the layout of the module docstring; ``indexes`` maps folder -> save(path)."""
    with atomic_index_dir(persist_dir) as tmp:
        for name, save in indexes.items():
            save(Path(tmp) / name)
        w = IndexWriter(Path(tmp))
        w.json("retriever", dict(settings))
        w.json("nodes", dict(nodes))
        w.manifest(KIND, FORMAT_VERSION, {"retriever_class": retriever_class,
                                          "indexes": list(indexes)})


def read_retriever(
    persist_dir: str | os.PathLike[str], retriever_class: str, bare_index_kind: str | None = None
) -> tuple[dict[str, Any], dict[str, Any], Path]:
    """``(settings, node fields, core index folder)`` of a retriever saved by ``persist``;
    a bare core index of kind ``bare_index_kind`` gives ``({}, {}, persist_dir)``.

    Raises:
        IndexFormatError: a missing, corrupt or foreign directory, or one written by
            another retriever class.
    """
    path = Path(persist_dir)
    try:
        kind = json.loads((path / "manifest.json").read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        kind = None  # the full read below reports the problem
    if bare_index_kind is not None and kind == bare_index_kind:
        return {}, {}, path

    def read(r: IndexReader) -> tuple[dict[str, Any], dict[str, Any], Path]:
        saved_class = r.field("retriever_class", str)
        if saved_class != retriever_class:
            raise IndexFormatError(
                f"{str(path)!r} holds a persisted {saved_class}, not a {retriever_class}; "
                f"load it with {saved_class}.from_persist_dir"
            )
        settings, nodes = r.json("retriever"), r.json("nodes")
        if not isinstance(settings, dict) or not isinstance(nodes, dict):
            raise IndexFormatError(f"{path}: retriever.json and nodes.json must hold objects")
        return settings, nodes, r.directory / "index"

    return read_index(path, kind=KIND, max_version=FORMAT_VERSION, read=read)
