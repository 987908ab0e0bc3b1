"""BM25Index search against a brute-force scorer, bit for bit, on every path and after every edit.

The oracle here knows nothing of postings, score caches, pruning or kernels: it
tokenises each document's text with the index's analyzer, counts, and scores every
document with the variant's formulas (`BM25Params.variant`) in float32, summing the
query's terms in query order, then ranks by score, ties to the earlier document (the
index's document order). Every search path must return exactly its top k: the same ids,
the same float32 scores, in the same order. Seeded Zipf corpora; queries with repeated
and unknown terms; k beyond the matches; metadata filters (mapping and predicate);
edits by add, upsert and delete; save and load, memory-mapped or not; single searches
and `search_many`; the compiled kernels (each strategy) and the numpy path.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from hybrid_retrievers import BM25Index
from hybrid_retrievers.inverted import Backend
from hybrid_retrievers.inverted.scorer import length_norm

# Robertson's idf floor is a mean over the vocabulary (its float64 summation order is
# the index's), so it is left to the exhaustive comparisons of test_bm25_blockmax.
METHODS = ["lucene", "bm25+", "bm25l", "textbook", "atire"]

BACKENDS = {
    "numpy": Backend("numpy"),
    "auto": Backend("numba", maxscore_min_postings=64),  # both kernels, by the query's shape
    # Dense accumulation in chunks of 97 documents (chunk edges inside posting blocks),
    # stored weights for lists of 3 postings or more; and the read-back path for most queries.
    "taat": Backend("numba", strategy="taat", taat_chunk_docs=97, stored_weights_df=3),
    "taat-sparse": Backend("numba", strategy="taat", taat_dense_ratio=1),
    "maxscore": Backend("numba", strategy="maxscore"),
}

WORDS = [f"w{i}" for i in range(300)]
_P = 1.0 / np.arange(1, len(WORDS) + 1) ** 1.05
_P /= _P.sum()


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 50)), p=_P)) for _ in range(n)]


def _queries(rng: np.random.Generator, n: int) -> list[str]:
    out = ["w0", "w0 w1 w2", "w299 w298", "unknownterm", "w5 w5 w5 w7", "w150"]
    for _ in range(n):
        words = list(rng.choice(WORDS, size=int(rng.integers(1, 9)), p=_P))
        if rng.random() < 0.3:
            words += words[: int(rng.integers(1, 3))]  # repeated terms
        if rng.random() < 0.2:
            words.append("unknownterm")
        out.append(" ".join(words))
    return out


class Oracle:
    """Brute-force BM25 over the texts an index holds, as float32 as the engine computes it."""

    def __init__(self, index: BM25Index, texts: dict[str, str]) -> None:
        params = index.params
        self.variant, self.k1, self.delta = params.variant, params.k1, params.delta
        self.analyzer = index.analyzer
        self.ids = index.ids  # the index's document order: ties go to the earlier one
        self.counts = [Counter(self.analyzer.tokenize(texts[i])) for i in self.ids]
        lengths = np.array([sum(c.values()) for c in self.counts], dtype=np.int64)
        df = Counter(t for c in self.counts for t in c)
        self.terms = sorted(df)
        idf = self.variant.idf(np.array([df[t] for t in self.terms], dtype=np.float64),
                               len(self.ids)).astype(np.float32)
        self.idf = dict(zip(self.terms, idf))
        avgdl = float(lengths.mean())
        self.norm = length_norm(lengths.astype(np.float64), avgdl, params.b).astype(np.float32)
        absent = self.variant.absent
        self.absent_weight = 0.0 if absent is None else float(absent(self.k1, self.delta))
        self._scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every document's float32 total, and whether it matches a query term."""
        counts = Counter(self.analyzer.tokenize(query))
        known = [(t, c) for t, c in counts.items() if t in self.idf]
        total = np.zeros(len(self.ids), dtype=np.float32)
        matched = np.zeros(len(self.ids), dtype=bool)
        constant = 0.0
        for term, c in known:  # in query order
            tf = np.array([doc.get(term, 0) for doc in self.counts], dtype=np.float32)
            has = tf > 0
            w = self.variant.tfw(tf[has], self.norm[has], self.k1, self.delta)
            if self.absent_weight:
                w -= np.float32(self.absent_weight)
                constant += float(self.idf[term] * np.float32(self.absent_weight)) * c
            w *= np.float32(float(self.idf[term]) * c)
            total[has] += w
            matched |= has
        return total + np.float32(constant), matched

    def top(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
        if query not in self._scored:
            self._scored[query] = self.scores(query)
        total, matched = self._scored[query]
        if allowed is not None:
            matched = matched & allowed
        pos = np.flatnonzero(matched)
        order = np.lexsort((pos, -total[pos]))[:k]
        return [(self.ids[p], float(total[p])) for p in pos[order]]


def _hits(hits) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in hits]


