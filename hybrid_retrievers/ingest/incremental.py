"""What a re-index must do: compare the files on disk with the files an index holds.

An index built by `hybrid_retrievers.ingest` records, in every chunk's metadata, the
file it came from (``file``) and the SHA-256 of that file's bytes (``file_sha256``).
`plan_sync` compares those with the files found now:

* a file whose hash is unchanged is left alone (not read again past hashing, not
  re-chunked, not re-encoded);
* a changed file's chunks are replaced by its new chunks;
* a file that is gone leaves the index;
* a new file whose bytes equal those of a file that is gone is a **rename**: its chunks
  move to the new name (`renamed_id`) and keep their vectors;
* any other new file is chunked and encoded.

The plan is data; the command line applies it to the indexes and saves them at once
(atomically), so an interrupted re-index leaves the previous index intact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..types import Doc
from .chunks import FILE_HASH_KEY, FILE_KEY

__all__ = ["SyncPlan", "indexed_files", "plan_sync", "renamed_id"]


@dataclass(frozen=True)
class SyncPlan:
    """The files to keep, re-chunk, add, drop and rename (new name -> old name)."""

    unchanged: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)

    @property
    def to_read(self) -> list[str]:
        """The files to parse and chunk: changed and new ones."""
        return self.changed + self.added

    def summary(self) -> str:
        """One line: how many files of each kind."""
        return (f"{len(self.unchanged)} unchanged, {len(self.changed)} changed, "
                f"{len(self.added)} new, {len(self.renamed)} renamed, "
                f"{len(self.deleted)} deleted")


def indexed_files(chunks: Iterable[Doc]) -> dict[str, str]:
    """``{file: sha256}`` of the files an index's chunks came from."""
    out: dict[str, str] = {}
    for doc in chunks:
        file, sha = doc.metadata.get(FILE_KEY), doc.metadata.get(FILE_HASH_KEY)
        if isinstance(file, str) and isinstance(sha, str):
            out[file] = sha
    return out


def plan_sync(indexed: Mapping[str, str], current: Mapping[str, str]) -> SyncPlan:
    """The plan that turns an index of ``indexed`` into one of ``current`` (both
    ``{file: sha256}``).

    Example:
        >>> plan = plan_sync({"a.md": "1", "b.md": "2", "c.md": "3"},
        ...                  {"a.md": "1", "b.md": "9", "d.md": "3", "e.md": "5"})
        >>> plan.unchanged, plan.changed, plan.added, plan.renamed, plan.deleted
        (['a.md'], ['b.md'], ['e.md'], {'d.md': 'c.md'}, [])
    """
    plan = SyncPlan()
    gone = {f: sha for f, sha in indexed.items() if f not in current}
    by_hash: dict[str, list[str]] = {}
    for f in sorted(gone):
        by_hash.setdefault(gone[f], []).append(f)
    for f in sorted(current):
        sha = current[f]
        if f in indexed:
            (plan.unchanged if indexed[f] == sha else plan.changed).append(f)
        elif by_hash.get(sha):
            plan.renamed[f] = by_hash[sha].pop(0)
        else:
            plan.added.append(f)
    moved = set(plan.renamed.values())
    plan.deleted.extend(f for f in sorted(gone) if f not in moved)
    return plan


def renamed_id(doc_id: str, old: str, new: str) -> str:
    """The id of a chunk of file ``old`` once the file is called ``new``: the file's
    name is the prefix of its chunks' ids (records keep their own ids).

    Example:
        >>> renamed_id("notes/a.md#s1:0", "notes/a.md", "b.md"), renamed_id("r7:0", "x", "y")
        ('b.md#s1:0', 'r7:0')
    """
    if doc_id == old or doc_id.startswith((old + "#", old + ":")):
        return new + doc_id[len(old):]
    return doc_id
