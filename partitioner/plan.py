"""Plans, and the one objective every picker is judged by.

A :class:`Plan` says which :class:`~tacopt.partitioner.problem.Choice` each unit runs as, what that
costs (:class:`Breakdown`), how sure the picker is (``status``, ``bound``, ``gap``) and with which
knobs it was found (``params``). :func:`evaluate` is the objective; :func:`validate_plan` is the
independent checker the tests run on every picker's output.

The objective, for an assignment of one choice per unit, is the sum of

* compute: each unit's chosen cost;
* transfer: for every tensor, one ``per_byte * bytes + fixed`` per distinct destination device
  other than the device it starts on (the link of that device pair);
* quant: for every tensor, one ``quant_per_element * elements`` per distinct destination
  activation format other than the one it starts in (FLOAT and HYBRID share a format);
* pairwise: for every :class:`~tacopt.partitioner.problem.Pairwise`, the entry of the two
  units' choices.

A tensor starts where its producer runs; a graph input starts on the host in its dtype's type.
Destinations are the consumers' choices, plus the host (in the dtype's type) for a graph output.
With ``boundaries=False`` graph inputs and outputs are ignored.

A plan also holds each device's peak memory (:mod:`tacopt.partitioner.memory`); one that
exceeds a device's capacity is invalid, whatever its objective.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tacopt.partitioner.errors import PickerError, PlanError
from tacopt.partitioner.memory import first_overflow, peak_memory
from tacopt.partitioner.problem import (
    MAX_TOTAL,
    Choice,
    PickProblem,
    ProblemIndex,
    index_problem,
)

STATUSES = ("OPTIMAL", "FEASIBLE", "HEURISTIC", "INFEASIBLE", "UNKNOWN")


class NoPlanError(PickerError):
    """A picker found no plan within the capacities.

    ``status`` is INFEASIBLE when no plan fits (proven: exact, brute) and UNKNOWN when the
    picker gave up (a heuristic, or the exact picker at its time limit).
    """

    def __init__(self, message: str, status: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The objective split into compute, transfer, conversion (quant) and pairwise costs."""

    compute: float
    transfer: float
    quant: float
    pairwise: float = 0.0

    @property
    def total(self) -> float:
        """compute + transfer + quant + pairwise (an exact int when all four are ints)."""
        parts = (self.compute, self.transfer, self.quant, self.pairwise)
        if all(type(v) is int for v in parts):
            return sum(parts)
        return math.fsum(parts)


