"""Query operators: the syntax, the structured `Query`, and BM25Index/SparseIndex searches.

The differential tests: a plain query means what it meant before (operator characters
are text), a `Query` of optional terms is the plain query bit for bit, and structured
queries on random corpora equal a brute-force reference (constraints checked on each
document's token list, scores from plain BM25 over the scoring terms).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, IndexFormatError, Query, SparseIndex
from hybrid_retrievers.models import HashingSparseEmbedder

TEXTS = [
    "the boundary layer flow over a swept wing",
    "rotor wing flow and blade vortex interaction",
    "heat transfer in a laminar boundary layer",
    "layer boundary heat",
    "flow of air over a wing at high speed",
    "boundary",
    "layer flow in a pipe",
]
IDS = [f"d{i}" for i in range(len(TEXTS))]


@pytest.fixture
def index() -> BM25Index:
    return BM25Index.from_texts(TEXTS, ids=IDS, positions=True)


def ids(hits):
    return [h.id for h in hits]


# ------------------------------------------------------------------ the syntax


def test_parse_reads_each_operator() -> None:
    q = Query.parse('+wing -rotor "boundary layer" flow +"heat transfer" e-mail')
    assert q.must == ("wing",)
    assert q.must_not == ("rotor",)
    assert q.phrases == ("boundary layer", "heat transfer")
    assert q.should == ("flow", "e-mail")


def test_escapes_make_characters_literal() -> None:
    q = Query.parse(r'\+plus \-minus \"quoted\" back\\slash "say \"hi\""')
    assert q.should == ("+plus", "-minus", '"quoted"', "back\\slash")
    assert q.phrases == ('say "hi"',)


@pytest.mark.parametrize(("text", "position"), [
    ('wing "boundary layer', 5),   # unbalanced quote: where it opens
    ("+", 0),                     # lone operator
    ("wing - rotor", 5),
    ("+-rotor", 1),               # two operators
    ('wi"ng"', 2),                # quote inside a word
    ('-"a b"', 0),                # excluded phrase
    ("wing\\", 4),                # trailing backslash
])
def test_bad_syntax_names_the_position(text: str, position: int) -> None:
    with pytest.raises(ValueError, match=f"position {position}"):
        Query.parse(text)


def test_lenient_reads_bad_syntax_as_a_bag_of_words(index: BM25Index) -> None:
    assert Query.parse('"boundary layer', lenient=True) == Query(should='"boundary layer')
    assert index.search('"boundary layer', syntax="lenient") == index.search("boundary layer")
    with pytest.raises(ValueError, match="unbalanced quote"):
        index.search('"boundary layer', syntax="operators")


@pytest.mark.parametrize("text", ["-rotor", "-rotor -heat", "+\\ ", '""', '+\\  -rotor'])
def test_text_with_nothing_to_search_for(index: BM25Index, text: str) -> None:
    # Well-formed clauses, but none to search for: "operators" says so plainly, and
    # "lenient" reads the text as a bag of words like any other text it cannot use.
    with pytest.raises(ValueError, match="nothing to search for"):
        index.search(text, syntax="operators")
    with pytest.raises(ValueError, match="nothing to search for"):
        Query.parse(text)
    assert Query.parse(text, lenient=True) == Query(should=text)
    assert index.search(text, syntax="lenient") == index.search(text)


def test_nothing_to_search_for_names_what_is_excluded() -> None:
    with pytest.raises(ValueError, match=r"only excludes \['rotor', 'heat'\]"):
        Query.parse("-rotor -heat")
    with pytest.raises(ValueError, match="every clause is blank"):
        Query.parse("+\\ ")
    with pytest.raises(ValueError, match="min_should_match"):  # not lenient's to swallow
        Query.parse("-rotor", lenient=True, min_should_match="lots")


@pytest.mark.parametrize(("msm", "n", "expected"), [
    (None, 4, 1), (2, 4, 2), (9, 4, 4), (-1, 4, 3), ("75%", 4, 3), ("50%", 3, 1),
    ("-25%", 4, 3), ("-25%", 3, 3), ("100%", 5, 5), (0, 4, 0),
])
def test_min_should_match_follows_elasticsearch(msm, n, expected) -> None:
    assert Query(should="x", min_should_match=msm).min_should(n) == expected


def test_min_should_match_defaults_to_zero_with_a_required_clause() -> None:
    assert Query(should="x", must="y").min_should(3) == 0


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"should": 3}, TypeError),
    ({"should": ["a", 3]}, TypeError),
    ({"should": "a", "min_should_match": 1.5}, TypeError),
    ({"should": "a", "min_should_match": "lots"}, ValueError),
    ({"must_not": "a"}, ValueError),   # excluded terms alone
    ({"should": "  "}, ValueError),
])
def test_bad_queries_are_clear_errors(kwargs, error) -> None:
    with pytest.raises(error):
        Query(**kwargs)


def test_bad_syntax_argument(index: BM25Index) -> None:
    with pytest.raises(ValueError, match="syntax must be one of"):
        index.search("wing", syntax="lucene")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Query"):
        index.search(3)  # type: ignore[arg-type]


# ------------------------------------------------------------------ plain queries unchanged


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_plain_queries_keep_their_meaning(backend: str) -> None:
    """Operator characters in a plain query are text, as before operators existed, and a
    query without them reads the same under every syntax and as a `Query`."""
    pytest.importorskip("numba") if backend == "numba" else None
    rng = random.Random(7)
    words = "wing flow boundary layer heat rotor blade air speed pipe vortex".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    index = BM25Index.from_texts(texts, backend=backend)
    for _ in range(60):
        q = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        plain = index.search(q, k=20)
        assert plain
        assert index.search(q, k=20, syntax="operators") == plain
        assert index.search(q, k=20, syntax="lenient") == plain
        assert index.search(Query(should=q), k=20) == [
            h for h in plain]  # same hits, same float32 scores
        marked = "+" + q.replace(" ", ' -"') + '"'
        assert index.search(marked, k=20) == index.search(marked.translate(
            str.maketrans('+-"', "   ")), k=20)
    batch = [" ".join(rng.choice(words) for _ in range(3)) for _ in range(20)]
    assert index.search_many(batch, k=5, syntax="operators") == index.search_many(batch, k=5)


# ------------------------------------------------------------------ operators


def test_required_excluded_and_phrases(index: BM25Index) -> None:
    assert set(ids(index.search("+wing flow", syntax="operators"))) == {"d0", "d1", "d4"}
    assert "d1" not in ids(index.search("+wing -rotor", syntax="operators"))
    phrase = ids(index.search('"boundary layer"', syntax="operators"))
    assert set(phrase) == {"d0", "d2"}  # d3 has "layer boundary": wrong order
    # d5 ends with "boundary" and d6 starts with "layer": a phrase never spans documents
    assert set(ids(index.search('"boundary layer"', syntax="operators", k=7))) == {"d0", "d2"}
    # stopwords leave no gap: "flow of air" is flow, air
    assert ids(index.search('"flow of air"', syntax="operators")) == ["d4"]
    assert ids(index.search('"air flow"', syntax="operators")) == []


def test_required_terms_score_and_excluded_ones_do_not(index: BM25Index) -> None:
    hits = index.search("+wing -rotor flow", syntax="operators", explain=True)
    for h in hits:
        terms = {t["term"] for t in h.explanation["bm25"]["terms"]}
        assert terms == {"wing", "flow"}
        assert h.score == pytest.approx(index.explain(Query(should="wing flow"), h.id).score,
                                        rel=1e-6)


def test_filter_and_operators_together(index: BM25Index) -> None:
    meta = BM25Index.from_texts(TEXTS, ids=IDS, metadatas=[{"n": i % 2} for i in range(7)],
                                positions=True)
    got = ids(meta.search("+flow", syntax="operators", filter={"n": 0}))
    assert set(got) == {"d0", "d4", "d6"}
    got = ids(meta.search("+flow", syntax="operators", filter=lambda d: d.metadata["n"] == 1))
    assert set(got) == {"d1"}


def test_unknown_required_term_matches_nothing(index: BM25Index) -> None:
    assert index.search("+zeppelin wing", syntax="operators") == []
    assert index.search('"wing zeppelin"', syntax="operators") == []
    assert ids(index.search("-zeppelin wing", syntax="operators")) == ids(index.search("wing"))


def test_phrase_without_positions_is_a_clear_error() -> None:
    plain = BM25Index.from_texts(TEXTS, ids=IDS)
    assert not plain.has_positions
    with pytest.raises(ValueError, match="positions=True"):
        plain.search('"boundary layer"', syntax="operators")
    # a one-word phrase is a required term: no positions needed
    assert plain.search('"wing"', syntax="operators") == plain.search(Query(must="wing"))


def test_positions_cost_four_bytes_per_token() -> None:
    without = BM25Index.from_texts(TEXTS, ids=IDS)
    with_positions = BM25Index.from_texts(TEXTS, ids=IDS, positions=True)
    tokens = sum(len(without.analyzer.tokenize(t)) for t in TEXTS)
    assert with_positions.nbytes() - without.nbytes() == 4 * tokens


def _reference(index: BM25Index, texts: list[str], q: Query, k: int) -> list[tuple[str, float]]:
    """Brute force: each document's analysed tokens checked against the query directly."""
    tok = index.analyzer.tokenize
    should = list(dict.fromkeys(t for c in q.should for t in tok(c)))
    must = [t for c in q.must for t in tok(c)]
    phrases = [tok(p) for p in q.phrases]
    must += [t for p in phrases if len(p) == 1 for t in p]
    phrases = [p for p in phrases if len(p) > 1]
    must_not = [t for c in q.must_not for t in tok(c)]
    need = q.min_should(len(should), required=bool(must or phrases))
    scoring = [t for c in q.should for t in tok(c)] + must + [t for p in phrases for t in p]
    if not scoring:
        return []
    full = {h.id: h.score for h in index.search(" ".join(scoring), k=len(texts))}
    out = []
    for i, text in enumerate(texts):
        d = tok(text)
        present = set(d)
        grams = {tuple(d[j:j + n]) for n in {len(p) for p in phrases} for j in range(len(d))}
        if (f"d{i}" in full and all(t in present for t in must)
                and not any(t in present for t in must_not)
                and all(tuple(p) in grams for p in phrases)
                and sum(t in present for t in should) >= need):
            out.append((i, f"d{i}", full[f"d{i}"]))
    out.sort(key=lambda r: (-r[2], r[0]))
    return [(doc, score) for _, doc, score in out[:k]]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("seed", range(4))
