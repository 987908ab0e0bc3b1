"""The editing methods every index shares (`hybrid_retrievers.documents.EditableIndex`).

`BM25Index`, `SparseIndex` and `VectorIndex` take the same edits the same way: the same
ids come back, a clashing add or an unknown delete changes nothing, an upsert keeps a
replaced document's position, and a keyword the index does not take is refused by name
(with the nearest real one) before any text is encoded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hybrid_retrievers import BM25Index, Doc, SparseIndex
from hybrid_retrievers.documents import EditableIndex
from hybrid_retrievers.models import HashingEmbedder, HashingSparseEmbedder
from hybrid_retrievers.vector import VectorIndex

TEXTS = ["wing lift and drag", "bread and butter", "drag of a flat plate"]
IDS = ["w", "b", "d"]


class Counting:
    """An embedder that counts the texts it is asked to encode."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, 0

    def embed_documents(self, texts: list[str]) -> Any:
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


def bm25() -> tuple[EditableIndex, Counting | None]:
    return BM25Index.from_texts(TEXTS, ids=IDS), None


def sparse() -> tuple[EditableIndex, Counting | None]:
    embedder = Counting(HashingSparseEmbedder())
    return SparseIndex.from_texts(TEXTS, ids=IDS, embedder=embedder), embedder


def dense() -> tuple[EditableIndex, Counting | None]:
    embedder = Counting(HashingEmbedder(dimension=16))
    return VectorIndex.from_texts(TEXTS, ids=IDS, embedder=embedder), embedder


INDEXES: list[Callable[[], tuple[EditableIndex, Counting | None]]] = [bm25, sparse, dense]


@pytest.mark.parametrize("make", INDEXES, ids=lambda f: f.__name__)
def test_the_same_edits_give_the_same_documents(make: Any) -> None:
    index, _ = make()
    assert index.add(["a glider has no engine"], ids=["g"]) == ["g"]
    assert index.add_docs([Doc("k", "a kite flies on a line")]) == ["k"]
    assert index.upsert(["bread and jam", "a new page"], ids=["b", "n"]) == ["b", "n"]
    assert index.upsert_docs([Doc("w", "wing lift")]) == ["w"]
    index.delete(["d"])
    assert index.ids == ["w", "b", "g", "k", "n"]  # replaced documents keep their place
    assert [index.get(i).text for i in ("w", "b")] == ["wing lift", "bread and jam"]


@pytest.mark.parametrize("make", INDEXES, ids=lambda f: f.__name__)
def test_a_refused_edit_changes_nothing(make: Any) -> None:
    index, embedder = make()
    before = index.docs
    encoded = embedder.texts if embedder else 0
    with pytest.raises(ValueError, match=r"already in the index: \['b'\]; use upsert"):
        index.add(["new", "clash"], ids=["x", "b"])
    with pytest.raises(KeyError, match="not in the index"):
        index.delete(["w", "missing"])
    assert index.docs == before
    if embedder:  # the clash is found before the model is asked for anything
        assert embedder.texts == encoded


@pytest.mark.parametrize("make", INDEXES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("method", ["add", "add_docs", "upsert", "upsert_docs"])
def test_an_unknown_keyword_is_named_before_any_work(make: Any, method: str) -> None:
    index, embedder = make()
    before = index.docs
    encoded = embedder.texts if embedder else 0
    data: Any = [Doc("x", "some text")] if method.endswith("_docs") else ["some text"]
    name = type(index).__name__
    with pytest.raises(TypeError, match=rf"{name}\.{method} got unexpected argument\(s\) "
                                        r"'show_progres' \(did you mean show_progress=\?\)"):
        getattr(index, method)(data, show_progres=True)
    if isinstance(index, BM25Index):
        with pytest.raises(TypeError, match=r"'n_job' \(did you mean n_jobs=\?\)"):
            getattr(index, method)(data, n_job=2)
    else:  # n_jobs is BM25's (processes that tokenise): another index refuses it
        with pytest.raises(TypeError, match=rf"{name}\.{method} got unexpected .*'n_jobs'"):
            getattr(index, method)(data, n_jobs=2)
    assert index.docs == before
    if embedder:
        assert embedder.texts == encoded


def test_bm25_takes_n_jobs_in_every_edit() -> None:
    index, _ = bm25()
    index.add(["a glider"], ids=["g"], n_jobs=1)
    index.add_docs([Doc("k", "a kite")], n_jobs=1)
    index.upsert(["a glider with wings"], ids=["g"], n_jobs=1)
    index.upsert_docs([Doc("k", "a red kite")], n_jobs=1)
    with pytest.raises(ValueError, match="n_jobs"):
        index.add(["x"], ids=["x"], n_jobs=0)
    rebuilt = BM25Index.from_docs(index.docs)
    assert [(h.id, h.score) for h in index.search("kite glider")] == \
        [(h.id, h.score) for h in rebuilt.search("kite glider")]
