"""`AtomicSave`: the ``save(path)`` every core index has, written once.

An index writes its own files (`AtomicSave._save_into`); how they reach ``path`` -- a new
version directory, fsyncs, one atomic pointer swap, a lock between concurrent savers --
is `atomic_index_dir`'s job, and holding the index's lock for the whole save is this
mixin's. `BM25Index` and `VectorIndex` both save this way.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .atomic import atomic_index_dir

__all__ = ["AtomicSave"]


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
