"""Searches stay correct while another thread edits (8 readers, 1 writer, a few seconds each).

Every hit must be a document that some consistent snapshot taken during the search
holds: live in the writer's window, carrying its own text and metadata, holding the
query term (BM25), passing the filter, scored like its own vector (dense). No search
may raise. See ``tests/concurrency.py`` for the harness and the corpus.
"""

from __future__ import annotations

import logging
import os
import random

import numpy as np
import pytest

from concurrency import (
    N_WORDS,
    SlidingCorpusWriter,
    bm25_corpus,
    check_hits,
    meta_of,
    run_stress,
    text_of,
)
from hybrid_retrievers import BM25Index, Doc, FusionSearcher, ParentChildSearcher, VectorIndex
from hybrid_retrievers.models import HashingEmbedder

START = 2000
SECONDS = float(os.environ.get("HR_STRESS_SECONDS", "2"))
"""Seconds per scenario; set HR_STRESS_SECONDS for a longer soak."""


def _term(rng: random.Random, filtered: bool) -> str:
    """A query word; under the g=1 filter an odd one (odd documents hold only odd words)."""
    if filtered:
        return f"w{2 * rng.randrange(N_WORDS // 2) + 1}"
    return f"w{rng.randrange(N_WORDS)}"


def _bm25() -> BM25Index:
    return bm25_corpus(START)


def _dense(embedder: HashingEmbedder) -> VectorIndex:
    return VectorIndex.from_texts(
        [text_of(n) for n in range(START)], ids=[f"d{n}" for n in range(START)],
        metadatas=[meta_of(n) for n in range(START)], embedder=embedder,
    )


def _assert_clean(report) -> None:  # type: ignore[no-untyped-def]
    print(report.summary())
    assert report.writer_errors == []
    assert report.exceptions == [], report.exceptions[:3]
    assert report.wrong == [], report.wrong[:3]
    assert report.queries > 50 and report.writes > 5, report.summary()
    assert report.hits >= report.queries, report.summary()  # the checks saw real hits


@pytest.mark.parametrize("filtered", [False, True], ids=["plain", "filter"])
def test_bm25_search_during_edits(filtered: bool) -> None:
    index = _bm25()
    writer = SlidingCorpusWriter([index], START)
    window = writer.window

    def read(rng: random.Random) -> list[str]:
        term = _term(rng, filtered)
        group = 1 if filtered else None
        flt = {"g": 1} if filtered else None
        lo = window.lo
        style = rng.randrange(3)
        if style == 0:
            results = [index.search(term, k=rng.choice([5, 50]), filter=flt)]
        elif style == 1:
            results = index.search_many([term, term], k=20, filter=flt)
        else:
            results = [index.search(term, k=10, filter=flt, explain=True)]
        hi = window.hi
        wrong = [w for hits in results for w in check_hits(hits, lo, hi, term=term, group=group)]
        for hits in results:
            for h in hits:
                if h.explanation and h.explanation["bm25"]["score"] != pytest.approx(
                    h.score, rel=1e-4, abs=1e-6
                ):
                    wrong.append(f"{h.id}: explanation from another snapshot")
        return wrong

    _assert_clean(run_stress(read, writer, seconds=SECONDS, seed=1 + filtered))


def _dense_reader(index: VectorIndex, embedder: HashingEmbedder, window, group):  # type: ignore[no-untyped-def]
    vectors: dict[str, np.ndarray] = {}

    def vector_of(text: str) -> np.ndarray:
        v = vectors.get(text)
        if v is None:
            v = vectors[text] = np.asarray(embedder.embed_documents([text])[0], dtype=np.float64)
        return v

    def read(rng: random.Random) -> list[str]:
        term = _term(rng, group is not None)
        flt = None if group is None else {"g": group}
        lo = window.lo
        if rng.random() < 0.3:
            results = index.search_many([term, f"u{rng.randrange(lo, lo + 50)}"], k=10, filter=flt)
        else:
            results = [index.search(term, k=10, filter=flt)]
        hi = window.hi
        wrong = [w for hits in results for w in check_hits(hits, lo, hi, group=group)]
        q = np.asarray(embedder.embed_query(term), dtype=np.float64)
        for h in results[0]:
            want = float(vector_of(h.doc.text) @ q)
            if abs(h.score - want) > 1e-5:
                wrong.append(f"{h.id}: score {h.score} is not its text's cosine {want}")
        return wrong

    return read


