"""Argument checks shared by every searcher, with messages that name the fix."""

from __future__ import annotations

import difflib
import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from numbers import Real
from typing import Any, TypeVar

import numpy as np

__all__ = ["check_count", "check_filter_values", "check_id_list", "check_k", "check_k_rrf",
           "check_keywords", "check_merge_threshold", "check_names", "check_number",
           "check_queries", "check_query", "check_scores", "check_str_items", "check_threshold",
           "check_weights", "field_names", "keyword_checked", "keyword_names", "parse_enum"]

E = TypeVar("E", bound=Enum)


def check_k(k: Any, name: str = "k") -> int:
    """Return ``k`` as an int, or raise naming the parameter, the rule and the value."""
    if isinstance(k, bool) or not isinstance(k, (int,)) and not _is_integer_like(k):
        raise TypeError(f"{name} must be a positive int, got {type(k).__name__}: {k!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"{name} must be >= 1, got {k}; ask for at least one result")
    return k


def check_keywords(where: str, given: Iterable[str], accepted: Iterable[str],
                   hints: Mapping[str, str] | None = None) -> None:
    """Refuse the keywords of ``given`` that ``where`` does not take, all in one `TypeError`.

    Each is named with what to pass instead: its entry in ``hints`` (another library's
    spelling and ours), else the nearest accepted name (`difflib.get_close_matches`);
    the accepted names follow (those starting with ``_`` are accepted but not listed).
    A misspelt keyword is never ignored, so a setting never silently keeps its default.

    Example:
        >>> check_keywords("DenseRetriever", ["similarty_top_k"],
        ...                ["similarity_top_k", "filters"])
        Traceback (most recent call last):
        TypeError: DenseRetriever got unexpected argument(s) 'similarty_top_k' (did you mean \
similarity_top_k=?); accepted: filters, similarity_top_k
    """
    known = set(accepted)
    unknown = [key for key in given if key not in known]
    if not unknown:
        return
    hints = hints or {}
    listed = sorted(name for name in known if not name.startswith("_"))
    parts = []
    for key in unknown:
        nearest = difflib.get_close_matches(str(key), listed, n=1)
        hint = hints.get(key) or (f"did you mean {nearest[0]}=?" if nearest else None)
        parts.append(f"{key!r} ({hint})" if hint else repr(key))
    accepted_part = f"; accepted: {', '.join(listed)}" if listed else ""
    raise TypeError(f"{where} got unexpected argument(s) {', '.join(parts)}{accepted_part}")


def keyword_names(*functions: Callable[..., Any]) -> set[str]:
    """The names the ``functions`` take by keyword (besides ``self`` / ``cls``), the
    ``accepted`` of `check_keywords` for callables that forward their keywords."""
    names = set()
    for function in functions:
        for parameter in inspect.signature(function).parameters.values():
            if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                names.add(parameter.name)
    return names - {"self", "cls"}


def field_names(cls: type) -> set[str]:
    """The keywords of a pydantic model class: its field names and their aliases (the
    ``accepted`` of `check_keywords` for it; none for another class)."""
    fields = getattr(cls, "model_fields", {})
    return set(fields) | {f.alias for f in fields.values() if f.alias}


def keyword_checked(accepted_of: Callable[[type], Iterable[str]] | None = None,
                    hints: Mapping[str, str] | None = None
                    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator for a method (``__init__``, or a factory under ``classmethod``) that
    refuses keywords that are neither its own parameters nor, when it hands its
    ``**kwargs`` on, ``accepted_of(cls)``: `check_keywords` runs before any work (an
    index is built) and names the method, with its own parameters among the suggestions
    (which whatever it hands the keywords to could not offer) and Python's own
    "unexpected keyword argument" given the nearest name.

    Example:
        >>> class Store:
        ...     def __init__(self, texts, *, k=4): self.texts, self.k = texts, k
        ...     @classmethod
        ...     @keyword_checked(lambda cls: keyword_names(cls.__init__))
        ...     def from_texts(cls, texts, *, lowercase=True, **kwargs):
        ...         return cls([t.lower() if lowercase else t for t in texts], **kwargs)
        >>> Store.from_texts(["A"], lowercas=False)
        Traceback (most recent call last):
        TypeError: Store.from_texts got unexpected argument(s) 'lowercas' (did you mean \
lowercase=?); accepted: k, lowercase, texts
    """
    def decorate(method: Callable[..., Any]) -> Callable[..., Any]:
        own = keyword_names(method)

        @functools.wraps(method)
        def checked(first: Any, *args: Any, **kwargs: Any) -> Any:
            owner = first if isinstance(first, type) else type(first)
            where = owner.__name__ if method.__name__ == "__init__" else \
                f"{owner.__name__}.{method.__name__}"
            extra = set(accepted_of(owner)) if accepted_of is not None else set()
            check_keywords(where, kwargs, own | extra, hints)
            return method(first, *args, **kwargs)
        return checked
    return decorate


def check_number(value: Any, name: str, *, low: float | None = None,
                 high: float | None = None, integer: bool = False) -> Any:
    """``value`` as an int (``integer=True``) or a finite float in ``[low, high]``.

    The one number check: a bool, a str or anything that is not a real number is a
    TypeError; NaN, infinity and a value out of range are a ValueError naming the rule.

    Example:
        >>> check_number(3, "batch_size", low=1, integer=True)
        3
        >>> check_number(0, "batch_size", low=1, integer=True)
        Traceback (most recent call last):
        ...
        ValueError: batch_size must be >= 1, got 0
    """
    kind = "an int" if integer else "a number"
    allowed = (int, np.integer) if integer else Real
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise TypeError(f"{name} must be {kind}, got {type(value).__name__}: {value!r:.80}")
    number = int(value) if integer else float(value)
    if not integer and not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {number}")
    if low is not None and number < low:
        raise ValueError(f"{name} must be >= {low:g}, got {number:g}")
    if high is not None and number > high:
        raise ValueError(f"{name} must be <= {high:g}, got {number:g}")
    return number


def _is_integer_like(value: Any) -> bool:
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
    return check_str_items(ids, name, noun="str id")


def check_str_items(items: Iterable[Any], name: str, noun: str = "str",
                    start: int = 0) -> list[str]:
    """``items`` as a list in which every item is a str (texts, ids...).

    ``start``: the position of the first item in the whole argument (a batch of a stream).

    Raises:
        TypeError: ``"{name}[i] must be a {noun}, got ..."`` for the first item that is not.
    """
    out = list(items)
    for i, item in enumerate(out):
        if not isinstance(item, str):
            raise TypeError(
                f"{name}[{start + i}] must be a {noun}, got {type(item).__name__}: {item!r:.80}"
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


def parse_enum(cls: type[E], value: Any, name: str) -> E:
    """``value`` as a member of ``cls`` (a member or its string value), else a clear error.

    The valid choices in the message are generated from the enum, never hand-written.
    """
    if isinstance(value, cls):
        return value
    choices = [m.value for m in cls]
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {choices} (a str), got {type(value).__name__}: "
                        f"{value!r:.80}")
    try:
        return cls(value.lower())
    except ValueError:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}") from None


def check_count(value: Any, name: str) -> None:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes, Mapping)):
        raise TypeError(f"{name} must be a list, got {type(value).__name__}")


def check_weights(weights: Any, n: int, name: str = "weights") -> tuple[float, ...]:
    """``n`` finite non-negative weights, at least one positive; ``None`` means all 1."""
    if weights is None:
        return (1.0,) * n
    if isinstance(weights, (str, bytes, Mapping)) or not hasattr(weights, "__len__") \
            or not hasattr(weights, "__iter__"):
        raise TypeError(
            f"{name} must be a list of {n} numbers (one per source), got "
            f"{type(weights).__name__}: {weights!r:.80}"
        )
    values = list(weights)
    if len(values) != n:
        raise ValueError(
            f"{name} must have one weight per source: expected {n}, got {len(values)} "
            f"({values!r:.80})"
        )
    out = []
    for i, w in enumerate(values):
        if isinstance(w, bool) or not isinstance(w, Real):
            raise TypeError(f"{name}[{i}] must be a number, got {type(w).__name__}: {w!r:.80}")
        w = float(w)
        if not math.isfinite(w) or w < 0:
            raise ValueError(
                f"{name}[{i}] must be a finite number >= 0, got {w!r}; use 0 to switch a "
                "source off"
            )
        out.append(w)
    if not any(out):
        raise ValueError(f"{name} must have at least one weight > 0, got {out!r}")
    return tuple(out)


def check_names(names: Any, n: int) -> tuple[Any, ...]:
    """Unique non-empty str names, one per source; ``None`` means the source indices."""
    if names is None:
        return tuple(range(n))
    check_count(names, "names")
    values = list(names)
    if len(values) != n:
        raise ValueError(f"names must have one name per source: expected {n}, got {len(values)}")
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v:
            raise TypeError(f"names[{i}] must be a non-empty str, got {type(v).__name__}: {v!r}")
    dupes = sorted({v for v in values if values.count(v) > 1})
    if dupes:
        raise ValueError(f"names must be unique, got {dupes} more than once")
    return tuple(values)


def check_k_rrf(k: Any, name: str = "k") -> float:
    """The RRF constant: a finite number >= 0 (0 is ``w / rank``, LangChain's ``c=0``;
    ranks are 1-based, so no term divides by zero)."""
    if isinstance(k, bool) or not isinstance(k, Real):
        raise TypeError(f"{name} (the RRF constant) must be a number >= 0, got "
                        f"{type(k).__name__}: {k!r:.80}")
    value = float(k)
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            f"{name} (the RRF constant) must be a finite number >= 0, got {k!r}; 60 is the "
            "value of Cormack et al. (2009)"
        )
    return value


def check_threshold(value: Any, name: str = "score_threshold") -> float | None:
    """A finite score threshold, or ``None`` for no threshold."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"{name} must be a number or None, got {type(value).__name__}: {value!r:.80}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}; use None for no threshold")
    return value


def check_merge_threshold(value: Any) -> float | None:
    """The auto-merge fraction in (0, 1], or ``None`` to always return parents."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"merge_threshold must be a float in (0, 1] or None, got {type(value).__name__}"
        )
    if not 0.0 < float(value) <= 1.0:
        raise ValueError(
            f"merge_threshold must be in (0, 1] (the fraction of a parent's children that "
            f"must match), got {value}; use None to always return parents"
        )
    return float(value)
