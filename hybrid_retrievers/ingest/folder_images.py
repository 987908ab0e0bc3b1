"""The image half of a folder index: descriptions in the text legs, CLIP vectors beside.

A folder's image files (`hybrid_retrievers.images.IMAGE_SUFFIXES`) reach a `FolderIndex`
by two routes, each switched on by an option (``describer=`` / ``--describer``, and
``clip_model=`` / ``--clip-model``):

* a describer (a vision model, ``describer(image, prompt) -> str``) describes each image
  (`describe_images`); the description is a document of every text leg (BM25, dense,
  sparse) with metadata ``type="image"``, ``image`` and ``file`` = the path relative to
  the folder, ``file_sha256`` = the content hash, and the image's own id `image_id` (also
  its parent, so parent search keeps it whole). Descriptions are cached by (describer,
  prompt, image hash) in a `DescriptionCache` in ``INDEX/images/descriptions``:
  re-indexing never asks the describer twice for the same image, even after a rebuild.
* a CLIP model: CLIP vectors of every image in a `VectorIndex` saved in
  ``INDEX/images/clip`` (ids `image_id`, so fusion merges an image found by both routes).
  Incremental: an unchanged image keeps its vector, a renamed one keeps it under its new
  name, a removed one leaves; another model rebuilds this index (only this one).

Both are recorded in the index's ``"ingest"`` settings under ``"images"``, so a search
finds the CLIP index and its model, and a later update without the options keeps what
was built: the recorded CLIP model is loaded again, and the descriptions of unchanged
images stay (a new or changed image then waits for a describer, reported).

Files with the same content are one image (the first path, sorted, names it); the others
are reported as copies. A file that is not a readable image of a supported format, is
truncated, or is larger than ``max_pixels`` is skipped with a reason naming it, and
nothing else of the build is lost; so is an image whose description failed or timed
out: it is asked again on the next run. ``workers`` overlaps describer calls (for a
model behind an API); it changes neither the descriptions nor the cache, and is not
recorded.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..images.loading import (
    DEFAULT_MAX_PIXELS,
    IMAGE_SUFFIXES,
    ImageError,
    image_id_of_hash,
    load_image,
)
from ..text.splitting import CHILD_INDEX_KEY, PARENT_ID_KEY
from ..types import Doc
from .chunks import FILE_HASH_KEY, FILE_KEY

__all__ = ["CLIP_DIR", "DESCRIPTIONS_DIR", "IMAGES_DIR", "ImageRoutes", "distinct_images",
           "is_image", "open_clip_index", "unindexed_images"]

IMAGES_DIR = "images"
"""Sub-folder of the index folder holding the image routes' own files."""
CLIP_DIR = "clip"
"""``IMAGES_DIR/CLIP_DIR``: the saved `VectorIndex` of CLIP image vectors."""
DESCRIPTIONS_DIR = "descriptions"
"""``IMAGES_DIR/DESCRIPTIONS_DIR``: the saved `DescriptionCache`."""
IMAGES_FORMAT = 1
"""Version of the ``"images"`` block of the ingest settings."""

_BATCH = 32  # images decoded at a time for CLIP: bounded memory for a folder of photos
_FLAGS_HINT = ("pass --describer MODULE:ATTR (descriptions in the text legs) or --clip-model "
               "PATH_OR_NAME (CLIP vectors) to index images")


def is_image(name: str) -> bool:
    """Whether a file name has an image suffix."""
    return name.lower().endswith(IMAGE_SUFFIXES)


def _quiet(*parts: Any) -> None:
    """The default ``log``: say nothing."""


# ---------------------------------------------------------------------- index


