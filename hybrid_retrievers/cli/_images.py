"""Image files in ``hybrid-retrievers index``: descriptions for the text legs, CLIP vectors beside.

A folder's image files (`hybrid_retrievers.images.IMAGE_SUFFIXES`) reach the index by two
routes, each switched on by a flag:

* ``--describer MODULE:ATTR``: a vision model describes each image (`describe_images`);
  the description is a document of every text leg (BM25, dense, sparse) with metadata
  ``type="image"``, ``image`` and ``file`` = the path relative to the folder,
  ``file_sha256`` = the content hash, and the image's own id `image_id` (also its parent,
  so ``--parents`` keeps it whole). Descriptions are cached by (describer, prompt, image
  hash) in a `DescriptionCache` in ``OUT/images/descriptions``: re-indexing never asks
  the describer twice for the same image, even after ``--rebuild``.
* ``--clip-model PATH_OR_NAME``: CLIP vectors of every image in a `VectorIndex` saved in
  ``OUT/images/clip`` (ids `image_id`, so fusion merges an image found by both routes).
  Incremental: an unchanged image keeps its vector, a renamed one keeps it under its new
  name, a removed one leaves; another model rebuilds this index (only this one).

Both are recorded in the index's ``"ingest"`` settings under ``"images"``, so ``search``
finds the CLIP index and its model, and a later ``index`` without the flags keeps what
was built: the recorded CLIP model is loaded again, and the descriptions of unchanged
images stay (a new or changed image then waits for ``--describer``, reported).

Files with the same content are one image (the first path, sorted, names it); the others
are reported as copies. A file that is not a readable image of a supported format, is
truncated, or is larger than ``--max-image-pixels`` is skipped with a warning naming it,
and nothing else of the build is lost; so is an image whose description failed or timed
out (``--describe-timeout``): it is asked again on the next run. ``--describe-workers N``
overlaps up to N describer calls (for a model behind an API); it changes neither the
descriptions nor the cache, and is not recorded.

The describer: ``MODULE:ATTR`` names an attribute of an importable module (the current
folder is searched after the installed packages). It is the describer itself,
``describer(image: LoadedImage, prompt: str) -> str``, unless it is a class or a callable
that takes no arguments: then it is a factory, called once to make the describer. A
module of one's own can so build any vision model, e.g. LangChain's::

    # my_describers.py
    def gpt4o():
        from langchain_openai import ChatOpenAI
        from langchain_hybrid_retrievers import ChatModelDescriber
        return ChatModelDescriber(ChatOpenAI(model="gpt-4o-mini"))

    hybrid-retrievers index notes/ --out idx --describer my_describers:gpt4o
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import warnings
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
from ..ingest import FILE_HASH_KEY, FILE_KEY
from ..text.splitting import CHILD_INDEX_KEY, PARENT_ID_KEY
from ..types import Doc

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


def _say(*parts: Any) -> None:
    print(*parts, flush=True)


# ---------------------------------------------------------------------- the describer


def load_describer(spec: str) -> Any:
    """The describer named by ``--describer MODULE:ATTR`` (see the module doc).

    Raises:
        ValueError: a malformed spec, a module that cannot be imported, a missing
            attribute, or something that is not a describer; each names ``--describer``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name.strip() or not attr.strip():
        raise ValueError(f"--describer expects MODULE:ATTR (e.g. my_describers:vlm), got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # after the installed packages: a local file cannot shadow one
    try:
        target: Any = importlib.import_module(module_name.strip())
    except ImportError as exc:
        raise ValueError(f"--describer {spec}: cannot import module {module_name!r} ({exc})") \
            from None
    for part in attr.strip().split("."):
        if not hasattr(target, part):
            raise ValueError(f"--describer {spec}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if _is_factory(target):
        try:
            target = target()
        except Exception as exc:  # the user's factory: say whose failure it is
            raise ValueError(f"--describer {spec}: the factory raised "
                             f"{type(exc).__name__}: {exc}") from exc
    if not callable(target):
        raise ValueError(f"--describer {spec} is a {type(target).__name__}, not a describer "
                         "(a callable (image, prompt) -> str, or a factory returning one)")
    return target


def _is_factory(target: Any) -> bool:
    """A class, or a callable that takes no arguments and cannot take two."""
    if inspect.isclass(target):
        return True
    if not callable(target):
        return False
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin without a signature: call it as a describer
        return False
    try:
        sig.bind(None, None)
    except TypeError:
        pass
    else:
        return False
    try:
        sig.bind()
    except TypeError:
        return False
    return True


# ---------------------------------------------------------------------- index


@dataclass
class ImageRoutes:
    """The image half of one ``index`` run (see the module doc).

    Built from the command's arguments and the settings saved with the previous index;
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

    @classmethod
    def from_args(cls, args: Any, saved: dict[str, Any]) -> ImageRoutes:
        """The routes asked for by ``args`` (``saved``: the previous ingest settings)."""
        from ..timeout import check_timeout
        from ..validation import check_number

        previous = saved.get("images") if isinstance(saved.get("images"), dict) else {}
        routes = cls(out=args.out, rebuild=bool(args.rebuild), previous=dict(previous),
                     timeout=check_timeout(args.describe_timeout, "--describe-timeout"),
                     workers=check_number(args.describe_workers, "--describe-workers",
                                          low=1, integer=True),
                     max_pixels=_check_pixels(args.max_image_pixels))
        if args.describer:
            from ..images.describe import describer_name

            routes.describer = load_describer(args.describer)
            routes.describer_name = describer_name(routes.describer)
        model = args.clip_model or (None if args.rebuild else previous.get("clip_model"))
        if model:
            if not args.clip_model:
                _say(f"CLIP vectors: updating with the recorded model {model} "
                     "(--rebuild without --clip-model drops them)")
            routes.clip_model = str(model)
            routes.clip = make_clip_embedder(str(model), routes.max_pixels)
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
            _say(f"the description cache at {folder} is unreadable ({exc}); starting a new one")
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
                _say(f"CLIP vectors: rebuilding (model {self.previous.get('clip_model_id')!r} "
                     f"-> {self.clip.model_id!r})")
            else:
                try:
                    return VectorIndex.load(folder, self.clip)
                except (IndexFormatError, ValueError, OSError) as exc:
                    _say(f"CLIP vectors: rebuilding, the index at {folder} cannot be read ({exc})")
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
                _say(f"could not save the description cache to {folder / DESCRIPTIONS_DIR}: {exc}")

    def summary(self) -> str:
        """What the image routes did, for the last line of ``index``."""
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
    return int(check_number(value, "--max-image-pixels", low=1, integer=True))


# ---------------------------------------------------------------------- search


def make_clip_embedder(model: str, max_pixels: int = DEFAULT_MAX_PIXELS,
                       model_id: str | None = None) -> Any:
    """A `ClipEmbedder` for ``model`` (a name or folder; ``model_id``: the identity
    recorded with an index, for the same model moved to another path)."""
    from ..models import ClipEmbedder
    from ._build import _quiet_transformers

    _quiet_transformers()
    return ClipEmbedder(model, max_pixels=max_pixels, model_id=model_id)


def open_clip_index(folder: Path, ingest: dict[str, Any], clip_model: str | None) -> Any:
    """The CLIP `VectorIndex` of an index folder, or None when it has none.

    Raises:
        ValueError: the folder records a CLIP index but no model, and none was given.
    """
    from ..vector import VectorIndex

    images = ingest.get("images") if isinstance(ingest.get("images"), dict) else {}
    path = folder / IMAGES_DIR / CLIP_DIR
    if not images.get("clip_model") or not (path / "manifest.json").is_file():
        if clip_model:
            raise ValueError(f"--clip-model {clip_model}: {folder} holds no CLIP image vectors "
                             "(index it with --clip-model)")
        return None
    model = clip_model or images["clip_model"]
    embedder = make_clip_embedder(model, model_id=images.get("clip_model_id"))
    return VectorIndex.load(path, embedder)

