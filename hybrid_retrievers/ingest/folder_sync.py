"""Building or updating a folder index: files to chunks to a saved hybrid `FusionSearcher`.

The folder written is a saved `FusionSearcher` (`hybrid_retrievers.fusion.saving`):
children ``bm25``, ``dense`` and, with a SPLADE model, the learned sparse leg ``sparse``
(``bm25`` alone with ``bm25_only``), so ``FusionSearcher.load(folder, embedder,
sparse_embedder=...)`` and both frameworks' ``HybridRetriever`` (LangChain
``load_local``, LlamaIndex ``from_persist_dir``) load it. The fusion's settings also hold
``"ingest"``: the models, chunking and tokenizer the chunks were made with, the image
routes (`folder_images`) and the source folder, which a search and the next update read.

`sync_folder` is incremental (`plan_sync`): unchanged files are only hashed; changed and
new files are chunked; their chunks' vectors (dense and sparse alike) come from the old
index when the same text was indexed before (a renamed file, an unchanged paragraph of a
changed file), else from the on-disk embedding caches, else from the models; and the new
version replaces the old one atomically. A change of model, chunking or analyzer
settings rebuilds everything (and says so).

Chunk ids are unique: a record whose id is already taken is skipped and named, by one
fixed order that a clean build and an update share (`_unique_chunks`), before any model
runs.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..progress import progress as progress_bar
from ..text.splitting import PARENT_ID_KEY
from ..types import Doc
from . import folder_models
from .chunking import StructuredChunker, token_counter
from .chunks import FILE_KEY, document_chunks
from .formats import SourceError, decode_text, read_document
from .incremental import SyncPlan, indexed_files, plan_sync, renamed_id
from .sources import RECORD_SUFFIXES, find_files, read_records
from .structure import ParsedDocument, plain_structure

__all__ = ["INGEST_FORMAT", "IndexReport", "read_saved", "sync_folder"]

INGEST_FORMAT = 1
"""Version of the ``"ingest"`` settings block."""
SOURCE_KEY = "source"
"""In the ingest settings: the folder (or file) indexed, absolute, for `FolderIndex.update`;
not a setting the chunks depend on (another folder is an update, not a rebuild)."""
_CLASHED_KEY = "duplicate_records_skipped"
"""In the saved ingest settings: the last run skipped a record whose id was taken, so the
next one reads every record file again (the id may be free now)."""

Log = Callable[[str], Any]
Saved = tuple[dict[str, Any], list[tuple[str, Path, dict[str, Any]]]]


def _quiet(message: str) -> None:
    """The default ``log``: say nothing."""


@dataclass(frozen=True)
class IndexReport:
    """What one build or update of a folder index did (`FolderIndex.report`).

    ``plan`` is the sync plan as done (files that failed to read left out); ``skipped``
    holds ``(file, reason)`` for every file, record or image left out; ``other_kinds``
    counts the files of kinds that are not read, by suffix; ``rebuilt`` says why an
    existing index was rebuilt rather than updated (None: built new or updated).
    """

    index_dir: Path
    plan: SyncPlan
    files: int
    chunks: int
    legs: tuple[str, ...]
    remade: int
    skipped: list[tuple[str, str]]
    dropped_records: int
    other_kinds: dict[str, int]
    images: str
    rebuilt: str | None
    hashed: int
    seconds: float


@dataclass
class _Found:
    """The files found now: ``{name: sha256}``, their paths and bytes, what was skipped."""

    hashes: dict[str, str] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    other_kinds: Counter[str] = field(default_factory=Counter)
    """Files of kinds that are not read, by suffix (said in one line, not listed)."""


@dataclass
class _Legs:
    """The models of one run: each leg's embedder (None: no such leg) and recorded name."""

    embedder: Any = None
    model: str | None = None
    sparse: Any = None
    sparse_model: str | None = None
    token_model: str | None = None