@dataclass
class ImageRoutes:
    """The image half of one build or update of a folder index (see the module doc).

    Built by `create` from the options and the settings saved with the previous index;
    `text_files` says which image files the text legs keep or (re)read, `describe`
    makes their documents, `update_clip` the CLIP index, `save` writes both beside the
    fusion, and `settings` is what ``search`` reads.
    """

    out: Path
    describer: Any = None
    describer_name: str | None = None
    timeout: float | None = None
    workers: int = 1
    max_pixels: int = DEFAULT_MAX_PIXELS
    clip_model: str | None = None
    clip: Any = None
    rebuild: bool = False
    previous: dict[str, Any] = field(default_factory=dict)
    cache: Any = None
    clip_index: Any = None
    counts: dict[str, int] = field(default_factory=dict)
    log: Callable[[str], Any] = _quiet

    @classmethod
    def create(cls, out: Path, saved: dict[str, Any], *, describer: Any = None,
               timeout: float | None = None, workers: int = 1,
               max_pixels: int | None = DEFAULT_MAX_PIXELS, clip_model: Any = None,
               rebuild: bool = False, log: Callable[[str], Any] = _quiet) -> ImageRoutes:
        """The routes asked for (``saved``: the previous ingest settings; ``clip_model``:
        a CLIP model name, path or `ClipEmbedder`, default the recorded one).

        Raises:
            ValueError: a bad ``timeout``, ``workers`` or ``max_pixels``, naming it.
        """
        from ..timeout import check_timeout
        from ..validation import check_number
        from . import folder_models

        previous = saved.get("images") if isinstance(saved.get("images"), dict) else {}
        routes = cls(out=out, rebuild=bool(rebuild), previous=dict(previous),
                     timeout=check_timeout(timeout, "describe_timeout"),
                     workers=check_number(workers, "describe_workers", low=1, integer=True),
                     max_pixels=_check_pixels(max_pixels), log=log)
        if describer is not None:
            from ..images.describe import describer_name

            if not callable(describer):
                raise TypeError(f"describer must be a callable (image, prompt) -> str, got "
                                f"{type(describer).__name__}")
            routes.describer = describer
            routes.describer_name = describer_name(describer)
        model = clip_model or (None if rebuild else previous.get("clip_model"))
        if model:
            if not clip_model:
                log(f"CLIP vectors: updating with the recorded model {model} "
                    "(a rebuild without a CLIP model drops them)")
            if isinstance(model, str):
                routes.clip_model = model
                routes.clip = folder_models.make_clip_embedder(model, routes.max_pixels)
            else:  # an embedder object: keep the recorded name when it is that model
                same = previous.get("clip_model_id") == model.model_id
                routes.clip_model = str(previous["clip_model"] if same else model.model_id)
                routes.clip = model
        return routes

    @property
    def any(self) -> bool:
        """Whether a route can index an image in this run."""
        return self.describer is not None or self.clip is not None

    def text_files(self, images: dict[str, str], indexed: dict[str, str],
                   old_docs: list[Doc]) -> tuple[dict[str, str], dict[str, str]]:
        """``(image files for the text plan, indexed adjusted)``: with a describer, every
        image (those described by another describer count as changed); without one, only
        images whose description is indexed (unchanged or renamed: kept)."""
        described = {d.metadata.get(FILE_KEY): d for d in old_docs
                     if d.metadata.get("type") == "image"}
        if self.describer is None:
            kept_hashes = {indexed.get(f) for f in described}
            return {rel: sha for rel, sha in images.items() if sha in kept_hashes}, indexed
        indexed = dict(indexed)
        for file, doc in described.items():
            if doc.metadata.get("describer") != self.describer_name and file in indexed:
                indexed[file] = "described by " + str(doc.metadata.get("describer"))
        return dict(images), indexed

    def describe(self, names: list[str], hashes: dict[str, str], paths: dict[str, Path],
                 skipped: list[tuple[str, str]]) -> list[Doc]:
        """The description documents of the image files ``names`` (failures go to
        ``skipped`` and out of ``hashes``)."""
        if not names or self.describer is None:
            return []
        from ..images.describe import describe_images_report

        self.cache = self._open_cache()
        metadatas = [{"image": rel, FILE_KEY: rel, FILE_HASH_KEY: hashes[rel],
                      "path": str(paths[rel])} for rel in names]
        with warnings.catch_warnings():  # each skip is reported below, once, by file name
            warnings.simplefilter("ignore", UserWarning)
            report = describe_images_report(
                [paths[rel] for rel in names], self.describer, metadatas=metadatas,
                cache=self.cache, timeout=self.timeout, describer_name=self.describer_name,
                max_workers=self.workers,
                show_progress=len(names) > 1 and sys.stderr.isatty(),
                max_pixels=self.max_pixels)
        for item in report.skipped:
            rel = names[item.index]
            reason = item.reason
            for prefix in (f"{paths[rel]}: ", f"{item.source}: "):
                reason = reason.removeprefix(prefix)
            skipped.append((rel, reason))
            hashes.pop(rel, None)
        docs = [Doc(d.id, d.text, {**d.metadata, PARENT_ID_KEY: d.id, CHILD_INDEX_KEY: 0})
                for d in report.docs]
        self.counts["described"] = sum(
            1 for d in docs if d.metadata.get("description_source") == "describer")
        self.counts["from_cache"] = len(docs) - self.counts["described"]
        return docs

    def _open_cache(self) -> Any:
        from ..images.describe import DescriptionCache
        from ..persistence import IndexFormatError

        folder = self.out / IMAGES_DIR / DESCRIPTIONS_DIR
        try:
            return DescriptionCache(folder)
        except (IndexFormatError, OSError) as exc:
            self.log(f"the description cache at {folder} is unreadable ({exc}); starting a new one")
            return DescriptionCache()

    def update_clip(self, images: dict[str, str], paths: dict[str, Path],
                    skipped: list[tuple[str, str]]) -> None:
        """Bring the CLIP index to ``images`` (``{file: sha256}``, one file per content):
        unchanged vectors kept, renamed ones re-labelled, new images embedded."""
        if self.clip is None:
            return
        import numpy as np

        index = self._previous_clip_index()
        wanted = {image_id_of_hash(sha): rel for rel, sha in images.items()}
        held = {d.id: d for d in index.docs}
        stale = [i for i in held if i not in wanted or held[i].metadata.get(FILE_KEY) != wanted[i]]
        moved = [(i, index.get_vector(i)) for i in stale if i in wanted]
        if stale:
            index.delete(stale)
        if moved:
            index.add_vectors(np.stack([v for _, v in moved]),
                              docs=[_clip_doc(held[i], wanted[i], paths[wanted[i]])
                                    for i, _ in moved])
        new = [rel for i, rel in wanted.items() if i not in held]
        added = 0
        for start in range(0, len(new), _BATCH):
            loaded, metadatas = [], []
            for rel in new[start:start + _BATCH]:
                try:
                    image = load_image(paths[rel], max_pixels=self.max_pixels, name=rel)
                except ImageError as exc:
                    skipped.append((rel, str(exc).removeprefix(f"{rel}: ")))
                    continue
                loaded.append(image)
                metadatas.append({"image": rel, FILE_KEY: rel, FILE_HASH_KEY: image.sha256,
                                  "path": str(paths[rel])})
            if loaded:
                index.add_images(loaded, metadatas=metadatas, texts=[m["image"] for m in metadatas])
                added += len(loaded)
        self.clip_index = index
        self.counts.update(clip=len(index), clip_new=added,
                           clip_removed=len(stale) - len(moved))

    def _previous_clip_index(self) -> Any:
        from ..persistence import IndexFormatError
        from ..vector import VectorIndex

        folder = self.out / IMAGES_DIR / CLIP_DIR
        same_model = self.previous.get("clip_model_id") == self.clip.model_id
        if (folder / "manifest.json").is_file() and not self.rebuild:
            if not same_model:
                self.log(f"CLIP vectors: rebuilding (model {self.previous.get('clip_model_id')!r} "
                     f"-> {self.clip.model_id!r})")
            else:
                try:
                    return VectorIndex.load(folder, self.clip)
                except (IndexFormatError, ValueError, OSError) as exc:
                    self.log(f"CLIP vectors: rebuilding, the index at {folder} cannot be read ({exc})")
        return VectorIndex(embedder=self.clip)

    def settings(self, described: int) -> dict[str, Any]:
        """The ``"images"`` block of the ingest settings (``described``: description
        documents in the text legs)."""
        return {
            "format": IMAGES_FORMAT,
            "dir": IMAGES_DIR,
            "describer": self.describer_name or self.previous.get("describer"),
            "descriptions": described,
            "clip_model": self.clip_model if self.clip_index is not None else None,
            "clip_model_id": self.clip.model_id if self.clip_index is not None else None,
            "clip_images": len(self.clip_index) if self.clip_index is not None else 0,
        }

    def save(self) -> None:
        """Write the CLIP index and the description cache into ``OUT/images`` (after the
        fusion: the index folder must exist first)."""
        folder = self.out / IMAGES_DIR
        if self.clip_index is None and self.cache is None:
            return
        folder.mkdir(exist_ok=True)
        if self.clip_index is not None:
            self.clip_index.save(folder / CLIP_DIR)
        if self.cache is not None and len(self.cache):
            try:
                self.cache.save(folder / DESCRIPTIONS_DIR)
            except OSError as exc:  # the cache only saves model calls: say it, go on
                self.log(f"could not save the description cache to {folder / DESCRIPTIONS_DIR}: {exc}")

    def summary(self) -> str:
        """What the image routes did, for the last line of a build's report."""
        parts = []
        if self.describer is not None:
            parts.append(f"{self.counts.get('described', 0)} images described by "
                         f"{self.describer_name}, {self.counts.get('from_cache', 0)} from the "
                         "description cache")
        if self.clip_index is not None:
            parts.append(f"{self.counts.get('clip', 0)} CLIP vectors "
                         f"({self.counts.get('clip_new', 0)} new, "
                         f"{self.counts.get('clip_removed', 0)} removed)")
        return "; ".join(parts)


