"""VectorIndex: exact search against a brute-force oracle, filters, edits, errors, persistence."""

from __future__ import annotations

import json
import threading
import warnings

import numpy as np
import pytest

from index_tamper import files_of

from hybrid_retrievers import Doc, Hit, IndexFormatError
from hybrid_retrievers.vector import EmbeddingCache
from hybrid_retrievers.models import HashingEmbedder
from hybrid_retrievers.vector import VectorIndex


@pytest.fixture()
def embedder() -> HashingEmbedder:
    return HashingEmbedder(dimension=128)


@pytest.fixture()
def index(passages: list[str], embedder: HashingEmbedder) -> VectorIndex:
    metas = [{"n": i, "kind": "even" if i % 2 == 0 else "odd"} for i in range(len(passages))]
    return VectorIndex.from_texts(
        passages, ids=[f"p{i}" for i in range(len(passages))], metadatas=metas, embedder=embedder
    )


def brute_force(vectors: np.ndarray, query: np.ndarray, k: int, metric: str = "cosine") -> list[int]:
    """The oracle: score everything in float64, full stable sort (ties to the lower row)."""
    v = vectors.astype(np.float64)
    q = query.astype(np.float64)
    if metric == "cosine":
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)
        q = q / np.linalg.norm(q)
    scores = v @ q
    return np.argsort(-scores, kind="stable")[:k].tolist()


# ---------------------------------------------------------------------- searching


def test_search_finds_the_passage_about_the_query(index: VectorIndex) -> None:
    hits = index.search("okapi bm25 weighting scheme", k=3)
    assert hits[0].id == "p4"
    assert [h.rank for h in hits] == [1, 2, 3]
    assert all(isinstance(h, Hit) for h in hits)
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_scores_are_cosine_similarities(index: VectorIndex, embedder: HashingEmbedder) -> None:
    query = "dense vectors bi-encoder"
    hits = index.search(query, k=len(index))
    q = embedder.embed_query(query)
    for h in hits:
        d = embedder.embed_documents([h.doc.text])[0]
        expected = float(q @ d / (np.linalg.norm(q) * np.linalg.norm(d)))
        assert h.score == pytest.approx(expected, abs=1e-5)


def test_k_is_clamped_to_the_corpus_and_ids_are_unique(index: VectorIndex) -> None:
    hits = index.search("retrieval", k=1000)
    assert len(hits) == len(index)
    assert len({h.id for h in hits}) == len(hits)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("k", [1, 5, 50, 400])
def test_exact_search_matches_brute_force(metric: str, k: int) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    index = VectorIndex.from_vectors(vectors, ids=[f"d{i}" for i in range(300)], metric=metric)
    queries = rng.normal(size=(6, 16)).astype(np.float32)
    many = index.search_vectors(queries, k=k)
    for q, batch_hits in zip(queries, many):
        single = index.search_vector(q, k=k)
        expected = [f"d{i}" for i in brute_force(vectors, q, k, metric)]
        assert [h.id for h in single] == expected
        assert [h.id for h in batch_hits] == expected
        np.testing.assert_allclose([h.score for h in single], [h.score for h in batch_hits],
                                   rtol=1e-5, atol=1e-6)


