"""BM25F (fields): scores equal a direct implementation of Robertson & Zaragoza 2009 §3.5,
per-query weights, per-field explanations, edits equal a rebuild, persistence, errors."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, Doc, IndexFormatError

WORDS = "wing flow boundary layer heat rotor blade air speed pipe".split()


def _docs(seed: int, n: int = 120) -> list[Doc]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14)))
        meta = {"title": " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))}
        if rng.random() < 0.2:
            meta = {}
        out.append(Doc(f"d{i}", body, meta))
    return out


def _direct(index: BM25Index, docs: list[Doc], query: str, weights: dict[str, float],
            k1: float, b: float, robertson: bool) -> dict[str, float]:
    """BM25F written out from the formula, per document, in float64."""
    tok = index.analyzer.tokenize
    fields = {f: [tok(d.text if f == "text" else d.metadata.get(f, "")) for d in docs]
              for f in weights}
    avg = {f: sum(map(len, toks)) / len(docs) for f, toks in fields.items()}
    n = len(docs)
    out = {}
    q = tok(query)
    every = {t for toks in fields.values() for doc in toks for t in doc}
    dfs = {t: sum(any(t in fields[f][j] for f in fields) for j in range(n)) for t in every}
    raw = {t: math.log((n - df + 0.5) / (df + 0.5)) for t, df in dfs.items()}
    floor = 0.25 * sum(raw.values()) / len(raw)  # rank_bm25's Robertson floor
    for i, d in enumerate(docs):
        score = 0.0
        for t in dict.fromkeys(q):
            df = dfs.get(t, 0)
            if not df:
                continue
            idf = math.log1p((n - df + 0.5) / (df + 0.5)) if not robertson else \
                (raw[t] if raw[t] >= 0 else floor)
            pseudo = sum(w * fields[f][i].count(t) / (1 - b + b * len(fields[f][i]) / avg[f])
                         for f, w in weights.items())
            if pseudo:
                sat = pseudo / (pseudo + k1) * ((k1 + 1) if robertson else 1)
                score += q.count(t) * idf * sat
        if score:
            out[d.id] = score
    return out


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("seed", range(3))
def test_bm25f_equals_the_formula(seed: int, backend: str) -> None:
    if backend == "numba":
        pytest.importorskip("numba")
    docs = _docs(seed)
    weights = {"title": 2.0, "text": 1.0}
    index = BM25Index.from_docs(docs, fields=weights, backend=backend)
    rng = random.Random(seed)
    for _ in range(15):
        q = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        for w in (weights, {"title": 0.5, "text": 3.0}, {"title": 0.0, "text": 1.0}):
            want = _direct(index, docs, q, w, 1.5, 0.75, robertson=False)
            got = {h.id: h.score for h in index.search(q, k=len(docs), field_weights=w)}
            assert got.keys() == want.keys()
            np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=2e-6)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_robertson_method_and_explain_per_field(backend: str) -> None:
    if backend == "numba":
        pytest.importorskip("numba")
    docs = _docs(5)
    index = BM25Index.from_docs(docs, fields={"title": 3.0, "text": 1.0}, method="robertson",
                                k1=1.2, b=0.5, backend=backend)
    want = _direct(index, docs, "wing heat", {"title": 3.0, "text": 1.0}, 1.2, 0.5, True)
    hits = index.search("wing heat", k=5, explain=True)
    assert [h.id for h in hits] == sorted(want, key=lambda i: (-want[i], int(i[1:])))[:5]
    for h in hits:
        ex = index.explain("wing heat", h.id)
        assert ex.score == pytest.approx(want[h.id], rel=1e-6)
        assert h.explanation["bm25f"]["score"] == pytest.approx(h.score, rel=1e-6)
        for term in ex.terms:
            assert term.pseudo_tf == pytest.approx(sum(f["pseudo_tf"] for f in term.fields.values()))
            assert set(term.fields) == {"title", "text"}


def test_one_text_field_is_plain_bm25() -> None:
    docs = _docs(1)
    fielded = BM25Index.from_docs(docs, fields={"text": 1.0})
    plain = BM25Index.from_docs(docs)
    for q in ("wing", "heat flow", "rotor blade air"):
        a = [(h.id, h.score) for h in fielded.search(q, k=50)]
        b = [(h.id, h.score) for h in plain.search(q, k=50)]
        assert [i for i, _ in a] == [i for i, _ in b]
        np.testing.assert_allclose([s for _, s in a], [s for _, s in b], rtol=1e-6)


def test_edits_equal_a_rebuild_and_operators_work() -> None:
    docs = _docs(2)
    w = {"title": 2.0, "text": 1.0}
    index = BM25Index.from_docs(docs[:80], fields=w)
    index.add_docs(docs[80:])
    index.upsert_docs([Doc("d3", "pipe pipe", {"title": "wing"}), Doc("d5", "air", {})])
    index.delete(["d7", "d90"])
    rebuilt = BM25Index.from_docs(index.docs, fields=w)
    for q in ("wing", "pipe air heat", "+wing -rotor flow"):
        assert index.search(q, k=20, syntax="operators") == rebuilt.search(q, k=20,
                                                                          syntax="operators")
    assert index.search_many(["wing", "heat"], k=3) == [rebuilt.search("wing", k=3),
                                                        rebuilt.search("heat", k=3)]


def test_fields_are_saved_and_loaded(tmp_path) -> None:
    index = BM25Index.from_docs(_docs(3), fields={"title": 2.0, "text": 1.0})
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.fields == {"title": 2.0, "text": 1.0}
    assert loaded.search("wing flow", k=10) == index.search("wing flow", k=10)
    (tmp_path / "idx").joinpath(next(p.name for p in (tmp_path / "idx").iterdir()
                                     if p.is_dir()), "field-0", "postings_tf.npy").write_bytes(b"x")
    with pytest.raises(IndexFormatError):
        BM25Index.load(tmp_path / "idx")


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"fields": {"title": 2.0}}, ValueError, "must include 'text'"),
    ({"fields": {"text": -1.0}}, ValueError, ">= 0"),
    ({"fields": {"text": 0.0}}, ValueError, "above 0"),
    ({"fields": ["title"]}, TypeError, "mapping"),
    ({"fields": {"text": 1.0}, "method": "bm25+"}, ValueError, "lucene"),
])
def test_bad_fields_are_clear_errors(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        BM25Index.from_docs(_docs(0, 5), **kwargs)


def test_bad_field_weights_and_metadata() -> None:
    index = BM25Index.from_docs(_docs(0, 20), fields={"title": 2.0, "text": 1.0})
    with pytest.raises(ValueError, match="no field 'body'"):
        index.search("wing", field_weights={"body": 1.0})
    with pytest.raises(ValueError, match="fields="):
        BM25Index.from_docs(_docs(0, 5)).search("wing", field_weights={"text": 1.0})
    with pytest.raises(TypeError, match="must be a str"):
        BM25Index.from_docs([Doc("x", "a", {"title": 3})], fields={"title": 1.0, "text": 1.0})


def _holds_phrase(tokens: list[str], phrase: list[str]) -> bool:
    w = len(phrase)
    return any(tokens[i:i + w] == phrase for i in range(len(tokens) - w + 1))


@pytest.mark.parametrize("seed", [0, 1])
def test_phrases_on_a_fielded_index_match_within_any_one_field(seed: int, tmp_path) -> None:
    # Positions are kept per field; a phrase matches when one field holds it in order
    # (never across the title/text boundary), checked against a brute-force reference,
    # after edits and after a save/load round trip.
    docs = _docs(seed)
    weights = {"title": 2.0, "text": 1.0}
    index = BM25Index.from_docs(docs, fields=weights, positions=True)
    tok = index.analyzer.tokenize
    rng = random.Random(seed)
    queries = [f'"{rng.choice(WORDS)} {rng.choice(WORDS)}"' for _ in range(12)]
    queries += ['"wing flow" +air', '"boundary layer" -rotor', '"blade air speed"']

    def expected(idx: BM25Index, pool: list[Doc], q: str) -> set[str]:
        out = set()
        for d in pool:
            fields = [tok(d.text), tok(d.metadata.get("title", ""))]
            ok = True
            for part in q.split('"')[1::2]:
                ok &= any(_holds_phrase(f, tok(part)) for f in fields)
            rest = q.split('"')[-1].split()
            for word in rest:
                present = any(tok(word[1:])[0] in f for f in fields)
                ok &= present if word.startswith("+") else not present
            if ok:
                out.add(d.id)
        return out

    def check(idx: BM25Index, pool: list[Doc]) -> None:
        for q in queries:
            got = {h.id for h in idx.search(q, k=len(pool), syntax="operators")}
            assert got == expected(idx, pool, q), q

    check(index, docs)
    assert any(expected(index, docs, q) for q in queries)
    # A phrase that straddles the title and the text matches nothing.
    straddle = Doc("x", "layer heat", {"title": "wing boundary"})
    index.add_docs([straddle])
    assert "x" not in {h.id for h in index.search('"boundary layer"', k=500, syntax="operators")}
    index.delete(["x", docs[0].id])
    check(index, docs[1:])
    index.save(tmp_path / "f")
    again = BM25Index.load(tmp_path / "f")
    check(again, docs[1:])
    assert again.has_positions


def test_a_fielded_index_without_positions_refuses_phrases() -> None:
    index = BM25Index.from_docs(_docs(0), fields={"title": 2.0, "text": 1.0})
    with pytest.raises(ValueError, match="positions=True"):
        index.search('"wing flow"', syntax="operators")


def test_nbytes_counts_each_fields_positions() -> None:
    docs = _docs(3)
    fields = {"title": 2.0, "text": 1.0}
    plain = BM25Index.from_docs(docs, fields=fields)
    kept = BM25Index.from_docs(docs, fields=fields, positions=True)
    tokens = sum(len(kept.analyzer.tokenize(d.text))
                 + len(kept.analyzer.tokenize(d.metadata.get("title", ""))) for d in docs)
    assert kept.nbytes() - plain.nbytes() == 4 * tokens  # int32 term ids, text and title
