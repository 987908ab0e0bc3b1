"""The engine's build gives bit-identical results to the build before its memory work.

The digests below are of search results (document ids, float32 scores and their order)
recorded by running `result_digests` on commit 15a8c44, before the memory work on the
build (`postings.written` keeping its runs in large slabs, the score cache's bounds in
slabs of postings). Every route to a snapshot is taken, on seeded synthetic corpora
(Zipfian words, some term frequencies past one byte, empty documents): a build in small
chunks and in one, `add`, `upsert` (documents replaced in place), `delete`, `save` and
`load` with and without ``mmap``, positions (phrase queries), BM25F fields, and the
learned sparse index's weighted postings; each queried on the numba kernels and on the
numpy path. Any change to a posting, a length, a term id, a bound or a summation shows
up as a different digest.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from hybrid_retrievers import Analyzer, BM25Index, Query
from hybrid_retrievers.inverted import build
from hybrid_retrievers.optional import is_available
from hybrid_retrievers.sparse import SparseIndex

# The 15a8c44 results. A build change that alters any of them fails here.
EXPECTED = {
    "bm25/chunked":
        "5c84b359fd7a4ac859754ed7007eb5f035cba57146c061ed118aa5bc850d66c4",
    "bm25/one-chunk":
        "5c84b359fd7a4ac859754ed7007eb5f035cba57146c061ed118aa5bc850d66c4",
    "bm25/edited":
        "5854166c8c3298c5c8a95ccc9da3c9b23f8128beecb3e40b5fc05616556119cd",
    "bm25/saved":
        "5854166c8c3298c5c8a95ccc9da3c9b23f8128beecb3e40b5fc05616556119cd",
    "bm25/mmap":
        "5854166c8c3298c5c8a95ccc9da3c9b23f8128beecb3e40b5fc05616556119cd",
    "bm25/positions":
        "1bd2c7017e8ad3212b26dfdb2b73634164f52be602bb5a427654ffc47e81355b",
    "bm25f/edited":
        "c82ee6de24ae01ccccd8c6d207ad227ce3bfb25435a9e4ba1d96287f4775ec3a",
    "sparse/edited":
        "627d7ec57a7e1e1c84054ce476cf6dfd90b04e745364f83368fb2981817e6588",
}

WORDS = [f"w{i}" for i in range(600)] + ["the", "of", "and"]
QUERIES = ["w1", "w2 w3", "w0 w5 w7 w11", "w50 w1 the", "w599", "w3 w3 w8", "w4 w9 w30 w200",
           "w12 w13 w14 w15 w16 w17", "w1 w2 w4 w8 w16 w32 w64"]


def texts_of(rng: random.Random, n: int) -> list[str]:
    """Zipfian documents: some empty, a few with a term repeated past 255 times."""
    out = []
    for _ in range(n):
        size = rng.choice([0, 2, 5, 12, 40, 90])
        words = [WORDS[min(int(rng.paretovariate(0.9)) - 1, len(WORDS) - 1)]
                 for _ in range(size)]
        if rng.random() < 0.02:
            words += [rng.choice(WORDS[:50])] * 300
        out.append(" ".join(words))
    out[0] += " w1"
    return out


def edited(index, rng: random.Random, n: int, add, upsert) -> None:
    """Adds, upserts (some ids present, some new) and deletes, in rounds."""
    for _ in range(3):
        more = rng.randint(20, 120)
        add(texts_of(rng, more), [f"d{n + i}" for i in range(more)])
        n += more
        ids = list(dict.fromkeys(f"d{rng.randrange(n + 10)}" for _ in range(rng.randint(5, 60))))
        upsert(texts_of(rng, len(ids)), ids)
        n = max(n, max(int(i[1:]) for i in ids) + 1)
        alive = [d.id for d in index._state.docs]
        index.delete(rng.sample(alive, rng.randint(1, len(alive) // 4)))


def bm25_digests(index: BM25Index, queries: list) -> str:
    """One digest of every query's top 10 on the kernels and on the numpy path."""
    h = hashlib.sha256()
    for backend in ("numba", "numpy") if is_available("numba") else ("numpy",):
        index._backend = type(index.backend)(backend)  # same index, another scoring path
        for hits in index.search_many(queries, k=10):
            h.update(repr([(hit.id, hit.score) for hit in hits]).encode())
        for q in queries[:4]:
            h.update(repr([(hit.id, hit.score) for hit in index.search(q, k=5)]).encode())
    return h.hexdigest()


def analyzer() -> Analyzer:
    return Analyzer(stopwords=["the", "of", "and"], stemmer=None)


