"""``eval --min``: metric lower bounds, for every retriever or for one, with PASS/FAIL lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_FORM = "[RETRIEVER:]METRIC=VALUE (e.g. ndcg@10=0.35 or hybrid:ndcg@10=0.40)"


@dataclass(frozen=True)
class Bound:
    """``metric >= value`` for ``retriever`` (``None``: every retriever evaluated)."""

    retriever: str | None
    metric: str
    value: float


def parse_bounds(items: Sequence[str], retrievers: Sequence[str]) -> list[Bound]:
    """Parse ``--min`` values; a named retriever must be one of those evaluated."""
    from ..evaluation import parse_metric

    bounds = []
    for item in items:
        left, sep, value = item.partition("=")
        name, colon, metric = left.rpartition(":")
        if not sep or not metric.strip() or (colon and not name.strip()):
            raise ValueError(f"--min expects {_FORM}, got {item!r}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--min expects {_FORM}, got {item!r} (VALUE is not a number)") \
                from None
        name = name.strip() or None
        if name is not None and name not in retrievers:
            raise ValueError(
                f"--min {item!r} names retriever {name!r}, which is not evaluated; evaluated: "
                f"{list(retrievers)} (add --retriever {name})"
            )
        parse_metric(metric.strip())  # a clear error for an unknown metric
        bounds.append(Bound(name, metric.strip(), number))
    return bounds


def check_bounds(report: Any, bounds: Sequence[Bound]) -> list[tuple[bool, str]]:
    """``(passed, line)`` per retriever and bound, in order."""
    lines = []
    for bound in bounds:
        for name in [bound.retriever] if bound.retriever else report.names:
            value = report.means[name][bound.metric]
            passed = value >= bound.value
            op = ">=" if passed else "<"
            lines.append((passed, f"{'PASS' if passed else 'FAIL'} {name}: {bound.metric} = "
                                  f"{value:.4f} {op} {bound.value:g}"))
    return lines