def distinct_images(hashes: dict[str, str],
                    skipped: list[tuple[str, str]]) -> dict[str, str]:
    """The image files of ``hashes`` with one file per content (the first name); the
    copies go to ``skipped``, naming the file they repeat."""
    first: dict[str, str] = {}
    out: dict[str, str] = {}
    for rel in sorted(hashes):
        if not is_image(rel):
            continue
        sha = hashes[rel]
        if sha in first:
            skipped.append((rel, f"the same image as {first[sha]} (indexed once)"))
            continue
        first[sha] = rel
        out[rel] = sha
    return out


def unindexed_images(images: dict[str, str], routes: ImageRoutes, in_text: dict[str, str],
                     skipped: list[tuple[str, str]]) -> None:
    """Report the images no route takes in this run (with the flags that would)."""
    if routes.clip is not None:
        return
    for rel in images:
        if rel not in in_text:
            skipped.append((rel, "an image, not indexed: " + (
                "its description is not indexed and no --describer was given"
                if routes.previous.get("describer") else _FLAGS_HINT)))


def _clip_doc(doc: Doc, rel: str, path: Path) -> Doc:
    meta = {**doc.metadata, "image": rel, FILE_KEY: rel, "path": str(path)}
    return Doc(doc.id, rel, meta)


def _check_pixels(value: Any) -> int:
    from ..validation import check_number

    if value is None:
        return DEFAULT_MAX_PIXELS
    return int(check_number(value, "max_image_pixels", low=1, integer=True))


# ---------------------------------------------------------------------- search


def open_clip_index(folder: Path, ingest: dict[str, Any], clip_model: Any = None) -> Any:
    """The CLIP `VectorIndex` of an index folder, or None when it has none (``clip_model``:
    a name, path or `ClipEmbedder` replacing the recorded model, moved since).

    Raises:
        ValueError: ``clip_model`` given for a folder without CLIP vectors.
    """
    from ..vector import VectorIndex
    from . import folder_models

    images = ingest.get("images") if isinstance(ingest.get("images"), dict) else {}
    path = folder / IMAGES_DIR / CLIP_DIR
    if not images.get("clip_model") or not (path / "manifest.json").is_file():
        if clip_model:
            raise ValueError(f"clip_model {clip_model}: {folder} holds no CLIP image vectors "
                             "(build it with a CLIP model)")
        return None
    model = clip_model or images["clip_model"]
    embedder = model if not isinstance(model, str) else folder_models.make_clip_embedder(
        model, model_id=images.get("clip_model_id"))
    return VectorIndex.load(path, embedder)
