"""`FolderIndex`: a folder of documents as a hybrid index on disk, built, updated and searched.

The folder index is what the ``hybrid-retrievers index`` command writes and ``search`` and
``serve`` read; this class is that format and its logic, for Python and the command line
alike (the CLI only parses arguments and prints).

* `FolderIndex.build` reads a folder (or one file), chunks it (`StructuredChunker`) and
  saves a BM25 + dense (+ learned sparse) `FusionSearcher` with an ``"ingest"`` block of
  settings (`folder_sync`); over an existing index built with the same settings it
  updates it instead. `FolderIndex.update` does the same later, with the recorded
  source folder and settings: unchanged files are only hashed, changed, new, renamed and
  deleted files are applied, vectors are reused by text.
* `FolderIndex.open` loads an index for queries, reading its manifest once and loading
  no model: each query encoder loads before the first search whose leg has a weight
  above 0 (`FolderIndex.load_encoders`).
* `FolderIndex.search` returns `FolderResult`s: the file, section, span and page of each
  chunk, its best passage with the query's terms marked, the fused score and each leg's
  rank and score, and the parent, rerank or image-route provenance when there is one;
  with ``explain=True`` also BM25's per-term breakdown, computed once per hit.

An index with images (image descriptions in the text legs, or CLIP vectors in
``images/clip``, see `folder_images`) is searched by a `MultimodalSearcher`: the ``text``
route is the fused searcher over the non-image documents, ``descriptions`` the same
searcher over the image descriptions, ``images`` CLIP text->image, ``image`` CLIP
image->image for an image query and ``described_image`` the query image's description
(with a describer), fused by RRF with the visual-intent weights. Its results add
``type`` and ``image`` for an image and ``routes``: the rank and score of each route that
found the hit. An index without images is searched by the fusion alone.

One `FolderIndex` may serve several threads (the MCP server's): searches share the
loaded indexes read-only, and the lazy state (query encoders, parents, reranker) and
`update` are guarded by a lock.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..images.loading import DEFAULT_MAX_PIXELS
from ..text.splitting import START_INDEX_KEY
from ..timeout import DEFAULT_LLM_TIMEOUT
from ..types import Hit
from . import folder_models
from .chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from .chunks import END_INDEX_KEY, FILE_KEY, SECTION_KEY, parents_from_chunks
from .folder_sync import SOURCE_KEY, IndexReport, sync_folder
from .passages import best_passage, brackets

__all__ = ["FolderIndex", "FolderResult", "IndexReport"]

Log = Callable[[str], Any]
_EXTRAS = ("page", "page_end", "title")


@dataclass(frozen=True)
class FolderResult:
    """One search result of a `FolderIndex` (`as_dict`: the record ``search --json``
    prints and the MCP server returns).

    ``legs`` maps every leg of the index to ``{"rank", "score"}`` or None (the leg did
    not find this chunk); ``routes`` likewise for the image routes of an index with
    images; ``parent`` (``matched_chunks``, ``n_chunks``) and ``rerank`` (``model``,
    ``score``, ``previous_rank``) say how the result was made when it was;
    ``explanation`` is BM25's `Explanation` (with ``explain=True``); ``hit`` the
    searcher's own `Hit`.
    """

    id: str
    rank: int
    score: float
    file: str
    section: str
    start: int | None
    end: int | None
    text: str
    passage: str
    mode: str | None
    legs: dict[str, dict[str, Any] | None]
    extras: dict[str, Any] = field(default_factory=dict)
    """``page``, ``page_end``, ``title`` when the chunk's metadata has them."""
    type: str | None = None
    image: str | None = None
    routes: dict[str, dict[str, Any]] | None = None
    route_weights: dict[str, float] | None = None
    visual_words: list[str] | None = None
    query_image_description: str | None = None
    rerank: dict[str, Any] | None = None
    parent: dict[str, Any] | None = None
    explanation: Any = None
    hit: Hit | None = None

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON data (absent provenance left out)."""
        out: dict[str, Any] = {"id": self.id, "rank": self.rank, "score": self.score,
                               "file": self.file, "section": self.section,
                               "start": self.start, "end": self.end, **self.extras}
        for key in ("rerank", "routes", "route_weights", "visual_words",
                    "query_image_description", "type", "image", "parent"):
            value = getattr(self, key)
            if value:
                out[key] = value
        out.update(mode=self.mode, legs=self.legs, passage=self.passage, text=self.text)
        if self.explanation is not None:
            out["explanation"] = self.explanation.as_dict()
        return out


class FolderIndex:
    """A folder of documents indexed for hybrid search, on disk (see the module doc).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from hybrid_retrievers.ingest import FolderIndex
        >>> from hybrid_retrievers.models import HashingEmbedder
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "notes").mkdir()
        >>> _ = (root / "notes" / "proxy.md").write_text("# Proxy\\n\\nSet HTTPS_PROXY.\\n")
        >>> _ = (root / "notes" / "bread.txt").write_text("Yeast makes bread rise.\\n")
        >>> index = FolderIndex.build(root / "notes", root / "idx",
        ...                           model=HashingEmbedder(64), sparse=False)
        >>> [(r.file, r.legs["bm25"]["rank"]) for r in index.search("yeast bread", k=1)]
        [('bread.txt', 1)]
        >>> _ = (root / "notes" / "wings.md").write_text("Wings make lift.\\n")
        >>> (root / "notes" / "bread.txt").unlink()
        >>> index.update().plan.summary()
        '1 unchanged, 0 changed, 1 new, 0 renamed, 1 deleted'
        >>> again = FolderIndex.open(root / "idx", model=HashingEmbedder(64))
        >>> top = again.search("lift", k=1, explain=True)[0]
        >>> top.file, top.explanation.score > 0
        ('wings.md', True)

    Args:
        index_dir: the index folder.
        searcher: its loaded `FusionSearcher` (legs named ``bm25``, ``dense``, ``sparse``).
        ingest: its ``"ingest"`` settings.
        images: its CLIP `VectorIndex`, or None.
        reranker: a cross-encoder name or path (or a `Reranker`) for ``rerank=True``.
        describer: describes a query image (``describer(image, prompt) -> str``).
        describe_timeout: seconds to wait for that description.
        label: how errors name the index (default: the folder as given; the MCP server
            gives its bare name, as its clients need not know where it lives).

    Use `open` or `build` rather than the constructor.
    """

    def __init__(self, index_dir: str | os.PathLike[str], searcher: Any,
                 ingest: Mapping[str, Any], *, images: Any = None, reranker: Any = None,
                 describer: Any = None, describe_timeout: float | None = None,
                 label: str | None = None, report: IndexReport | None = None) -> None:
        self.folder = Path(index_dir)
        self.label = label or str(index_dir)
        self.describer, self.describe_timeout = describer, describe_timeout
        self.report = report
        """What the `build` or `update` that made this index did (None when opened)."""
        self.loads: list[tuple[str, float]] = []
        self.notes: list[str] = []  # a query encoder that fell back to torch, and why
        """``(leg, seconds)`` of each query encoder loaded (see `load_encoders`)."""
        self._reranker_spec = reranker
        self._reranker: Any = None
        self._lock = threading.RLock()
        self._set(searcher, dict(ingest), images)

    def _set(self, searcher: Any, ingest: dict[str, Any], images: Any) -> None:
        lexical = searcher.leg("bm25")
        names = tuple(str(n) for n in searcher.names)
        if lexical is None:  # passages, explain and the chunk list need BM25's
            raise ValueError(f"{self.label} has no BM25 leg (legs: {', '.join(names)}); "
                             "open an index written by FolderIndex.build (hybrid-retrievers "
                             "index)")
        self.fused, self.ingest, self.images = searcher, ingest, images
        self.lexical, self.names = lexical, names
        self.multimodal = images is not None or _has_descriptions(ingest, lexical)
        self._parents: Any = None

    # ------------------------------------------------------------------ open and build

    @classmethod
    def open(cls, index_dir: str | os.PathLike[str], *, model: Any = None,
             sparse_model: Any = None, clip_model: Any = None, reranker: Any = None,
             describer: Any = None, describe_timeout: float | None = None,
             label: str | None = None, mmap: bool = False) -> FolderIndex:
        """Load the index at ``index_dir`` for queries; its manifest is read once and no
        model is loaded (see `load_encoders`).

        ``model``, ``sparse_model`` and ``clip_model`` replace the recorded models (a
        name or folder: the same model moved; or the embedder object itself, for an
        index built with one). A folder written by an older ``index`` (a bare
        `BM25Index`) opens as a one-leg fusion.

        Raises:
            FileNotFoundError: no index at ``index_dir``.
            IndexFormatError: a corrupt, foreign or tampered folder, naming it.
            ValueError: a leg whose model is neither recorded nor given.
        """
        from ..persistence import IndexFormatError
        from .folder_images import open_clip_index

        folder = Path(index_dir)
        name = label or str(index_dir)
        if not (folder / "manifest.json").is_file():
            raise FileNotFoundError(
                f"no index at {name}: " + ("the folder does not exist" if not folder.exists()
                                           else "it holds no manifest.json")
                + "; build one with FolderIndex.build (or hybrid-retrievers index)")
        try:
            searcher, ingest = _load(folder, name, model, sparse_model, mmap)
            images = open_clip_index(folder, ingest, clip_model)
            return cls(folder, searcher, ingest, images=images, reranker=reranker,
                       describer=describer, describe_timeout=describe_timeout, label=label)
        except (IndexFormatError, ValueError, ImportError):
            raise
        except Exception as exc:  # a tampered folder must not end deep in numpy
            raise IndexFormatError(
                f"{name!r} cannot be read as a hybrid-retrievers index "
                f"({type(exc).__name__}: {exc}); rebuild it with FolderIndex.build "
                "(hybrid-retrievers index)") from None

    @classmethod
    def build(
        cls, source: str | os.PathLike[str], index_dir: str | os.PathLike[str], *,
        model: Any = None, sparse_model: Any = None, bm25_only: bool = False,
        sparse: bool = True, chunk_size: int = DEFAULT_CHUNK_SIZE,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP, whole_files: bool = False,
        language: str = "english", method: str = "lucene", rebuild: bool = False,
        cache: bool = True, describer: Any = None,
        describe_timeout: float | None = DEFAULT_LLM_TIMEOUT, describe_workers: int = 1,
        clip_model: Any = None, max_image_pixels: int = DEFAULT_MAX_PIXELS,
        reranker: Any = None, log: Log | None = None, warn: Log | None = None,
        progress: bool = False,
    ) -> FolderIndex:
        """Index the folder (or file) ``source`` into ``index_dir``, as
        ``hybrid-retrievers index`` does; an index already there, built with the same
        settings, is updated (``rebuild=True``: start over). `report` says what was done.

        Args:
            model: the dense model: a sentence-transformers name or folder (default: the
                local all-MiniLM-L6-v2; none installed: BM25 only, said to ``warn``) or
                an embedder object (``embed_documents``, ``embed_query``, ``model_id``).
            sparse_model: the learned sparse (SPLADE) model, likewise (default: the
                local splade-tiny when installed); ``sparse=False`` leaves the leg out.
            bm25_only: no dense or sparse leg.
            chunk_size, chunk_overlap: tokens per chunk and of overlap, counted with the
                model's tokenizer; ``whole_files``: one chunk per file or record.
            language, method: the BM25 analyzer's language and variant.
            cache: read and fill the on-disk embedding caches (`folder_models`).
            describer, describe_timeout, describe_workers, clip_model,
                max_image_pixels: the image routes (see `folder_images`).
            log, warn: callables given each progress line and each warning (a leg left
                out); default: silent (the report holds the skipped files).
            progress: show progress bars on a terminal.

        Raises:
            SourceError: ``source`` holds no file to index, or one given file is unreadable.
            ValueError: every file was skipped; a bad option, naming it.
        """
        searcher, ingest, images, report = sync_folder(
            source, index_dir, model=model, sparse_model=sparse_model, bm25_only=bm25_only,
            sparse=sparse, chunk_size=chunk_size, chunk_overlap=chunk_overlap,
            whole_files=whole_files, language=language, method=method, rebuild=rebuild,
            cache=cache, describer=describer, describe_timeout=describe_timeout,
            describe_workers=describe_workers, clip_model=clip_model,
            max_image_pixels=max_image_pixels, log=log or _quiet, warn=warn or _quiet,
            progress=progress)
        return cls(index_dir, searcher, ingest, images=images, reranker=reranker,
                   report=report)

    def update(self, source: str | os.PathLike[str] | None = None, *, describer: Any = None,
               cache: bool = True, log: Log | None = None, warn: Log | None = None,
               progress: bool = False) -> IndexReport:
        """Bring the index up to date with its source folder (``source``: another place
        for it; default: the one recorded at build), with the recorded settings and this
        index's models; saved at once, and searched from now on. Images keep their
        descriptions unless a ``describer`` is given for new or changed ones.

        Raises:
            ValueError: the index records no source folder and none is given.
        """
        with self._lock:
            where = source if source is not None else self.ingest.get(SOURCE_KEY)
            if where is None:
                raise ValueError(f"{self.label} records no source folder (an index built "
                                 "before FolderIndex); pass update(source=FOLDER)")
            ingest = self.ingest
            images = ingest.get("images") if isinstance(ingest.get("images"), dict) else {}
            dense, sparse = self.fused.leg("dense"), self.fused.leg("sparse")
            searcher, ingest, clip, report = sync_folder(
                where, self.folder, model=ingest.get("model"),
                sparse_model=ingest.get("sparse_model"),
                chunk_size=ingest.get("chunk_size") or DEFAULT_CHUNK_SIZE,
                chunk_overlap=ingest.get("chunk_overlap") or 0,
                whole_files=bool(ingest.get("whole_files")),
                language=ingest.get("language", "english"),
                method=ingest.get("method", "lucene"), cache=cache, describer=describer,
                describe_timeout=self.describe_timeout,
                clip_model=getattr(self.images, "embedder", None) or images.get("clip_model"),
                log=log or _quiet, warn=warn or _quiet, progress=progress,
                reuse=(getattr(dense, "embedder", None), getattr(sparse, "embedder", None)))
            self._set(searcher, ingest, clip)
            self.report = report
            return report

    # ------------------------------------------------------------------ search

    @property
    def source(self) -> Path | None:
        """The folder (or file) the index was built from, as recorded (None: not recorded)."""
        where = self.ingest.get(SOURCE_KEY)
        return Path(where) if isinstance(where, str) else None

    @property
    def takes_query_images(self) -> bool:
        """Whether a query image can be searched: CLIP vectors, or a describer."""
        return self.images is not None or self.describer is not None

    def __len__(self) -> int:
        """Chunks in the index."""
        return len(self.lexical)

    def weights_for(self, weights: Mapping[str, float] | Sequence[float] | None
                    ) -> list[float] | None:
        """``weights`` as one weight per leg: a mapping ``{leg: weight}`` (legs not
        named keep 1) or a sequence in leg order.

        Raises:
            ValueError: a leg the index does not have, or a sequence of another length.
        """
        if weights is None:
            return None
        if isinstance(weights, Mapping):
            unknown = [name for name in weights if name not in self.names]
            if unknown:
                raise ValueError(f"weights name legs {unknown} that {self.label} does not "
                                 f"have; its legs: {list(self.names)}")
            return [float(weights.get(name, 1.0)) for name in self.names]
        if len(weights) != len(self.names):
            raise ValueError(f"weights must give one weight per leg {list(self.names)}, "
                             f"got {len(weights)}")
        return [float(w) for w in weights]

    def searcher(self, mode: str | None = None, weights: Any = None) -> Any:
        """The fused searcher with this call's mode and weights (the saved settings
        otherwise kept)."""
        changed = {key: value for key, value in
                   (("mode", mode), ("weights", self.weights_for(weights)))
                   if value is not None}
        # max_workers=1: a searcher made per call runs its legs inline, with no thread pool
        return self.fused.replace(**changed, max_workers=1) if changed else self.fused

    def hits(self, query: str | None, k: int = 5, *, mode: str | None = None,
             weights: Any = None, filter: Mapping[str, Any] | None = None,
             parents: bool = False, rerank: bool = False, image: Any = None) -> list[Hit]:
        """The searcher's own hits for `search` (without the per-result records)."""
        self.load_encoders(self.weights_for(weights))
        searcher = self.searcher(mode, weights)
        if parents:
            from ..parent import ParentChildSearcher

            searcher = ParentChildSearcher(searcher, self._parent_store())
        asked: Any = query
        if image is not None or self.multimodal:
            searcher, asked = self._multimodal(searcher, query, image)
        if rerank:
            from ..rerank import RerankingSearcher

            if not isinstance(asked, str):
                raise ValueError("rerank needs the query text (a cross-encoder reads text)")
            searcher = RerankingSearcher(searcher, self._rerank(), fetch_k=max(20, k))
        return searcher.search(asked, k, filter=filter)  # type: ignore[no-any-return]

    def search(self, query: str | None, k: int = 5, *, mode: str | None = None,
               weights: Mapping[str, float] | Sequence[float] | None = None,
               filter: Mapping[str, Any] | None = None, parents: bool = False,
               rerank: bool = False, image: Any = None, explain: bool = False,
               mark: Callable[[str], str] = brackets) -> list[FolderResult]:
        """The top ``k`` chunks (or parents, or images) for ``query`` and/or ``image``.

        Args:
            mode: a fusion mode for this call (default: the index's).
            weights: per leg for this call (see `weights_for`); 0 switches a leg off
                and its model is then never loaded.
            filter: metadata equality, e.g. ``{"file": "README.md"}``.
            parents: return the sections (or files) the matching chunks belong to.
            rerank: rerank the top 20 with the index's ``reranker``.
            image: a query image (path, bytes, data URI or `LoadedImage`).
            explain: attach BM25's per-term `Explanation` to each result (computed
                once per hit).
            mark: how the passage marks a matched term.
        """
        found = self.hits(query, k, mode=mode, weights=weights, filter=filter,
                          parents=parents, rerank=rerank, image=image)
        return [self.result(hit, query or "", mark=mark, explain=explain) for hit in found]

    def load_encoders(self, weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
        """Load the query encoders of the legs a search with ``weights`` asks (weight
        above 0) that are not loaded yet; ``(leg, seconds)`` of each one loaded, also
        added to `loads`.

        `open` loads no model: each one loads here, before the first query that needs
        it, so a BM25-only index or a search weighting the model legs 0 never imports
        torch, and the command line can say what the load cost (``serve`` keeps the
        models loaded). A leg whose query encoder the build exported loads it on ONNX
        Runtime, without torch (`hybrid_retrievers.models.onnx_query`); one that loads
        its model instead adds to `notes` why and how to get the export.
        """
        plan = self.fused.plan.weights
        asked = weights if weights is not None else (None if callable(plan) else plan)
        loaded: list[tuple[str, float]] = []
        with self._lock:
            for i, (name, leg) in enumerate(zip(self.names, self.fused.searchers)):
                encoder = getattr(leg, "embedder", None)
                if (encoder is None or getattr(encoder, "is_loaded", True)
                        or (asked is not None and not asked[i] > 0)):
                    continue
                start = time.perf_counter()
                load_onnx = getattr(encoder, "load_onnx", None)  # torch-free: models.onnx_query
                if not (callable(load_onnx) and load_onnx()):
                    folder_models.quiet_transformers()
                    encoder.warm_up()
                loaded.append((name, time.perf_counter() - start))
                if getattr(encoder, "runtime", None) != "onnx":
                    from ..models.onnx_query import torch_query_note

                    self.notes.append(torch_query_note(name, encoder, self.ingest))
            self.loads.extend(loaded)
        return loaded

    def _multimodal(self, searcher: Any, query: str | None, image: Any) -> tuple[Any, Any]:
        """The `MultimodalSearcher` over ``searcher`` and the CLIP index, and the query."""
        from ..fusion import ImageQuery, MultimodalSearcher

        if image is not None and not self.takes_query_images:
            raise ValueError(f"image: {self.label} holds no CLIP image vectors (index with "
                             "--clip-model) and no describer (--describer) was given to "
                             "describe the query image (from Python: FolderIndex.build("
                             "clip_model=...), FolderIndex.open(describer=...))")
        options: dict[str, Any] = {"images": self.images, "describer": self.describer}
        if self.describe_timeout is not None:
            options["timeout"] = self.describe_timeout
        multimodal = MultimodalSearcher.from_index(searcher, **options)
        if image is None:
            return multimodal, query
        return multimodal, ImageQuery(text=query, image=image)

    def _parent_store(self) -> Any:
        with self._lock:
            if self._parents is None:
                from ..parent import ParentStore

                store = ParentStore()
                store.put_many(parents_from_chunks(self.lexical.docs))
                self._parents = store
            return self._parents

    def _rerank(self) -> Any:
        if self._reranker_spec is None:
            raise ValueError("reranking needs a cross-encoder: pass reranker= (--rerank MODEL)")
        from ..rerank import Reranker

        with self._lock:
            if self._reranker is None:
                spec = self._reranker_spec
                self._reranker = Reranker.cross_encoder(spec) \
                    if isinstance(spec, (str, os.PathLike)) else spec
            return self._reranker

    # ------------------------------------------------------------------ results

    def result(self, hit: Hit, query: str, *, mark: Callable[[str], str] = brackets,
               explain: bool = False) -> FolderResult:
        """The `FolderResult` of one of `hits`' hits (``explain``: with BM25's breakdown)."""
        meta = hit.doc.metadata
        info: dict[str, Any] = {}
        explanation = dict(hit.explanation or {})
        if "rerank" in explanation:
            rerank = explanation["rerank"]
            info["rerank"] = {"model": rerank.get("model"), "score": rerank.get("score"),
                              "previous_rank": rerank.get("previous_rank")}
            explanation = dict(rerank.get("previous_explanation") or {})
        if "multimodal" in explanation:
            explanation = _routes(info, explanation)
        file = meta.get(FILE_KEY, meta.get("path", hit.id))
        section = meta.get(SECTION_KEY, "")
        text = hit.doc.text
        if meta.get("type") == "image":
            info.update(type="image", image=meta.get("image", file))
            section = ""
            if hit.id in self.lexical:  # found by CLIP alone: show its description
                text = self.lexical.get(hit.id).text
        if "parent" in explanation:
            parent = explanation["parent"]
            children = parent.get("children") or [{}]
            info["parent"] = {"matched_chunks": [c.get("id") for c in children],
                              "n_chunks": parent.get("n_children")}
            explanation = dict(children[0].get("explanation") or {})
        fusion = explanation.get("fusion", {})
        why = self.lexical.explain(query, hit.id) \
            if explain and query and hit.id in self.lexical else None
        return FolderResult(
            id=hit.id, rank=hit.rank, score=hit.score, file=file, section=section,
            start=meta.get(START_INDEX_KEY), end=meta.get(END_INDEX_KEY), text=text,
            passage=best_passage(text, query or "", self.lexical.analyzer, mark=mark),
            mode=fusion.get("mode"), legs=self._legs(fusion),
            extras={key: meta[key] for key in _EXTRAS if key in meta},
            explanation=why, hit=hit, **info)

    def _legs(self, fusion: Mapping[str, Any]) -> dict[str, dict[str, Any] | None]:
        legs: dict[str, dict[str, Any] | None] = dict.fromkeys(self.names)
        for source in fusion.get("sources", []):
            legs[str(source["source"])] = {"rank": source["rank"], "score": source["score"]}
        return legs

    def explain(self, query: str, doc_id: str) -> dict[str, Any]:
        """Why ``doc_id`` (a chunk id) scored what it did: BM25's per-term breakdown and,
        with a learned sparse leg, its per-token one (each computed once); plus where
        each leg ranks it.

        Raises:
            KeyError: no such chunk, naming the index.
        """
        if doc_id not in self.lexical:
            raise KeyError(f"no chunk {doc_id!r} in {self.label}")
        bm25 = self.lexical.explain(query, doc_id)
        out: dict[str, Any] = {"id": doc_id, "bm25": bm25.as_dict(), "bm25_text": str(bm25)}
        sparse = self.fused.leg("sparse")
        if sparse is not None and doc_id in sparse:
            why = sparse.explain(query, doc_id)
            out["sparse"], out["sparse_text"] = why.as_dict(), str(why)
        self.load_encoders()
        hits = self.fused.search(query, k=max(50, self.fused.fetch_k or 0))
        found = next((h for h in hits if h.id == doc_id), None)
        out["fused_rank"] = found.rank if found else None
        out["legs"] = self._legs((found.explanation or {}).get("fusion", {})) if found \
            else dict.fromkeys(self.names)
        return out


def _quiet(message: str) -> None:
    """The default ``log`` and ``warn``: say nothing."""


def _has_descriptions(ingest: Mapping[str, Any], lexical: Any) -> bool:
    """Whether the text legs hold image descriptions: the count the ``"images"`` settings
    record, else (an index written before they did) a look at every chunk."""
    images = ingest.get("images")
    if isinstance(images, Mapping) and isinstance(images.get("descriptions"), int):
        return images["descriptions"] > 0
    return any(d.metadata.get("type") == "image" for d in lexical.docs)


def _routes(info: dict[str, Any], explanation: dict[str, Any]) -> dict[str, Any]:
    """Put the multimodal routes that found a hit into ``info``; return the text legs'
    explanation (of the first route that went through the fused text searcher)."""
    multimodal = explanation["multimodal"]
    sources = explanation.get("fusion", {}).get("sources", [])
    info["routes"] = {str(s["source"]): {"rank": s["rank"], "score": s["score"]}
                      for s in sources}
    info["route_weights"] = multimodal.get("weights", {})
    if multimodal.get("visual_words"):
        info["visual_words"] = multimodal["visual_words"]
    if multimodal.get("query_image_description"):
        info["query_image_description"] = multimodal["query_image_description"]
    inner = next((s.get("explanation") for s in sources
                  if s["source"] in ("text", "descriptions", "described_image")
                  and s.get("explanation")), None)
    return dict(inner or {})


def _load(folder: Path, name: str, model: Any, sparse_model: Any,
          mmap: bool) -> tuple[Any, dict[str, Any]]:
    """``(FusionSearcher, ingest settings)`` of an index folder (``name``: how errors
    call it).

    The manifest's kind chooses the loader: a folder written by an older ``index`` (a
    bare `BM25Index`, kind ``"bm25"``) loads as a one-leg fusion; any kind but that and
    ``"fusion"`` is refused, naming it. Nothing is loaded or imported for the models:
    each one loads at its leg's first query (the saved manifests answer the dimension
    and model identity).
    """
    from ..bm25 import BM25Index
    from ..fusion import FusionSearcher
    from ..fusion.saving import read_fusion
    from ..persistence import IndexFormatError, index_kind

    kind = index_kind(folder)
    if kind == "bm25":
        return FusionSearcher([BM25Index.load(folder, mmap=mmap)], names=["bm25"]), {}
    if kind != "fusion":
        raise IndexFormatError(
            f"{name} holds a {kind!r} index, not a folder index (a fusion written by "
            "FolderIndex.build or hybrid-retrievers index, or the bare BM25 index older "
            "releases wrote); open it with its own class, or build a folder index")
    saved = read_fusion(folder)
    ingest = saved[0].get("ingest") if isinstance(saved[0].get("ingest"), dict) else {}
    kinds = {kind for kind, _, _ in saved[1]}
    embedder = sparse = None
    if "vector" in kinds:
        embedder = _query_model(folder, model, ingest.get("model"), "dense", "model",
                                folder_models.make_embedder)
    if "sparse" in kinds:
        sparse = _query_model(folder, sparse_model, ingest.get("sparse_model"),
                              "learned sparse", "sparse_model",
                              lambda name: folder_models.make_sparse_embedder(
                                  name, ingest.get("sparse_model_id")))
    embedder, sparse = (_onnx_queries(e, ingest, leg)
                        for e, leg in ((embedder, "dense"), (sparse, "sparse")))
    return FusionSearcher.from_saved(folder, saved, embedder, sparse_embedder=sparse,
                                     mmap=mmap), ingest


def _onnx_queries(encoder: Any, ingest: dict[str, Any], leg: str) -> Any:
    """``encoder`` behind its exported query encoder, when the build recorded one for it
    (``"query_encoders"``, same model): the leg then encodes queries on ONNX Runtime,
    without torch (`hybrid_retrievers.models.onnx_query.OnnxQueryPath`)."""
    records = ingest.get("query_encoders")
    record = records.get(leg) if isinstance(records, dict) else None
    if encoder is None or not isinstance(record, dict) or not record.get("folder") \
            or record.get("model_id") != getattr(encoder, "model_id", None):
        return encoder
    from ..models.onnx_query import OnnxQueryPath

    return OnnxQueryPath(encoder, record["folder"])


def _query_model(folder: Path, given: Any, recorded: Any, leg: str, argument: str,
                 make: Callable[[str], Any]) -> Any:
    """The query encoder of one leg: ``given`` (an object, or a name that replaces the
    recorded one) or the recorded model, made but not loaded."""
    name = given if given is not None else recorded
    if not name:
        raise ValueError(f"{folder} holds a {leg} leg but records no model; pass "
                         f"{argument}= (--{argument.replace('_', '-')})")
    return make(str(name)) if isinstance(name, (str, os.PathLike)) else name
