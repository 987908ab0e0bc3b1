"""Tests for the text analyzer (hybrid_retrievers.text) and bundled stopwords."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import warnings

import pytest

from hybrid_retrievers.text import Analyzer, available_languages, stemming
from hybrid_retrievers.text import analyzer as analyzer_module
from hybrid_retrievers.text.stopwords import (
    available_stopword_languages,
    load_stopwords,
    stopwords_source,
)

try:
    import Stemmer as _pystemmer  # noqa: F401

    HAS_STEMMER = True
except ImportError:  # pragma: no cover - the dev venv has it
    HAS_STEMMER = False

needs_stemmer = pytest.mark.skipif(not HAS_STEMMER, reason="PyStemmer not installed")

PLAIN = dict(stopwords=None, stemmer=None)


# -- splitting and codes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("IPC-420", ["ipc-420", "ipc", "420"]),
        ("3.5", ["3.5", "3", "5"]),
        ("e-mail", ["e", "mail"]),
        ("U.S.A.", ["u", "s", "a"]),
        ("foo_bar", ["foo", "bar"]),
        ("foo_bar_1", ["foo_bar_1", "foo", "bar", "1"]),
        ("__init__", ["init"]),
        ("a--1", ["a", "1"]),
        ("see 2024-01-15.", ["see", "2024-01-15", "2024", "01", "15"]),
        ("x.com/a1", ["x.com/a1", "x", "com", "a1"]),
        ("Hello, World! (again)", ["hello", "world", "again"]),
        ("", []),
        ("  \t\n ", []),
        ("...,,,!!", []),
    ],
)
def test_split_rules(text: str, expected: list[str]) -> None:
    assert Analyzer(**PLAIN).tokenize(text) == expected


def test_unicode_words_survive() -> None:
    a = Analyzer(accent_folding=False, **PLAIN)
    assert a.tokenize("información naïve") == ["información", "naïve"]
    # Python's re treats combining marks as non-word; Devanagari must not be cut apart.
    assert a.tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert a.tokenize("Привет, мир") == ["привет", "мир"]


def test_compound_is_neither_stopped_nor_stemmed_but_parts_are() -> None:
    a = Analyzer(stopwords=["the", "a"], stemmer=lambda w: w + "~")
    assert a.tokenize("The pumps-2 a") == ["pumps-2", "pumps~", "2~"]
    assert Analyzer(stopwords=["a"], stemmer=None).tokenize("a-1") == ["a-1", "1"]


# -- normalisation -------------------------------------------------------------------------


def test_accent_folding_on_by_default() -> None:
    assert Analyzer(**PLAIN).tokenize("Naïve CAFÉ") == ["naive", "cafe"]
    assert Analyzer(**PLAIN).accent_folding is True


def test_accent_folding_off() -> None:
    assert Analyzer(accent_folding=False, **PLAIN).tokenize("Naïve CAFÉ") == ["naïve", "café"]


def test_decomposed_input_equals_composed() -> None:
    a = Analyzer(accent_folding=False, **PLAIN)
    assert a.tokenize("cafe\u0301") == a.tokenize("café") == ["café"]
    assert Analyzer(**PLAIN).tokenize("cafe\u0301") == ["cafe"]


def test_nfkc_and_casefold() -> None:
    a = Analyzer(**PLAIN)
    assert a.tokenize("ＦＵＬＬ－ｗｉｄｔｈ １２３") == ["full", "width", "123"]
    assert a.tokenize("ﬁnd the ﬂow") == ["find", "the", "flow"]
    assert a.tokenize("Straße") == ["strasse"]
    assert a.tokenize("x²") == ["x2"]
    assert a.normalize("ＡＢＣ Ünï") == "abc uni"


# -- stopwords -----------------------------------------------------------------------------


LUCENE_ENGLISH = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)


def test_english_default_is_nltk_list() -> None:
    words = load_stopwords("english")
    assert len(words) == 179 and LUCENE_ENGLISH <= set(words)
    assert {"what", "have", "been", "ourselves", "mustn't"} <= set(words)
    assert Analyzer(stemmer=None).stopwords == frozenset(words)
    assert Analyzer(stemmer=None).tokenize("The cat is on the mat") == ["cat", "mat"]


def test_bundled_lists_have_sources_and_required_languages() -> None:
    langs = available_stopword_languages()
    assert {"english", "spanish"} <= set(langs)
    for lang in langs:
        source = stopwords_source(lang)
        assert source, lang
        words = load_stopwords(lang)
        assert len(words) > 20 and all(w == w.strip() and " " not in w for w in words)
    assert "snowballstem.org" in stopwords_source("spanish")
    assert {"de", "la", "está", "estuviésemos"} <= load_stopwords("spanish")


def test_language_without_bundled_list_gets_no_stopwords() -> None:
    assert load_stopwords("hindi") == frozenset()
    assert Analyzer("hindi", stemmer=None).stopwords == frozenset()


def test_custom_stopwords_are_folded() -> None:
    a = Analyzer("spanish", stopwords=["Está", "ＥＮ"], stemmer=None)
    assert a.stopwords == frozenset({"esta", "en"})
    assert a.tokenize("La información está en los índices") == [
        "la", "informacion", "los", "indices"
    ]
    assert a.tokenize("esta EN casa") == ["casa"]
    b = Analyzer(stopwords=["está"], stemmer=None, accent_folding=False)
    assert b.tokenize("está esta") == ["esta"]


def test_stopwords_none_and_validation() -> None:
    assert Analyzer(**PLAIN).tokenize("To be or not") == ["to", "be", "or", "not"]
    with pytest.raises(ValueError, match="stopwords"):
        Analyzer(stopwords="the")
    with pytest.raises(TypeError, match="stopwords"):
        Analyzer(stopwords=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"stopwords\[1\]"):
        Analyzer(stopwords=["a", 3])  # type: ignore[list-item]


# -- stemming ------------------------------------------------------------------------------


@needs_stemmer
def test_english_snowball_default() -> None:
    a = Analyzer()
    assert a.stemmer == "snowball"
    assert a.tokenize("The running runners ran") == ["run", "runner", "ran"]


@needs_stemmer
def test_spanish_text() -> None:
    es = Analyzer("es")
    assert es.language == "spanish"
    # la, está, en, los are Snowball Spanish stopwords; folding happens before stemming.
    # Stems differ between Snowball releases (PyStemmer 2 and 3), so ask the stemmer.
    import Stemmer

    spanish = Stemmer.Stemmer("spanish")
    assert es.tokenize("La información está en los índices") == spanish.stemWords(
        ["informacion", "indices"]
    )
    unfolded = Analyzer("spanish", accent_folding=False)
    assert unfolded.tokenize("La información está en los índices") == spanish.stemWords(
        ["información", "índices"]
    )
    # Accent-less queries meet accented documents under folding.
    assert es.tokenize("informacion indices") == es.tokenize("información índices")


def test_callable_stemmer_is_cached_per_distinct_token() -> None:
    calls: list[str] = []

    def stem(word: str) -> str:
        calls.append(word)
        return word[:4]

    a = Analyzer(stopwords=["the"], stemmer=stem)
    assert a.tokenize("the pumping pumping pumps") == ["pump", "pump", "pump"]
    assert a.tokenize_many(["pumping again", "pumps"]) == [["pump", "agai"], ["pump"]]
    assert sorted(calls) == ["again", "pumping", "pumps"]


def test_callable_stemmer_must_return_str() -> None:
    a = Analyzer(stemmer=lambda w: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="must return a str"):
        a.tokenize("word")


def test_stemmer_validation() -> None:
    with pytest.raises(ValueError, match="stemmer"):
        Analyzer(stemmer="porter")
    with pytest.raises(TypeError, match="stemmer"):
        Analyzer(stemmer=3)  # type: ignore[arg-type]


def test_missing_pystemmer_warns_once_and_does_not_stem(monkeypatch) -> None:
    monkeypatch.setattr(stemming, "_import_stemmer", lambda: None)
    monkeypatch.setattr(stemming, "_warned_no_stemmer", False)
    with pytest.warns(UserWarning, match=r"hybrid-retrievers\[stem\]"):
        a = Analyzer()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Analyzer()  # second time: silent
    assert a.stemmer is None
    assert a.tokenize("running") == ["running"]
    # The config records what was done, so the index is not later queried with stems.
    assert a.to_config()["stemmer"] is None
    with pytest.raises(ImportError, match=r"hybrid-retrievers\[stem\]"):
        Analyzer.from_config({**a.to_config(), "stemmer": "snowball"})


# -- languages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "name"),
    [("en", "english"), ("es", "spanish"), ("fr", "french"), ("de", "german"), ("EN ", "english")],
)
def test_iso_codes_are_aliases(code: str, name: str) -> None:
    assert Analyzer(code, **PLAIN).language == name
    assert Analyzer(code, **PLAIN) == Analyzer(name, **PLAIN)


def test_unknown_language_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="klingon") as info:
        Analyzer("klingon")
    assert "english" in str(info.value) and "spanish" in str(info.value)
    with pytest.raises(TypeError, match="language"):
        Analyzer(None)  # type: ignore[arg-type]


def test_available_languages() -> None:
    langs = available_languages()
    assert {"english", "spanish", "french", "german"} <= set(langs)
    assert "porter" not in langs and list(langs) == sorted(langs)


@needs_stemmer
def test_every_pystemmer_language_works() -> None:
    import Stemmer

    for algo in Stemmer.algorithms():
        if algo != "porter":
            assert Analyzer(algo).stemmer == "snowball"


# -- config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"language": "es", "accent_folding": False},
        {"stopwords": None, "stemmer": None},
        {"stopwords": ["Zeta", "alpha", "está"]},
    ],
)
def test_config_round_trip(kwargs) -> None:
    if not HAS_STEMMER and kwargs.get("stemmer", "default") == "default":
        kwargs = {**kwargs, "stemmer": None}
    a = Analyzer(**kwargs)
    cfg = a.to_config()
    assert json.loads(json.dumps(cfg)) == cfg
    assert set(cfg) == {"version", "language", "stopwords", "stemmer", "accent_folding",
                        "tokenizer"}
    b = Analyzer.from_config(json.loads(json.dumps(cfg)))
    assert b == a and b.to_config() == cfg
    text = "Zeta está alpha IPC-420 running información"
    assert b.tokenize(text) == a.tokenize(text)


def test_config_values() -> None:
    cfg = Analyzer("en", stopwords=["b", "a"], stemmer=None).to_config()
    assert cfg == {
        "version": 2,
        "language": "english",
        "stopwords": ["a", "b"],
        "stemmer": None,
        "accent_folding": True,
        "tokenizer": "standard",
    }
    # The resolved list is saved (not "default"), so a reloaded index analyses queries
    # exactly as before even if a later release edits the bundled list.
    assert Analyzer(stemmer=None).to_config()["stopwords"] == sorted(load_stopwords("english"))
    assert Analyzer.from_config(Analyzer(stemmer=None).to_config()) == Analyzer(stemmer=None)


def test_callable_stemmer_cannot_be_saved() -> None:
    with pytest.raises(ValueError, match=r"callable.*stemmer=None"):
        Analyzer(stemmer=str.upper).to_config()


@pytest.mark.parametrize(
    "bad",
    [
        [],
        "not a dict",
        {"version": 1},
        {**Analyzer(**PLAIN).to_config(), "extra": 1},
        {**Analyzer(**PLAIN).to_config(), "version": "1"},
        {**Analyzer(**PLAIN).to_config(), "version": True},
        {**Analyzer(**PLAIN).to_config(), "version": 99},
        {**Analyzer(**PLAIN).to_config(), "language": 3},
        {**Analyzer(**PLAIN).to_config(), "language": "klingon"},
        {**Analyzer(**PLAIN).to_config(), "stopwords": "the"},
        {**Analyzer(**PLAIN).to_config(), "stopwords": [1, 2]},
        {**Analyzer(**PLAIN).to_config(), "stemmer": "porter"},
        {**Analyzer(**PLAIN).to_config(), "accent_folding": 1},
    ],
)
def test_malformed_config_raises_value_error(bad) -> None:
    with pytest.raises(ValueError):
        Analyzer.from_config(bad)


# -- API behaviour -------------------------------------------------------------------------


def test_eq_and_repr() -> None:
    assert Analyzer(**PLAIN) == Analyzer(**PLAIN)
    assert Analyzer(**PLAIN) != Analyzer(accent_folding=False, **PLAIN)
    assert Analyzer(stopwords=["a"], stemmer=None) != Analyzer(stemmer=None)
    assert Analyzer(stopwords=["A"], stemmer=None) == Analyzer(stopwords=["a"], stemmer=None)
    assert hash(Analyzer(**PLAIN)) == hash(Analyzer(**PLAIN))
    assert Analyzer(**PLAIN) != "analyzer"
    r = repr(Analyzer("es", stopwords=None, stemmer=None))
    assert r == "Analyzer(language='spanish', stopwords=None, stemmer=None, accent_folding=True)"


@pytest.mark.parametrize("kwargs", [{}, PLAIN, {"language": "es"}, {"stopwords": ["x"]}])
def test_tokenize_many_equals_tokenize(kwargs) -> None:
    if not HAS_STEMMER:
        kwargs = {**kwargs, "stemmer": None}
    texts = [
        "The IPC-420 pumps run",
        "",
        "La información está en los índices",
        "naïve café ＦＵＬＬ ﬁ 3.5 e-mail x_1",
        "running runs ran the the the",
    ] * 3
    a = Analyzer(**kwargs)
    fresh = Analyzer(**kwargs).tokenize_many(texts)
    assert fresh == [a.tokenize(t) for t in texts]
    assert a.tokenize_many(iter(texts)) == fresh  # any iterable, warm cache
    assert a.tokenize_many([]) == []


def test_tokenize_many_progress_flag() -> None:
    assert Analyzer(**PLAIN).tokenize_many(["a b"], show_progress=True) == [["a", "b"]]


def test_non_str_input() -> None:
    a = Analyzer(**PLAIN)
    with pytest.raises(TypeError, match="text must be a str"):
        a.tokenize(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str"):
        a.tokenize(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="use tokenize"):
        a.tokenize_many("a single string")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        a.tokenize_many(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="accent_folding"):
        Analyzer(accent_folding=1)  # type: ignore[arg-type]


def test_thread_safety() -> None:
    kwargs = {} if HAS_STEMMER else {"stemmer": None}
    a = Analyzer(**kwargs)
    texts = [f"running word{i} pumps-{i % 50} jumping {i}" for i in range(400)]
    expected = [Analyzer(**kwargs).tokenize(t) for t in texts]
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for j in range(len(texts)):
                k = (j + offset) % len(texts)
                assert a.tokenize(texts[k]) == expected[k]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i * 37,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_cache_swap_keeps_results(monkeypatch) -> None:
    monkeypatch.setattr(analyzer_module, "_MAX_CACHE", 3)
    a = Analyzer(stopwords=None, stemmer=lambda w: w.upper())
    assert a.tokenize("a b c d e") == ["A", "B", "C", "D", "E"]
    assert a.tokenize("a b") == ["A", "B"]
    assert len(a._cache) <= 5


def test_cache_limit_is_read_from_the_analyzer_module(monkeypatch) -> None:
    # Guards the patch target (hybrid_retrievers.text.analyzer): a full cache is swapped.
    monkeypatch.setattr(analyzer_module, "_MAX_CACHE", 3)
    a = Analyzer(stopwords=None, stemmer=lambda w: w.upper())
    a.tokenize("a b c")
    assert a.tokenize("d e") == ["D", "E"]
    assert sorted(a._cache) == ["d", "e"]


def test_import_needs_no_optional_dependencies() -> None:
    code = (
        "import sys; import hybrid_retrievers.text as t; "
        "a = t.Analyzer(stopwords=None, stemmer=None); a.tokenize('x'); "
        "print('Stemmer' in sys.modules, 'tqdm' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]


# -- token_pattern and normalize=False (issue 35: the frameworks' tokenizer options) ----------


def test_token_pattern_splits_like_bm25s_and_is_saved() -> None:
    bm25s_pattern = r"(?u)\b\w\w+\b"
    a = Analyzer(token_pattern=bm25s_pattern, accent_folding=False, **PLAIN)
    # Matches of the pattern in the lowercased text: one-character words are dropped and
    # codes are split at the hyphen (no compound), exactly as bm25s.tokenize does.
    assert a.tokenize("A wing's IPC-420 lift, x y Café") == ["wing", "ipc", "420", "lift",
                                                             "café"]
    assert a.token_pattern == bm25s_pattern
    cfg = a.to_config()
    assert cfg["version"] == 3 and cfg["token_pattern"] == bm25s_pattern
    b = Analyzer.from_config(json.loads(json.dumps(cfg)))
    assert b == a and b.token_pattern == bm25s_pattern
    # One group: its text is the token (scikit-learn's rule).
    assert Analyzer(token_pattern=r"#(\w+)", **PLAIN).tokenize("#wing and #lift") == [
        "wing", "lift"]


def test_token_pattern_bad_values() -> None:
    with pytest.raises(ValueError, match="not a valid regular expression"):
        Analyzer(token_pattern="(")
    with pytest.raises(ValueError, match="at most one group"):
        Analyzer(token_pattern=r"(\w)(\w)")
    with pytest.raises(TypeError, match="token_pattern must be a regular expression"):
        Analyzer(token_pattern=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokenizer= or token_pattern=, not both"):
        Analyzer(tokenizer="words", token_pattern=r"\w+")


def test_normalize_false_hands_the_text_to_the_tokenizer_as_given() -> None:
    a = Analyzer(tokenizer=str.split, normalize=False, **PLAIN)
    assert a.tokenize("The Café  sat.") == ["The", "Café", "sat."]
    assert not a.normalizes and Analyzer().normalizes
    with pytest.raises(ValueError, match="normalize=False needs a callable"):
        Analyzer(normalize=False)
    with pytest.raises(TypeError, match="normalize must be True or False"):
        Analyzer(normalize="no")  # type: ignore[arg-type]
    # An unregistered callable is refused at save, as before.
    with pytest.raises(ValueError, match="unregistered tokenizer"):
        a.to_config()


def test_configs_without_version_3_settings_stay_version_2() -> None:
    assert Analyzer().to_config()["version"] == 2
    with pytest.raises(ValueError, match="exactly the keys"):
        Analyzer.from_config({**Analyzer().to_config(), "token_pattern": None})
    v3 = {**Analyzer().to_config(), "version": 3, "token_pattern": None, "normalize": True}
    assert Analyzer.from_config(v3) == Analyzer()
    with pytest.raises(ValueError, match="'normalize' must be a bool"):
        Analyzer.from_config({**v3, "normalize": 1})
