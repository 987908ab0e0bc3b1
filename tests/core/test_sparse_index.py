"""SparseIndex: building, searching, editing, explaining and its errors.

The exactness of every scoring path against a scipy dot product is in
test_sparse_differential.py; saving in test_sparse_persistence.py.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
import scipy.sparse as sp

from hybrid_retrievers import SparseIndex
from hybrid_retrievers.models import HashingSparseEmbedder
from hybrid_retrievers.sparse import SparseExplanation

TEXTS = [
    "wings generate lift at low speed",
    "cats sleep all day long",
    "a wing of the house was rebuilt",
    "lift and drag of thin wings",
    "dogs chase cats around the house",
]
IDS = ["w1", "c1", "h1", "w2", "d1"]
METAS = [{"topic": "aero"}, {"topic": "pets"}, {"topic": "home"}, {"topic": "aero"},
         {"topic": "pets"}]


@pytest.fixture(params=["numpy", "numba"])
def index(request: pytest.FixtureRequest) -> SparseIndex:
    return SparseIndex.from_texts(TEXTS, IDS, METAS, embedder=HashingSparseEmbedder(),
                                  backend=request.param)


def dot(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(np.float64(np.float32(w)) * np.float64(np.float32(b[t]))
               for t, w in a.items() if t in b)


def test_search_ranks_by_the_dot_product_of_the_embedder_vectors(index: SparseIndex) -> None:
    emb = HashingSparseEmbedder()
    q = emb.embed_query("thin wings lift")
    docs = emb.embed_documents(TEXTS)
    expected = sorted(((dot(q, d), -i, IDS[i]) for i, d in enumerate(docs) if dot(q, d) > 0),
                      reverse=True)
    hits = index.search("thin wings lift", k=10)
    assert [h.id for h in hits] == [e[2] for e in expected]
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    np.testing.assert_allclose([h.score for h in hits], [e[0] for e in expected], rtol=1e-6)


def test_only_matching_documents_return_and_k_caps(index: SparseIndex) -> None:
    assert index.search("zebra", k=3) == []
    assert len(index.search("cats house wings", k=2)) == 2


def test_search_vector_and_search_many_agree_with_search(index: SparseIndex) -> None:
    emb = HashingSparseEmbedder()
    queries = ["wings", "cats house", "zebra", "lift drag"]
    many = index.search_many(queries, k=3)
    for q, hits in zip(queries, many):
        one = index.search(q, k=3)
        vec = index.search_vector(emb.embed_query(q), k=3)
        assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in one]
        assert [(h.id, h.score) for h in vec] == [(h.id, h.score) for h in one]


def test_asearch_equals_search(index: SparseIndex) -> None:
    hits = asyncio.run(index.asearch("wings lift", k=2))
    assert [h.id for h in hits] == [h.id for h in index.search("wings lift", k=2)]


def test_filters_apply_before_top_k(index: SparseIndex) -> None:
    hits = index.search("cats house wing", k=1, filter={"topic": "home"})
    assert [h.id for h in hits] == ["h1"]
    hits = index.search("cats house wing", k=5, filter=lambda d: d.metadata["topic"] == "pets")
    assert {h.id for h in hits} == {"c1", "d1"}
    many = index.search_many(["cats house wing"], k=1, filter={"topic": "home"})
    assert [h.id for h in many[0]] == ["h1"]


def test_explain_lists_shared_tokens_and_sums_to_the_score(index: SparseIndex) -> None:
    hit = index.search("thin wings lift", k=1, explain=True)[0]
    exp = index.explain("thin wings lift", hit.id)
    assert isinstance(exp, SparseExplanation)
    assert {t.token for t in exp.terms} == {"thin", "wings", "wing", "lift"}
    for t in exp.terms:
        assert t.contribution == pytest.approx(t.query_weight * t.doc_weight)
    assert exp.score == pytest.approx(hit.score, rel=1e-6)
    assert hit.explanation["sparse"]["score"] == pytest.approx(hit.score, rel=1e-6)
    assert "wings" in str(exp)
    by_vector = index.explain({"lift": 2.0}, "w1")
    assert [t.token for t in by_vector.terms] == ["lift"] and by_vector.query is None
    with pytest.raises(KeyError, match="nope"):
        index.explain("wings", "nope")


def test_from_vectors_mappings_and_csr_give_the_same_hits() -> None:
    vectors = [{"a": 1.0, "b": 0.5}, {"b": 2.0}, {"c": 1.5, "a": 0.25}]
    by_map = SparseIndex.from_vectors(vectors, ids=["x", "y", "z"], texts=["X", "Y", "Z"])
    vocab = ["a", "b", "c", "unused"]
    matrix = sp.csr_matrix(np.array([[1.0, 0.5, 0, 0], [0, 2.0, 0, 0], [0.25, 0, 1.5, 0]]))
    by_csr = SparseIndex.from_vectors(matrix, ids=["x", "y", "z"], vocabulary=vocab)
    for q in ({"a": 1.0}, {"b": 1.0, "c": 0.1}, {"unused": 1.0}):
        assert ([(h.id, h.score) for h in by_map.search_vector(q)]
                == [(h.id, h.score) for h in by_csr.search_vector(q)])
    assert by_map.get("y").text == "Y" and by_csr.get("y").text == ""
    assert by_csr.vocabulary_size == 3 and by_csr.model_id is None and by_csr.nbytes() > 0


def test_edits_equal_a_rebuild() -> None:
    emb = HashingSparseEmbedder()
    index = SparseIndex.from_texts(TEXTS[:3], IDS[:3], embedder=emb)
    index.add(TEXTS[3:], IDS[3:])
    index.upsert(["cats and wings"], ["h1"])
    index.delete(["c1"])
    texts = [TEXTS[0], "cats and wings", TEXTS[3], TEXTS[4]]
    rebuilt = SparseIndex.from_texts(texts, ["w1", "h1", "w2", "d1"], embedder=emb)
    assert index.ids == rebuilt.ids
    for q in ["wings", "cats", "house lift", "drag"]:
        assert ([(h.id, h.score) for h in index.search(q)]
                == [(h.id, h.score) for h in rebuilt.search(q)])
    assert index.vocabulary_size == rebuilt.vocabulary_size
    index.add_vectors([{"zebra": 1.0}], ids=["z"])
    index.upsert_vectors([{"zebra": 2.0, "cats": 1.0}], ids=["z"])
    assert index.search_vector({"zebra": 1.0})[0].score == 2.0


def test_search_keeps_its_snapshot_during_edits() -> None:
    emb = HashingSparseEmbedder()
    index = SparseIndex.from_texts(TEXTS, IDS, embedder=emb)
    expected = [h.id for h in index.search("wings", k=10)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def edit() -> None:
        i = 0
        while not stop.is_set():
            try:
                index.add([f"wings number {i}"], [f"n{i}"])
                index.delete([f"n{i}"])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return
            i += 1

    thread = threading.Thread(target=edit)
    thread.start()
    try:
        for _ in range(200):
            ids = [h.id for h in index.search("wings", k=10)]
            # No idf: an added document changes no other score, so the others keep
            # their order, with at most the one added document among them.
            assert [i for i in ids if not i.startswith("n")] == expected
            assert len(ids) - len(expected) in (0, 1)
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert [h.id for h in index.search("wings", k=10)] == expected


def test_errors_are_clear() -> None:
    emb = HashingSparseEmbedder()
    with pytest.raises(ValueError, match="empty corpus"):
        SparseIndex.from_texts([], embedder=emb)
    with pytest.raises(ValueError, match="empty corpus"):
        SparseIndex.from_vectors([])
    with pytest.raises(TypeError, match="embedder="):
        SparseIndex.from_texts(["a"], embedder=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="SparseEmbedder"):
        SparseIndex(embedder=object())  # type: ignore[arg-type]
    for bad, kind, what in [({"a": -1.0}, ValueError, "finite weight >= 0"),
                            ({"a": float("nan")}, ValueError, "finite weight"),
                            ({"a": float("inf")}, ValueError, "finite weight"),
                            ({"a": "x"}, TypeError, "must be a number"),
                            ({1: 1.0}, TypeError, "tokens must be non-empty str"),
                            ([("a", 1.0)], TypeError, "mapping")]:
        with pytest.raises(kind, match=what):
            SparseIndex.from_vectors([bad], ids=["d"])
    with pytest.raises(ValueError, match="vocabulary="):
        SparseIndex.from_vectors(sp.csr_matrix(np.eye(2)), ids=["a", "b"])
    with pytest.raises(ValueError, match="shape"):
        SparseIndex.from_vectors(sp.csr_matrix(np.eye(2)), ids=["a", "b"], vocabulary=["x"])
    with pytest.raises(ValueError, match="row 1"):
        SparseIndex.from_vectors(sp.csr_matrix(np.array([[1.0, 0], [0, -2.0]])),
                                 ids=["a", "b"], vocabulary=["x", "y"])
    with pytest.raises(ValueError, match="2 vectors but 1 ids"):
        SparseIndex.from_vectors([{"a": 1.0}, {"b": 1.0}], ids=["a"])
    with pytest.raises(ValueError, match="2 vectors but 3 texts"):
        SparseIndex.from_vectors([{"a": 1.0}, {"b": 1.0}], texts=["a", "b", "c"])
    no_model = SparseIndex.from_vectors([{"a": 1.0}], ids=["d"])
    with pytest.raises(ValueError, match="search_vector"):
        no_model.search("a")
    with pytest.raises(ValueError, match="add_vectors"):
        no_model.add(["a"])
    with pytest.raises(ValueError, match="k"):
        no_model.search_vector({"a": 1.0}, k=0)
    index = SparseIndex.from_texts(["a b"], ["d"], embedder=emb)
    with pytest.raises(ValueError, match="query"):
        index.search("   ")
    with pytest.raises(ValueError, match="already"):
        index.add(["c"], ["d"])


def test_weights_that_could_overflow_float32_are_refused_by_name() -> None:
    # 1e39 is finite in float64 but inf in float32; 3e38 fits float32, but times a query
    # weight of 10 it does not: weights above MAX_IMPACT (1e15) are refused, as a
    # document's (mapping or CSR) and as a query's, so no score is ever inf.
    from hybrid_retrievers.inverted.scorer import MAX_IMPACT

    for big in (1e39, 3e38, 1e16):
        with pytest.raises(ValueError, match=r"vectors\[1\]\['a'\].*at most 1e\+15"):
            SparseIndex.from_vectors([{"a": 1.0}, {"b": 1.0, "a": big}], ids=["x", "y"])
        with pytest.raises(ValueError, match=r"row 1, token 'a'.*at most 1e\+15"):
            SparseIndex.from_vectors(sp.csr_matrix(np.array([[1.0, 0.0], [big, 2.0]])),
                                     vocabulary=["a", "b"], ids=["p", "q"])
        index = SparseIndex.from_vectors([{"a": 1.0}], ids=["x"])
        with pytest.raises(ValueError, match=r"\['a'\].*at most 1e\+15"):
            index.search_vector({"a": big})
        with pytest.raises(ValueError, match=r"\['a'\].*at most 1e\+15"):
            index.add_vectors([{"a": big}], ids=["y"])
    index = SparseIndex.from_vectors([{"a": MAX_IMPACT, "b": MAX_IMPACT}, {"a": 1.0}],
                                     ids=["x", "y"])
    hits = index.search_vector({"a": MAX_IMPACT, "b": MAX_IMPACT})
    assert [h.id for h in hits] == ["x", "y"] and all(np.isfinite(h.score) for h in hits)


def test_zero_weights_are_dropped() -> None:
    index = SparseIndex.from_vectors([{"a": 0.0, "b": 1.0}, {"a": 0.0}], ids=["x", "y"])
    assert index.search_vector({"a": 1.0}) == []
    assert [h.id for h in index.search_vector({"b": 1.0, "a": 0.0})] == ["x"]


def _postings(index: SparseIndex) -> tuple[object, ...]:
    st = index._state
    return (st.vocab, st.indptr.tolist(), st.post_docs.tolist(), st.post_tf.tolist(),
            st.doc_len.tolist())


def test_csr_and_mapping_input_give_identical_postings() -> None:
    # Enough documents for several build chunks (CHUNK_DOCS = 4096), zero weights, unused
    # vocabulary columns and a column order unlike first occurrence, so the vectorised
    # paths must number terms and place postings exactly as one mapping at a time would.
    rng = np.random.default_rng(3)
    n, n_cols = 9000, 300
    dense = np.where(rng.random((n, n_cols)) < 0.03, rng.random((n, n_cols)), 0.0)
    dense[::7, 5] = 0.0
    vocab = [f"t{j}" for j in rng.permutation(n_cols)]
    matrix = sp.csr_matrix(dense.astype(np.float32))
    ids = [f"d{i}" for i in range(n)]
    mappings = []
    for i in range(n):
        cols = rng.permutation(np.flatnonzero(dense[i]))  # key order does not matter
        row = {vocab[j]: float(np.float32(dense[i, j])) for j in cols.tolist()}
        if i % 11 == 0:
            row["explicit-zero"] = 0.0
        mappings.append(row)
    by_csr = SparseIndex.from_vectors(matrix, ids, vocabulary=vocab)
    by_map = SparseIndex.from_vectors(mappings, ids)
    one_by_one = SparseIndex.from_vectors(mappings[:1], ids[:1])
    for s in range(1, n, 2500):
        one_by_one.add_vectors(mappings[s:s + 2500], ids[s:s + 2500])
    assert sorted(by_csr._state.vocab) == sorted(by_map._state.vocab)
    assert (by_csr._state.post_docs.size == by_map._state.post_docs.size
            == int((matrix.data > 0).sum()))
    # Term ids follow first occurrence, so the two inputs number them alike only when
    # their entries come in the same order: compare per term, then exactly by order.
    for index in (by_map, one_by_one):
        for term in ("t0", "t17", vocab[-1]):
            hits_a = by_csr.search_vector({term: 1.0}, k=n)
            hits_b = index.search_vector({term: 1.0}, k=n)
            assert [(h.id, h.score) for h in hits_a] == [(h.id, h.score) for h in hits_b]
    csr_sorted = [{vocab[j]: float(np.float32(dense[i, j]))
                   for j in np.flatnonzero(dense[i]).tolist()} for i in range(n)]
    assert _postings(SparseIndex.from_vectors(csr_sorted, ids)) == _postings(by_csr)
    assert _postings(one_by_one) == _postings(by_map)


def test_flat_checks_name_the_bad_vector() -> None:
    good = {"a": 1.0, "b": 2.0}
    for bad, kind, what in [({"a": -1.0}, ValueError, r"vectors\[5000\]\['a'\].*finite"),
                            ({"a": True}, TypeError, r"vectors\[5000\]\['a'\] must be a number"),
                            ({"a": "1.5"}, TypeError, r"vectors\[5000\]\['a'\] must be a number"),
                            ({"": 1.0}, TypeError, r"vectors\[5000\] has token ''"),
                            ({"a": 1.0, 3: 1.0}, TypeError, r"vectors\[5000\] has token 3"),
                            (["a"], TypeError, r"vectors\[5000\] must be a mapping")]:
        vectors = [good] * 5000 + [bad] + [good]
        with pytest.raises(kind, match=what):
            SparseIndex.from_vectors(vectors, ids=[str(i) for i in range(5002)])
    emb = HashingSparseEmbedder()

    class Negative:
        model_id = "negative"

        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return [{**emb.embed_query(t), "bad": -1.0} if t == "x" else emb.embed_query(t)
                    for t in texts]

        def embed_query(self, text):  # type: ignore[no-untyped-def]
            return emb.embed_query(text)

    with pytest.raises(ValueError, match=r"the vector of texts\[40\]\['bad'\]"):
        SparseIndex.from_texts(["a b"] * 40 + ["x"], embedder=Negative(), batch_size=16)


def test_weighted_runs_transposed_equal_sorted_and_repeats_add_up() -> None:
    from hybrid_retrievers.inverted import postings
    from hybrid_retrievers.inverted.build import TokenChunk

    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 6, size=50).astype(np.int32)
    ids = np.concatenate([rng.choice(40, size=n, replace=False) for n in lengths])
    chunk = TokenChunk(lengths, ids.astype(np.int32), rng.random(ids.size).astype(np.float32))
    fast = postings._transposed_runs(chunk, 7)
    assert fast is not None
    # The sorting path (what a chunk with a repeated term takes) gives the same runs.
    sorted_runs = postings._chunk_runs(chunk._replace(weights=None), 7)
    np.testing.assert_array_equal(fast.terms, sorted_runs.terms)
    np.testing.assert_array_equal(fast.counts, sorted_runs.counts)
    np.testing.assert_array_equal(fast.docs, sorted_runs.docs)
    repeated = TokenChunk(np.array([3, 1], np.int32), np.array([4, 2, 4, 2], np.int32),
                          np.array([0.5, 1.0, 0.25, 2.0], np.float32))
    assert postings._transposed_runs(repeated, 0) is None
    runs = postings._chunk_runs(repeated, 0)
    assert runs.terms.tolist() == [2, 4] and runs.docs.tolist() == [0, 1, 0]
    assert runs.tf.tolist() == [1.0, 2.0, 0.75]


def test_get_vectors_reads_back_what_was_indexed_after_edits_and_a_reload(tmp_path) -> None:
    emb = HashingSparseEmbedder()
    index = SparseIndex.from_texts(TEXTS, IDS, METAS, embedder=emb)
    index.delete(["c1"])  # compaction renumbers documents and drops dead tokens
    index.add(["sleepy cats purr"], ids=["c2"])
    expected = {i: {t: float(np.float32(w)) for t, w in emb.embed_documents([text])[0].items()}
                for i, text in zip([*IDS, "c2"], [*TEXTS, "sleepy cats purr"]) if i != "c1"}
    ids = ["c2", "w1", "d1", "w2"]
    assert index.get_vectors(ids) == [expected[i] for i in ids]
    index.save(tmp_path / "s")
    loaded = SparseIndex.load(tmp_path / "s", emb)
    assert loaded.get_vectors(list(expected)) == list(expected.values())
    assert loaded.get_vectors([]) == []
    with pytest.raises(KeyError, match="'c1' is not in the index"):
        loaded.get_vectors(["w1", "c1"])
