"""`ReadOnly`: a public attribute that reads a private one and cannot be assigned.

Indexes, searchers and analyzers keep their settings in private attributes and
show them read-only. Each such attribute is one line in the class body, which
lists them together the way a dataclass lists its fields::

    class BM25Index:
        k1 = ReadOnly[float]("_k1", "Term-frequency saturation.")
        names = ReadOnly[tuple]("_plan.names", "What each child is called.")

Reading ``index.k1`` returns ``index._k1`` (a dotted path reads through, as
`operator.attrgetter` does). Assigning or deleting it raises `AttributeError`, as
for a property without a setter. `help()` and documentation tools show the text as
the attribute's docstring. The type parameter is for type checkers only.

A value computed on each read (``len(...)``, a conversion) stays a `property`.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Generic, TypeVar, overload

__all__ = ["ReadOnly"]

T = TypeVar("T")


class ReadOnly(Generic[T]):
    """A read-only view of the private attribute (or dotted path) ``source``."""

    def __init__(self, source: str, doc: str) -> None:
        self.source = source
        self.__doc__ = doc
        self._get = attrgetter(source)
        self._name = source

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = f"{owner.__name__}.{name}"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> ReadOnly[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return self._get(obj)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"{self._name} is read-only")

    def __delete__(self, obj: Any) -> None:
        raise AttributeError(f"{self._name} is read-only and cannot be deleted")