def test_operators_equal_a_brute_force_reference(backend: str, seed: int) -> None:
    if backend == "numba":
        pytest.importorskip("numba")
    rng = random.Random(seed)
    words = "ab cd ef gh ij kl mn op qr st".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 15))) for _ in range(150)]
    index = BM25Index.from_texts(texts, ids=[f"d{i}" for i in range(150)], positions=True,
                                 backend=backend)
    for _ in range(40):
        pick = lambda n: [rng.choice(words) for _ in range(n)]  # noqa: E731
        should, must = pick(rng.randint(0, 4)), pick(rng.randint(0, 2))
        phrases = [" ".join(pick(rng.randint(2, 3))) for _ in range(rng.randint(0, 1))]
        if not (should or must or phrases):
            should = pick(2)
        q = Query(should=should, must=must, must_not=pick(rng.randint(0, 1)), phrases=phrases,
                  min_should_match=rng.choice([None, None, 1, 2, "50%", -1]))
        k = rng.choice([1, 5, 20])
        got = [(h.id, h.score) for h in index.search(q, k=k)]
        want = _reference(index, texts, q, k)
        assert [d for d, _ in got] == [d for d, _ in want], q
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-6)


# ------------------------------------------------------------------ edits and persistence


def test_phrases_after_edits_equal_a_rebuild() -> None:
    index = BM25Index.from_texts(TEXTS, ids=IDS, positions=True)
    index.add(["boundary layer suction", "a layer"], ids=["n1", "n2"])
    index.upsert(["no more phrase here", "the boundary layer on a flat plate"], ids=["d0", "d3"])
    index.upsert(["blade tip"], ids=["d1"])  # drops rotor, vortex, interaction: renumbers terms
    index.delete(["d2", "n2"])
    rebuilt = BM25Index.from_docs(index.docs, positions=True)
    for q in ['"boundary layer"', '"blade tip"', '"flow of air"', '+layer -heat', '"layer flow"']:
        assert index.search(q, k=10, syntax="operators") == rebuilt.search(q, k=10,
                                                                          syntax="operators")
    def terms(ix: BM25Index) -> list[str]:  # term ids differ (numbering order); terms not
        names = {i: t for t, i in ix._state.vocab.items()}
        return [names[i] for i in ix._state.tokens.tolist()]

    assert terms(index) == terms(rebuilt)


