"""`ReadOnly`: a read-only public view of a private attribute."""

from __future__ import annotations

import pydoc

import pytest

from hybrid_retrievers import BM25Index
from hybrid_retrievers.fusion import FusionSearcher
from hybrid_retrievers.readonly import ReadOnly


class _Settings:
    size = ReadOnly[int]("_size", "How many.")
    inner = ReadOnly[str]("_box.label", "The box's label.")

    def __init__(self, size: int, label: str) -> None:
        self._size = size
        self._box = type("Box", (), {"label": label})()


def test_reads_the_private_attribute_and_a_dotted_path() -> None:
    s = _Settings(3, "x")
    assert (s.size, s.inner) == (3, "x")
    s._size = 4  # the owner may change it internally; the view follows
    assert s.size == 4


def test_assigning_or_deleting_raises_attribute_error_naming_it() -> None:
    s = _Settings(3, "x")
    with pytest.raises(AttributeError, match=r"_Settings\.size is read-only"):
        s.size = 5
    with pytest.raises(AttributeError, match=r"_Settings\.inner is read-only"):
        del s.inner
    assert s.size == 3 and "size" not in vars(s)


def test_class_access_returns_the_descriptor_with_its_docstring() -> None:
    assert isinstance(_Settings.size, ReadOnly)
    assert _Settings.size.__doc__ == "How many."
    assert "The box's label." in pydoc.render_doc(_Settings, renderer=pydoc.plaintext)


def test_library_settings_are_read_only() -> None:
    index = BM25Index.from_texts(["wings make lift", "cats sleep"], k1=1.4, b=0.6)
    assert (index.k1, index.b) == (1.4, 0.6)
    with pytest.raises(AttributeError, match="property 'k1' of 'BM25Index' object has no setter"):
        index.k1 = 2.0
    fused = FusionSearcher([index, index], names=["a", "b"], fetch_k=7)
    assert (fused.names, fused.fetch_k) == (("a", "b"), 7)
    with pytest.raises(AttributeError):
        fused.names = ("c", "d")