def bm25_built(seed: int, **kwargs) -> BM25Index:
    rng = random.Random(seed)
    texts = texts_of(rng, 700)
    return BM25Index.from_texts(texts, ids=[f"d{i}" for i in range(len(texts))],
                                analyzer=analyzer(), **kwargs)


def bm25_edited(seed: int, **kwargs) -> BM25Index:
    index = bm25_built(seed, **kwargs)
    edited(index, random.Random(seed + 1), 700,
           lambda t, i: index.add(t, ids=i), lambda t, i: index.upsert(t, ids=i))
    return index


def sparse_vectors(rng: random.Random, n: int) -> list[dict[str, float]]:
    out = []
    for text in texts_of(rng, n):
        vec: dict[str, float] = {}
        for w in text.split():
            vec[w] = vec.get(w, 0.0) + float(np.float32(rng.uniform(0.05, 3.0)))
        out.append(vec or {"w1": 0.5})
    return out


def sparse_edited(seed: int) -> SparseIndex:
    rng = random.Random(seed)
    index = SparseIndex.from_vectors(sparse_vectors(rng, 600), ids=[f"d{i}" for i in range(600)])
    edited(index, rng, 600,
           lambda t, i: index.add_vectors(sparse_vectors(rng, len(i)), ids=i),
           lambda t, i: index.upsert_vectors(sparse_vectors(rng, len(i)), ids=i))
    return index


def sparse_digest(index: SparseIndex) -> str:
    h = hashlib.sha256()
    rng = random.Random(7)
    queries = [{WORDS[rng.randrange(60)]: rng.uniform(0.1, 2.0) for _ in range(rng.randint(1, 5))}
               for _ in range(12)]
    for backend in ("numba", "numpy") if is_available("numba") else ("numpy",):
        index._backend = type(index.backend)(backend)
        for q in queries:
            h.update(repr([(hit.id, hit.score) for hit in index.search_vector(q, k=10)])
                     .encode())
    return h.hexdigest()


def result_digests(tmp_path) -> dict[str, str]:
    """The digest of every route (see the module docstring)."""
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build, "CHUNK_DOCS", 37)  # many chunks, each run set small
        out["bm25/chunked"] = bm25_digests(bm25_built(1), QUERIES)
        index = bm25_edited(2)
        out["bm25/edited"] = bm25_digests(index, QUERIES)
        index.save(tmp_path / "bm25")
        out["bm25/saved"] = bm25_digests(BM25Index.load(tmp_path / "bm25"), QUERIES)
        out["bm25/mmap"] = bm25_digests(BM25Index.load(tmp_path / "bm25", mmap=True), QUERIES)
        phrases = QUERIES + [Query(phrases="w1 w2"), Query(should="w5 w9", phrases="w3 w1"),
                             Query(must="w2", must_not="w7", should="w1 w8")]
        out["bm25/positions"] = bm25_digests(bm25_edited(3, positions=True), phrases)
        fielded = bm25_fielded(4)
        out["bm25f/edited"] = bm25_digests(fielded, QUERIES)
        out["sparse/edited"] = sparse_digest(sparse_edited(5))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build, "CHUNK_DOCS", 1 << 20)  # one chunk
        out["bm25/one-chunk"] = bm25_digests(bm25_built(1), QUERIES)
    return out


def bm25_fielded(seed: int) -> BM25Index:
    rng = random.Random(seed)
    texts = texts_of(rng, 500)
    titles = texts_of(rng, 500)
    index = BM25Index.from_texts(texts, ids=[f"d{i}" for i in range(500)],
                                 metadatas=[{"title": t[:60]} for t in titles],
                                 analyzer=analyzer(), fields={"title": 2.0, "text": 1.0})
    more = texts_of(rng, 80)
    index.add(more, ids=[f"d{500 + i}" for i in range(80)],
              metadatas=[{"title": t[:40]} for t in texts_of(rng, 80)])
    index.upsert(texts_of(rng, 30), ids=[f"d{i * 7}" for i in range(30)],
                 metadatas=[{"title": "w1 w2"}] * 30)
    index.delete([f"d{i * 11}" for i in range(20)])
    return index


def test_results_equal_the_recorded_ones(tmp_path):
    got = result_digests(tmp_path)
    assert got == EXPECTED


def test_a_changed_posting_changes_the_digest():
    """The digests see a one-posting change (the test above can fail)."""
    index = bm25_built(1)
    before = bm25_digests(index, QUERIES)
    st = index._state
    t = st.vocab["w1"]
    tf = np.array(st.post_tf)
    tf[st.indptr[t]] += 1
    st.post_tf = tf
    st._derived = None  # the score cache, rebuilt from the changed posting
    assert bm25_digests(index, QUERIES) != before
