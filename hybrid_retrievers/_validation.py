"""Argument checks shared by every searcher, with messages that name the fix."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["check_filter_values", "check_id_list", "check_k", "check_queries", "check_query",
           "check_scores"]


def check_k(k: Any, name: str = "k") -> int:
    """Return ``k`` as an int, or raise naming the parameter, the rule and the value."""
    if isinstance(k, bool) or not isinstance(k, (int,)) and not _is_integer_like(k):
        raise TypeError(f"{name} must be a positive int, got {type(k).__name__}: {k!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"{name} must be >= 1, got {k}; ask for at least one result")
    return k


def _is_integer_like(value: Any) -> bool:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a core dependency
        return False
    return isinstance(value, np.integer)


def check_query(query: Any, name: str = "query") -> str:
    """Return ``query`` if it is a non-blank string, else raise a clear error."""
    if not isinstance(query, str):
        raise TypeError(f"{name} must be a str, got {type(query).__name__}: {query!r:.80}")
    if not query.strip():
        raise ValueError(f"{name} must not be empty or blank, got {query!r}")
    return query


def check_queries(queries: Any) -> list[str]:
    """Validate a batch of queries; the error names the position of a bad one."""
    if isinstance(queries, str) or not isinstance(queries, Sequence):
        raise TypeError(
            f"queries must be a list of str, got {type(queries).__name__}; "
            "use search() for a single query"
        )
    return [check_query(q, name=f"queries[{i}]") for i, q in enumerate(queries)]


def check_id_list(ids: Any, name: str = "ids") -> list[str]:
    """``ids`` as a list of str (a single str is one id); a clear error for anything else.

    Raises:
        TypeError: for None, a non-iterable, a mapping or set, or an item that is not a str
            (also an unhashable one such as a list), naming ``name`` and the position.
    """
    if isinstance(ids, str):
        return [ids]
    if ids is None or isinstance(ids, (bytes, Mapping)) or not isinstance(ids, Iterable):
        raise TypeError(
            f"{name} must be a list of str ids (or one str id), got "
            f"{type(ids).__name__}: {ids!r:.80}"
        )
    out = list(ids)
    for i, item in enumerate(out):
        if not isinstance(item, str):
            raise TypeError(
                f"{name}[{i}] must be a str id, got {type(item).__name__}: {item!r:.80}"
            )
    return out


def check_filter_values(filter: Any, name: str = "filter") -> None:
    """Refuse metadata-equality filter values that ``==`` cannot compare to one bool.

    A filter mapping keeps a document when ``metadata[key] == value`` for every key. For a
    numpy array (or anything array-like: pandas, torch) ``==`` is element-wise, so the
    answer would be ambiguous; such values are refused with the fix instead.

    Raises:
        TypeError: for an array-like value, naming its key.
    """
    if not isinstance(filter, Mapping):
        return
    for key, value in filter.items():
        # numpy scalars and 0-d arrays compare to one bool; anything with dimensions does not.
        if hasattr(value, "__array__") and getattr(value, "ndim", 1) != 0:
            raise TypeError(
                f"{name}[{key!r}] is a {type(value).__module__}.{type(value).__name__}; "
                "filter values are compared with ==, which is element-wise for arrays. Pass a "
                "scalar, a list or tuple (compared whole, e.g. value.tolist()), or a callable "
                "filter(doc) -> bool for other tests (e.g. membership)"
            )


def check_scores(raw: Any, n: int, source: str) -> np.ndarray:
    """A scorer's output as a float32 vector of ``n`` scores, or a clear error naming ``source``.

    Raises:
        TypeError: when the output is not numbers (strings, objects).
        ValueError: when it does not hold exactly one score per pair (or is None).
    """
    import numpy as np

    if raw is None:
        raise ValueError(f"{source} returned None; a PairScorer must return one score per pair")
    if not hasattr(raw, "__array__") and not isinstance(raw, Sequence):
        try:
            raw = list(raw)  # e.g. a map or generator from a third-party scorer
        except TypeError:
            raise TypeError(
                f"{source} returned {type(raw).__name__}, not a sequence of scores"
            ) from None
    try:
        array = np.asarray(raw)
    except ValueError as exc:  # ragged nesting
        raise ValueError(f"{source} returned a ragged structure, not one score per pair ({exc})"
                         ) from None
    scores = None
    if array.dtype.kind in "biuf":
        scores = array.astype(np.float32).reshape(-1)
    elif array.dtype == object and not any(isinstance(x, (str, bytes))
                                           for x in array.reshape(-1).tolist()):
        try:  # e.g. Decimal or numpy scalars in a list
            scores = array.astype(np.float32).reshape(-1)
        except (TypeError, ValueError):
            scores = None
    if scores is None:
        example = next((x for x in array.reshape(-1).tolist()
                        if not isinstance(x, (int, float)) or isinstance(x, bool)), None)
        raise TypeError(
            f"{source} must return numbers (one float per pair), got dtype {array.dtype}"
            + (f", e.g. {type(example).__name__} {example!r:.40}" if example is not None
               else "")
        )
    if scores.shape[0] != n:
        raise ValueError(
            f"{source} returned {scores.shape[0]} scores for {n} pairs; a PairScorer must "
            "return one score per pair"
        )
    return scores