def test_filtered_vector_search_during_edits() -> None:
    embedder = HashingEmbedder(32)
    index = _dense(embedder)
    writer = SlidingCorpusWriter([index], START)
    read = _dense_reader(index, embedder, writer.window, group=1)
    _assert_clean(run_stress(read, writer, seconds=SECONDS, seed=3))


def test_ann_vector_search_during_appends_folds_and_rebuilds(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("faiss")
    from hybrid_retrievers.vector import ann, editing as vector

    folds = []
    original = ann.FaissHNSW.extended

    def counting(self, vectors):  # type: ignore[no-untyped-def]
        folds.append(len(vectors))
        return original(self, vectors)

    monkeypatch.setattr(ann.FaissHNSW, "extended", counting)
    monkeypatch.setattr(vector, "_ANN_TAIL_MIN", 64)
    embedder = HashingEmbedder(32)
    index = _dense(embedder)
    index.enable_ann(m=8, ef_construction=40, ef_search=64, exact_below=50)
    index.build_ann()
    edits = SlidingCorpusWriter([index], START, batch=8)
    window = edits.window
    calls = [0]

    def write(rng: random.Random) -> None:
        calls[0] += 1
        if calls[0] % 25:  # mostly appends: the graph's tail grows and is folded in
            new = list(range(window.hi, window.hi + 8))
            window.hi += 8
            index.add([text_of(n) for n in new], ids=[f"d{n}" for n in new],
                      metadatas=[meta_of(n) for n in new])
        else:  # now and then an upsert and deletes: a new graph is built on demand
            edits(rng)

    reads = [_dense_reader(index, embedder, window, group=g) for g in (None, 1)]
    report = run_stress(lambda rng: rng.choice(reads)(rng), write, seconds=SECONDS, seed=4)
    _assert_clean(report)
    assert folds, "appends should have been folded into a copy of the graph"


@pytest.mark.parametrize("filtered", [False, True], ids=["plain", "filter"])
def test_fusion_search_during_edits(filtered: bool) -> None:
    embedder = HashingEmbedder(32)
    bm25, dense = _bm25(), _dense(embedder)
    hybrid = FusionSearcher([bm25, dense], names=["bm25", "dense"])
    writer = SlidingCorpusWriter([bm25, dense], START)
    window = writer.window
    group = 1 if filtered else None

    def read(rng: random.Random) -> list[str]:
        term = _term(rng, filtered)
        flt = None if group is None else {"g": group}
        lo = window.lo
        if rng.random() < 0.3:
            results = hybrid.search_many([term, term], k=10, filter=flt)
        else:
            results = [hybrid.search(term, k=10, filter=flt)]
        hi = window.hi
        return [w for hits in results for w in check_hits(hits, lo, hi, group=group)]

    try:
        _assert_clean(run_stress(read, writer, seconds=SECONDS, seed=5 + filtered))
    finally:
        hybrid.close()


def test_parent_child_search_during_edits(caplog) -> None:  # type: ignore[no-untyped-def]
    def parent(n: int) -> Doc:
        return Doc(f"d{n}", f"u{n} first w{n % N_WORDS}. Then w{n * 7 % N_WORDS} again.",
                   meta_of(n))

    start = 500
    searcher = ParentChildSearcher.from_docs([parent(n) for n in range(start)],
                                             chunk_size=20, chunk_overlap=0, k=5)
    window = SlidingCorpusWriter([], start).window

    def write(rng: random.Random) -> None:
        new = list(range(window.hi, window.hi + 3))
        window.hi += 3
        searcher.add([parent(n) for n in new])
        searcher.delete([f"d{n}" for n in range(window.lo, window.lo + 3)])
        window.lo += 3

    def read(rng: random.Random) -> list[str]:
        term = f"w{rng.randrange(N_WORDS)}"
        lo = window.lo
        hits = searcher.search(term, k=rng.choice([3, 10]))
        hi = window.hi
        wrong = check_hits(hits, lo, hi, term=None)
        wrong += [f"{h.id} lacks {term}" for h in hits
                  if term not in h.doc.text.replace(".", " ").split()]
        return wrong

    with caplog.at_level(logging.WARNING, logger="hybrid_retrievers.parent"):
        _assert_clean(run_stress(read, write, seconds=SECONDS, seed=7))
    assert not [r for r in caplog.records if "not in the parent store" in r.getMessage()]