@pytest.mark.parametrize("mmap", [False, True])
def test_positions_are_saved_and_loaded(tmp_path, mmap: bool) -> None:
    index = BM25Index.from_texts(TEXTS, ids=IDS, positions=True)
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx", mmap=mmap)
    assert loaded.has_positions
    q = '"boundary layer" -heat'
    assert loaded.search(q, syntax="operators") == index.search(q, syntax="operators")
    plain = BM25Index.from_texts(TEXTS, ids=IDS)
    plain.save(tmp_path / "plain")
    assert not BM25Index.load(tmp_path / "plain").has_positions


def test_positions_that_disagree_with_the_postings_are_refused(tmp_path) -> None:
    from hybrid_retrievers.bm25.saving import _read_positions

    index = BM25Index.from_texts(TEXTS, ids=IDS, positions=True)
    st = index._state

    class Reader:  # the positions file of another corpus, its checksum intact
        def where(self, name=None):
            return "idx/positions.npy"

        def array(self, name, **kw):
            return np.roll(st.tokens, 1) * 0

    with pytest.raises(IndexFormatError, match="disagree"):
        _read_positions(Reader(), st, full=True)  # type: ignore[arg-type]


def test_search_many_mixes_plain_and_structured(index: BM25Index) -> None:
    batch = ["wing flow", Query(must="wing", must_not="rotor"), '"boundary layer"']
    got = index.search_many(batch, k=3, syntax="operators")
    assert got == [index.search(q, k=3, syntax="operators") for q in batch]
    with pytest.raises(ValueError, match=r"queries\[1\]"):
        index.search_many(["wing", "+"], syntax="operators")


# ------------------------------------------------------------------ the sparse index


def test_sparse_index_applies_must_and_must_not_to_its_tokens() -> None:
    sparse = SparseIndex.from_texts(TEXTS, ids=IDS, embedder=HashingSparseEmbedder())
    plain = ids(sparse.search("wing flow", k=7))
    assert "d1" in plain
    got = ids(sparse.search("wing flow -rotor", k=7, syntax="operators"))
    assert got == [d for d in plain if d != "d1"]
    assert set(ids(sparse.search(Query(should="flow", must="wing"), k=7))) == {"d0", "d1", "d4"}
    assert sparse.search(Query(should="flow"), k=7) == sparse.search("flow", k=7)
    with pytest.raises(ValueError, match="phrases"):
        sparse.search('"boundary layer"', syntax="operators")
    with pytest.raises(ValueError, match="min_should_match"):
        sparse.search(Query(should="a b", min_should_match=2))
