"""One registry mechanism for every extension point (STYLE principle 3).

A :class:`Registry` maps names to objects of one kind (kernels, fusions, cost models, pickers,
targets, zoos). It refuses duplicates and lists the known names when asked for an unknown one,
raising the owning package's own error class so callers see the same exception types everywhere.
Package-specific behaviour (``replace=True`` hints, case-insensitive names) stays in the package,
which delegates the plain part here. A user's own object named by a ``pkg.mod:Name`` spec is
imported by :func:`resolve_spec`, the one place that reads such specs.

Built-ins are registered lazily (:meth:`Registry.add_lazy`): the registry holds the
``pkg.mod:Name`` spec of each and imports it on first use, so listing the names (``--help``,
error messages) imports nothing and a command pays only for what it runs.
"""

from __future__ import annotations

import pkgutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LazyEntry:
    """A registered name whose object is imported on first use: ``spec`` is ``pkg.mod:Name``."""

    spec: str


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

    A lazy entry is listed at once and imported when first asked for:

    >>> reg.add_lazy("dumps", "json:dumps")
    >>> reg.names(), reg.get("dumps").__name__
    (('dumps', 'red'), 'dumps')
    """

    __slots__ = ("kind", "error", "_items")

    def __init__(self, kind: str, error: type[Exception]) -> None:
        self.kind = kind
        self.error = error
        self._items: dict[str, T | LazyEntry] = {}

    def add_lazy(self, name: str, spec: str) -> None:
        """Register the object a ``pkg.mod:Name`` spec names as ``name``, importing it only when
        it is first asked for (:meth:`get`, :meth:`find`); a taken name raises."""
        if name in self._items:
            raise self.error(f"{self.kind} {name!r} is already registered")
        self._items[name] = LazyEntry(spec)

    def add(self, name: str, obj: T, *, replace: bool = False) -> T:
        """Register ``obj`` as ``name`` and return it; a taken name raises unless ``replace``."""
        if name in self._items and not replace:
            raise self.error(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj
        return obj

    def get(self, name: str) -> T:
        """The object registered as ``name``; an unknown name raises, listing the known ones."""
        found = self.find(name)
        if found is None:
            known = ", ".join(self.names())
            raise self.error(f"unknown {self.kind} {name!r}; known: {known}")
        return found

    def find(self, name: str) -> T | None:
        """The object registered as ``name``, or None (a lazy entry is imported now, once)."""
        obj = self._items.get(name)
        if isinstance(obj, LazyEntry):
            obj = cast(T, resolve_spec(obj.spec, f"{self.kind} {name!r}", self.error))
            self._items[name] = obj
        return obj

    def remove(self, name: str) -> None:
        """Unregister ``name`` (raises like :meth:`get` if it is unknown)."""
        if name not in self._items:
            self.get(name)  # raises, listing the known names
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


def resolve_spec(spec: str, what: str, error: type[Exception]) -> Any:
    """The object a ``pkg.mod:Name`` spec names (:func:`pkgutil.resolve_name`), or one line of
    ``error`` saying why not: ``what`` names the spec for the message (``"picker 'm:P'"``).

    Examples
    --------
    >>> resolve_spec("json:dumps", "codec 'json:dumps'", ValueError).__name__
    'dumps'
    >>> resolve_spec("json:nope", "codec 'json:nope'", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: codec 'json:nope': module 'json' has no 'nope'
    >>> resolve_spec("no_such_mod:f", "codec", ValueError)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: codec: cannot import 'no_such_mod': ModuleNotFoundError: No module named ...
    """
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise error(f"{what}: a spec is pkg.mod:Name")
    try:
        return pkgutil.resolve_name(spec)
    except Exception as exc:  # the user's module failing on import, reported on one line
        if isinstance(exc, AttributeError) and module in sys.modules:  # imported: no such name
            raise error(f"{what}: module {module!r} has no {attr!r}") from None
        raise error(f"{what}: cannot import {module!r}: {type(exc).__name__}: {exc}") from None
