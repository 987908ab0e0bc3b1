"""Equality filters over a `DocColumns` read one key from the metadata bytes (`KeyColumn`)
and answer exactly what evaluating each `Doc` with ``==`` answers.

The differential tests draw metadata with nested values, missing keys, None, bools
beside ints and floats (``True == 1 == 1.0`` in Python, and so in filters), unicode,
and strings holding quotes, backslashes, braces and colons, and compare every filter's
mask and filtered search results with the Doc-by-Doc evaluation (`passes`). Hand-made
buffers (as a foreign or old file could hold: whitespace, escapes, duplicate keys,
other spellings of a number) are compared with a parse of each text.
"""

from __future__ import annotations

import doctest
import json
import random
from typing import Any

import numpy as np
import pytest

from hybrid_retrievers import BM25Index, Doc
from hybrid_retrievers import metadata_keys
from hybrid_retrievers.document_columns import DocColumns, StrColumn
from hybrid_retrievers.filters import cached_equality_mask, equality_mask, passes
from hybrid_retrievers.metadata_keys import ABSENT, UNSURE

SCALARS: list[Any] = [0, 1, -1, 2, True, False, None, 1.0, 0.0, -0.0, 2.5, 1e20, 10**20,
                      "", "de", "en", "1", "true", "null", "Ünïcode 日本", 'say "hi"', "a\\b",
                      "{x}", "k:v", "a,b", "tab\there", "line\nbreak", "\u2028"]
KEYS = ["lang", "n", "flag", "Ünï", "x y", "a:b", "q\"k", "", "nested", ",", ":"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.12:
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if depth < 2 and roll < 0.22:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice(SCALARS)


def _metadatas(n: int, seed: int) -> list[dict[str, Any] | None]:
    rng = random.Random(seed)
    out: list[dict[str, Any] | None] = []
    for i in range(n):
        if i % 9 == 0:
            out.append(None)
            continue
        out.append({k: _value(rng) for k in rng.sample(KEYS, rng.randint(1, 5))})
    return out


def _filters(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    filters: list[dict[str, Any]] = [{}, {"lang": "de"}, {"n": 1}, {"n": True}, {"flag": 0},
                                     {"flag": False}, {"n": 1.0}, {"lang": None},
                                     {"n": [1, 2]}, {"nested": {"lang": "de"}},
                                     {"missing": None},
                                     {"lang": "de", "n": 1}, {"q\"k": "de"}, {"": 1}]
    filters += [{rng.choice(KEYS): _value(rng)} for _ in range(60)]
    filters += [{rng.choice(KEYS): rng.choice(SCALARS), rng.choice(KEYS): rng.choice(SCALARS)}
                for _ in range(40)]
    return filters


def _doc_by_doc(filter: dict[str, Any], docs: list[Doc]) -> np.ndarray:
    return np.array([passes(filter, d) for d in docs], dtype=bool)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_masks_are_those_of_the_doc_by_doc_evaluation(seed: int) -> None:
    metas = _metadatas(400, seed)
    # A metadata mapping JSON would not give back (a tuple) is kept beside the buffer.
    metas[5] = {"lang": "de", "n": (1, 2)}
    ids = [f"d{i}" for i in range(len(metas))]
    docs = [Doc(i, "text", m or {}) for i, m in zip(ids, metas)]
    table = DocColumns.from_columns(ids, ["text"] * len(ids), metas)
    for filter in _filters(seed):
        expected = _doc_by_doc(filter, docs)
        assert equality_mask(filter, table).tolist() == expected.tolist(), filter
        assert equality_mask(filter, docs).tolist() == expected.tolist(), filter
    # Edits make new tables, whose key columns read their own documents.
    table.key_column("lang")
    edited = table.placed(DocColumns.from_columns(["d1"], ["text"], [{"lang": "de"}]),
                          np.array([1]))
    docs[1] = Doc("d1", "text", {"lang": "de"})
    assert equality_mask({"lang": "de"}, edited).tolist() == \
        _doc_by_doc({"lang": "de"}, docs).tolist()
    kept = edited.kept(np.arange(len(docs)) % 2 == 0)
    assert equality_mask({"lang": "de"}, kept).tolist() == \
        _doc_by_doc({"lang": "de"}, docs[::2]).tolist()


def test_filtered_search_results_are_the_doc_by_doc_ones(tmp_path) -> None:
    """Filtered BM25 results (in memory, loaded, memory-mapped) are the unfiltered
    results that pass the filter Doc by Doc, in the same order."""
    metas = _metadatas(300, 11)
    rng = random.Random(11)
    vocab = ["wing", "lift", "bread", "yeast", "proxy", "café", "日本"]
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(2, 8))) for _ in metas]
    ids = [f"d{i}" for i in range(len(metas))]
    index = BM25Index.from_texts(texts, ids, metas)
    index.save(tmp_path / "bm25")
    docs = {d.id: d for d in (Doc(i, t, m or {}) for i, t, m in zip(ids, texts, metas))}
    for loaded in (index, BM25Index.load(tmp_path / "bm25"),
                   BM25Index.load(tmp_path / "bm25", mmap=True)):
        for filter in _filters(11)[:50]:
            for query in ("wing lift", "bread café", "日本"):
                every = loaded.search(query, k=len(ids))
                expected = [(h.id, h.score) for h in every if passes(filter, docs[h.id])]
                got = loaded.search(query, k=len(ids), filter=filter)
                assert [(h.id, h.score) for h in got] == expected, (filter, query)


