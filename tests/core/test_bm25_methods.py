"""The named BM25 methods mean what their names say: the textbook example, ATIRE, saving."""

from __future__ import annotations

import math

import numpy as np
import pytest

from index_tamper import edit_manifest

from hybrid_retrievers import Analyzer, BM25Index, IndexFormatError
from hybrid_retrievers.bm25 import BM25Params

# The worked example of the lesson this package was built from (shared/seeds, lesson 004):
# N = 3, Q = {gato, negro}, k1 = 1.2, b = 0.75, every token counted (|D| = 4, 8, 6).
SPANISH = ["el gato negro duerme", "el gato blanco y el gato gris juegan",
           "el perro negro corre y ladra"]
EVERY_TOKEN = Analyzer("spanish", stopwords=None, stemmer=None)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_textbook_worked_example(backend: str) -> None:
    index = BM25Index.from_texts(SPANISH, ids=["D1", "D2", "D3"], analyzer=EVERY_TOKEN,
                                 method="textbook", k1=1.2, b=0.75, backend=backend)
    hits = index.search("gato negro", k=3)
    assert [(h.id, round(h.score, 3)) for h in hits] == [
        ("D1", 1.088), ("D2", 0.591), ("D3", 0.470)]
    idf = math.log(1.6)  # ln(1 + (3 - 2 + 0.5)/(2 + 0.5)) for both terms
    assert hits[0].score == pytest.approx(2 * idf * 2.2 / (1 + 0.9), rel=1e-6)
    # Lucene 8+ drops the k1 + 1 factor: the same ranking, every score / 2.2.
    lucene = BM25Index.from_texts(SPANISH, ids=["D1", "D2", "D3"], analyzer=EVERY_TOKEN,
                                  method="lucene", k1=1.2, b=0.75, backend=backend)
    assert [(h.id, round(h.score, 3)) for h in lucene.search("gato negro", k=3)] == [
        ("D1", 0.495), ("D2", 0.269), ("D3", 0.214)]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_atire_is_trotman_et_al_2014(backend: str) -> None:
    index = BM25Index.from_texts(SPANISH, ids=["D1", "D2", "D3"], analyzer=EVERY_TOKEN,
                                 method="atire", k1=1.2, b=0.75, backend=backend)
    idf = math.log(3 / 2)  # ln(N / df)
    expected = {"D1": 2 * idf * 2.2 / 1.9, "D2": idf * 2 * 2.2 / 3.5, "D3": idf * 2.2 / 2.2}
    assert {h.id: h.score for h in index.search("gato negro", k=3)} == pytest.approx(
        expected, rel=1e-6)
    assert BM25Params("atire").method.value == "atire"  # no longer an alias of lucene


def test_textbook_is_lucene_times_k1_plus_1_on_cranfield() -> None:
    from hybrid_retrievers.datasets import load_dataset

    ds = load_dataset("cranfield")
    docs = list(ds.corpus.values())[:400]
    lucene = BM25Index.from_docs(docs, k1=1.2)
    textbook = BM25Index.from_docs(docs, k1=1.2, method="textbook")
    for query in list(ds.queries.values())[:20]:
        a, b = lucene.search(query, k=20), textbook.search(query, k=20)
        assert [h.id for h in a] == [h.id for h in b]
        np.testing.assert_allclose([h.score * 2.2 for h in a], [h.score for h in b], rtol=1e-5)


@pytest.mark.parametrize("method, version", [("lucene", 1), ("robertson", 1),
                                             ("textbook", 2), ("atire", 2)])
def test_new_methods_save_as_format_2_and_round_trip(tmp_path, method: str, version: int) -> None:
    import json

    index = BM25Index.from_texts(SPANISH, analyzer=EVERY_TOKEN, method=method, k1=1.2)
    index.save(tmp_path / "i")
    loaded = BM25Index.load(tmp_path / "i")
    assert loaded.method == method
    assert [(h.id, h.score) for h in loaded.search("gato negro", k=3)] == [
        (h.id, h.score) for h in index.search("gato negro", k=3)]
    manifests = [json.loads(p.read_text()) for p in (tmp_path / "i").rglob("manifest.json")]
    assert version in {m.get("format_version") for m in manifests if m.get("kind") == "bm25"}


def test_a_format_1_index_naming_atire_is_refused_not_rescored(tmp_path) -> None:
    # Release 0.1.0 read "atire" as "lucene" (and saved it as "lucene"); a format-1
    # manifest saying "atire" would change scores silently under the new meaning.
    BM25Index.from_texts(SPANISH, k1=1.2).save(tmp_path / "i")
    edit_manifest(tmp_path / "i", params={"method": "atire", "k1": 1.2, "b": 0.75,
                                          "delta": 0.0})
    with pytest.raises(IndexFormatError, match="read as 'lucene'"):
        BM25Index.load(tmp_path / "i")
