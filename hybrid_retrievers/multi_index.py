"""One edit applied to several indexes, all or nothing.

A retriever that searches more than one core index (HyDE's dense index and its BM25
expansion, the children of a fusion) must edit them together: `check_known_ids` checks
every index before anything is deleted, and `apply_to_all` undoes an edit where it had
succeeded when it fails somewhere, so the indexes stay consistent with each other.
`add_to_all` and `delete_from_all` are the two edits every such retriever makes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .types import Doc

__all__ = ["add_to_all", "apply_to_all", "check_known_ids", "delete_from_all"]


def apply_to_all(targets: Iterable[Any], apply: Callable[[Any], Any],
                 undo: Callable[[Any], Any]) -> Any:
    """``apply(target)`` for each target (the last result is returned); when one raises,
    ``undo`` the targets done, then re-raise."""
    done: list[Any] = []
    result = None
    try:
        for target in targets:
            result = apply(target)
            done.append(target)
    except BaseException:
        for target in done:
            undo(target)
        raise
    return result


def check_known_ids(ids: Sequence[str], indexes: Iterable[Any], where: str) -> None:
    """`KeyError` naming the ids (up to five) missing from any of ``indexes`` (``in``)."""
    for index in indexes:
        unknown = [i for i in ids if i not in index]
        if unknown:
            raise KeyError(f"{len(unknown)} id(s) not in {where}: {unknown[:5]}")


def add_to_all(indexes: Iterable[Any], docs: Sequence[Doc]) -> list[str]:
    """``index.add_docs(docs)`` on every index, all or nothing; the ids added.

    An index that refuses (an id it already holds, a model error) leaves every index as
    it was: the ones already done delete the ids again.
    """
    ids = [d.id for d in docs]
    apply_to_all(indexes, lambda index: index.add_docs(docs), lambda index: index.delete(ids))
    return ids


def delete_from_all(indexes: Iterable[Any], ids: Sequence[str], where: str) -> None:
    """``index.delete(ids)`` on every index, after checking every index holds them all
    (`check_known_ids`: a `KeyError` naming the missing ids, and nothing deleted)."""
    targets = list(indexes)
    check_known_ids(ids, targets, where)
    for index in targets:
        index.delete(ids)