@dataclass(frozen=True, slots=True, repr=False)
class Plan:
    """A picker's answer: one choice per unit, its cost, and how good it is known to be.

    ``status`` is OPTIMAL (``bound == objective``), FEASIBLE (a proven ``bound`` below, relative
    ``gap``), or HEURISTIC (no bound: ``bound`` and ``gap`` are None). ``params`` records every
    knob that shaped the answer (seed, time limit, backend, versions). ``cost_unit`` is the
    problem's (``"us"``, ``"tac"``, ...). ``peak_memory`` is each device's peak in bytes and
    ``capacity`` the problem's capacities (devices without one are unlimited). A plan that
    breaks the problem's rules (:func:`infeasibility`) has status INFEASIBLE and ``reason`` says
    what it breaks (:func:`~tacopt.partitioner.pickers.pick` marks every picker's so).

    ``repr`` is one line and ``str`` (and a notebook's display) a short block: picker, status,
    objective with its unit, bound and gap when known, the breakdown and the units per device.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Link, Unit
    >>> gpu, cpu = Choice("GPU", "FLOAT", 40.0), Choice("CPU", "FLOAT", 200.0)
    >>> p = PickProblem((Unit("a", (gpu, cpu)), Unit("b", (cpu,))), (), Link(5.0, 10.0), 0.0,
    ...                 cost_unit="us")
    >>> plan = plan_from_choices(p, index_problem(p), np.array([0, 2]), picker="manual",
    ...                          status="HEURISTIC", started=time.perf_counter())
    >>> plan  # doctest: +ELLIPSIS
    <Plan manual HEURISTIC: 240 µs (compute 240, transfer 0, quant 0); units CPU 1, GPU 1; ... s>
    >>> print(plan)  # doctest: +ELLIPSIS
    manual: HEURISTIC, objective 240 µs (... s)
      compute   240 µs
      transfer    0 µs
      quant       0 µs
      units     CPU 1, GPU 1
    """

    picker: str
    status: str
    objective: float
    bound: float | None
    gap: float | None
    assignment: Mapping[str, Choice]
    breakdown: Breakdown
    seconds: float
    params: Mapping[str, Any] = field(default_factory=dict)
    cost_unit: str = "cost"
    peak_memory: Mapping[str, float] = field(default_factory=dict)
    capacity: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""  # why the status, when INFEASIBLE: what the plan breaks (infeasibility)

    @property
    def fits(self) -> bool:
        """Whether every device's peak is within its capacity."""
        return all(self.peak_memory.get(d, 0.0) <= c for d, c in self.capacity.items())

    def __repr__(self) -> str:
        b = self.breakdown
        head = [f"{_num(self.objective)} {unit_label(self.cost_unit)}", *self._bound_parts()]
        return (
            f"<Plan {self.picker} {self.status}: {', '.join(head)} (compute {_num(b.compute)},"
            f" transfer {_num(b.transfer)}, quant {_num(b.quant)}); units"
            f" {self._units_per_device()}; {self.seconds:.3g} s>"
        )

    def __str__(self) -> str:
        b = self.breakdown
        unit = unit_label(self.cost_unit)
        head = [f"objective {_num(self.objective)} {unit}", *self._bound_parts()]
        rows = [("compute", b.compute), ("transfer", b.transfer), ("quant", b.quant)]
        rows += [("pairwise", b.pairwise)] if b.pairwise else []
        width = max(len(_num(value)) for _, value in rows)
        lines = [f"{self.picker}: {self.status}, {', '.join(head)} ({self.seconds:.3g} s)"]
        lines += [f"  {'why':<9} {self.reason}"] if self.reason else []
        lines += [f"  {name:<9} {_num(value):>{width}} {unit}" for name, value in rows]
        lines.append(f"  {'units':<9} {self._units_per_device()}")
        if self.capacity:
            peaks = ", ".join(f"{d} {_num(self.peak_memory.get(d, 0.0))}/{_num(c)} B"
                              for d, c in sorted(self.capacity.items()))  # fmt: skip
            lines.append(f"  {'memory':<9} {peaks}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython and Jupyter show the block of ``str``."""
        printer.text(str(self))

    def _bound_parts(self) -> list[str]:
        if self.bound is None:
            return []
        gap = "" if self.gap is None else f"gap {100 * self.gap:.3g}%"
        return [f"bound {_num(self.bound)}", gap] if gap else [f"bound {_num(self.bound)}"]

    def _units_per_device(self) -> str:
        counts = Counter(c.device for c in self.assignment.values())
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return ", ".join(f"{device} {n}" for device, n in ranked) or "none"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """The plan of its JSON form (``tacopt pick --json`` and ``--plan`` write it).

        Raises
        ------
        PlanError
            When a field is missing or of the wrong kind.

        Examples
        --------
        >>> plan = Plan("manual", "HEURISTIC", 3.0, None, None,
        ...             {"a": Choice("CPU", "FLOAT", 3.0)}, Breakdown(3.0, 0.0, 0.0), 0.1)
        >>> Plan.from_dict(plan.to_dict()) == plan
        True
        """
        try:
            return cls(
                picker=str(data["picker"]),
                status=str(data["status"]),
                objective=float(data["objective"]),
                bound=None if data["bound"] is None else float(data["bound"]),
                gap=None if data["gap"] is None else float(data["gap"]),
                assignment={
                    name: Choice(str(c["device"]), str(c["type"]), float(c["cost"]),
                                 float(c.get("memory", 0.0)), str(c.get("variant", "")))
                    for name, c in data["assignment"].items()
                },
                breakdown=Breakdown(**{k: float(v) for k, v in data["breakdown"].items()}),
                seconds=float(data["seconds"]),
                params=dict(data.get("params", {})),
                cost_unit=str(data.get("cost_unit", "cost")),
                peak_memory={str(d): float(v) for d, v in data.get("peak_memory", {}).items()},
                capacity={str(d): float(v) for d, v in data.get("capacity", {}).items()},
                reason=str(data.get("reason", "")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanError(f"not a plan: {type(exc).__name__}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written by ``tacopt pick --json`` and ``--plan``."""
        return {
            "picker": self.picker,
            "status": self.status,
            "cost_unit": self.cost_unit,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "assignment": {
                name: {"device": c.device, "type": c.type, "cost": c.cost,
                       **({"memory": c.memory} if c.memory else {}),
                       **({"variant": c.variant} if c.variant else {})}
                for name, c in self.assignment.items()
            },  # fmt: skip
            "breakdown": {
                "compute": self.breakdown.compute,
                "transfer": self.breakdown.transfer,
                "quant": self.breakdown.quant,
                "pairwise": self.breakdown.pairwise,
            },
            "peak_memory": dict(self.peak_memory),
            "capacity": dict(self.capacity),
            "fits": self.fits,
            "seconds": self.seconds,
            "params": dict(self.params),
            **({"reason": self.reason} if self.reason else {}),
        }


def evaluate(problem: PickProblem, assignment: Mapping[str, Choice | tuple[str, str]]) -> Breakdown:
    """The cost of running each unit as ``assignment[unit]``.

    Parameters
    ----------
    problem : PickProblem
    assignment : Mapping
        Unit name to a :class:`Choice`, or a ``(device, type)`` pair (``(device, type,
        variant)`` for a choice with a variant); every unit must appear.

    Returns
    -------
    Breakdown

    Raises
    ------
    PlanError
        If a unit is missing or assigned something that is not one of its choices.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Link, TensorEdge, Unit
    >>> cpu, gpu = Choice("CPU", "FLOAT", 3.0), Choice("GPU", "FLOAT", 1.0)
    >>> p = PickProblem((Unit("a", (cpu, gpu)), Unit("b", (cpu,))),
    ...     (TensorEdge("t", "a", ("b",), (100,), "float32"),), Link(5.0, 10.0), 2.0)
    >>> evaluate(p, {"a": ("GPU", "FLOAT"), "b": ("CPU", "FLOAT")})
    Breakdown(compute=4.0, transfer=2010.0, quant=0.0, pairwise=0.0)
    """
    index = index_problem(problem)
    return evaluate_index(index, choice_indices(problem, index, assignment))


def evaluate_index(index: ProblemIndex, chosen: np.ndarray) -> Breakdown:
    """:func:`evaluate` on flat arrays: ``chosen[u]`` is the global choice index of unit ``u``.

    A problem with integer costs and no tensors (an IOPDDL instance) is summed in Python
    integers, exactly as the contest's evaluator does in 128 bits: its breakdown holds ints.
    """
    chosen = np.asarray(chosen, dtype=np.int64).reshape(-1)
    if index.integral and index.choice_cost_int is not None and index.pair_cost_int is not None:
        entry = _pair_entries(index, chosen.reshape(1, -1))[0]
        return Breakdown(sum(index.choice_cost_int[chosen].tolist()), 0, 0,
                         sum(index.pair_cost_int[entry].tolist()))  # fmt: skip
    terms = _objective_terms(index, chosen.reshape(1, -1))
    return Breakdown(*(math.fsum(cost.tolist()) for _, cost in terms))


def evaluate_batch(index: ProblemIndex, chosen: np.ndarray) -> np.ndarray:
    """Objective of each row of ``chosen`` (shape ``[m, n_units]``), as an array of ``m``."""
    chosen = np.asarray(chosen)
    total = np.zeros(len(chosen))
    for row, cost in _objective_terms(index, chosen):
        total += np.bincount(row, weights=cost, minlength=len(chosen))
    return total


def _objective_terms(
    index: ProblemIndex, chosen: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(row, cost) arrays of every compute, transfer, quant and pairwise charge of each row.

    A charge is one (row, tensor, destination) triple: ``np.unique`` on the triples is what
    makes a tensor pay once per distinct destination device (or format).
    """
    m = len(chosen)
    rows = np.arange(m)[:, None]
    dev = index.choice_dev[chosen]
    fmt = index.choice_fmt[chosen]
    # A graph input's producer is a padding column holding its fixed source device and format.
    producer = np.where(index.src_unit >= 0, index.src_unit, dev.shape[1])
    src_dev = np.concatenate([dev, np.full((m, 1), index.host_dev)], 1)[:, producer]
    src_fmt = np.concatenate([fmt, np.zeros((m, 1), np.int64)], 1)[:, producer]
    src_fmt = np.where(index.src_unit >= 0, src_fmt, index.src_fmt)
    out = np.flatnonzero(index.to_host)
    tensor = np.concatenate([index.arc_tensor, out])
    dst_dev = np.concatenate([dev[:, index.arc_unit], np.full((m, len(out)), index.host_dev)], 1)
    dst_fmt = np.concatenate([fmt[:, index.arc_unit], np.tile(index.host_fmt[out], (m, 1))], 1)
    units = np.repeat(np.arange(m), chosen.shape[1])
    terms: list[tuple[np.ndarray, np.ndarray]] = [(units, index.choice_cost[chosen].ravel())]
    n_tensors = len(index.src_unit)
    for dst, src, n, price in (
        (dst_dev, src_dev, len(index.devices), index.transfer_cost),
        (dst_fmt, src_fmt, len(index.formats), index.quant_cost),
    ):
        key = _unique(((rows * n_tensors + tensor) * n + dst).ravel())
        row, rest = np.divmod(key, n_tensors * n)
        t, d = np.divmod(rest, n)
        terms.append((row, price(src[row, t], d, t)))
    pair = index.pair_cost[_pair_entries(index, chosen)]
    terms.append((np.repeat(np.arange(m), len(index.pair_a)), pair.ravel()))
    return terms


def _pair_entries(index: ProblemIndex, chosen: np.ndarray) -> np.ndarray:
    """Where each pairwise term of each row of ``chosen`` stands in ``index.pair_cost`` (shape
    ``[rows, n_pairs]``): the entry at the two units' local choices."""
    start = index.choice_start
    i = chosen[:, index.pair_a] - start[index.pair_a]
    j = chosen[:, index.pair_b] - start[index.pair_b]
    return index.pair_offset + i * np.diff(start)[index.pair_b] + j


def _unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a plain sort beats ``np.unique``'s hashing here)."""
    keys = np.sort(keys)
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys


def choice_indices(
    problem: PickProblem, index: ProblemIndex, assignment: Mapping[str, Choice | tuple[str, str]]
) -> np.ndarray:
    """Global choice index per unit for an assignment by name; raises :class:`PlanError`."""
    chosen = np.empty(len(problem.units), dtype=np.int64)
    for u, unit in enumerate(problem.units):
        if unit.name not in assignment:
            raise PlanError(f"unit {unit.name!r} has no choice in the plan")
        picked = assignment[unit.name]
        key = picked.key if isinstance(picked, Choice) else (*picked, "")[:3]
        for k, c in enumerate(unit.choices):
            if c.key == key:
                chosen[u] = index.choice_start[u] + k
                break
        else:
            label = "/".join(key[:2]) + (f":{key[2]}" if key[2] else "")
            raise PlanError(f"unit {unit.name!r}: {label} is not one of its choices")
    extra = set(assignment) - set(index.unit_names)
    if extra:
        raise PlanError(f"plan assigns unknown unit {min(extra)!r}")
    return chosen


def plan_from_choices(
    problem: PickProblem,
    index: ProblemIndex,
    chosen: np.ndarray,
    *,
    picker: str,
    status: str,
    started: float,
    bound: float | None = None,
    params: Mapping[str, Any] | None = None,
) -> Plan:
    """Make a :class:`Plan` from chosen choice indices; the objective comes from ``evaluate``.

    ``bound`` is a proven lower bound (None for heuristics); OPTIMAL plans get
    ``bound = objective``. ``started`` is the ``time.perf_counter()`` the picker began at.
    """
    breakdown = evaluate_index(index, chosen)
    objective = breakdown.total
    if status == "OPTIMAL":
        bound = objective if bound is None else min(bound, objective)
    gap = None if bound is None else relative_gap(objective, bound)
    assignment = {
        unit.name: unit.choices[int(chosen[u] - index.choice_start[u])]
        for u, unit in enumerate(problem.units)
    }
    return Plan(
        picker=picker,
        status=status,
        objective=objective,
        bound=bound,
        gap=gap,
        assignment=assignment,
        breakdown=breakdown,
        seconds=time.perf_counter() - started,
        params=dict(params or {}),
        cost_unit=problem.cost_unit,
        peak_memory=peak_memory(index, chosen),
        capacity=dict(problem.capacity),
    )


def _num(value: float) -> str:
    """A cost for people: about 7 significant digits, thousands separated, no trailing zeros."""
    size = abs(value)
    if size == 0 or not 1e-3 <= size < 1e15:
        return f"{value:.7g}"
    decimals = min(max(6 - math.floor(math.log10(size)), 0), 6)
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


_UNIT_LABELS = {"tac": "TAC units", "us": "µs"}


def unit_label(cost_unit: str) -> str:
    """How a cost unit reads after a number: ``"tac"`` is TAC units, ``"us"`` µs.

    Examples
    --------
    >>> unit_label("tac"), unit_label("us"), unit_label("ms")
    ('TAC units', 'µs', 'ms')
    """
    return _UNIT_LABELS.get(cost_unit, cost_unit)


def relative_gap(objective: float, bound: float) -> float:
    """``(objective - bound) / |objective|``, 0 when both are 0.

    Examples
    --------
    >>> relative_gap(100.0, 90.0), relative_gap(0.0, 0.0)
    (0.1, 0.0)
    """
    if objective == bound:
        return 0.0
    return max(0.0, objective - bound) / max(abs(objective), 1e-12)


def validate_plan(problem: PickProblem, plan: Plan, *, rel_tol: float = 1e-9) -> None:
    """Check that ``plan`` fits ``problem``; raise :class:`PlanError` otherwise.

    Every unit must get one of its own choices (with that choice's cost), no unknown unit may
    appear, the reported breakdown and objective must match :func:`evaluate`, a reported
    bound may not exceed the objective, and the plan must keep the problem's rules
    (:func:`infeasibility`: no device over its capacity at any step, no forbidden cost) unless
    its status is INFEASIBLE, when its ``reason`` must be exactly what the checker finds.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Link, Unit
    >>> p = PickProblem((Unit("a", (Choice("CPU", "FLOAT", 3.0),)),), (), Link(5.0, 10.0), 2.0)
    >>> good = Plan("manual", "HEURISTIC", 3.0, None, None, {"a": p.units[0].choices[0]},
    ...             Breakdown(3.0, 0.0, 0.0), 0.0)
    >>> validate_plan(p, good)
    >>> validate_plan(p, Plan("manual", "HEURISTIC", 2.0, None, None, good.assignment,
    ...                       Breakdown(3.0, 0.0, 0.0), 0.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.PlanError: plan of picker 'manual': reported objective 2.0 but ...
    """
    who = f"plan of picker {plan.picker!r}"
    if plan.status not in STATUSES:
        raise PlanError(f"{who}: unknown status {plan.status!r}; known: {', '.join(STATUSES)}")
    for unit in problem.units:
        picked = plan.assignment.get(unit.name)
        if picked is not None and picked not in unit.choices:
            raise PlanError(f"{who}: unit {unit.name!r} runs as {picked}, not one of its choices")
    index = index_problem(problem)
    try:
        chosen = choice_indices(problem, index, plan.assignment)
    except PlanError as exc:
        raise PlanError(f"{who}: {exc}") from None
    actual = evaluate_index(index, chosen)
    broken = infeasibility_of(problem, index, chosen)
    if plan.status == "INFEASIBLE" and plan.reason != (broken or ""):
        raise PlanError(f"{who}: INFEASIBLE for {plan.reason or 'no reason'!r} but the checker"
                        f" finds {broken or 'none'!r}")  # fmt: skip
    if plan.status != "INFEASIBLE" and broken is not None:
        raise PlanError(f"{who}: {broken}")
    for name in ("compute", "transfer", "quant", "pairwise"):
        got, want = getattr(plan.breakdown, name), getattr(actual, name)
        if not math.isclose(got, want, rel_tol=rel_tol, abs_tol=rel_tol):
            raise PlanError(f"{who}: reported {name} cost {got} but evaluate gives {want}")
    if not math.isclose(plan.objective, actual.total, rel_tol=rel_tol, abs_tol=rel_tol):
        raise PlanError(
            f"{who}: reported objective {plan.objective} but evaluate gives {actual.total}"
        )
    if plan.bound is not None and plan.bound > plan.objective * (1 + rel_tol) + rel_tol:
        raise PlanError(f"{who}: bound {plan.bound} exceeds objective {plan.objective}")


def infeasibility(problem: PickProblem, plan: Plan) -> str | None:
    """Why ``plan`` is not a solution of ``problem`` (one line), or None when it is one.

    A plan breaks the problem's rules when a device holds more than its capacity at some step
    (the message names the device, the step and the bytes) or when it pays a *forbidden* cost:
    from :data:`~tacopt.partitioner.problem.MAX_TOTAL` (10^18) on, an IOPDDL contest's
    infinity (the message names the units). The one check of every picker's answer:
    :func:`validate_plan` raises with it, :func:`~tacopt.partitioner.pickers.pick` marks the
    plan INFEASIBLE with it.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Link, Pairwise, Unit
    >>> a = (Choice("CPU", "FLOAT", 1.0), Choice("GPU", "FLOAT", 2.0))
    >>> p = PickProblem((Unit("a", a), Unit("b", a)), (), Link(0.0, 0.0), 0.0,
    ...                 pairwise=(Pairwise("a", "b", ((1e18, 0.0), (0.0, 0.0))),))
    >>> plan = plan_from_choices(p, index_problem(p), np.array([0, 2]), picker="manual",
    ...                          status="HEURISTIC", started=time.perf_counter())
    >>> infeasibility(p, plan)
    "a forbidden pair (cost >= 1e+18): units 'a' and 'b'"
    """
    index = index_problem(problem)
    return infeasibility_of(problem, index, choice_indices(problem, index, plan.assignment))


def infeasibility_of(problem: PickProblem, index: ProblemIndex, chosen: np.ndarray) -> str | None:
    """:func:`infeasibility` on global choice indices (``chosen[u]`` for unit ``u``)."""
    chosen = np.asarray(chosen, dtype=np.int64).reshape(-1)
    if index.has_memory:
        overflow = first_overflow(index, chosen)
        if overflow is not None:
            return f"does not fit: {overflow}"
    names = [unit.name for unit in problem.units]
    units = np.flatnonzero(index.choice_cost[chosen] >= MAX_TOTAL)
    if len(units):
        more = f" (and {len(units) - 1} more)" if len(units) > 1 else ""
        return f"a forbidden choice (cost >= {MAX_TOTAL:g}): unit {names[units[0]]!r}{more}"
    if len(index.pair_a):
        pairs = np.flatnonzero(index.pair_cost[_pair_entries(index, chosen.reshape(1, -1))[0]]
                               >= MAX_TOTAL)  # fmt: skip
        if len(pairs):
            a, b = names[index.pair_a[pairs[0]]], names[index.pair_b[pairs[0]]]
            more = f" (and {len(pairs) - 1} more)" if len(pairs) > 1 else ""
            return f"a forbidden pair (cost >= {MAX_TOTAL:g}): units {a!r} and {b!r}{more}"
    return None
