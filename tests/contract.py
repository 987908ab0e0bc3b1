"""The one contract every core `Searcher` keeps, written once.

`SearcherContract` is a pytest base class: subclass it, give it a ``contracted`` fixture
that returns a `Contracted` (how to build the searcher over `CONTRACT_DOCS`, and which
of the two "how many hits" rules it follows), and every check below runs against it.
`tests/core/test_searcher_contract.py` does this for every core searcher through one
``BUILDERS`` dict, so a new searcher gets its contract checked by adding one line there.

The contract:

* at most ``k`` hits, ranks ``1..n``, non-increasing finite scores, unique ids, and every
  hit is a document of the corpus with its own text;
* deterministic: the same query twice, or the same corpus indexed twice, gives the
  same hits;
* a bad ``k`` (``0``, ``-1``: `ValueError`; ``1.5``, ``True``, ``"3"``: `TypeError`) and a
  bad query (``None``, ``3``, ``b"bytes"``: `TypeError`; ``""``, blank: `ValueError`)
  are refused with a message naming the argument (`hybrid_retrievers.validation`);
* no padding: a ``k`` larger than the corpus gives the documents that match and no
  filler. A lexical searcher (BM25 semantics) returns only documents sharing a term
  with the query; any other returns ``min(k, len(corpus))`` distinct documents;
* ``search_many`` (where it exists) equals `search` query by query, and ``asearch``
  (where it exists) equals `search`;
* a metadata filter (a mapping or a predicate over `Doc`) returns only matching
  documents; a numpy array as a filter value is refused, naming the key.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from hybrid_retrievers.types import Doc, Hit

from corpora import CORPUS, QUERIES

__all__ = ["BAD_K", "BAD_QUERIES", "CONTRACT_DOCS", "Contracted", "RARE_MATCHES",
           "RARE_QUERY", "SearcherContract", "hit_rows"]

CONTRACT_DOCS: list[Doc] = [Doc(i, text, metadata) for i, text, metadata in CORPUS]
"""The corpus every contracted searcher indexes: twelve short documents on four topics."""

RARE_QUERY = "sourdough"
"""Shares a term with one document only (``bread-1``): what "no padding" is checked on."""

RARE_MATCHES = ["bread-1"]
"""The ids a lexical searcher returns for `RARE_QUERY`, however large ``k``."""

BAD_K: list[tuple[Any, type[Exception], str]] = [
    (0, ValueError, r"k must be >= 1, got 0"),
    (-1, ValueError, r"k must be >= 1, got -1"),
    (1.5, TypeError, r"k must be a positive int, got float"),
    (True, TypeError, r"k must be a positive int, got bool"),
    ("3", TypeError, r"k must be a positive int, got str"),
]
"""``(k, error, message pattern)``: what `hybrid_retrievers.validation.check_k` raises."""

_NOT_A_QUERY = r"query must be a str( or a hybrid_retrievers(\.fusion)?\.(Image)?Query)?, got "

BAD_QUERIES: list[tuple[Any, type[Exception], str]] = [
    (None, TypeError, _NOT_A_QUERY + "NoneType"),
    (3, TypeError, _NOT_A_QUERY + "int"),
    (b"bytes", TypeError, _NOT_A_QUERY + "bytes"),
    ("", ValueError, r"query must not be empty or blank"),
    ("   ", ValueError, r"query must not be empty or blank"),
]
"""``(query, error, message pattern)``: what `hybrid_retrievers.validation.check_query` raises."""


@dataclass(frozen=True)
class Contracted:
    """How to build one searcher for the contract, and which hit-count rule it keeps.

    Args:
        build: makes the searcher over the given documents (always `CONTRACT_DOCS`).
        lexical: ``True`` when only documents sharing a query term may come back (BM25
            and searchers that rank BM25's candidates); ``False`` when up to ``k`` of the
            whole corpus come back (dense search, and fusions that include it).
        violations: known breaches of the contract, ``{test name: reason}``; each such
            test is marked ``xfail(strict=True)``, so fixing the searcher fails it until
            the entry is removed.
    """

    build: Callable[[Sequence[Doc]], Any]
    lexical: bool = False
    violations: Mapping[str, str] = field(default_factory=dict)


def hit_rows(hits: Sequence[Hit]) -> list[tuple[str, float, int]]:
    """``(id, score, rank)`` of each hit, the score rounded to 6 decimals for comparison."""
    return [(h.doc.id, round(float(h.score), 6), h.rank) for h in hits]


_TEXTS = {d.id: d.text for d in CONTRACT_DOCS}
_TOPIC = "cooking"


class SearcherContract:
    """The checks; a subclass provides the ``contracted`` fixture (a `Contracted`)."""

    @pytest.fixture(autouse=True)
    def _known_violations(self, request: pytest.FixtureRequest, contracted: Contracted) -> None:
        reason = contracted.violations.get(request.node.originalname)
        if reason is not None:
            request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))

    @pytest.fixture(scope="class")
    @classmethod
    def searcher(cls, contracted: Contracted) -> Any:
        return contracted.build(list(CONTRACT_DOCS))

    # ------------------------------------------------------------- shape of a result

    @pytest.mark.parametrize("k", [1, 3, 100])
    def test_at_most_k_hits_ranked_1_to_n_best_first_with_unique_ids(
        self, searcher: Any, k: int
    ) -> None:
        for query in QUERIES:
            hits = searcher.search(query, k=k)
            assert 0 < len(hits) <= min(k, len(CONTRACT_DOCS)), query
            assert all(isinstance(h, Hit) for h in hits)
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1))

    def test_a_numpy_array_filter_value_is_refused_naming_the_key(self, searcher: Any) -> None:
        # Equality with an array is elementwise, so it has no one meaning as a filter.
        with pytest.raises(TypeError, match=r"filter\['topic'\] is a numpy.ndarray.*tolist"):
            searcher.search("bread", k=3, filter={"topic": np.array([_TOPIC])})
            scores = [float(h.score) for h in hits]
            assert all(math.isfinite(s) for s in scores), scores
            assert scores == sorted(scores, reverse=True), scores
            ids = [h.doc.id for h in hits]
            assert len(set(ids)) == len(ids), ids
            assert all(_TEXTS.get(h.doc.id) == h.doc.text for h in hits), ids

    def test_the_same_query_twice_gives_the_same_hits(self, searcher: Any) -> None:
        for query in QUERIES:
            assert hit_rows(searcher.search(query, k=5)) == hit_rows(searcher.search(query, k=5))

    def test_the_same_corpus_indexed_twice_gives_the_same_hits(
        self, searcher: Any, contracted: Contracted
    ) -> None:
        again = contracted.build(list(CONTRACT_DOCS))
        for query in QUERIES:
            assert hit_rows(again.search(query, k=5)) == hit_rows(searcher.search(query, k=5))

    # ------------------------------------------------------------------- bad input

    @pytest.mark.parametrize(("k", "error", "words"), BAD_K)
    def test_a_bad_k_is_refused_naming_k(
        self, searcher: Any, k: Any, error: type[Exception], words: str
    ) -> None:
        with pytest.raises(error, match=words):
            searcher.search(QUERIES[0], k=k)

    @pytest.mark.parametrize(("query", "error", "words"), BAD_QUERIES)
    def test_a_bad_query_is_refused_naming_query(
        self, searcher: Any, query: Any, error: type[Exception], words: str
    ) -> None:
        with pytest.raises(error, match=words):
            searcher.search(query, k=3)

    # ------------------------------------------------------------------ no padding

    def test_a_k_beyond_the_matches_adds_no_filler(
        self, searcher: Any, contracted: Contracted
    ) -> None:
        hits = searcher.search(RARE_QUERY, k=len(CONTRACT_DOCS) + 5)
        ids = [h.doc.id for h in hits]
        if contracted.lexical:
            assert ids == RARE_MATCHES
        else:  # clamped to the corpus, every document once
            assert sorted(ids) == sorted(_TEXTS)

    # ---------------------------------------------------------- batch and async

    def test_search_many_equals_search_query_by_query(self, searcher: Any) -> None:
        if not callable(getattr(searcher, "search_many", None)):
            pytest.skip(f"{type(searcher).__name__} has no search_many")
        queries = [*QUERIES, RARE_QUERY]
        batch = searcher.search_many(queries, k=4)
        assert [hit_rows(hits) for hits in batch] == [
            hit_rows(searcher.search(q, k=4)) for q in queries]

    def test_asearch_equals_search(self, searcher: Any) -> None:
        if not callable(getattr(searcher, "asearch", None)):
            pytest.skip(f"{type(searcher).__name__} has no asearch")
        for query in QUERIES:
            got = asyncio.run(searcher.asearch(query, k=4))
            assert hit_rows(got) == hit_rows(searcher.search(query, k=4))

    # --------------------------------------------------------------------- filters

    @pytest.mark.parametrize("kind", ["mapping", "predicate"])
    def test_a_filter_returns_only_matching_documents(self, searcher: Any, kind: str) -> None:
        where: Any = ({"topic": _TOPIC} if kind == "mapping"
                      else lambda doc: doc.metadata.get("topic") == _TOPIC)
        # A query that also matches other topics, so the filter has work to do.
        hits = searcher.search("bread wing lift", k=10, filter=where)
        assert hits, "the filter left nothing, but three cooking documents match 'bread'"
        assert {h.doc.metadata["topic"] for h in hits} == {_TOPIC}
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))

    def test_a_numpy_array_filter_value_is_refused_naming_the_key(self, searcher: Any) -> None:
        # Equality with an array is elementwise, so it has no one meaning as a filter.
        with pytest.raises(TypeError, match=r"filter\['topic'\] is a numpy.ndarray.*tolist"):
            searcher.search("bread", k=3, filter={"topic": np.array([_TOPIC])})
