"""The one progress-bar helper: every ``show_progress=True`` in the package goes through it.

tqdm is optional (the ``progress`` extra). When it is missing, a bar asked for is skipped
with one warning per process naming the extra: long work is never refused for want of a
progress bar, and the behaviour is the same everywhere.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

__all__ = ["progress"]

_warned_missing = False


class _NoBar:
    """Stands in for a tqdm bar: ``update``/``close`` do nothing, iteration passes through."""

    def __init__(self, iterable: Iterable[Any] | None) -> None:
        self._iterable = iterable

    def __iter__(self) -> Any:
        return iter(self._iterable if self._iterable is not None else ())

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    show: bool,
    desc: str,
    unit: str,
    total: int | None = None,
    terminal_only: bool = False,
) -> Any:
    """A tqdm bar over ``iterable`` (or a manual bar of ``total``), or a silent stand-in.

    Args:
        iterable: what to iterate; ``None`` for a bar driven by ``update(n)``.
        show: ``False`` returns the silent stand-in without importing tqdm.
        desc: the bar's label.
        unit: what one step is ("doc", "query", "batch", ...).
        total: the number of steps; taken from ``len(iterable)`` when it has one.
        terminal_only: draw only when stderr is a terminal (the CLI: logs stay clean).
    """
    global _warned_missing
    if not show:
        return _NoBar(iterable)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if not _warned_missing:
            _warned_missing = True
            warnings.warn(
                "show_progress=True needs tqdm, which is not installed; install it with: "
                "pip install 'hybrid-retrievers[progress]'",
                UserWarning,
                stacklevel=3,
            )
        return _NoBar(iterable)
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=None if terminal_only else False)
