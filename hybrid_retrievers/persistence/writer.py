"""The saving side: `IndexWriter` writes the files of one version, `AtomicSave` the save.

`IndexWriter` hashes and fsyncs the data files of one index version as it writes them.
Arrays are written as ``.npy`` (never pickled), values as strict JSON and documents as
JSON lines whose metadata must load back equal (nothing is coerced silently).

`AtomicSave` is the ``save(path)`` every core index has, written once: an index writes
its own files (`AtomicSave._save_into`); how they reach ``path`` -- a new version
directory, fsyncs, one atomic pointer swap, a lock between concurrent savers -- is
`atomic_index_dir`'s job, and holding the index's lock for the whole save is this
mixin's.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy_format
from numpy.typing import NDArray

from ..types import Doc
from .._version import __version__
from .atomic import HashingFile, atomic_index_dir
from .manifest import CHUNK_BYTES, FORMAT_NAME, MANIFEST

__all__ = ["AtomicSave", "IndexWriter"]


class IndexWriter:
    """Writes the files of one index version into a directory and records them.

    Every file is hashed while it is written and fsynced before the writer moves on,
    so the manifest's checksums describe exactly the bytes on disk.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._files: dict[str, dict[str, Any]] = {}

    def array(self, name: str, array: NDArray[Any]) -> None:
        """Save ``array`` as ``name.npy`` (never pickled)."""
        if array.dtype.hasobject or array.dtype.fields is not None:
            raise TypeError(f"array {name!r} has dtype {array.dtype}, which cannot be saved safely")
        array = np.ascontiguousarray(array)
        filename = f"{name}.npy"
        with HashingFile(self.directory / filename) as out:
            npy_format.write_array_header_1_0(out, npy_format.header_data_from_array_1_0(array))
            if array.size:
                flat = array.reshape(-1).view(np.uint8)
                for lo in range(0, flat.size, CHUNK_BYTES):
                    out.write(memoryview(flat[lo : lo + CHUNK_BYTES]))
        self._record(filename, out, {"dtype": array.dtype.str, "shape": list(array.shape)})

    def json(self, name: str, value: Any) -> None:
        """Save ``value`` as ``name.json`` (strict JSON: no NaN or infinity)."""
        filename = f"{name}.json"
        try:
            data = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{filename} cannot be saved as JSON: {exc}") from None
        with HashingFile(self.directory / filename) as out:
            out.write(data)
        self._record(filename, out, {})

    def docs(self, name: str, docs: Iterable[Doc]) -> None:
        """Save documents as JSON lines.

        Metadata must be JSON data that loads back equal: str keys; str, int, float,
        bool, None, lists and dicts as values. Anything JSON would change (a tuple
        becomes a list, an int key a str key, ``1`` and ``"1"`` collide) or cannot
        store is refused with an error naming the document and the key; nothing is
        coerced.
        """
        filename = f"{name}.jsonl"
        with HashingFile(self.directory / filename) as out:
            lines: list[str] = []
            for doc in docs:
                lines.append(doc_json_line(doc))
                if len(lines) >= 4096:
                    out.write(_encode_lines(lines))
                    lines = []
            if lines:
                out.write(_encode_lines(lines))
        self._record(filename, out, {})

    def subdirectory(self, name: str) -> Path:
        """Create ``name/`` for a nested index; `bind` it once it is written."""
        path = self.directory / name
        path.mkdir()
        return path

    def bind(self, name: str) -> None:
        """Record the manifest of sub-directory ``name`` (and so all of its files)."""
        filename = f"{name}/{MANIFEST}"
        data = (self.directory / filename).read_bytes()
        self._files[filename] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def manifest(self, kind: str, format_version: int, payload: Mapping[str, Any]) -> None:
        """Write the manifest last: it lists every file with its size and checksum."""
        manifest = {
            "format": FORMAT_NAME,
            "kind": kind,
            "format_version": format_version,
            "library_version": __version__,
            **payload,
            "files": self._files,
        }
        data = json.dumps(manifest, indent=2, ensure_ascii=False, allow_nan=False)
        with HashingFile(self.directory / MANIFEST) as out:
            out.write(data.encode("utf-8"))

    def _record(self, filename: str, out: HashingFile, extra: dict[str, Any]) -> None:
        self._files[filename] = {"bytes": out.size, "sha256": out.hexdigest(), **extra}