def _check(index: BM25Index, texts: dict[str, str], groups: dict[str, str],
           queries: list[str], ks=(1, 10, 10_000)) -> None:
    oracle = Oracle(index, texts)
    in_a = np.array([groups[i] == "a" for i in oracle.ids])
    odd = np.array([int(i[1:]) % 2 == 1 for i in oracle.ids])
    for k in ks:
        expected = [oracle.top(q, k) for q in queries]
        assert [_hits(index.search(q, k=k)) for q in queries] == expected, k
        assert [_hits(h) for h in index.search_many(queries, k=k)] == expected, k
        by_group = [oracle.top(q, k, in_a) for q in queries]
        assert [_hits(index.search(q, k=k, filter={"group": "a"})) for q in queries] == by_group
        assert [_hits(h) for h in index.search_many(queries, k=k, filter={"group": "a"})] \
            == by_group
        predicate = lambda doc: int(doc.id[1:]) % 2 == 1  # noqa: E731
        assert [_hits(index.search(q, k=k, filter=predicate)) for q in queries] == \
            [oracle.top(q, k, odd) for q in queries]


def _corpus(rng: np.random.Generator, start: int,
            n: int) -> tuple[list[str], list[str], list[dict]]:
    texts = _texts(rng, n)
    ids = [f"d{i}" for i in range(start, start + n)]
    metas = [{"group": str(rng.choice(["a", "b"]))} for _ in range(n)]
    return texts, ids, metas


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("method", METHODS)
def test_every_path_equals_the_brute_force_scorer(method: str, backend: str, tmp_path) -> None:
    rng = np.random.default_rng(METHODS.index(method) * 10 + list(BACKENDS).index(backend))
    texts, ids, metas = _corpus(rng, 0, 900)
    index = BM25Index.from_texts(texts, ids=ids, metadatas=metas, method=method, k1=1.3,
                                 b=0.7, backend=BACKENDS[backend])
    held = dict(zip(ids, texts))
    groups = {i: m["group"] for i, m in zip(ids, metas)}
    queries = _queries(rng, 25)
    _check(index, held, groups, queries)

    texts, ids, metas = _corpus(rng, 900, 200)
    index.add(texts, ids=ids, metadatas=metas)
    held.update(zip(ids, texts))
    groups.update((i, m["group"]) for i, m in zip(ids, metas))
    index.delete([f"d{i}" for i in range(0, 1100, 4)])
    for i in range(0, 1100, 4):
        del held[f"d{i}"]
    texts, _, metas = _corpus(rng, 0, 60)
    ids = [f"d{i}" for i in range(1, 1100, 18)][:60]
    index.upsert(texts, ids=ids, metadatas=metas)
    held.update(zip(ids, texts))
    groups.update((i, m["group"]) for i, m in zip(ids, metas))
    _check(index, held, groups, queries, ks=(1, 10, 5000))

    index.save(tmp_path / "index")
    for mmap in (False, True):
        loaded = BM25Index.load(tmp_path / "index", mmap=mmap, backend=BACKENDS[backend])
        _check(loaded, held, groups, queries, ks=(10, 5000))
