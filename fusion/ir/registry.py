"""One registry mechanism for every extension point (STYLE principle 3).

A :class:`Registry` maps names to objects of one kind (kernels, fusions, cost models, pickers,
targets, zoos). It refuses duplicates and lists the known names when asked for an unknown one,
raising the owning package's own error class so callers see the same exception types everywhere.
Package-specific behaviour (``replace=True`` hints, case-insensitive names, spec strings such as
``pkg.mod:Name``) stays in the package, which delegates the plain part here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Objects of one kind, by name.

    Parameters
    ----------
    kind : str
        What the objects are, for messages (``"picker"``, ``"cost model"``, ``"device"``).
    error : type of Exception
        The exception raised for a duplicate or unknown name (the package's own error class).

    Examples
    --------
    >>> reg = Registry("colour", KeyError)
    >>> reg.add("red", 1)
    1
    >>> reg.get("red"), reg.names(), "blue" in reg
    (1, ('red',), False)
    >>> reg.get("blue")
    Traceback (most recent call last):
    ...
    KeyError: "unknown colour 'blue'; known: red"
    """

    __slots__ = ("kind", "error", "_items")

    def __init__(self, kind: str, error: type[Exception]) -> None:
        self.kind = kind
        self.error = error
        self._items: dict[str, T] = {}

    def add(self, name: str, obj: T, *, replace: bool = False) -> T:
        """Register ``obj`` as ``name`` and return it; a taken name raises unless ``replace``."""
        if name in self._items and not replace:
            raise self.error(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj
        return obj

    def get(self, name: str) -> T:
        """The object registered as ``name``; an unknown name raises, listing the known ones."""
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(self.names())
            raise self.error(f"unknown {self.kind} {name!r}; known: {known}") from None

    def find(self, name: str) -> T | None:
        """The object registered as ``name``, or None."""
        return self._items.get(name)

    def remove(self, name: str) -> None:
        """Unregister ``name`` (raises like :meth:`get` if it is unknown)."""
        self.get(name)
        del self._items[name]

    def names(self) -> tuple[str, ...]:
        """The registered names, sorted."""
        return tuple(sorted(self._items))

    def copy(self) -> Registry[T]:
        """An independent registry with the same entries (tests register into a copy)."""
        other: Registry[T] = Registry(self.kind, self.error)
        other._items = dict(self._items)
        return other

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self)} entries)"
