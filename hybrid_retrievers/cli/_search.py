"""Querying an index folder written by ``index``: one seam for ``search`` and ``serve``.

`LoadedIndex` loads the folder once (the fused searcher, its model, the parents rebuilt
from the chunks) and answers queries with the fusion mode and weights, filter, parent
and rerank choices of one call; `LoadedIndex.result` turns a hit into the record both
the command line and the MCP server show: file, section, span, page, the best passage
with the query's terms marked, the fused score, each leg's rank and score, and the
parent or rerank provenance when there is one.

An index with images (image descriptions in the text legs, or CLIP vectors in
``images/clip``, see ``_images``) is searched by a `MultimodalSearcher`: the ``text``
route is the fused searcher over the non-image documents, ``descriptions`` the same
searcher over the image descriptions, ``images`` CLIP text->image, ``image`` CLIP
image->image for an image query and ``described_image`` the query image's description
(with a describer), fused by RRF with the visual-intent weights (visual words such as
"diagram" or "foto" lift the image routes). Its records add ``type`` and ``image`` for an
image and ``routes``: the rank and score of each route that found the hit. An index
without images is searched exactly as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..fusion import FusionMode
from ..ingest import END_INDEX_KEY, FILE_KEY, SECTION_KEY, parents_from_chunks
from ..text.splitting import START_INDEX_KEY
from ..types import Hit
from ._passages import best_passage, brackets
from ._index import load_index

MODES = tuple(m.value for m in FusionMode)


def parse_weights(text: str | None, names: tuple[Any, ...]) -> list[float] | None:
    """``"bm25=1,dense=0.5"`` as one weight per leg (legs not named keep 1).

    Raises:
        ValueError: naming the bad part and the legs the index has.
    """
    if not text:
        return None
    weights = dict.fromkeys(map(str, names), 1.0)
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in weights:
            raise ValueError(f"--weights expects LEG=WEIGHT[,LEG=WEIGHT] with LEG one of "
                             f"{list(weights)}, got {part!r}")
        try:
            weights[name] = float(value)
        except ValueError:
            raise ValueError(f"--weights: {value!r} for {name} is not a number") from None
    return list(weights.values())


def parse_filters(items: list[str] | None) -> dict[str, Any] | None:
    """``["file=README.md", "page=3"]`` as an equality filter (numbers stay numbers)."""
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--filter expects KEY=VALUE, got {item!r}")
        out[key.strip()] = int(value) if value.strip().lstrip("-").isdigit() else value
    return out


class LoadedIndex:
    """An index folder loaded for queries (see the module doc).

    Args:
        folder: the folder ``index`` wrote (or an older bare BM25 index).
        model: replaces the recorded dense model (the same model at another path).
        sparse_model: replaces the recorded SPLADE model (likewise).
        reranker: a cross-encoder name or path for `search`'s ``rerank=True``.
        label: how errors name the index (default: the folder as given; the MCP server
            gives its bare name, as its clients need not know where it lives).
    """

    def __init__(self, folder: Path, *, model: str | None = None,
                 sparse_model: str | None = None, reranker: str | None = None,
                 clip_model: str | None = None, describer: Any = None,
                 describe_timeout: float | None = None, label: str | None = None) -> None:
        from ._images import open_clip_index

        self.folder = folder
        self.label = label or str(folder)
        self.fused, self.ingest = load_index(folder, model, sparse_model=sparse_model,
                                             onnx_queries=True)
        self.lexical = self.fused.leg("bm25")
        self.names = tuple(str(n) for n in self.fused.names)
        if self.lexical is None:  # passages, explain and the chunk list need BM25's
            raise ValueError(f"{folder} has no BM25 leg (legs: {', '.join(self.names)}); "
                             "search an index written by the index command")
        self._parents: Any = None
        self._reranker_name = reranker
        self._reranker: Any = None
        self.loads: list[tuple[str, float]] = []  # (leg, seconds): see `load_encoders`
        self.notes: list[str] = []  # a query encoder that fell back to torch, and why
        self.images = open_clip_index(folder, self.ingest, clip_model)
        self.describer, self.describe_timeout = describer, describe_timeout
        self.multimodal = self.images is not None or any(
            d.metadata.get("type") == "image" for d in self.lexical.docs)

    @property
    def takes_query_images(self) -> bool:
        """Whether a query image can be searched: CLIP vectors, or a describer."""
        return self.images is not None or self.describer is not None

    def searcher(self, mode: str | None = None, weights: list[float] | None = None) -> Any:
        """The fused searcher with this call's mode and weights."""
        changed = {key: value for key, value in (("mode", mode), ("weights", weights))
                   if value is not None}
        # max_workers=1: a searcher made per call runs its legs inline, with no thread pool
        return self.fused.replace(**changed, max_workers=1) if changed else self.fused

    def search(self, query: str | None, k: int, *, mode: str | None = None,
               weights: list[float] | None = None, filter: Mapping[str, Any] | None = None,
               parents: bool = False, rerank: bool = False, image: Any = None) -> list[Hit]:
        """The top ``k`` chunks (or parents, or images) for ``query`` and/or ``image``."""
        self.load_encoders(weights)
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
                raise ValueError("--rerank needs the query text (a cross-encoder reads text)")
            searcher = RerankingSearcher(searcher, self._rerank(), fetch_k=max(20, k))
        return searcher.search(asked, k, filter=filter)  # type: ignore[no-any-return]

    def load_encoders(self, weights: list[float] | None = None) -> list[tuple[str, float]]:
        """Load the query encoders of the legs a search with ``weights`` asks (weight
        above 0) that are not loaded yet; ``(leg, seconds)`` of each one loaded, also
        added to `loads`.

        `load_index` loads no model: each one loads here, before the first query that
        needs it, so a BM25-only index or a search weighting the model legs 0 never
        imports torch, and the command line can say what the load cost (``serve``
        keeps the models loaded). A leg whose query encoder ``index`` exported loads it
        on ONNX Runtime, without torch (`hybrid_retrievers.models.onnx_query`); one that
        loads its model instead adds to `notes` why and how to get the export.
        """
        plan = self.fused.plan.weights
        asked = weights if weights is not None else (None if callable(plan) else plan)
        loaded: list[tuple[str, float]] = []
        for i, (name, leg) in enumerate(zip(self.names, self.fused.searchers)):
            encoder = getattr(leg, "embedder", None)
            if (encoder is None or getattr(encoder, "is_loaded", True)
                    or (asked is not None and not asked[i] > 0)):
                continue
            from ._build import _quiet_transformers

            start = time.perf_counter()
            load_onnx = getattr(encoder, "load_onnx", None)  # torch-free (models/onnx_query)
            if not (callable(load_onnx) and load_onnx()):
                _quiet_transformers()
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
            raise ValueError(f"--image: {self.label} holds no CLIP image vectors (index with "
                             "--clip-model), and no --describer was given to describe the "
                             "query image")
        options: dict[str, Any] = {"images": self.images, "describer": self.describer}
        if self.describe_timeout is not None:
            options["timeout"] = self.describe_timeout
        multimodal = MultimodalSearcher.from_index(searcher, **options)
        if image is None:
            return multimodal, query
        return multimodal, ImageQuery(text=query, image=image)

    def _parent_store(self) -> Any:
        if self._parents is None:
            from ..parent import ParentStore

            store = ParentStore()
            store.put_many(parents_from_chunks(self.lexical.docs))
            self._parents = store
        return self._parents

    def _rerank(self) -> Any:
        if self._reranker_name is None:
            raise ValueError("reranking needs a cross-encoder: pass --rerank MODEL")
        from ..rerank import Reranker

        if self._reranker is None:
            self._reranker = Reranker.cross_encoder(self._reranker_name)
        return self._reranker

    def result(self, hit: Hit, query: str,
               mark: Callable[[str], str] = brackets) -> dict[str, Any]:
        """The record shown for ``hit`` (see the module doc)."""
        meta = hit.doc.metadata
        record: dict[str, Any] = {
            "id": hit.id, "rank": hit.rank, "score": hit.score,
            "file": meta.get(FILE_KEY, meta.get("path", hit.id)),
            "section": meta.get(SECTION_KEY, ""),
            "start": meta.get(START_INDEX_KEY), "end": meta.get(END_INDEX_KEY),
        }
        for key in ("page", "page_end", "title"):
            if key in meta:
                record[key] = meta[key]
        explanation = dict(hit.explanation or {})
        if "rerank" in explanation:
            rerank = explanation["rerank"]
            record["rerank"] = {"model": rerank.get("model"), "score": rerank.get("score"),
                                "previous_rank": rerank.get("previous_rank")}
            explanation = dict(rerank.get("previous_explanation") or {})
        if "multimodal" in explanation:
            explanation = self._routes(record, explanation)
        if meta.get("type") == "image":
            record.update(type="image", image=meta.get("image", record["file"]))
            record["section"] = ""
        if "parent" in explanation:
            parent = explanation["parent"]
            children = parent.get("children") or [{}]
            record["parent"] = {"matched_chunks": [c.get("id") for c in children],
                                "n_chunks": parent.get("n_children")}
            explanation = dict(children[0].get("explanation") or {})
        fusion = explanation.get("fusion", {})
        record["mode"] = fusion.get("mode")
        record["legs"] = dict.fromkeys(self.names)
        for source in fusion.get("sources", []):
            record["legs"][str(source["source"])] = {"rank": source["rank"],
                                                     "score": source["score"]}
        text = hit.doc.text
        if meta.get("type") == "image" and hit.id in self.lexical:
            text = self.lexical.get(hit.id).text  # found by CLIP alone: show its description
        record["passage"] = best_passage(text, query or "", self.lexical.analyzer, mark=mark)
        record["text"] = text
        return record

    @staticmethod
    def _routes(record: dict[str, Any], explanation: dict[str, Any]) -> dict[str, Any]:
        """Put the multimodal routes that found a hit into ``record``; return the text
        legs' explanation (of the first route that went through the fused text searcher)."""
        info = explanation["multimodal"]
        sources = explanation.get("fusion", {}).get("sources", [])
        record["routes"] = {str(s["source"]): {"rank": s["rank"], "score": s["score"]}
                            for s in sources}
        record["route_weights"] = info.get("weights", {})
        if info.get("visual_words"):
            record["visual_words"] = info["visual_words"]
        if info.get("query_image_description"):
            record["query_image_description"] = info["query_image_description"]
        inner = next((s.get("explanation") for s in sources
                      if s["source"] in ("text", "descriptions", "described_image")
                      and s.get("explanation")), None)
        return dict(inner or {})

    def explain(self, query: str, doc_id: str) -> dict[str, Any]:
        """Why ``doc_id`` (a chunk id) scored what it did: BM25's per-term breakdown and,
        with a learned sparse leg, its per-token one; plus where each leg ranks it."""
        if doc_id not in self.lexical:
            raise KeyError(f"no chunk {doc_id!r} in {self.label}")
        bm25 = self.lexical.explain(query, doc_id)
        out: dict[str, Any] = {"id": doc_id, "bm25": bm25.as_dict(), "bm25_text": str(bm25)}
        sparse = self.fused.leg("sparse")
        if sparse is not None and doc_id in sparse:
            why = sparse.explain(query, doc_id)
            out["sparse"], out["sparse_text"] = why.as_dict(), str(why)
        hits = self.fused.search(query, k=max(50, self.fused.fetch_k or 0))
        found = next((h for h in hits if h.id == doc_id), None)
        out["fused_rank"] = found.rank if found else None
        out["legs"] = self.result(found, query)["legs"] if found else dict.fromkeys(self.names)
        return out
