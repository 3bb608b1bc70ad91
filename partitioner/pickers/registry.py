"""The picker registry: the :class:`Picker` protocol, :func:`register_picker`, resolving a
name or ``pkg.mod:Name`` spec (:func:`get_picker`), and :func:`pick`.

The built-in pickers are listed here (:data:`BUILTIN_PICKERS`) and imported on first use, so
naming them costs nothing and a one-unit problem never imports the solver stack.
:mod:`tacopt.partitioner.pickers` (the package) re-exports these names; picker modules import
neither.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any, Protocol

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.plan import Plan, infeasibility
from tacopt.partitioner.problem import PickProblem
from tacopt.registry import Registry, resolve_spec


class Picker(Protocol):
    """Assigns one choice per unit. Options are keyword-only; the plan records them.

    (``*args: Any`` lets mypy accept pickers that name their own options instead of ``**``.)
    """

    def __call__(self, problem: PickProblem, *args: Any, **options: Any) -> Plan: ...


#: The built-in pickers: name -> ``pkg.mod:Name``, imported when first asked for.
BUILTIN_PICKERS = {
    "brute": "tacopt.partitioner.pickers.baselines.brute:pick_brute",
    "exact": "tacopt.partitioner.pickers.exact:pick_exact",
    "first-fit": "tacopt.partitioner.pickers.baselines.greedy:pick_first_fit",
    "greedy": "tacopt.partitioner.pickers.baselines.greedy:pick_greedy",
    "mincut": "tacopt.partitioner.pickers.mincut:pick_mincut",
    "tac": "tacopt.partitioner.pickers.baselines.tac:pick_tac",
}

_PICKERS: Registry[Picker] = Registry("picker", PickerError)
for _name, _spec in BUILTIN_PICKERS.items():
    _PICKERS.add_lazy(_name, _spec)


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
    """The picker registered as ``name``, or the one a ``pkg.mod:Name`` spec names.

    A spec imports ``pkg.mod`` and takes its attribute ``Name``: a picker function, or a class
    (called without arguments) whose instances are pickers. The spec string is the picker's name
    in plans and records, and a worker process resolves it again by itself.

    Raises
    ------
    PickerError
        For an unknown name (the message lists the known ones), a module that does not import,
        a missing attribute or one that is not callable.

    Examples
    --------
    >>> get_picker("no-such")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.PickerError: unknown picker 'no-such'; known: brute, ...
    >>> get_picker("tacopt.partitioner.pickers.baselines.greedy:pick_greedy").__name__
    'pick_greedy'
    >>> get_picker("no_such_module:mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.PickerError: picker 'no_such_module:mine': cannot import ...
    """
    found = _PICKERS.find(name)
    if found is not None:
        return found
    if ":" not in name:
        return _PICKERS.get(name)  # raises, listing the known names
    return _import_picker(name)


def _import_picker(spec: str) -> Picker:
    obj = resolve_spec(spec, f"picker {spec!r}", PickerError)
    attr = spec.partition(":")[2]
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:  # a class that needs arguments, or fails in __init__
            raise PickerError(
                f"picker {spec!r}: cannot create {attr}(): {type(exc).__name__}: {exc}"
            ) from None
    if not callable(obj):
        raise PickerError(f"picker {spec!r}: {type(obj).__name__} is not callable")
    try:  # a picker is called as picker(problem, **options)
        inspect.signature(obj).bind(None)
    except TypeError:
        raise PickerError(f"picker {spec!r}: {attr} does not take a problem") from None
    except ValueError:  # no signature to read (some builtins): let the call say
        pass
    return obj


def is_picker_spec(name: str) -> bool:
    """Whether ``name`` is a ``pkg.mod:Name`` spec rather than a registered name.

    >>> is_picker_spec("exact"), is_picker_spec("mymod:mine")
    (False, True)
    """
    return name not in _PICKERS and ":" in name


def picker_names() -> tuple[str, ...]:
    """Registered picker names, sorted."""
    return _PICKERS.names()


def picker_options(name: str) -> frozenset[str]:
    """The keyword options picker ``name`` accepts (all, if it takes ``**options``)."""
    params = inspect.signature(get_picker(name)).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return frozenset({"*"})
    return frozenset(p.name for p in params if p.kind is p.KEYWORD_ONLY)


def out_of_scope(problem: PickProblem, picker: str, **options: Any) -> str | None:
    """Why ``picker`` cannot solve ``problem``, asked before solving; None when it can (or when
    the picker does not say: a picker may carry a ``scope(problem, **options)`` function).

    >>> from tacopt.partitioner.problem.synthetic import layered_dag_problem
    >>> out_of_scope(layered_dag_problem(20, seed=0), "exact") is None
    True
    """
    scope = getattr(get_picker(picker), "scope", None)
    if scope is None:
        return None
    accepted = inspect.signature(scope).parameters
    reason = scope(problem, **{k: v for k, v in options.items() if k in accepted})
    return None if reason is None else str(reason)


def pick(problem: PickProblem, picker: str = "exact", **options: Any) -> Plan:
    """Solve ``problem`` with the picker registered as ``picker``.

    Parameters
    ----------
    problem : PickProblem
    picker : str
        A registered name (see :func:`picker_names`) or a ``pkg.mod:Name`` spec.
    **options
        Passed to the picker, e.g. ``time_limit_s=10, backend="cp-sat"`` for ``exact``.

    Returns
    -------
    Plan
        The picker's plan, checked by :func:`~tacopt.partitioner.plan.infeasibility`: a plan
        over a capacity or with a forbidden cost has status INFEASIBLE and its ``reason``.

    Raises
    ------
    PickerError
        For an unknown picker, an option it does not take, a problem outside its scope, or a
        picker that returns something other than a :class:`Plan`.
    """
    accepted = picker_options(picker)
    unknown = sorted(set(options) - accepted) if "*" not in accepted else []
    if unknown:
        takes = ", ".join(sorted(accepted)) or "none"
        raise PickerError(f"picker {picker!r} takes no option {unknown[0]!r}; it takes: {takes}")
    plan = get_picker(picker)(problem, **options)
    if not isinstance(plan, Plan):
        raise PickerError(f"picker {picker!r} returned {type(plan).__name__}, not a Plan")
    # Every picker's answer is checked the same way: one that breaks the problem's rules (a
    # device over its capacity, a forbidden cost) is INFEASIBLE, whatever the picker said.
    broken = infeasibility(problem, plan)
    if broken is not None:
        plan = replace(plan, status="INFEASIBLE", bound=None, gap=None, reason=broken)
    return plan
