"""Index directories as plain data, saved atomically and durably, loaded without trust.

Nothing here can run code on load: ``.npy`` headers are parsed by numpy's literal-only
parser and object or structured dtypes are refused before any data is read, text is
JSON, and every byte is checked against a SHA-256 before it is trusted.

Layout (format 2). The index path is a directory holding one *pointer* file and
versioned sub-directories::

    idx/
      manifest.json          pointer: kind, "current" version, SHA-256 of its manifest
      .lock                  taken (flock) by a saver for the whole save
      v000007-3fa9c2d1/      the current version: manifest.json + data files
      v000006-81b0e44a/      the previous version, kept for loaders still reading it

Why this shape:

* **Atomic and durable.** A save writes a new version directory, fsyncs every file and
  directory, then replaces the pointer with one ``os.replace`` (atomic on POSIX and
  Windows) and fsyncs the index directory. A crash at any moment leaves the pointer
  naming either the old complete version or the new complete one; nothing at the path
  is ever renamed away, so the path never loads as "nothing".
* **Concurrent loaders** read the pointer, then the version it names. The previous
  version is kept until the next save, and a loader whose version vanished under it
  (two saves during one load) sees the pointer change and retries with the new one.
* **Concurrent savers** take an exclusive lock on ``.lock`` (``fcntl.flock``: released
  by the kernel if the process dies, so it is never stale); they run one after the
  other and the last one wins. Versions no pointer names (left by a crash) are removed
  by the next save.
* **The manifest is covered too.** The pointer holds the SHA-256 of the version's
  manifest, which holds the size and SHA-256 of every file (and of the manifests of
  sub-directories, for composite indexes), so no byte that decides results, parameters
  included, can change unnoticed. Checksums are integrity, not authenticity: a file
  edited with every checksum recomputed is not detected.
* **Links are refused inside an index.** Files are opened with ``O_NOFOLLOW`` and must
  be regular files (never a link, FIFO, device or directory). The index path itself may
  be a symbolic link: a save follows it and saves into its target (the link stays).

Directories written by format 1 (the data files directly in the index path) still load,
without the manifest checksum; the next save converts them in place.

The package, one job a module:

* `safe_read` -- `IndexFormatError`, the check of an index path, and opening and parsing
  untrusted files (regular files only, no links, bounded reads, strict JSON, ``.npy``
  headers without pickle);
* `manifest` -- the layout's names, the pointer (`index_kind`: which kind of index a
  folder holds), manifest fields and checksums;
* `atomic` -- atomic, durable, locked saves (`atomic_index_dir`);
* `writer` -- the saving side: `IndexWriter` (the files of one version) and `AtomicSave`
  (the ``save(path)`` of every core index);
* `reader` -- `read_index` and `IndexReader`, the loading side;
* `composite` -- what both frameworks' fusion adapters share when they save and load a
  fusion of indexes (settings, children by kind, the callable-weights check).

What these modules share (the checks of `safe_read` and `manifest`, `atomic`'s
`HashingFile`, `writer`'s `doc_json_line`) has a plain name in its module and is
imported from there; a ``_name`` is its own module's alone. Only this face (``__all__``)
is the package's public API.
"""

from __future__ import annotations

from .atomic import LOCK_TIMEOUT, atomic_index_dir
from .manifest import FORMAT_NAME, LAYOUT_VERSION, LOCK, MANIFEST, current_files, index_kind
from .reader import IndexReader, read_index
from .safe_read import IndexFormatError, check_path
from .writer import AtomicSave, IndexWriter

__all__ = [
    "FORMAT_NAME",
    "LAYOUT_VERSION",
    "LOCK",
    "LOCK_TIMEOUT",
    "MANIFEST",
    "AtomicSave",
    "IndexFormatError",
    "IndexWriter",
    "IndexReader",
    "atomic_index_dir",
    "check_path",
    "current_files",
    "index_kind",
    "read_index",
]