def test_blocked_search_equals_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunking the matrix product must not change the answer (ties included)."""
    import hybrid_retrievers.vector.kernels as vector_module

    rng = np.random.default_rng(3)
    base = rng.normal(size=(500, 8)).astype(np.float32)
    vectors = np.concatenate([base, base[:50]])  # exact duplicates make tied scores
    index = VectorIndex.from_vectors(vectors, ids=[f"d{i}" for i in range(550)], metric="dot")
    queries = rng.normal(size=(5, 8)).astype(np.float32)
    whole = [[h.id for h in hits] for hits in index.search_vectors(queries, k=20)]
    monkeypatch.setattr(vector_module, "_BLOCK_ENTRIES", 64)  # blocks of 1024 rows minimum
    monkeypatch.setattr(vector_module, "_QUERY_BLOCK", 2)
    small = VectorIndex.from_vectors(np.tile(vectors, (3, 1)),
                                     ids=[f"x{i}" for i in range(1650)], metric="dot")
    blocked = [[h.id for h in hits] for hits in small.search_vectors(queries, k=20)]
    for q, got in zip(queries, blocked):
        expected = [f"x{i}" for i in brute_force(np.tile(vectors, (3, 1)), q, 20, "dot")]
        assert got == expected
    assert len(whole) == 5


def test_ties_go_to_the_earlier_document() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    index = VectorIndex.from_vectors(vectors, ids=["a", "b", "c", "d"])
    assert [h.id for h in index.search_vector([1.0, 0.0], k=2)] == ["a", "c"]
    assert [h.id for h in index.search_vector([1.0, 0.0], k=4)] == ["a", "c", "d", "b"]


def test_search_many_equals_search(index: VectorIndex) -> None:
    queries = ["bm25 ranking", "cross-encoder reranker", "parent document chunks"]
    many = index.search_many(queries, k=4)
    for q, hits in zip(queries, many):
        assert [h.id for h in hits] == [h.id for h in index.search(q, k=4)]
    assert index.search_many([], k=3) == []


def test_search_many_falls_back_to_embed_query(passages: list[str]) -> None:
    class OnlyProtocol:
        inner = HashingEmbedder(dimension=32)

        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return self.inner.embed_documents(texts)

        def embed_query(self, text):  # type: ignore[no-untyped-def]
            return self.inner.embed_query(text)

    index = VectorIndex.from_texts(passages, embedder=OnlyProtocol())
    assert index.dimension == 32
    assert [h.id for h in index.search_many(["bm25"], k=2)[0]] == [
        h.id for h in index.search("bm25", k=2)
    ]


class RecordingEmbedder(HashingEmbedder):
    """A `HashingEmbedder` that records the threads its ``embed_query`` runs on."""

    def __init__(self, dimension: int = 128) -> None:
        super().__init__(dimension=dimension)
        self.sync_query_threads: list[int] = []
        self.async_queries: list[str] = []

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        self.sync_query_threads.append(threading.get_ident())
        return super().embed_query(text)


class AsyncHashingEmbedder(RecordingEmbedder):
    """A `RecordingEmbedder` with an ``aembed_query`` coroutine (recording its queries)."""

    async def aembed_query(self, text):  # type: ignore[no-untyped-def]
        self.async_queries.append(text)
        return HashingEmbedder.embed_query(self, text)


@pytest.mark.parametrize("filter", [None, {"kind": "even"}])
async def test_asearch_returns_the_hits_of_search(index: VectorIndex, filter) -> None:  # type: ignore[no-untyped-def]
    for query in ["okapi bm25 weighting scheme", "dense vectors bi-encoder"]:
        got = await index.asearch(query, k=4, filter=filter)
        want = index.search(query, k=4, filter=filter)
        assert [(h.id, h.score, h.rank) for h in got] == [(h.id, h.score, h.rank) for h in want]


async def test_asearch_awaits_the_embedders_coroutine(passages: list[str]) -> None:
    embedder = AsyncHashingEmbedder()
    index = VectorIndex.from_texts(passages, embedder=embedder)
    got = await index.asearch("bm25 ranking", k=3)
    assert embedder.async_queries == ["bm25 ranking"] and embedder.sync_query_threads == []
    want = index.search("bm25 ranking", k=3)
    assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want]


async def test_asearch_runs_a_sync_model_off_the_event_loop(passages: list[str]) -> None:
    embedder = RecordingEmbedder()
    index = VectorIndex.from_texts(passages, embedder=embedder)
    got = await index.asearch("bm25 ranking", k=2)
    assert embedder.sync_query_threads
    assert threading.get_ident() not in embedder.sync_query_threads
    assert [h.id for h in got] == [h.id for h in index.search("bm25 ranking", k=2)]


async def test_asearch_checks_its_arguments_before_embedding(passages: list[str]) -> None:
    embedder = AsyncHashingEmbedder()
    index = VectorIndex.from_texts(passages, embedder=embedder)
    with pytest.raises(ValueError, match="k"):
        await index.asearch("bm25", k=0)
    with pytest.raises(TypeError):
        await index.asearch(["bm25"], k=2)  # type: ignore[arg-type]
    assert embedder.async_queries == []
    with pytest.raises(TypeError, match="no embedder.*search_vector"):
        await VectorIndex.from_vectors(np.eye(3), ids=["a", "b", "c"]).asearch("hello")


def test_dot_metric_keeps_magnitudes() -> None:
    vectors = np.array([[1.0, 0.0], [3.0, 0.1]], dtype=np.float32)
    dot = VectorIndex.from_vectors(vectors, ids=["small", "big"], metric="dot")
    cos = VectorIndex.from_vectors(vectors, ids=["small", "big"], metric="cosine")
    assert dot.search_vector([1.0, 0.0], k=1)[0].id == "big"
    assert dot.search_vector([1.0, 0.0], k=1)[0].score == pytest.approx(3.0)
    assert cos.search_vector([1.0, 0.0], k=1)[0].id == "small"
    assert cos.search_vector([2.0, 0.0], k=1)[0].score == pytest.approx(1.0)


def test_zero_vectors_score_zero_under_cosine() -> None:
    index = VectorIndex.from_vectors(np.array([[0.0, 0.0], [1.0, 1.0]]), ids=["zero", "one"])
    hits = index.search_vector([1.0, 0.0], k=2)
    assert [h.id for h in hits] == ["one", "zero"]
    assert hits[1].score == 0.0


# ---------------------------------------------------------------------- filters


@pytest.mark.parametrize("filter_kind", ["mapping", "callable"])
def test_filter_is_applied_before_top_k(index: VectorIndex, filter_kind: str) -> None:
    flt = {"kind": "odd"} if filter_kind == "mapping" else (lambda d: d.metadata["kind"] == "odd")
    hits = index.search("bm25 ranking function", k=3, filter=flt)
    assert len(hits) == 3
    assert all(h.doc.metadata["kind"] == "odd" for h in hits)
    unfiltered = [h for h in index.search("bm25 ranking function", k=10)
                  if h.doc.metadata["kind"] == "odd"][:3]
    assert [h.id for h in hits] == [h.id for h in unfiltered]


def test_filter_with_few_matches_returns_fewer(index: VectorIndex) -> None:
    assert [h.id for h in index.search("anything", k=5, filter={"n": 3})] == ["p3"]
    assert index.search("anything", k=5, filter={"n": 99}) == []
    assert index.search("anything", k=5, filter={"missing_key": None}) == []


def test_filter_on_large_corpus_both_paths_match_oracle() -> None:
    """Selective filters gather rows; broad ones mask the full product: same answers."""
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(2000, 12)).astype(np.float32)
    metas = [{"bucket": i % 10, "half": i % 2} for i in range(2000)]
    index = VectorIndex.from_vectors(vectors, ids=[str(i) for i in range(2000)], metadatas=metas)
    q = rng.normal(size=12).astype(np.float32)
    for flt, keep in (({"bucket": 3}, lambda i: i % 10 == 3), ({"half": 1}, lambda i: i % 2 == 1)):
        rows = [i for i in range(2000) if keep(i)]
        expected = [str(rows[j]) for j in brute_force(vectors[rows], q, 15)]
        assert [h.id for h in index.search_vector(q, k=15, filter=flt)] == expected
        many = index.search_vectors(np.stack([q, q]), k=15, filter=flt)
        assert [h.id for h in many[1]] == expected


def test_bad_filter_is_a_type_error(index: VectorIndex) -> None:
    with pytest.raises(TypeError, match="filter must be"):
        index.search("bm25", k=3, filter="kind=odd")  # type: ignore[arg-type]


def test_filter_mask_cache_is_refreshed_by_edits(index: VectorIndex) -> None:
    assert len(index.search("x", k=10, filter={"kind": "odd"})) == 5
    index.add(["a new odd passage"], ids=["new"], metadatas=[{"kind": "odd"}])
    assert len(index.search("x", k=10, filter={"kind": "odd"})) == 6
    index.delete(["new", "p1"])
    assert len(index.search("x", k=10, filter={"kind": "odd"})) == 4


# ---------------------------------------------------------------------- editing


def test_add_then_search_equals_building_at_once(passages: list[str], embedder: HashingEmbedder) -> None:
    ids = [f"p{i}" for i in range(len(passages))]
    whole = VectorIndex.from_texts(passages, ids=ids, embedder=embedder)
    grown = VectorIndex.from_texts(passages[:3], ids=ids[:3], embedder=embedder)
    for i in range(3, len(passages)):
        assert grown.add([passages[i]], ids=[ids[i]]) == [ids[i]]
    np.testing.assert_array_equal(whole.vectors, grown.vectors)
    assert grown.ids == ids
    for q in ["bm25", "vectors", "fusion of rankings"]:
        assert [h.id for h in grown.search(q, k=5)] == [h.id for h in whole.search(q, k=5)]


def test_add_existing_id_is_an_error_and_changes_nothing(index: VectorIndex) -> None:
    before = index.vectors.copy()
    with pytest.raises(ValueError, match="already in the index.*upsert"):
        index.add(["another text", "x"], ids=["brand-new", "p2"])
    assert len(index) == 10 and "brand-new" not in index
    np.testing.assert_array_equal(index.vectors, before)


def test_add_without_ids_uses_content_ids_and_suffixes_duplicates(embedder: HashingEmbedder) -> None:
    index = VectorIndex.from_texts(["same text", "other"], embedder=embedder)
    new = index.add(["same text"])
    assert len(set(index.ids)) == 3 and new[0].endswith("#2")


def test_upsert_replaces_in_place_and_appends_new(index: VectorIndex, embedder: HashingEmbedder) -> None:
    ids = index.ids
    out = index.upsert(["the connector is now a USB-C port", "a completely new passage"],
                       ids=["p9", "p10"], metadatas=[{"kind": "odd", "v": 2}, None])
    assert out == ["p9", "p10"]
    assert index.ids == ids + ["p10"]
    assert index.get("p9").text == "the connector is now a USB-C port"
    assert index.get("p9").metadata["v"] == 2
    np.testing.assert_allclose(index.get_vector("p9"),
                               embedder.embed_documents(["the connector is now a USB-C port"])[0],
                               atol=1e-6)
    assert index.search("usb-c port", k=1)[0].id == "p9"


def test_delete_removes_and_unknown_ids_remove_nothing(index: VectorIndex) -> None:
    with pytest.raises(KeyError, match="not in the index"):
        index.delete(["p1", "nope"])
    assert len(index) == 10
    index.delete(["p4"])
    assert "p4" not in index and len(index) == 9
    assert all(h.id != "p4" for h in index.search("okapi bm25 weighting", k=9))
    index.delete("p0")
    assert index.ids == [f"p{i}" for i in (1, 2, 3, 5, 6, 7, 8, 9)]
    assert index.vectors.shape == (8, 128)
    index.delete([])
    assert len(index) == 8


def test_delete_everything_then_search_is_empty(index: VectorIndex) -> None:
    index.delete(index.ids)
    assert index.search("bm25", k=3) == []
    index.add(["back again"], ids=["z"])
    assert [h.id for h in index.search("back", k=3)] == ["z"]


def test_empty_index_grows_from_nothing() -> None:
    index = VectorIndex(metric="dot")
    assert index.dimension is None and index.search_vectors(np.zeros((0, 3))) == []
    assert index.add_vectors(np.eye(3), ids=["x", "y", "z"]) == ["x", "y", "z"]
    assert index.dimension == 3
    assert index.search_vector([0, 1, 0], k=1)[0].id == "y"


def test_inputs_are_not_mutated_and_vectors_are_read_only() -> None:
    vectors = np.array([[3.0, 4.0]], dtype=np.float32)
    index = VectorIndex.from_vectors(vectors, ids=["a"])
    assert vectors.tolist() == [[3.0, 4.0]]
    np.testing.assert_allclose(index.vectors, [[0.6, 0.8]])
    with pytest.raises(ValueError):
        index.vectors[0, 0] = 1.0


# ---------------------------------------------------------------------- errors


def test_empty_corpus_is_an_error(embedder: HashingEmbedder) -> None:
    with pytest.raises(ValueError, match="empty corpus"):
        VectorIndex.from_texts([], embedder=embedder)
    with pytest.raises(ValueError, match="empty corpus"):
        VectorIndex.from_vectors(np.zeros((0, 4)), ids=[])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_vectors_are_rejected(bad: float) -> None:
    vectors = np.ones((3, 4), dtype=np.float32)
    vectors[1, 2] = bad
    with pytest.raises(ValueError, match="row 1 .*NaN or infinite"):
        VectorIndex.from_vectors(vectors, ids=["a", "b", "c"])
    index = VectorIndex.from_vectors(np.ones((2, 4)), ids=["a", "b"])
    with pytest.raises(ValueError, match="NaN or infinite"):
        index.search_vector([1.0, bad, 0.0, 0.0])


def test_embedder_returning_nan_is_named(passages: list[str]) -> None:
    class Broken(HashingEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            out = super().embed_documents(texts)
            out[-1, 0] = np.nan
            return out

    with pytest.raises(ValueError, match="embed_documents.*NaN"):
        VectorIndex.from_texts(passages, embedder=Broken(dimension=16))


def test_dimension_mismatch_is_a_clear_error(index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="dimension 3 but this index holds 128-d"):
        index.search_vector([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="128-d"):
        index.add_vectors(np.ones((1, 5)), ids=["x"])
    with pytest.raises(ValueError, match="shape"):
        index.search_vector(np.ones((2, 128)))
    other = VectorIndex.from_vectors(np.ones((2, 8)), ids=["a", "b"], embedder=HashingEmbedder(16))
    with pytest.raises(ValueError, match="16-d vectors but 8-d"):
        other.add(["text"])


def test_wrong_argument_kinds(index: VectorIndex, embedder: HashingEmbedder) -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search("bm25", k=0)
    with pytest.raises(TypeError, match="k must be a positive int"):
        index.search("bm25", k=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="query must not be empty"):
        index.search("  ")
    with pytest.raises(TypeError, match="query must be a str"):
        index.search(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a single str"):
        VectorIndex.from_texts("one text", embedder=embedder)
    with pytest.raises(ValueError, match="metric must be one of"):
        VectorIndex(metric="l2")
    with pytest.raises(TypeError, match="Embedder protocol"):
        VectorIndex(embedder=object())
    with pytest.raises(ValueError, match="duplicate document ids"):
        VectorIndex.from_texts(["a", "b"], ids=["x", "x"], embedder=embedder)
    with pytest.raises(ValueError, match="ids"):
        VectorIndex.from_vectors(np.ones((2, 3)))
    with pytest.raises(ValueError, match="2 vectors but 3"):
        VectorIndex.from_vectors(np.ones((2, 3)), ids=["a", "b", "c"])


def test_text_search_without_embedder_explains_the_fix() -> None:
    index = VectorIndex.from_vectors(np.eye(3), ids=["a", "b", "c"])
    with pytest.raises(TypeError, match="no embedder.*search_vector"):
        index.search("hello")
    with pytest.raises(TypeError, match="no embedder"):
        index.add(["hello"])


# ---------------------------------------------------------------------- encoding


def test_duplicate_texts_are_encoded_once(embedder: HashingEmbedder) -> None:
    texts = ["alpha beta", "gamma", "alpha beta", "gamma", "delta"]
    index = VectorIndex.from_texts(texts, embedder=embedder)
    assert embedder.texts_embedded == 3
    np.testing.assert_array_equal(index.vectors[0], index.vectors[2])


def test_batches_go_to_the_embedder_longest_first_in_chunks(passages: list[str]) -> None:
    seen: list[list[str]] = []

    class Recording(HashingEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            seen.append(list(texts))
            return super().embed_documents(texts)

    index = VectorIndex.from_texts(passages, embedder=Recording(dimension=32), batch_size=4)
    assert [len(c) for c in seen] == [4, 4, 2]
    flat = [t for c in seen for t in c]
    assert [len(t) for t in flat] == sorted((len(t) for t in passages), reverse=True)
    reference = VectorIndex.from_texts(passages, embedder=HashingEmbedder(dimension=32))
    np.testing.assert_array_equal(index.vectors, reference.vectors)


def test_show_progress_draws_a_bar(passages: list[str], embedder: HashingEmbedder,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    VectorIndex.from_texts(passages, embedder=embedder, show_progress=True)
    assert "embedding" in capsys.readouterr().err


def test_cache_avoids_model_calls_on_reindex_and_add(passages: list[str]) -> None:
    cache = EmbeddingCache()
    first = HashingEmbedder(dimension=64)
    a = VectorIndex.from_texts(passages, embedder=first, cache=cache)
    assert first.texts_embedded == len(passages)
    second = HashingEmbedder(dimension=64)  # same model_id: same embedding space
    b = VectorIndex.from_texts(passages, embedder=second, cache=cache)
    assert second.calls == 0
    np.testing.assert_array_equal(a.vectors, b.vectors)
    b.add([passages[0]], ids=["copy"])
    b.upsert([passages[1]], ids=["copy"])
    assert second.calls == 0
    b.add(["never seen before"])
    assert second.texts_embedded == 1


def test_cache_with_anonymous_embedder_is_refused(passages: list[str]) -> None:
    class Anonymous:
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return np.ones((len(texts), 4), dtype=np.float32)

        def embed_query(self, text):  # type: ignore[no-untyped-def]
            return np.ones(4, dtype=np.float32)

    with pytest.raises(ValueError, match="no model_id"):
        VectorIndex.from_texts(passages, embedder=Anonymous(), cache=EmbeddingCache())
    assert len(VectorIndex.from_texts(passages, embedder=Anonymous())) == len(passages)


# ---------------------------------------------------------------------- persistence


def test_save_load_round_trip(tmp_path, index: VectorIndex, embedder: HashingEmbedder) -> None:  # type: ignore[no-untyped-def]
    index.save(tmp_path / "idx")
    manifest = json.loads((files_of(tmp_path / "idx") / "manifest.json").read_text())
    assert manifest["kind"] == "vector"
    assert manifest["dimension"] == 128 and manifest["metric"] == "cosine"
    assert manifest["model_id"] == embedder.model_id
    assert not list((tmp_path / "idx").glob("*.pkl"))
    for mmap in (False, True):
        loaded = VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(dimension=128), mmap=mmap)
        assert loaded.ids == index.ids and loaded.docs == index.docs
        np.testing.assert_array_equal(loaded.vectors, index.vectors)
        for q in ["bm25", "vectors"]:
            assert [(h.id, h.score) for h in loaded.search(q, k=4)] == [
                (h.id, h.score) for h in index.search(q, k=4)
            ]
        assert loaded.search("bm25", k=2, filter={"kind": "odd"})[0].doc.metadata["kind"] == "odd"


def test_mmap_load_copies_on_first_edit(tmp_path, index: VectorIndex) -> None:  # type: ignore[no-untyped-def]
    index.save(tmp_path / "idx")
    loaded = VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(dimension=128), mmap=True)
    assert isinstance(loaded._buf, np.memmap)
    loaded.upsert(["replaced text"], ids=["p0"])
    loaded.add(["added text"], ids=["p10"])
    loaded.delete(["p1"])
    assert len(loaded) == 10 and loaded.get("p0").text == "replaced text"
    again = VectorIndex.load(tmp_path / "idx")
    assert again.get("p0").text == index.get("p0").text  # the saved files were not touched


def test_load_without_embedder_can_search_vectors(tmp_path, index: VectorIndex) -> None:  # type: ignore[no-untyped-def]
    index.save(tmp_path / "idx")
    loaded = VectorIndex.load(tmp_path / "idx")
    assert loaded.model_id == index.model_id
    v = index.get_vector("p3")
    assert loaded.search_vector(v, k=1)[0].id == "p3"
    with pytest.raises(TypeError, match="no embedder"):
        loaded.search("bm25")


def test_load_with_other_dimension_is_an_error(tmp_path, index: VectorIndex) -> None:  # type: ignore[no-untyped-def]
    index.save(tmp_path / "idx")
    with pytest.raises(ValueError, match="64-d vectors but the index .* holds 128-d"):
        VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(dimension=64))


def test_load_with_other_model_of_same_dimension_warns(tmp_path, index: VectorIndex) -> None:  # type: ignore[no-untyped-def]
    index.save(tmp_path / "idx")
    with pytest.warns(UserWarning, match="was built with model"):
        VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(dimension=128, seed=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        VectorIndex.load(tmp_path / "idx", embedder=HashingEmbedder(dimension=128))


def test_corrupt_or_foreign_directories_are_refused(tmp_path, index: VectorIndex) -> None:  # type: ignore[no-untyped-def]
    index.save(tmp_path / "idx")
    vec = files_of(tmp_path / "idx") / "vectors.npy"
    data = bytearray(vec.read_bytes())
    data[-1] ^= 0xFF
    vec.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="corrupt"):
        VectorIndex.load(tmp_path / "idx")
    with pytest.raises(IndexFormatError):
        VectorIndex.load(tmp_path / "nothing-here")
    from hybrid_retrievers import BM25Index

    BM25Index.from_texts(["a b"]).save(tmp_path / "bm25")
    with pytest.raises(IndexFormatError, match="not 'vector'"):
        VectorIndex.load(tmp_path / "bm25")


def test_save_refuses_unserialisable_metadata(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = VectorIndex.from_vectors(np.eye(2), ids=["a", "b"], metadatas=[{"o": object()}, None])
    with pytest.raises(TypeError, match="JSON"):
        index.save(tmp_path / "idx")
    assert not (tmp_path / "idx").exists()


def test_hits_are_new_objects_carrying_stored_docs(index: VectorIndex) -> None:
    hit = index.search("bm25", k=1)[0]
    # Documents are stored as data and made on the way out: equal, not the same object.
    assert isinstance(hit.doc, Doc) and hit.doc == index.get(hit.id)


# ---------------------------------------------------------------------- approximate


def test_ann_backend_rescores_exactly_and_follows_edits() -> None:
    pytest.importorskip("faiss")
    rng = np.random.default_rng(5)
    centers = rng.normal(size=(20, 24))
    vectors = (centers[rng.integers(0, 20, 3000)] + 0.3 * rng.normal(size=(3000, 24))).astype(np.float32)
    metas = [{"odd": i % 2} for i in range(3000)]
    index = VectorIndex.from_vectors(vectors, ids=[str(i) for i in range(3000)], metadatas=metas)
    index.enable_ann(m=16, ef_construction=100, ef_search=200, exact_below=100)
    queries = (centers[:10] + 0.3 * rng.normal(size=(10, 24))).astype(np.float32)
    approx = index.search_vectors(queries, k=10)
    exact = index.search_vectors(queries, k=10, exact=True)
    recall = np.mean([len({h.id for h in a} & {h.id for h in e}) / 10 for a, e in zip(approx, exact)])
    assert recall >= 0.9
    for a, e in zip(approx, exact):  # shared hits carry the exact score
        ex = {h.id: h.score for h in e}
        assert all(h.score == pytest.approx(ex[h.id], abs=1e-6) for h in a if h.id in ex)
        assert all(x.score >= y.score for x, y in zip(a, a[1:]))
    filtered = index.search_vector(queries[0], k=10, filter={"odd": 1})
    assert len(filtered) == 10 and all(h.doc.metadata["odd"] == 1 for h in filtered)
    index.add_vectors(queries[:1] * 10, ids=["new"])
    assert index.search_vector(queries[0], k=1)[0].id == "new"
    index.delete(["new"])
    assert index.search_vector(queries[0], k=1)[0].id != "new"
    index.disable_ann()
    assert index.ann_config is None


def test_dense_modules_import_no_heavy_dependency() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import hybrid_retrievers.vector, hybrid_retrievers.vector.embedding, "
        "hybrid_retrievers.vector.ann, hybrid_retrievers.models; "
        "print([m for m in ('torch', 'sentence_transformers', 'transformers', 'faiss', 'tqdm') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