def sync_folder(
    source: str | os.PathLike[str], out: str | os.PathLike[str], *,
    model: Any = None, sparse_model: Any = None, bm25_only: bool = False, sparse: bool = True,
    chunk_size: int = 0, chunk_overlap: int = 0, whole_files: bool = False,
    language: str = "english", method: str = "lucene", rebuild: bool = False,
    cache: bool = True, describer: Any = None, describe_timeout: float | None = None,
    describe_workers: int = 1, clip_model: Any = None, max_image_pixels: int | None = None,
    log: Log = _quiet, warn: Log = _quiet, progress: bool = True,
    reuse: tuple[Any, Any] | None = None,
) -> tuple[Any, dict[str, Any], Any, IndexReport]:
    """Build or update the index folder ``out`` from ``source`` (see the module doc);
    ``(fused searcher, ingest settings, CLIP index or None, report)``.

    ``reuse``: the ``(embedder, sparse embedder)`` of an open index, for the recorded
    ``model`` and ``sparse_model`` names (an update does not make its models again).
    """
    from .folder_images import ImageRoutes, distinct_images, is_image, unindexed_images

    t0 = time.perf_counter()
    source, out = Path(source), Path(out)
    found = _Found()
    files = find_files(source, out, found.skipped, found.other_kinds)
    for path, rel in progress_bar(files, show=progress, desc="hashing files", unit="file",
                                  terminal_only=True):
        try:
            found.hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            found.paths[rel] = path
        except OSError as exc:
            found.skipped.append((rel, exc.strerror or str(exc)))

    images = distinct_images(found.hashes, found.skipped)
    saved = read_saved(out)
    saved_ingest = _ingest_of(saved)
    routes = ImageRoutes.create(out, saved_ingest, describer=describer,
                                timeout=describe_timeout, workers=describe_workers,
                                max_pixels=max_image_pixels, clip_model=clip_model,
                                rebuild=rebuild, log=log)
    legs = _legs(model, sparse_model, bm25_only, sparse, cache, log, warn, reuse)
    settings = _settings(legs, whole_files, chunk_size, chunk_overlap, language, method)
    old, reason = _previous(out, saved, settings, rebuild, legs)
    if reason:
        log(reason)
    old_docs = old.leg("bm25").docs if old is not None else []
    indexed = indexed_files(old_docs)
    # The text legs hold the text files and the described images (see folder_images).
    described, indexed = routes.text_files(images, indexed, old_docs)
    text = {rel: sha for rel, sha in found.hashes.items() if not is_image(rel)} | described
    unindexed_images(images, routes, text, found.skipped)
    plan = plan_sync(indexed, text)
    chunker = None if whole_files else StructuredChunker(
        chunk_size, chunk_overlap, count_tokens=token_counter(legs.token_model)[0])

    sources = _chunk_files([r for r in plan.to_read if not is_image(r)], found, chunker,
                           source.is_dir(), text, progress)
    if old is not None and _ids_clash(old_docs, plan, sources,
                                      saved_ingest.get(_CLASHED_KEY)):
        plan, again = _reread_records(plan)
        sources |= _chunk_files(again, found, chunker, source.is_dir(), text, progress)
    gone = set(plan.deleted) | set(plan.changed) | set(plan.renamed.values())
    taken = {d.id: str(d.metadata.get(FILE_KEY)) for d in old_docs
             if d.metadata.get(FILE_KEY) not in gone}
    taken |= {i: f for i, f in _moved_ids(old_docs, plan)}
    new_docs, empty, clashed = _unique_chunks(sources, taken, found.skipped)
    new_docs += routes.describe([r for r in plan.to_read if is_image(r)], text, found.paths,
                                found.skipped)
    routes.update_clip(images, found.paths, found.skipped)
    if not new_docs and old is None:
        reasons = "; ".join(f"{name}: {why}" for name, why in found.skipped[:5])
        raise ValueError(f"nothing to index under {source}: every file was skipped"
                         + (f" ({reasons})" if reasons else "")
                         + (" (the CLIP image vectors need text beside them: a text file or "
                            "a describer)" if routes.clip_index is not None else ""))
    if old is None:
        searcher = _build(new_docs, legs, language, method, cache, log, progress)
    else:
        searcher = _update(old, plan, new_docs, legs, cache, found, log, progress)
    # The query encoders' export (once per model: later runs find it in the ONNX cache),
    # after the encoding: its working memory (the exporter's, then ONNX Runtime's) then
    # reuses the encoding's freed memory instead of raising the floor the encoding peaks
    # from (a first three-leg `index` of docs/: 1.30 GB before the encoding, 1.15 GB after).
    from ..models.onnx_query import export_query_encoders

    query = export_query_encoders({"dense": legs.embedder, "sparse": legs.sparse},
                                  saved_ingest.get("query_encoders"), log=log)
    store = getattr(legs.sparse, "cache", None)
    if store is not None and reuse is None:
        folder_models.close_sparse_cache(store, log)
    n_described = sum(1 for d in searcher.leg("bm25").docs if d.metadata.get("type") == "image")
    ingest = {**settings, "images": routes.settings(n_described), _CLASHED_KEY: clashed > 0,
              SOURCE_KEY: str(source.resolve()), "query_encoders": query}
    _save(searcher, out, ingest)
    routes.save()
    report = IndexReport(
        index_dir=out, plan=plan_sync(indexed, text), files=len(text),
        chunks=len(searcher.leg("bm25")), legs=tuple(str(n) for n in searcher.names),
        remade=len(new_docs), skipped=found.skipped, dropped_records=empty + clashed,
        other_kinds=dict(found.other_kinds.most_common()), images=routes.summary(),
        rebuilt=reason, hashed=len(found.hashes), seconds=time.perf_counter() - t0)
    return searcher, ingest, routes.clip_index, report