def _table(texts: list[str]) -> DocColumns:
    data = [t.encode("utf-8") for t in texts]
    buf = np.frombuffer(b"".join(data), dtype=np.uint8)
    off = np.concatenate([[0], np.cumsum([len(d) for d in data])]).astype(np.int64)
    n = len(texts)
    return DocColumns(StrColumn.encoded([f"d{i}" for i in range(n)]),
                      StrColumn(["text"] * n), StrColumn(buf=buf, off=off))


FOREIGN = [
    '{"lang": "de", "n" : 1}',            # whitespace around ':' and after ','
    '{"lang":"d\\u0065"}',                 # an escape spelling "de"
    '{"l\\u0061ng":"de"}',                 # an escape spelling the key
    '{"lang":"en","lang":"de"}',           # a duplicate key: JSON keeps the last
    '{"lang":"de","lang":"en"}',
    '{"x":{"lang":"de"},"n":1.0}',         # the key nested only
    '{"x":{"lang":"en"},"lang":"de"}',     # nested and at the top
    '{"n":1e0,"lang":["de"]}',             # other spellings of 1; a list value
    '{"n":10E-1,"flag":true}',
    '{"n":1.000,"flag":1}',
    '{"t":"a,\\"lang\\":\\"de","n":2}',    # the key's bytes inside an escaped string
    '{"t":"{\\"lang\\":1}"}',
    '{"t":"x\\",\\"lang\\":\\"de"}',
    '',
    '{"n":-0,"flag":false,"lang":null}',
    '{"n":NaN}',                            # not JSON, but what Python's parser reads
    '{"n":Infinity,"lang":"de"}',
    '{ "lang" :\t"de" }',
    '{"a":"x",":":"y"}',                   # '","' then ':' here is no key ","
]


def test_hand_made_buffers_answer_as_a_parse_of_each_text() -> None:
    table = _table(FOREIGN)
    docs = [Doc(f"d{i}", "text", json.loads(t) if t else {}) for i, t in enumerate(FOREIGN)]
    for filter in ({"lang": "de"}, {"lang": "en"}, {"n": 1}, {"n": True}, {"flag": 1},
                   {"lang": None}, {"n": 0}, {"n": 2}, {"lang": ["de"]},
                   {"n": float("inf")}, {"lang": "de", "n": 1}, {"x": {"lang": "de"}},
                   {",": ":"}, {":": "y"}):
        assert equality_mask(filter, table).tolist() == _doc_by_doc(filter, docs).tolist(), \
            filter
    codes = table.key_column("lang").codes.tolist()
    assert codes[0] >= 0 and codes[13] == ABSENT  # plain rows need no parse
    assert all(codes[i] == UNSURE for i in (1, 2, 3, 4, 5, 6, 10, 11, 12))


def test_a_filter_on_plain_metadata_parses_no_document(monkeypatch) -> None:
    """The first filter on a table reads the key from the bytes: no document's metadata
    is parsed (it used to parse them all), and the same key is read once per table."""
    from hybrid_retrievers import document_columns

    metas = [{"lang": ["de", "en"][i % 2], "n": i % 3, "flag": i % 4 == 0, "w": i / 3,
              "title": f"Tïtle {i}"} for i in range(50)]
    table = DocColumns.from_columns([f"d{i}" for i in range(50)], ["t"] * 50, metas)

    def no_parse(*args: Any) -> Any:
        raise AssertionError("a document's metadata was parsed")

    monkeypatch.setattr(document_columns, "_parse_object", no_parse)
    monkeypatch.setattr(DocColumns, "metadatas", no_parse)
    mask = cached_equality_mask({"lang": "de", "n": 1}, table, table.masks)
    assert mask.tolist() == [i % 2 == 0 and i % 3 == 1 for i in range(50)]
    column = table.key_column("lang")
    assert table.key_column("lang") is column and column.values == ["de", "en"]
    assert equality_mask({"flag": 1}, table).tolist() == [i % 4 == 0 for i in range(50)]
    assert equality_mask({"n": np.int64(1), "w": 1 / 3}, table).tolist() == \
        [i == 1 for i in range(50)]
    # A key the bytes cannot mark is parsed, as before.
    assert table.key_column('q"k') is None and table.key_column(1) is None


def test_module_examples() -> None:
    assert doctest.testmod(metadata_keys).failed == 0


def test_a_text_that_is_not_json_fails_as_a_parse_does() -> None:
    """A value read from the bytes never runs into the next document's text: a broken
    text (only a forged, unverified file holds one) is parsed, and fails, as before."""
    table = _table(['{"lang":"d', 'e"}'])
    with pytest.raises(ValueError):
        equality_mask({"lang": "de"}, table)
