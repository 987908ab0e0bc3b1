"""The streamed, chunked BM25 build equals the previous all-at-once scipy build, bit for bit.

`reference_written` is the build this replaced (every token list at once, scipy COO -> CSR);
the index is driven through the same edits with each, and every snapshot array, its dtype,
the vocabulary order and the search results must match. Chunks are made tiny so that
every corpus spans many of them, and ``n_jobs=2`` (worker processes) must match too.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from hybrid_retrievers import Analyzer, BM25Index
from hybrid_retrievers.inverted import build
from hybrid_retrievers.bm25 import index as index_module
from hybrid_retrievers.inverted.postings import Snapshot, compact_tf, live_terms, offsets


def reference_written(state, docs, token_lists, rows):
    """The previous `postings.written`: all tokens at once, CSR through scipy."""
    from scipy import sparse

    offset = len(state.docs)
    if rows is None:
        rows = np.arange(offset, offset + len(docs), dtype=np.int64)
    replaced = rows[rows < offset]
    n_docs = offset + len(docs) - replaced.size
    vocab = dict(state.vocab)
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int32, count=len(docs))
    new_terms = np.fromiter(
        (vocab[t] if t in vocab else vocab.setdefault(t, len(vocab))
         for tokens in token_lists for t in tokens),
        dtype=np.int32, count=int(lengths.sum()),
    )
    new_docs = np.repeat(rows.astype(np.int32), lengths)
    old_terms = np.repeat(np.arange(len(state.indptr) - 1, dtype=np.int32),
                          np.diff(state.indptr))
    old_docs, old_tf = state.post_docs, state.post_tf
    if replaced.size:
        keep = np.ones(offset, dtype=bool)
        keep[replaced] = False
        keep = keep[old_docs]
        old_terms, old_docs, old_tf = old_terms[keep], old_docs[keep], old_tf[keep]
    matrix = sparse.csr_array(
        (np.concatenate([old_tf.astype(np.int32), np.ones(new_terms.size, np.int32)]),
         (np.concatenate([old_terms, new_terms]), np.concatenate([old_docs, new_docs]))),
        shape=(len(vocab), n_docs),
    )
    matrix.sum_duplicates()
    df = np.diff(matrix.indptr)
    if replaced.size and not df.all():
        vocab, df = live_terms(vocab, df)
    doc_len = np.zeros(n_docs, dtype=np.int32)
    doc_len[:offset] = state.doc_len
    doc_len[rows] = lengths
    new_list = list(state.docs)
    new_list.extend([None] * (n_docs - offset))
    for row, d in zip(rows.tolist(), docs):
        new_list[row] = d
    return Snapshot(new_list, vocab, offsets(df), matrix.indices, compact_tf(matrix.data),
                    doc_len)


def reference_compacted(state, alive):
    """The previous `postings.compacted`: a per-posting term array and bincount."""
    new_pos = np.cumsum(alive) - 1
    terms = np.repeat(np.arange(len(state.indptr) - 1), np.diff(state.indptr))
    keep = alive[state.post_docs]
    df = np.bincount(terms[keep], minlength=len(state.vocab))
    vocab, df = live_terms(state.vocab, df)
    docs = [d for d, a in zip(state.docs, alive.tolist()) if a]
    return Snapshot(docs, vocab, offsets(df), new_pos[state.post_docs[keep]],
                    compact_tf(state.post_tf[keep]), state.doc_len[alive])


def reference_from_chunks(state, docs, chunks, rows, vocab):
    chunks = list(chunks)  # numbering them has grown vocab (term ids in insertion order)
    terms = list(vocab)
    token_lists = []
    for chunk in chunks:
        ids, pos = chunk.vocab_ids.tolist(), 0
        for n in chunk.lengths.tolist():
            token_lists.append([terms[i] for i in ids[pos:pos + n]])
            pos += n
    return reference_written(state, docs, token_lists, rows)


def random_texts(rng: random.Random, n: int, words: list[str]) -> list[str]:
    texts = []
    for _ in range(n):
        size = rng.choice([0, 1, 3, 10, 30])
        toks = [words[min(int(rng.paretovariate(1.0)) - 1, len(words) - 1)] for _ in range(size)]
        if rng.random() < 0.05:
            toks += [rng.choice(words)] * rng.choice([200, 300])  # tf past one byte
        texts.append(" ".join(toks))
    return texts


def run_edits(seed: int, *, n_jobs: int = 1) -> BM25Index:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)] + ["the", "and", "of"]
    analyzer = Analyzer(stopwords=["the", "and", "of"], stemmer=None)
    texts = random_texts(rng, rng.randint(1, 60), words)
    texts[0] += " w1"  # never an empty index
    idx = BM25Index.from_texts(texts, ids=[f"d{i}" for i in range(len(texts))],
                               analyzer=analyzer, n_jobs=n_jobs)
    n = len(texts)
    for step in range(4):
        more = random_texts(rng, rng.randint(1, 25), words)
        idx.add(more, ids=[f"d{n + i}" for i in range(len(more))], n_jobs=n_jobs)
        n += len(more)
        ids = [f"d{rng.randrange(n + 5)}" for _ in range(rng.randint(1, 20))]
        ids = list(dict.fromkeys(ids))
        idx.upsert(random_texts(rng, len(ids), words), ids=ids, n_jobs=n_jobs)
        n = max(n, max(int(i[1:]) for i in ids) + 1)
        alive = [d.id for d in idx._state.docs]
        if len(alive) > 3:
            idx.delete(rng.sample(alive, rng.randint(1, len(alive) // 3)))
    return idx


def snapshot_fields(idx: BM25Index):
    st = idx._state
    return {
        "ids": [d.id for d in st.docs],
        "vocab": list(st.vocab.items()),
        "indptr": (st.indptr.dtype.str, st.indptr.tobytes()),
        "post_docs": (st.post_docs.dtype.str, st.post_docs.tobytes()),
        "post_tf": (st.post_tf.dtype.str, st.post_tf.tobytes()),
        "doc_len": (st.doc_len.dtype.str, st.doc_len.tobytes()),
    }


def results(idx: BM25Index) -> list:
    queries = ["w1", "w2 w3", "w0 w5 w7", "w50 w1 the", "w399", "w3 w3 w8"]
    return [[(h.id, h.score) for h in hits] for hits in idx.search_many(queries, k=7)]


@pytest.mark.parametrize("seed", range(12))
def test_streamed_build_equals_reference(seed, monkeypatch):
    monkeypatch.setattr(build, "CHUNK_DOCS", 7)
    new = run_edits(seed)
    monkeypatch.setattr(index_module, "written", reference_from_chunks)
    monkeypatch.setattr(index_module, "compacted", reference_compacted)
    old = run_edits(seed)
    assert snapshot_fields(new) == snapshot_fields(old)
    assert results(new) == results(old)


def test_streamed_build_with_stemming_and_one_chunk(monkeypatch):
    texts = ["Running runners ran", "the runner runs fast", "a quick brown fox", ""]
    new = BM25Index.from_texts(texts + ["fox"], ids=list("abcde"))
    monkeypatch.setattr(index_module, "written", reference_from_chunks)
    old = BM25Index.from_texts(texts + ["fox"], ids=list("abcde"))
    assert snapshot_fields(new) == snapshot_fields(old)


def test_n_jobs_two_equals_one(monkeypatch):
    monkeypatch.setattr(build, "CHUNK_DOCS", 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no fallback to one job
        two = run_edits(3, n_jobs=2)
    assert snapshot_fields(two) == snapshot_fields(run_edits(3, n_jobs=1))


@pytest.mark.parametrize("analyzer", [
    Analyzer(),  # English stopwords and Snowball stems: several words share a stem
    Analyzer(stopwords=None, stemmer=None),  # identity: no stopwords, no stems
    Analyzer(stopwords=["the", "of"], stemmer=None),
    Analyzer(tokenizer=lambda s: s.split(","), stopwords=None),
])
@pytest.mark.parametrize("max_tokens", [1 << 22, 3])  # 3: the map starts afresh often
def test_numbered_chunks_give_the_analyzers_tokens(analyzer, max_tokens, monkeypatch):
    monkeypatch.setattr(build.TermNumbering, "MAX_TOKENS", max_tokens)
    texts = ["The running runner ran, of the runs", "", "the of the", "E=mc2 is a_b x-1.5/y",
             "Ünïcode naïve café, CAFÉ", "数据库系统 and 数据", "runs runs running, run",
             "   ", "state-of-the-art models, models' states", "runner café x-1.5/y"]
    vocab = {"models": 0}  # an existing index's vocabulary: its ids are kept
    numbering = build.TermNumbering(vocab)
    chunks = [build.tokenize_chunk(analyzer, texts[s:s + 3], numbering)
              for s in range(0, len(texts), 3)]
    terms = list(vocab)
    decoded_all = []
    for chunk in chunks:
        assert chunk.lengths.dtype == np.int32 and chunk.vocab_ids.dtype == np.int32
        ids, pos = chunk.vocab_ids.tolist(), 0
        for n in chunk.lengths.tolist():
            decoded_all.append([terms[i] for i in ids[pos:pos + n]])
            pos += n
    expected = analyzer.tokenize_many(texts)
    assert decoded_all == expected
    # new terms numbered in first-occurrence order after the existing ones
    flat = [t for tokens in expected for t in tokens]
    assert terms == list(dict.fromkeys(["models"] + flat))


def test_worker_numbers_map_two_workers_to_the_build_order():
    # Chunks alternate between two workers' own vocabularies; mapped back, they are
    # numbered exactly as one in-process numbering would number them.
    from hybrid_retrievers.inverted.numbering import TermNumbering, WorkerNumbers

    analyzer = Analyzer()
    texts = ["runners running", "the cat", "a dog runs", "cats and dogs", "the runner",
             "zebra dog", "new words here", "cat zebra", "", "words of runners"]
    spans = [texts[s:s + 2] for s in range(0, len(texts), 2)]
    one = TermNumbering({"dog": 0})
    expected = [build.tokenize_chunk(analyzer, part, one).vocab_ids.tolist()
                for part in spans]
    workers = [TermNumbering({}, track_added=True) for _ in range(2)]
    numbers = WorkerNumbers({"dog": 0})
    for i, part in enumerate(spans):
        sent = build.worker_chunk(analyzer, workers[i % 2], part, worker=i % 2)
        assert numbers.numbered(sent).tolist() == expected[i]
    assert list(numbers.vocab.items()) == list(one.vocab.items())
    stale = build.worker_chunk(analyzer, TermNumbering({}, track_added=True), spans[0], 1)
    with pytest.raises(RuntimeError, match="out of order"):
        numbers.numbered(stale)


def test_build_leaves_a_bounded_cache(monkeypatch):
    from hybrid_retrievers.text import analyzer as analyzer_module

    monkeypatch.setattr(build, "CHUNK_DOCS", 3)
    monkeypatch.setattr(analyzer_module, "_MAX_CACHE", 10)
    analyzer = Analyzer(stopwords=None, stemmer=lambda w: w.upper())
    texts = [" ".join(f"t{i}x{j}" for j in range(5)) for i in range(12)]
    idx = BM25Index.from_texts(texts, analyzer=analyzer)
    assert len(analyzer._cache) == 10 and analyzer._holds == 0
    # The first learned are kept: all from the first chunk (3 texts).
    assert set(analyzer._cache) <= {f"t{i}x{j}" for i in range(3) for j in range(5)}
    assert idx.vocabulary_size == 60


def test_n_jobs_falls_back_for_a_callable_stemmer(monkeypatch):
    monkeypatch.setattr(build, "CHUNK_DOCS", 2)
    analyzer = Analyzer(stemmer=lambda w: w[:3])
    texts = ["alpha beta", "gamma delta", "alphabet betamax", "gammas"]
    with pytest.warns(UserWarning, match="cannot be sent"):
        idx = BM25Index.from_texts(texts, analyzer=analyzer, n_jobs=2)
    ref = BM25Index.from_texts(texts, analyzer=analyzer)
    assert snapshot_fields(idx) == snapshot_fields(ref)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (1.5, TypeError), (True, TypeError)])
def test_n_jobs_is_checked(bad, error):
    with pytest.raises(error):
        BM25Index.from_texts(["a text"], n_jobs=bad)


def test_n_jobs_minus_one_means_all_cores():
    assert build.resolve_n_jobs(-1) == build._cpu_count()
    assert build.resolve_n_jobs(3) == 3


def test_n_jobs_sends_a_registered_tokenizer(monkeypatch):
    from hybrid_retrievers.text import register_tokenizer, unregister_tokenizer

    monkeypatch.setattr(build, "CHUNK_DOCS", 2)
    register_tokenizer("test.streamed-ws", str.split, replace=True)
    try:
        analyzer = Analyzer(tokenizer="test.streamed-ws", stemmer=None)
        texts = ["a-b c", "c d-e", "f", "a-b a-b", "e"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            two = BM25Index.from_texts(texts, analyzer=analyzer, n_jobs=2)
        assert snapshot_fields(two) == snapshot_fields(BM25Index.from_texts(texts, analyzer=analyzer))
        assert "a-b" in two._state.vocab
    finally:
        unregister_tokenizer("test.streamed-ws")


def test_a_large_write_gives_the_heaps_free_pages_back(monkeypatch):
    """A write of at least TRIM_POSTINGS new postings trims the C heap once; a small
    edit does not pay for the heap walk."""
    from hybrid_retrievers.inverted import postings

    calls = []
    monkeypatch.setattr(postings, "release_free_heap", lambda: calls.append(1) or True)
    monkeypatch.setattr(postings, "TRIM_POSTINGS", 120)
    texts = [f"a{i % 7} b{i % 3} x{i}" for i in range(40)]  # 40 documents of 3 postings
    index = BM25Index.from_texts(texts)
    assert calls == [1]
    index.add(["one more text"])  # 3 new postings
    BM25Index.from_texts(texts[:39])  # 117
    assert calls == [1]


def test_release_free_heap_trims_on_glibc():
    import platform

    from hybrid_retrievers.inverted.heap import release_free_heap

    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert release_free_heap() is glibc


def test_building_a_large_score_cache_gives_the_heaps_free_pages_back(monkeypatch, tmp_path):
    """The first query of a large snapshot reads every posting for its score cache (the
    terms' bounds) and the kernels' metadata, freeing temporaries as large: each build
    trims the C heap once after it; a small snapshot's, and a second query, do not."""
    from hybrid_retrievers.inverted import score_cache

    calls = []
    monkeypatch.setattr(score_cache, "release_free_heap", lambda: calls.append(1) or True)
    monkeypatch.setattr(score_cache, "TRIM_POSTINGS", 120)
    texts = [f"a{i % 7} b{i % 3} x{i}" for i in range(40)]  # 40 documents of 3 postings
    index = BM25Index.from_texts(texts, backend="numba")
    first = index.search("a1 b2", k=3)
    built = len(calls)
    assert built >= 2  # the bounds, then at least one kind of kernel metadata
    assert index.search("a1 b2", k=3) == first
    assert len(calls) == built
    BM25Index.from_texts(texts[:39], backend="numba").search("a1 b2", k=3)  # 117 postings
    assert len(calls) == built
    # A loaded index gets its bounds and kernel metadata from the saved arrays, reading
    # no postings: nothing freed, no heap walk.
    index.save(tmp_path / "saved")
    built = len(calls)
    loaded = BM25Index.load(tmp_path / "saved", mmap=True, backend="numba")
    assert loaded.search("a1 b2", k=3) == first
    assert len(calls) == built
