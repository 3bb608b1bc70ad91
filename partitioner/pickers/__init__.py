"""Pickers: functions that assign one choice to every unit of a pick problem.

A picker is any callable ``picker(problem, **options) -> Plan`` (the :class:`Picker` protocol),
registered by name with :func:`register_picker`. The built-ins register when this package is
imported:

========== =====================================================================
exact      integer program in OR-Tools; proves optimality (or reports the gap)
mincut     s-t minimum cut; exact and polynomial when units use two choices
tac        TAC's greedy pick-subgraphs pass, quirks included (the baseline)
greedy     topological greedy: each unit minimises its cost plus its inputs' moves
first-fit  the initial plan as it is
brute      exhaustive search over at most 12 units (the test oracle)
========== =====================================================================

Every picker reports the objective of :func:`tacopt.partitioner.plan.evaluate`, so plans compare.

Examples
--------
>>> from tacopt.benchmarks.synthetic import layered_dag_problem
>>> p = layered_dag_problem(8, seed=0)
>>> pick(p, "exact").objective <= pick(p, "tac").objective
True
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

from tacopt.fusion.registry import Registry
from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.plan import Plan
from tacopt.partitioner.problem import PickProblem


class Picker(Protocol):
    """Assigns one choice per unit. Options are keyword-only; the plan records them.

    (``*args: Any`` lets mypy accept pickers that name their own options instead of ``**``.)
    """

    def __call__(self, problem: PickProblem, *args: Any, **options: Any) -> Plan: ...


_PICKERS: Registry[Picker] = Registry("picker", PickerError)


def register_picker(name: str, picker: Picker, *, replace: bool = False) -> Picker:
    """Register ``picker`` under ``name`` and return it.

    ``replace=True`` replaces a picker of the same name (re-running a notebook cell).

    Raises
    ------
    PickerError
        If ``name`` is taken and ``replace`` is False.

    Examples
    --------
    >>> def mine(problem, **options): ...
    >>> register_picker("doc-example", mine) is mine  # doctest: +SKIP
    True
    >>> register_picker("exact", mine)
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.PickerError: picker 'exact' is already registered
    """
    return _PICKERS.add(name, picker, replace=replace)


def get_picker(name: str) -> Picker:
    """The picker registered as ``name``; an unknown name raises :class:`PickerError`.

    Examples
    --------
    >>> get_picker("no-such")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.PickerError: unknown picker 'no-such'; known: brute, ...
    """
    return _PICKERS.get(name)


def picker_names() -> tuple[str, ...]:
    """Registered picker names, sorted."""
    return _PICKERS.names()


def picker_options(name: str) -> frozenset[str]:
    """The keyword options picker ``name`` accepts (all, if it takes ``**options``)."""
    params = inspect.signature(get_picker(name)).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return frozenset({"*"})
    return frozenset(p.name for p in params if p.kind is p.KEYWORD_ONLY)


def pick(problem: PickProblem, picker: str = "exact", **options: Any) -> Plan:
    """Solve ``problem`` with the picker registered as ``picker``.

    Parameters
    ----------
    problem : PickProblem
    picker : str
        A registered name (see :func:`picker_names`).
    **options
        Passed to the picker, e.g. ``time_limit_s=10, backend="cp-sat"`` for ``exact``.

    Returns
    -------
    Plan

    Raises
    ------
    PickerError
        For an unknown picker, an option it does not take, or a problem outside its scope.
    """
    accepted = picker_options(picker)
    unknown = sorted(set(options) - accepted) if "*" not in accepted else []
    if unknown:
        takes = ", ".join(sorted(accepted)) or "none"
        raise PickerError(f"picker {picker!r} takes no option {unknown[0]!r}; it takes: {takes}")
    return get_picker(picker)(problem, **options)


# Each built-in module registers its pickers when imported.
from tacopt.partitioner.pickers import brute, exact, greedy, mincut, tac  # noqa: E402, F401