# ---------------------------------------------------------------------- settings


def read_saved(out: Path) -> Saved | None:
    """The fusion manifest of the index at ``out`` (None when there is none or it is
    unreadable: the update then says why it rebuilds)."""
    from ..fusion.saving import read_fusion
    from ..persistence import IndexFormatError

    if not (out / "manifest.json").is_file():
        return None
    try:
        return read_fusion(out)
    except (IndexFormatError, OSError):
        return None


def _ingest_of(saved: Saved | None) -> dict[str, Any]:
    ingest = saved[0].get("ingest") if saved is not None else None
    return ingest if isinstance(ingest, dict) else {}


def _legs(model: Any, sparse_model: Any, bm25_only: bool, sparse: bool, cache: bool,
          log: Log, warn: Log, reuse: tuple[Any, Any] | None) -> _Legs:
    """The models of this run (a leg that cannot be built here is left out, with a word)."""
    from ..models import local_minilm_path

    named = model is None or isinstance(model, (str, os.PathLike))
    legs = _Legs(model=str(model) if model is not None and named else None)
    if named:
        legs.model = legs.model or local_minilm_path()
        legs.token_model = legs.model
    if reuse is not None:
        legs.embedder, legs.sparse = reuse
        legs.sparse_model = None if legs.sparse is None else str(sparse_model)
        if legs.embedder is None:
            legs.model = None
        return legs
    if not bm25_only:
        why = folder_models.dense_available(str(model) if named and model else None) \
            if named else None
        if why is not None:
            warn(f"dense leg skipped: {why}; building BM25 only (--bm25-only says you mean it)")
        elif named:
            folder_models.quiet_transformers()  # the loading bar is noise
            legs.embedder = folder_models.make_embedder(legs.model)
        else:
            legs.embedder, legs.model = model, str(model.model_id)
    if bm25_only or not sparse:
        return legs
    if sparse_model is not None and not isinstance(sparse_model, (str, os.PathLike)):
        legs.sparse, legs.sparse_model = sparse_model, str(sparse_model.model_id)
        return legs
    why = folder_models.sparse_available(None if sparse_model is None else str(sparse_model))
    if why is not None:
        warn(f"learned sparse leg skipped: {why} (--no-sparse says you mean it)")
        return legs
    if sparse_model is None:
        from ..models import local_splade_path

        sparse_model = local_splade_path()
    folder_models.quiet_transformers()
    legs.sparse_model = str(sparse_model)
    legs.sparse = folder_models.make_sparse_embedder(legs.sparse_model, None, cache=cache,
                                                     log=log)
    return legs


def _settings(legs: _Legs, whole_files: bool, chunk_size: int, chunk_overlap: int,
              language: str, method: str) -> dict[str, Any]:
    """What the chunks and vectors depend on; a change means a full rebuild."""
    return {
        "format": INGEST_FORMAT,
        "model": legs.model if legs.embedder is not None else None,
        "model_id": getattr(legs.embedder, "model_id", None),
        "sparse_model": legs.sparse_model if legs.sparse is not None else None,
        "sparse_model_id": getattr(legs.sparse, "model_id", None),
        "whole_files": bool(whole_files),
        "chunk_size": None if whole_files else chunk_size,
        "chunk_overlap": None if whole_files else chunk_overlap,
        "tokenizer": None if whole_files else token_counter(legs.token_model)[1],
        "language": language,
        "method": method,
    }


