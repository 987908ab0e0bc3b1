"""BM25F (fields): scores equal a direct implementation of Robertson & Zaragoza 2009 §3.5,
per-query weights, per-field explanations, edits equal a rebuild, persistence, errors."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from hybrid_retrievers import Analyzer, BM25Index, Doc, IndexFormatError, Query
from hybrid_retrievers.inverted import Backend

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


# --- A field weighted 0 scores nothing, yet operators see it (one rule for +, - and phrases)

def _passes(index: BM25Index, doc: Doc, query: Query, fields: list[str]) -> bool:
    """Whether ``doc`` passes ``query``'s constraints, every field counted (brute force)."""
    tok = index.analyzer.tokenize
    parts = [tok(doc.text if f == "text" else doc.metadata.get(f, "")) for f in fields]
    held = {t for part in parts for t in part}
    should = list(dict.fromkeys(t for c in query.should for t in tok(c)))
    must = [t for c in query.must for t in tok(c)]
    phrases = [tok(p) for p in query.phrases]
    must += [p[0] for p in phrases if len(p) == 1]
    phrases = [p for p in phrases if len(p) > 1]
    excluded = {t for c in query.must_not for t in tok(c)}
    wanted = query.min_should(len(should), required=bool(must or phrases))
    return (all(t in held for t in must) and not excluded & held
            and sum(t in held for t in should) >= wanted
            and all(any(_holds_phrase(part, p) for part in parts) for p in phrases))


def _scoring_text(query: Query) -> str:
    """The query's scoring terms (optional, required, phrase) as a plain query."""
    return " ".join([*query.should, *query.must, *query.phrases])


@pytest.mark.parametrize("per_query", [False, True], ids=["build-time", "per-query"])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_field_weighted_0_is_unscored_but_seen_by_every_operator(per_query: bool,
                                                                   backend: str) -> None:
    if backend == "numba":
        pytest.importorskip("numba")
    # The report's example: "secret" and "wing" only in a's title, weighted 0.
    small = [Doc("a", "lift and drag", {"title": "wing secret"}),
             Doc("b", "drag of bluff bodies", {"title": "bluff"}),
             Doc("c", "secret wing drag", {"title": "stall"})]
    zero = {"title": 0.0, "text": 1.0}
    built = BM25Index.from_docs(small, fields={"title": 1.0, "text": 1.0} if per_query else zero,
                                positions=True, backend=backend)
    weights = zero if per_query else None

    def ids(q: str | Query) -> list[str]:
        return [h.id for h in built.search(q, k=5, syntax="operators", field_weights=weights)]

    assert ids("drag -secret") == ["b"]
    assert sorted(ids("drag +wing")) == ["a", "c"]
    assert ids('drag "wing secret"') == ["a"]
    # Only scoring makes a hit: a matched only in its unscored title is not returned.
    assert ids("wing") == ["c"] and ids("+wing") == ["c"]

    docs = _docs(7)
    index = BM25Index.from_docs(docs, fields={"title": 2.0, "text": 1.0} if per_query else zero,
                                positions=True, backend=backend)
    rng = random.Random(7)
    queries: list[Query] = []
    for _ in range(40):
        a, b, c = rng.sample(WORDS, 3)
        queries += [Query.parse(f"{a} -{b}"), Query.parse(f"{a} +{b}"),
                    Query.parse(f'{a} "{b} {c}"'),
                    Query(should=[a, b, c], min_should_match=2)]
    seen = 0
    for q in queries:
        want = _direct(index, docs, _scoring_text(q), zero, 1.5, 0.75, robertson=False)
        want = {i: s for i, s in want.items()
                if _passes(index, docs[int(i[1:])], q, ["title", "text"])}
        got = {h.id: h.score for h in index.search(q, k=len(docs), field_weights=weights)}
        assert got.keys() == want.keys(), q
        np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=2e-6)
        seen += len(want)
    assert seen > 100


@pytest.mark.parametrize("backend", ["numpy", Backend("numba"),
                                     Backend("numba", strategy="maxscore")],
                         ids=["numpy", "numba-auto", "numba-maxscore"])
def test_robertson_fields_keep_a_match_whose_idf_is_0_as_one_field_does(backend) -> None:
    # A term in exactly half the documents has Robertson idf ln(2.5/2.5) = 0: its
    # documents score 0 but match, on the one-field index and (before: not once another
    # query term matched) on the fielded one. Negative idfs (df > N/2) are compared too.
    if backend != "numpy":
        pytest.importorskip("numba")
    plain_words = Analyzer(stopwords=None, stemmer=None)
    texts = ["alpha beta", "alpha gamma", "delta", "eps"]
    fielded = BM25Index.from_docs([Doc(i, t) for i, t in zip("abcd", texts)],
                                  fields={"text": 1.0}, method="robertson",
                                  analyzer=plain_words, backend=backend)
    assert [(h.id, h.score) for h in fielded.search("alpha delta", k=10)][1:] == [
        ("a", 0.0), ("b", 0.0)]
    rng = random.Random(3)
    compared = zeros = 0
    for _ in range(60):
        n = rng.randint(2, 12)
        texts = [" ".join(rng.choices("abcdef", k=rng.randint(1, 5))) for _ in range(n)]
        metas = [{"g": i % 2} for i in range(n)]
        ids = [f"d{i}" for i in range(n)]
        plain = BM25Index.from_texts(texts, ids=ids, metadatas=metas, method="robertson",
                                     analyzer=plain_words, backend=backend)
        one = BM25Index.from_docs([Doc(i, t, m) for i, t, m in zip(ids, texts, metas)],
                                  fields={"text": 1.0}, method="robertson",
                                  analyzer=plain_words, backend=backend)
        q = " ".join(rng.choices("abcdefg", k=rng.randint(1, 4)))
        for k, flt in ((2, None), (20, None), (2, {"g": 0}), (20, lambda d: d.id != "d1")):
            want = plain.search(q, k=k, filter=flt)
            got = one.search(q, k=k, filter=flt)
            assert len(got) == len(want), (texts, q, k)
            np.testing.assert_allclose([h.score for h in got], [h.score for h in want],
                                       atol=1e-5)
            compared += 1
            zeros += any(h.score == 0 for h in want)
    assert zeros > 10 and compared == 240