def doc_json_line(doc: Doc) -> str:
    """``doc`` as one JSON line (``id``, ``text``, ``metadata``), as `IndexWriter.docs`
    writes it; also the check that its metadata can be saved.

    Raises:
        TypeError: the metadata is not JSON data, or would not load back equal (a tuple,
            a non-str key, NaN...), naming the document and the key.
    """
    metadata = dict(doc.metadata)
    try:
        line = json.dumps(
            {"id": doc.id, "text": doc.text, "metadata": metadata},
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError, RecursionError) as exc:
        problem = _json_problem(metadata) or str(exc)
        raise TypeError(
            f"metadata of document {doc.id!r} is not JSON-serialisable ({problem}); store "
            "only str keys and str, int, float, bool, None, lists and dicts as values to "
            "save the index"
        ) from None
    if not _flat_json(metadata) and json.loads(line)["metadata"] != metadata:
        raise TypeError(
            f"metadata of document {doc.id!r} would not load back unchanged "
            f"({_json_problem(metadata)}); nothing is coerced silently: convert it before "
            "adding the document"
        )
    return line


def _encode_lines(lines: list[str]) -> bytes:
    text = "\n".join(lines) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        for line in lines:
            try:
                line.encode("utf-8")
            except UnicodeEncodeError as exc:
                doc_id = json.loads(line)["id"]
                raise ValueError(
                    f"document {doc_id!r} holds a lone surrogate "
                    f"({line[exc.start]!r}), which is not valid Unicode and cannot be saved"
                ) from None
        raise


_STR = frozenset({str})
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat_json(metadata: Mapping[Any, Any]) -> bool:
    """True when metadata trivially round-trips: str keys and scalar values only."""
    return _STR.issuperset(map(type, metadata)) and _JSON_SCALARS.issuperset(
        map(type, metadata.values())
    )


def _json_problem(value: Any) -> str | None:
    """The first thing in ``value`` that JSON cannot store exactly, described."""
    stack: list[tuple[str, Any]] = [("", value)]
    seen: set[int] = set()
    while stack:
        where, v = stack.pop()
        at = f"key {where}" if where else "the metadata"
        if isinstance(v, bool) or v is None or isinstance(v, (str, int)):
            continue
        if isinstance(v, float):
            if v != v or v in (float("inf"), float("-inf")):
                return f"{at} holds {v!r}, which JSON cannot store"
            continue
        if id(v) in seen:
            return f"{at} refers to itself"
        seen.add(id(v))
        if isinstance(v, tuple):
            return f"{at} holds a tuple, which JSON stores as a list; use a list"
        if isinstance(v, list):
            stack.extend((f"{where}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, dict):
            keys = {}
            for k, x in v.items():
                if not isinstance(k, str):
                    return (
                        f"{at} has the {type(k).__name__} key {k!r}; JSON keys are strings, "
                        f"so it would load back as {json.dumps(k)!r}"
                    )
                keys[k] = x
            stack.extend((f"{where}.{k}" if where else repr(k), x) for k, x in keys.items())
        else:
            return f"{at} holds a {type(v).__name__}, which is not JSON data"
    return None


class AtomicSave:
    """Mixin: `save` under the index's ``_lock`` into an atomic index directory."""

    __slots__ = ()

    _lock: threading.RLock

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically and durably (no pickle).

        A crash at any moment leaves ``path`` loading as the previous save or this one;
        a concurrent `load` gets one complete version; concurrent saves to one path run
        one after the other. A symbolic link at ``path`` is followed (the index is saved
        into its target). See `hybrid_retrievers.persistence` for the layout.

        Raises:
            TypeError: ``path`` is not a str or path, or metadata is not JSON data
                that would load back unchanged (the previous save is kept).
            FileExistsError: ``path`` exists and is not an index.
        """
        with self._lock, atomic_index_dir(path) as tmp:
            self._save_into(tmp)

    def _save_into(self, directory: Path) -> None:
        """Write the index files and their manifest into an existing empty directory."""
        raise NotImplementedError