def _previous(out: Path, saved: Saved | None, settings: dict[str, Any], rebuild: bool,
              legs: _Legs) -> tuple[Any, str | None]:
    """The index to update (loaded from the manifest read once), or ``(None, why it is
    rebuilt)``."""
    from ..fusion import FusionSearcher
    from ..persistence import IndexFormatError

    if not (out / "manifest.json").is_file():
        return None, None
    if rebuild:
        return None, f"rebuilding {out} (rebuild asked)"
    if saved is None:
        return None, f"rebuilding {out}: the index there cannot be updated (unreadable)"
    before = _ingest_of(saved)
    changed = [k for k in settings if before.get(k) != settings[k]]
    if changed:
        diffs = ", ".join(f"{k} {before.get(k)!r} -> {settings[k]!r}" for k in changed)
        return None, f"rebuilding {out}: settings changed ({diffs})"
    try:
        return FusionSearcher.from_saved(out, saved, legs.embedder,
                                         sparse_embedder=legs.sparse), None
    except (IndexFormatError, ValueError, OSError) as exc:
        return None, f"rebuilding {out}: the index there cannot be updated ({exc})"


# ---------------------------------------------------------------------- chunking


@dataclass
class _Source:
    """One source of a file: the whole document (``where`` is ``""``) or one record
    (``where``: ``"line 3"``), with its id and its chunks; ``empty``: a record with no
    text, skipped and named rather than indexed as an empty document."""

    where: str
    id: str
    chunks: list[Doc]
    empty: bool = False


def _chunk_files(names: list[str], found: _Found, chunker: StructuredChunker | None,
                 folder: bool, planned: dict[str, str],
                 progress: bool) -> dict[str, list[_Source]]:
    """``{file: its sources}`` of the files ``names``; a file that cannot be read is
    skipped and named (in a folder) or is the error (a single file)."""
    docs: dict[str, list[_Source]] = {}
    bar = progress_bar(total=len(names), show=progress, desc="chunking files", unit="file",
                       terminal_only=True)
    try:
        for rel in names:
            path = found.paths[rel]
            try:
                docs[rel] = _file_chunks(path, rel, found.hashes[rel], chunker)
            except (SourceError, OSError) as exc:
                if not folder:
                    raise
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                for prefix in (f"{path}: ", f"{path}, "):
                    reason = reason.removeprefix(prefix)
                found.skipped.append((rel, reason))
                del found.hashes[rel], planned[rel]
            bar.update(1)
    finally:
        bar.close()
    return docs


def _file_chunks(path: Path, rel: str, sha: str,
                 chunker: StructuredChunker | None) -> list[_Source]:
    data = path.read_bytes()
    suffix = path.suffix.lower()
    if suffix in RECORD_SUFFIXES:
        out = []
        for where, record in read_records(decode_text(path, data), path, suffix):
            if not record.text.strip():
                out.append(_Source(where, record.id, [], empty=True))
                continue
            parsed: ParsedDocument = plain_structure(record.text)
            out.append(_Source(where, record.id, document_chunks(
                parsed, record.id, chunker, file=rel, file_hash=sha, metadata=record.metadata)))
        return out
    return [_Source("", rel, document_chunks(read_document(path, data), rel, chunker, file=rel,
                                             file_hash=sha, metadata={"path": str(path)}))]


# ---------------------------------------------------------------------- unique ids


def _is_records(rel: str) -> bool:
    return rel.lower().endswith(RECORD_SUFFIXES)


