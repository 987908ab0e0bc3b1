"""The one rule for unknown keywords (`check_keywords`, `keyword_checked`), which every
adapter class follows (walked in `tests/integrations/test_unknown_arguments.py`)."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

from hybrid_retrievers import validation
from hybrid_retrievers.integration import check_keywords, keyword_checked, keyword_names


def test_examples() -> None:
    assert doctest.testmod(validation).failed == 0


def test_every_unknown_keyword_is_named_in_one_error() -> None:
    with pytest.raises(TypeError) as info:
        check_keywords("Retriever", ["similarty_top_k", "bogus", "filters"],
                       ["similarity_top_k", "filters", "_private"])
    message = str(info.value)
    assert message.startswith("Retriever got unexpected argument(s) 'similarty_top_k' "
                              "(did you mean similarity_top_k=?), 'bogus';")
    assert message.endswith("accepted: filters, similarity_top_k")  # _private not listed


def test_a_hint_wins_over_the_nearest_name() -> None:
    with pytest.raises(TypeError, match=r"'filter' \(spelt filters= here\); accepted: filters$"):
        check_keywords("R", ["filter"], ["filters"], {"filter": "spelt filters= here"})


def test_known_keywords_pass_and_no_list_when_nothing_is_accepted() -> None:
    check_keywords("R", ["k", "_private"], ["k", "_private"])
    with pytest.raises(TypeError, match=r"^R got unexpected argument\(s\) 'x'$"):
        check_keywords("R", ["x"], [])


class Store:
    @keyword_checked()
    def __init__(self, texts: list[str], *, k: int = 4) -> None:
        self.texts, self.k = texts, k

    @classmethod
    @keyword_checked(lambda cls: keyword_names(cls.__init__))
    def from_texts(cls, texts: list[str], *, lowercase: bool = True, **kwargs: Any) -> Store:
        return cls([t.lower() if lowercase else t for t in texts], **kwargs)


def test_decorated_methods_name_their_class_and_suggest_forwarded_keywords() -> None:
    assert Store.from_texts(["A"], k=2).k == 2
    with pytest.raises(TypeError, match=r"^Store got unexpected argument\(s\) 'kk' "
                                        r"\(did you mean k=\?\); accepted: k, texts$"):
        Store(["a"], kk=2)
    with pytest.raises(TypeError, match=r"^Store\.from_texts got .* 'kk' \(did you mean k=\?\); "
                                        r"accepted: k, lowercase, texts$"):
        Store.from_texts(["a"], kk=2)
