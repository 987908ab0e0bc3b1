"""Tests for `hybrid_retrievers.text.splitting`: sizes, overlap, sentence cuts, ids and metadata."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_retrievers import Doc
from hybrid_retrievers.text.splitting import (
    CHILD_INDEX_KEY,
    PARENT_ID_KEY,
    START_INDEX_KEY,
    SentenceSplitter,
    as_splitter,
    child_id,
    split_parents,
)

TEXT = (
    "The lift of a wing depends on its angle of attack. Swept wings delay drag rise. "
    "Boundary layer separation causes stall! Flaps increase the lift coefficient? "
    "Supersonic aircraft meet shock waves."
)


def test_cuts_at_sentence_ends_and_respects_size() -> None:
    chunks = SentenceSplitter(chunk_size=90, chunk_overlap=0)(TEXT)
    assert all(len(c) <= 90 for c in chunks)
    # Every chunk ends at a sentence end: no sentence is cut when all fit.
    assert all(c.endswith((".", "!", "?")) for c in chunks)
    assert " ".join(chunks) == TEXT


def test_overlap_repeats_whole_trailing_sentences() -> None:
    chunks = SentenceSplitter(chunk_size=90, chunk_overlap=45)(TEXT)
    plain = SentenceSplitter(chunk_size=90, chunk_overlap=0)(TEXT)
    assert len(chunks) > len(plain)
    # The second chunk starts with the last sentence of the first one.
    assert chunks[1].startswith("Swept wings delay drag rise.")
    assert chunks[0].endswith("Swept wings delay drag rise.")


def test_long_sentence_cut_at_words_then_characters() -> None:
    chunks = SentenceSplitter(chunk_size=10, chunk_overlap=0)("aaaa bbbb cccc dddddddddddddddd")
    assert chunks == ["aaaa bbbb", "cccc", "dddddddddd", "dddddd"]


def test_blank_line_is_a_boundary_and_empty_text_has_no_chunks() -> None:
    assert SentenceSplitter(50, 0)("first part\n\nsecond part") == ["first part\n\nsecond part"]
    assert SentenceSplitter(12, 0)("first part\n\nsecond part") == ["first part", "second part"]
    assert SentenceSplitter()("") == []
    assert SentenceSplitter()("   \n ") == []


def test_token_length_function() -> None:
    words = SentenceSplitter(chunk_size=4, chunk_overlap=0, length_function=lambda s: len(s.split()))
    assert words("one two three four five six. seven") == ["one two three four", "five six. seven"]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"chunk_size": 0}, ValueError, "chunk_size must be >= 1"),
        ({"chunk_size": 10, "chunk_overlap": 10}, ValueError, "chunk_overlap must be smaller"),
        ({"chunk_size": 10, "chunk_overlap": -1}, ValueError, "chunk_overlap must be >= 0"),
        ({"chunk_size": 1.5}, TypeError, "chunk_size must be an int"),
        ({"length_function": 3}, TypeError, "length_function"),
    ],
)
def test_bad_arguments(kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        SentenceSplitter(**kwargs)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab .!?\n")), max_size=200),
    size=st.integers(1, 40),
    overlap_frac=st.floats(0, 0.9),
)
def test_property_size_bound_coverage_and_termination(text: str, size: int, overlap_frac: float) -> None:
    overlap = min(size - 1, int(size * overlap_frac))
    splitter = SentenceSplitter(size, overlap)
    spans = splitter.spans(text)
    assert all(len(text[a:b]) <= size for a, b in spans)
    assert all(text[a:b].strip() for a, b in spans)
    # Every non-space character is in some chunk, and chunks move forward.
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    starts = [a for a, _ in spans]
    assert starts == sorted(set(starts))


def test_split_parents_ids_metadata_and_offsets() -> None:
    parents = [Doc("p1", TEXT, {"topic": "aero"}), Doc("p2", "Short one."), Doc("p3", "  ")]
    children = split_parents(parents, SentenceSplitter(90, 0))
    ids = [c.id for c in children]
    assert ids[0] == child_id("p1", 0) == "p1:0"
    assert ids[-1] == "p2:0"
    assert not any(c.metadata[PARENT_ID_KEY] == "p3" for c in children)
    for c in children:
        parent = {"p1": parents[0], "p2": parents[1]}[c.metadata[PARENT_ID_KEY]]
        start = c.metadata[START_INDEX_KEY]
        assert parent.text[start:start + len(c.text)] == c.text
    assert [c.metadata[CHILD_INDEX_KEY] for c in children if c.metadata[PARENT_ID_KEY] == "p1"] == list(
        range(len(ids) - 1)
    )
    assert children[0].metadata["topic"] == "aero"
    # Deterministic: the same input gives the same children.
    assert split_parents(parents, SentenceSplitter(90, 0)) == children
    # The parent's metadata is not edited.
    assert dict(parents[0].metadata) == {"topic": "aero"}


def test_any_callable_or_split_text_object() -> None:
    class Words:
        def split_text(self, text: str) -> list[str]:
            return text.split()

    assert [c.text for c in split_parents([Doc("p", "a b a")], Words())] == ["a", "b", "a"]
    kids = split_parents([Doc("p", "x|y")], lambda t: t.split("|"))
    assert [(c.id, c.text, c.metadata[START_INDEX_KEY]) for c in kids] == [("p:0", "x", 0), ("p:1", "y", 2)]
    with pytest.raises(TypeError, match="split_text"):
        as_splitter(42)
    with pytest.raises(TypeError, match="list of str"):
        split_parents([Doc("p", "x")], lambda t: t)
    with pytest.raises(TypeError, match="parents\\[0\\]"):
        split_parents(["not a doc"])  # type: ignore[list-item]


def test_langchain_text_splitter_accepted() -> None:
    splitters = pytest.importorskip("langchain_text_splitters")
    rc = splitters.RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=0)
    kids = split_parents([Doc("p", TEXT)], rc)
    assert len(kids) > 1 and all(len(c.text) <= 60 for c in kids)
