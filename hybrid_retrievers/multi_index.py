"""One edit applied to several indexes, all or nothing.

A retriever that searches more than one core index (HyDE's dense index and its BM25
expansion, the children of a fusion) must edit them together: `check_known_ids` checks
every index before anything is deleted, and `apply_to_all` undoes an edit where it had
succeeded when it fails somewhere, so the indexes stay consistent with each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = ["apply_to_all", "check_known_ids"]


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
            raise KeyError(f"{len(unknown)} node id(s) not in {where}: {unknown[:5]}")
