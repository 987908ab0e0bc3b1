"""CJK text and the tokenizer hook (issue 12 item 10).

Real sentences: Li Bai's "Quiet Night Thought" and everyday Chinese, Japanese and Korean
news-style sentences written for these tests. A query must find the document that holds
its words, with the default analyzer (bigrams, no dependency) and with jieba.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hybrid_retrievers import Analyzer, BM25Index, ParentChildSearcher
from hybrid_retrievers.persistence import current_files
from hybrid_retrievers.text.cjk import cjk_bigrams
from hybrid_retrievers.text.tokenizers import (
    BUILTIN_TOKENIZERS,
    UnknownTokenizerError,
    available_tokenizers,
    register_tokenizer,
    unregister_tokenizer,
)

DATA = Path(__file__).parent / "data"

CHINESE = {
    "poem": "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
    "weather": "今天北京的天气很好，我们去公园散步吧。",
    "train": "从上海到杭州的高铁只需要一个小时。",
    "tea": "中国人喜欢喝绿茶，尤其是在春天。",
    "bank": "我在中国银行开了一个新的储蓄账户。",
}
JAPANESE = {
    "tokyo": "東京は日本の首都で、人口がとても多いです。",
    "sakura": "春になると、公園の桜がきれいに咲きます。",
    "ramen": "駅の近くに新しいラーメン屋ができました。",
    "train": "新幹線で大阪から京都まで十五分ぐらいかかります。",
}
KOREAN = {
    "seoul": "서울은 대한민국의 수도이며 인구가 많습니다.",
    "kimchi": "김치는 한국의 전통 음식으로 배추로 만듭니다.",
    "subway": "지하철을 타고 학교에 가는 데 삼십 분이 걸립니다.",
    "books": "주말에는 도서관에서 책을 읽는 것을 좋아합니다.",
}
ENGLISH = {"wing": "The lift of a wing grows with the angle of attack."}

QUERIES = [  # (query, corpus key that must rank first)
    ("故乡", "poem"),
    ("明月", "poem"),
    ("北京天气", "weather"),
    ("去杭州的高铁", "train"),
    ("绿茶", "tea"),
    ("银行账户", "bank"),
    ("日本の首都", "tokyo"),
    ("桜が咲く", "sakura"),
    ("ラーメン屋", "ramen"),
    ("新幹線で京都", "train"),
    ("대한민국 수도", "seoul"),
    ("김치", "kimchi"),
    ("지하철", "subway"),
    ("도서관에서 책", "books"),
    ("wing lift", "wing"),
]


def _corpus(lang: str) -> dict[str, str]:
    return {"zh": CHINESE, "ja": JAPANESE, "ko": KOREAN}[lang]


def _mixed_index(analyzer: Analyzer | None = None) -> BM25Index:
    texts = {**{f"zh:{k}": v for k, v in CHINESE.items()},
             **{f"ja:{k}": v for k, v in JAPANESE.items()},
             **{f"ko:{k}": v for k, v in KOREAN.items()},
             **{f"en:{k}": v for k, v in ENGLISH.items()}}
    return BM25Index.from_texts(list(texts.values()), ids=list(texts), analyzer=analyzer)


def _lang_of(query: str) -> str:
    if any("\uac00" <= c <= "\ud7a3" for c in query):
        return "ko"
    if any("\u3040" <= c <= "\u30ff" for c in query):
        return "ja"
    return "en" if query.isascii() else "zh"


# ------------------------------------------------------------------------- bigrams


def test_bigrams_follow_lucene_cjk() -> None:
    assert cjk_bigrams("低头思故乡") == ["低头", "头思", "思故", "故乡"]
    assert cjk_bigrams("霜") == ["霜"]
    assert cjk_bigrams("") == []
    a = Analyzer(stemmer=None)
    assert a.tokenize("低头思故乡") == ["低头", "头思", "思故", "故乡"]
    # Punctuation ends a run; a one-character run stays a unigram.
    assert a.tokenize("地上霜。举头") == ["地上", "上霜", "举头"]
    assert a.tokenize("霜，雪") == ["霜", "雪"]
    # Mixed scripts: Latin words and digits are split as usual, CJK runs as bigrams.
    assert a.tokenize("iPhone手机2024年发布") == ["iphone", "手机", "2024", "年发", "发布"]
    # Kana and Han bigram across the script change, as Lucene's CJKBigramFilter does.
    assert a.tokenize("東京に行く") == ["東京", "京に", "に行", "行く"]
    # Half-width Katakana and full-width Latin are folded by NFKC first; "・" separates.
    assert a.tokenize("ｶﾀｶﾅ・テスト ＡＢＣ") == ["カタ", "タカ", "カナ", "テス", "スト", "abc"]
    # Korean: spaces separate phrases, each phrase is bigrammed.
    assert a.tokenize("서울은 수도") == ["서울", "울은", "수도"]


def test_non_cjk_text_is_split_exactly_as_before() -> None:
    words = Analyzer(tokenizer="words", stemmer=None)
    standard = Analyzer(stemmer=None)
    for text in ["The IPC-420 pumps, naïve café", "Straße über ﬁnal", "नमस्ते दुनिया",
                 "Привет, мир 2024-01-15", "foo_bar_1 x.com/a1", ""]:
        assert standard.tokenize(text) == words.tokenize(text)
    assert words.tokenize("低头思故乡") == ["低头思故乡"]  # the version 1 split


@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_a_query_finds_the_document_with_its_words(query: str, expected: str) -> None:
    index = _mixed_index()
    hits = index.search(query, k=3)
    assert hits, f"{query!r} found nothing"
    assert hits[0].id == f"{_lang_of(query)}:{expected}", [h.id for h in hits]


def test_cjk_search_returns_only_documents_sharing_a_bigram() -> None:
    index = _mixed_index()
    assert [h.id for h in index.search("故乡", k=10)] == ["zh:poem"]
    assert index.search("火星探测", k=10) == []  # no shared bigram: nothing, no padding


def test_cjk_language_names_are_accepted() -> None:
    for code, name in (("zh", "chinese"), ("ja", "japanese"), ("ko", "korean")):
        a = Analyzer(code)
        assert a.language == name and a.stemmer is None and a.stopwords == frozenset()
        assert Analyzer.from_config(a.to_config()) == a
    assert Analyzer("zh").tokenize("低头思故乡 Running") == ["低头", "头思", "思故", "故乡",
                                                             "running"]


# --------------------------------------------------------------------------- jieba


try:
    import jieba  # noqa: F401  (the "cjk" extra)

    HAS_JIEBA = True
except ImportError:  # pragma: no cover - the test extra installs it
    HAS_JIEBA = False

needs_jieba = pytest.mark.skipif(not HAS_JIEBA, reason="jieba not installed (the cjk extra)")


@needs_jieba
def test_jieba_segments_chinese_words() -> None:
    a = Analyzer(tokenizer="jieba", stemmer=None)
    tokens = a.tokenize(CHINESE["poem"])
    assert {"明月", "故乡", "低头", "举头", "地上"} <= set(tokens)
    assert "，" not in tokens and "。" not in tokens
    # Search mode also emits the words inside a long compound.
    assert {"人民", "共和国", "中华人民共和国"} <= set(a.tokenize("中华人民共和国成立了"))
    # Kana and Hangul runs keep their bigrams; Latin text is split as usual.
    assert a.tokenize("서울은") == ["서울", "울은"]
    assert a.tokenize("Wing lift 银行") == ["wing", "lift", "银行"]


@needs_jieba
@pytest.mark.parametrize(("query", "expected"), [q for q in QUERIES if _lang_of(q[0]) == "zh"])
def test_jieba_queries_find_their_documents(query: str, expected: str) -> None:
    index = _mixed_index(Analyzer(tokenizer="jieba"))
    assert index.search(query, k=3)[0].id == f"zh:{expected}"


@needs_jieba
def test_jieba_index_round_trips(tmp_path: Path) -> None:
    index = _mixed_index(Analyzer(tokenizer="jieba"))
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.analyzer.tokenizer == "jieba" and loaded.analyzer == index.analyzer
    for query, _ in QUERIES:
        assert loaded.search(query, k=5) == index.search(query, k=5)


def test_jieba_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from hybrid_retrievers.text import cjk

    monkeypatch.setattr(cjk, "_jieba_segmenter", None)
    monkeypatch.setitem(sys.modules, "jieba", None)
    with pytest.raises(ImportError, match=r"hybrid-retrievers\[cjk\]"):
        Analyzer(tokenizer="jieba")


# ------------------------------------------------------------------ custom tokenizers


def _whitespace(text: str) -> list[str]:
    return text.split(" ")


@pytest.fixture
def registered() -> str:
    name = "tests.whitespace"
    register_tokenizer(name, _whitespace, replace=True)
    yield name
    unregister_tokenizer(name)


def test_custom_callable_tokenizer_gets_normalised_text_and_stemming() -> None:
    seen: list[str] = []

    def tok(text: str) -> list[str]:
        seen.append(text)
        return text.split("|") + ["", "  "]

    a = Analyzer(tokenizer=tok)
    assert a.tokenize("Running|CAFÉS|the") == ["run", "cafe"]  # stemmed, stopword dropped
    assert seen == ["running|cafés|the".replace("é", "e")]
    assert a.tokenizer is tok and "tokenizer=" in repr(a)


def test_custom_tokenizer_output_is_checked() -> None:
    with pytest.raises(TypeError, match="must return an iterable of str"):
        Analyzer(tokenizer=lambda t: 5).tokenize("x")
    with pytest.raises(TypeError, match="must return an iterable of str"):
        Analyzer(tokenizer=lambda t: "not a list").tokenize("x")
    with pytest.raises(TypeError, match="must return str tokens, got int"):
        Analyzer(tokenizer=lambda t: [1]).tokenize("x")
    with pytest.raises(TypeError, match="tokenizer must be a name"):
        Analyzer(tokenizer=3)
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        Analyzer(tokenizer="no-such-tokenizer")


def test_an_unregistered_callable_is_refused_at_save(tmp_path: Path) -> None:
    index = BM25Index.from_texts(["wing lift", "bread"], analyzer=Analyzer(tokenizer=_whitespace))
    with pytest.raises(ValueError, match=r"unregistered tokenizer callable.*register_tokenizer"):
        index.save(tmp_path / "idx")
    assert not (tmp_path / "idx").exists()


def test_a_registered_callable_saves_by_name_and_load_restores_it(registered: str,
                                                                 tmp_path: Path) -> None:
    # Registered after the analyzer was built: the name is looked up at save time.
    for analyzer in (Analyzer(tokenizer=_whitespace), Analyzer(tokenizer=registered)):
        index = BM25Index.from_texts(["wing-lift drag", "bread dough"], ids=["w", "b"],
                                     analyzer=analyzer)
        path = tmp_path / analyzer.__class__.__name__ / str(id(analyzer))
        index.save(path)
        manifest = json.loads((current_files(path) / "manifest.json").read_text())
        assert manifest["analyzer"]["tokenizer"] == registered
        loaded = BM25Index.load(path)
        assert loaded.analyzer.tokenizer == registered
        # The whitespace tokenizer keeps "wing-lift" whole: only that token matches.
        assert [h.id for h in loaded.search("wing-lift", k=5)] == ["w"]
        assert loaded.search("wing", k=5) == []


def test_loading_with_the_tokenizer_unregistered_is_a_clear_error(registered: str,
                                                                  tmp_path: Path) -> None:
    index = BM25Index.from_texts(["wing lift"], analyzer=Analyzer(tokenizer=registered))
    index.save(tmp_path / "idx")
    unregister_tokenizer(registered)
    try:
        with pytest.raises(UnknownTokenizerError, match=r"register_tokenizer\('tests.whitespace'"):
            BM25Index.load(tmp_path / "idx")
    finally:
        register_tokenizer(registered, _whitespace)


def test_parent_child_searcher_finds_cjk_text() -> None:
    searcher = ParentChildSearcher.from_texts(
        [CHINESE["poem"], CHINESE["bank"]], ids=["poem", "bank"], chunk_size=200,
        chunk_overlap=0)
    assert searcher.search("故乡", k=1)[0].id == "poem"


def test_registry_rules() -> None:
    assert set(BUILTIN_TOKENIZERS) <= set(available_tokenizers())
    with pytest.raises(ValueError, match="built in"):
        register_tokenizer("standard", _whitespace)
    with pytest.raises(ValueError, match="letters, digits"):
        register_tokenizer("has space", _whitespace)
    with pytest.raises(TypeError, match="callable"):
        register_tokenizer("x", "not callable")
    with pytest.raises(TypeError, match="name must be a str"):
        register_tokenizer(3, _whitespace)
    register_tokenizer("tests.rules", _whitespace)
    try:
        register_tokenizer("tests.rules", _whitespace)  # the same function again is fine
        with pytest.raises(ValueError, match="already registered"):
            register_tokenizer("tests.rules", str.split)
        assert "tests.rules" in available_tokenizers()
    finally:
        unregister_tokenizer("tests.rules")
    with pytest.raises(KeyError):
        unregister_tokenizer("tests.rules")


def test_bound_methods_are_found_in_the_registry() -> None:
    class Cutter:
        def cut(self, text: str) -> list[str]:
            return text.split()

    cutter = Cutter()
    register_tokenizer("tests.bound", cutter.cut)
    try:
        assert Analyzer(tokenizer=cutter.cut).to_config()["tokenizer"] == "tests.bound"
    finally:
        unregister_tokenizer("tests.bound")


# -------------------------------------------------------------- config versions


def test_version_1_configs_load_with_the_version_1_split() -> None:
    v1 = {"version": 1, "language": "english", "stopwords": None, "stemmer": None,
          "accent_folding": True}
    a = Analyzer.from_config(v1)
    assert a.tokenizer == "words" and a.tokenize("低头思故乡") == ["低头思故乡"]
    with pytest.raises(ValueError, match="version 1 must have exactly the keys"):
        Analyzer.from_config({**v1, "tokenizer": "standard"})
    with pytest.raises(ValueError, match="version 2 must have exactly the keys"):
        Analyzer.from_config({**v1, "version": 2})
    with pytest.raises(ValueError, match="'tokenizer' must be a tokenizer name"):
        Analyzer.from_config({**v1, "version": 2, "tokenizer": 5})


def test_an_index_saved_before_tokenizers_loads_with_its_old_behaviour(tmp_path: Path) -> None:
    """``data/bm25_analyzer_v1`` was saved by the package at commit 44d49e6 (config v1)."""
    path = tmp_path / "old"
    shutil.copytree(DATA / "bm25_analyzer_v1", path)
    old = BM25Index.load(path)
    assert old.analyzer.tokenizer == "words"
    # As before: the CJK sentence is one token, so only the one-word document matches.
    assert [h.id for h in old.search("故乡", k=5)] == ["guxiang"]
    assert [h.id for h in old.search("wing lift", k=5)] == ["wing"]
    # Rebuilt with today's default analyzer, the poem is found too.
    rebuilt = BM25Index.from_docs(old.docs)
    assert {h.id for h in rebuilt.search("故乡", k=5)} == {"guxiang", "li-bai-2"}
