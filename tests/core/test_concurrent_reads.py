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
import sys
import threading

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


def test_fielded_searches_with_per_query_weights_in_many_threads() -> None:
    # Each new weight vector builds a BM25F view that the index keeps (a few at a time);
    # readers used to add and evict them in a dict other readers were iterating
    # ("dictionary keys changed during iteration", about one search in 2,000 here).
    # Bounded: 16 threads x 300 searches over 39 weight vectors, switching every 1 µs.
    docs = [Doc(f"d{i}", f"alpha beta w{i}", {"title": f"alpha t{i % 3}"}) for i in range(6)]
    index = BM25Index.from_docs(docs, fields={"title": 2.0, "text": 1.0})
    choices = [{"title": i / 8} for i in range(1, 40)]
    expected = [index.search("alpha", k=3, field_weights=w) for w in choices]
    errors: list[str] = []
    wrong: list[int] = []
    start = threading.Barrier(16)

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(300):
            i = rng.randrange(len(choices))
            try:
                if index.search("alpha", k=3, field_weights=choices[i]) != expected[i]:
                    wrong.append(i)
            except Exception as exc:  # noqa: BLE001 - the assertion reports them
                errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(16)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == [] and wrong == [], (errors[:3], wrong[:3])


def test_a_new_bm25f_view_never_changes_the_views_readers_hold() -> None:
    # The deterministic half of the test above: adding (and evicting) views publishes a
    # new mapping, so one a reader is iterating never changes under it.
    docs = [Doc(f"d{i}", f"alpha w{i}", {"title": "alpha"}) for i in range(4)]
    index = BM25Index.from_docs(docs, fields={"title": 2.0, "text": 1.0})
    index.search("alpha")
    for i in range(1, 8):
        held = index._views
        before = dict(held)
        index.search("alpha", field_weights={"title": i + 0.5})
        assert held == before and index._views is not held
    assert len(index._views) == 4  # the build-time weights' view and the last three
    assert (("text", 1.0), ("title", 2.0)) in index._views