def _unique_chunks(sources: dict[str, list[_Source]], taken: dict[str, str],
                   skipped: list[tuple[str, str]]) -> tuple[list[Doc], int, int]:
    """The chunks of ``sources`` whose ids are free, and how many records were skipped:
    ``(chunks, records with no text, records whose id was taken)``.

    Ids are claimed in one fixed order, so a run and a clean build agree: document files
    first (their ids come from their names, so they never clash with each other), then
    record files, each in name order, and records in line order. A record any of whose
    chunk ids is taken (``taken``: chunk id -> the file that holds it, filled as ids are
    claimed) is skipped whole and named with the file and line that hold the id; so is a
    record with no text (it claims no id).
    """
    docs: list[Doc] = []
    empty = clashed = 0
    for rel in sorted(sources, key=lambda name: (_is_records(name), name)):
        for source in sources[rel]:
            if source.empty:
                empty += 1
                skipped.append((rel, f"{source.where}: no text; record skipped"))
                continue
            clash = next((d.id for d in source.chunks if d.id in taken), None)
            if clash is None:
                where = f"{rel} ({source.where})" if source.where else rel
                taken.update((d.id, where) for d in source.chunks)
                docs.extend(source.chunks)
                continue
            clashed += 1
            what = f"{source.where}: id {source.id!r}" if source.where else "its id"
            how = "" if clash in (source.id, f"{source.id}:0") else f" (chunk id {clash!r})"
            skipped.append((rel, f"{what}{how} is already used by {taken[clash]}; "
                                 + ("record skipped" if source.where else "file skipped")))
    return docs, empty, clashed


def _moved_ids(old_docs: list[Doc], plan: SyncPlan) -> list[tuple[str, str]]:
    """``(new id, new file)`` of the chunks of the files ``plan`` renames."""
    new_name = {old: new for new, old in plan.renamed.items()}
    return [(renamed_id(d.id, d.metadata[FILE_KEY], new_name[d.metadata[FILE_KEY]]),
             new_name[d.metadata[FILE_KEY]])
            for d in old_docs if d.metadata.get(FILE_KEY) in new_name]


def _ids_clash(old_docs: list[Doc], plan: SyncPlan, sources: dict[str, list[_Source]],
               skipped_before: Any) -> bool:
    """Whether an update must settle ids again: the last run skipped a record as a
    duplicate, or an id is held twice among the chunks kept, moved and made now."""
    if skipped_before:
        return True
    gone = set(plan.deleted) | set(plan.changed) | set(plan.renamed.values())
    ids = [d.id for d in old_docs if d.metadata.get(FILE_KEY) not in gone]
    ids += [i for i, _ in _moved_ids(old_docs, plan)]
    ids += [d.id for found in sources.values() for source in found for d in source.chunks]
    return len(set(ids)) < len(ids)


def _reread_records(plan: SyncPlan) -> tuple[SyncPlan, list[str]]:
    """``plan`` with every unchanged or renamed record file read again (renamed ones as
    new and deleted), and the files to read now; then `_unique_chunks` settles every
    record id in its fixed order, as a clean build would."""
    same = [f for f in plan.unchanged if _is_records(f)]
    renamed = {new: old for new, old in plan.renamed.items() if _is_records(new)}
    again = sorted(same + list(renamed))
    return SyncPlan(
        unchanged=[f for f in plan.unchanged if f not in same],
        changed=plan.changed + same,
        added=plan.added + list(renamed),
        deleted=plan.deleted + list(renamed.values()),
        renamed={n: o for n, o in plan.renamed.items() if n not in renamed},
    ), again


# ---------------------------------------------------------------------- building


def _build(docs: list[Doc], legs: _Legs, language: str, method: str, cache: bool, log: Log,
           progress: bool) -> Any:
    from ..bm25 import BM25Index
    from ..fusion import FusionSearcher
    from ..text import Analyzer

    bm25 = {"analyzer": Analyzer(language=language), "method": method}
    if legs.embedder is None and legs.sparse is None:
        lexical = BM25Index.from_docs(docs, show_progress=progress and len(docs) > 5000,
                                      **bm25)
        return FusionSearcher([lexical], names=["bm25"])
    store = folder_models.open_embedding_cache(log) \
        if cache and legs.embedder is not None else None
    cached = store.size(legs.embedder.model_id) if store is not None else 0
    dense = None if legs.embedder is None else {"cache": store, "batch_size": 64}
    hybrid = FusionSearcher.hybrid([d.text for d in docs], legs.embedder, [d.id for d in docs],
                                   [d.metadata for d in docs], bm25=bm25, dense=dense,
                                   sparse=legs.sparse, show_progress=progress)
    if store is not None:
        folder_models.close_embedding_cache(store, cached, log)
    return hybrid


def _update(old: Any, plan: SyncPlan, new_docs: list[Doc], legs: _Legs, cache: bool,
            found: _Found, log: Log, progress: bool) -> Any:
    """Apply ``plan`` to the loaded indexes: drop, move, add; vectors reused by text."""
    import numpy as np

    lexical, dense, sparse = old.leg("bm25"), old.leg("dense"), old.leg("sparse")
    gone_files = set(plan.deleted) | set(plan.changed) | set(plan.renamed.values())
    old_docs = [d for d in lexical.docs if d.metadata.get(FILE_KEY) in gone_files]
    reuse: dict[str, Any] = {}
    if dense is not None:
        for d in old_docs:
            if d.id in dense:
                reuse.setdefault(d.text, dense.get_vector(d.id))
    reuse_sparse: dict[str, dict[str, float]] = {}
    if sparse is not None:
        kept = [d for d in old_docs if d.id in sparse]
        for d, vector in zip(kept, sparse.get_vectors([d.id for d in kept])):
            reuse_sparse.setdefault(d.text, vector)
    new_name = {old_name: new for new, old_name in plan.renamed.items()}
    moved = [_moved(d, new_name[d.metadata[FILE_KEY]], found) for d in old_docs
             if d.metadata.get(FILE_KEY) in new_name]
    additions = moved + new_docs
    stale = [d.id for d in old_docs]
    if stale:
        for leg in old.searchers:
            leg.delete([i for i in stale if i in leg])
    if additions:
        lexical.add_docs(additions)
        if dense is not None:
            missing = [d for d in additions if d.text not in reuse]
            if missing:
                fresh = _encode([d.text for d in missing], legs.embedder, cache, log, progress)
                for d, row in zip(missing, fresh):
                    reuse.setdefault(d.text, row)
            dense.add_vectors(np.stack([reuse[d.text] for d in additions]), docs=additions)
        if sparse is not None:
            missing_texts = list(dict.fromkeys(d.text for d in additions
                                               if d.text not in reuse_sparse))
            if missing_texts:
                reuse_sparse.update(zip(missing_texts, _encode_sparse(missing_texts,
                                                                      legs.sparse, progress)))
            sparse.add_vectors([reuse_sparse[d.text] for d in additions],
                               [d.id for d in additions], [d.metadata for d in additions],
                               texts=[d.text for d in additions])
    return old  # its legs were edited in place; its saved fusion settings stay as they were


def _moved(doc: Doc, target: str, found: _Found) -> Doc:
    """``doc`` of a renamed file, under its new name (id, file, path, image, parent)."""
    meta = dict(doc.metadata)
    old_name = doc.metadata[FILE_KEY]
    meta[FILE_KEY] = target
    if "path" in meta:
        meta["path"] = str(found.paths[target])
    if meta.get("type") == "image":
        meta["image"] = target
    if isinstance(meta.get(PARENT_ID_KEY), str):
        meta[PARENT_ID_KEY] = renamed_id(meta[PARENT_ID_KEY], old_name, target)
    return Doc(renamed_id(doc.id, old_name, target), doc.text, meta)


def _encode_sparse(texts: list[str], embedder: Any, progress: bool) -> list[dict[str, float]]:
    """The sparse vectors of ``texts``, 32 per model call, with a progress bar."""
    out: list[dict[str, float]] = []
    bar = progress_bar(total=len(texts), show=progress, desc="Encoding (sparse)",
                       unit="chunk", terminal_only=True)
    try:
        for s in range(0, len(texts), 32):
            out.extend(embedder.embed_documents(texts[s:s + 32]))
            bar.update(min(32, len(texts) - s))
    finally:
        bar.close()
    return out


def _encode(texts: list[str], embedder: Any, cache: bool, log: Log, progress: bool) -> Any:
    from ..vector import embed_texts

    store = folder_models.open_embedding_cache(log) if cache else None
    cached = store.size(embedder.model_id) if store is not None else 0
    vectors = embed_texts(embedder, texts, cache=store, batch_size=64, show_progress=progress)
    if store is not None:
        folder_models.close_embedding_cache(store, cached, log)
    return vectors


def _save(searcher: Any, out: Path, ingest: dict[str, Any]) -> None:
    try:
        searcher.save(out, extra_settings={"ingest": ingest})
    except OSError as exc:
        raise OSError(f"cannot write the index to {out}: {exc.strerror or exc}") from None
