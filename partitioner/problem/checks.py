"""What makes a pick problem valid: :func:`validate_problem` and its checks, one line naming
the culprit for each problem they refuse (the JSON reader checks only structure and types)."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, NoReturn

import networkx as nx
import numpy as np

from tacopt.partitioner.errors import ProblemError
from tacopt.partitioner.problem.records import (
    ACTIVATION_FORMAT,
    BAD_TEXT,
    INFERENCE_TYPES,
    MAX_NBYTES,
    MAX_TOTAL,
    PRICED_DTYPE_NBYTES,
    Named,
    Pairwise,
    ProblemData,
    TensorEdge,
    Unit,
    activation_format,
    show,
    type_of_dtype,
)


def validate_problem(problem: ProblemData, *, source: str = "<problem>") -> None:
    """Check a problem; raise a one-line :class:`ProblemError` naming what is wrong.

    Checks: names are strings without control characters, unique unit and tensor names, at
    least one choice per unit, known inference types, no (device, type) twice in a unit, costs
    and prices that are numbers from 0 to :data:`MAX_TOTAL`, a host that some unit can run on,
    no link from a device to itself, known units and dtypes in tensors, shapes of non-negative
    integers under :data:`MAX_NBYTES` bytes, no cycle among units, and no plan whose total
    could exceed :data:`MAX_TOTAL` (so that every total is finite in float64 and within the
    solvers' range). Memory: capacities and choice memories are byte counts from 0 to
    :data:`MAX_NBYTES` for devices some unit runs on, and with capacities the units are listed
    in an execution (topological) order. Pairwise costs name two different units and hold one
    price per pair of their choices.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Link, PickProblem, Unit
    >>> bad = PickProblem((Unit("a", ()),), (), Link(5.0, 10.0), 2.0)
    >>> validate_problem(bad, source="p.json")
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.ProblemError: p.json: unit 'a': no choices
    """

    def fail(msg: str) -> NoReturn:
        raise ProblemError(f"{source}: {msg}")

    _check_text(problem.cost_unit, "cost_unit", fail)
    _check_text(problem.host, "host", fail)
    if not isinstance(problem.boundaries, bool):
        fail(f"'boundaries' must be true or false, got {show(problem.boundaries)}")
    prices = [
        (problem.transfer.per_byte, "transfer.per_byte"),
        (problem.transfer.fixed, "transfer.fixed"),
        (problem.quant_per_element, "quant.per_element"),
    ]
    for (src, dst), link in problem.links.items():
        _check_text(src, "link 'from'", fail)
        _check_text(dst, "link 'to'", fail)
        if src == dst:
            fail(f"link {src}->{dst}: a tensor never moves to the device it is on")
        prices += [(link.per_byte, f"link {src}->{dst} per_byte"),
                   (link.fixed, f"link {src}->{dst} fixed")]  # fmt: skip
    for value, what in prices:
        _check_price(value, what, fail)
    max_costs = _check_units(problem.units, fail)
    devices = {c.device for u in problem.units for c in u.choices}
    if devices and problem.host not in devices:
        known = ", ".join(sorted(devices))
        fail(f"host {problem.host!r} is not a device of any unit (devices: {known})")
    _check_tensors(problem.tensors, {u.name for u in problem.units}, fail)
    topological_order(problem, fail)
    _check_capacity(problem, devices | {problem.host}, fail)
    pair_max = _check_pairwise(problem, fail)
    _check_totals(problem, float(max_costs.sum()) + pair_max, fail)


def _check_capacity(
    problem: ProblemData, devices: set[str], fail: Callable[[str], NoReturn]
) -> None:
    """Capacities are byte counts of known devices; with any, units come in execution order."""
    if not problem.capacity:
        return
    for device, nbytes in problem.capacity.items():
        _check_text(device, "capacity device", fail)
        if device not in devices:
            fail(f"capacity of device {device!r}, which no unit runs on "
                 f"(devices: {', '.join(sorted(devices))})")  # fmt: skip
        _check_bytes(nbytes, f"capacity of {device}", fail)
    # Memory is counted step by step in the listed order, so it must be an execution order.
    pos = {u.name: i for i, u in enumerate(problem.units)}
    for t in problem.tensors:
        early = [v for v in t.consumers if t.producer is not None and pos[v] < pos[t.producer]]
        if early:
            fail(f"with capacities the units must be listed in an execution order: unit "
                 f"{early[0]!r} reads tensor {t.name!r} of unit {t.producer!r}, listed after it")


def _check_bytes(value: Any, what: str, fail: Callable[[str], NoReturn]) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(f"{what} must be a number of bytes, got {show(value)}")
    number: Any = value
    if not 0 <= number < MAX_NBYTES:  # False for NaN
        fail(f"{what} must be bytes from 0 to 2**63, got {show(value)}")


def _check_pairwise(problem: ProblemData, fail: Callable[[str], NoReturn]) -> float:
    """Check every pairwise matrix; return the sum of their largest entries (forbidden ones,
    :data:`MAX_TOTAL`, left out)."""
    sizes = {u.name: len(u.choices) for u in problem.units}
    lengths = []
    for i, pair in enumerate(problem.pairwise):
        a, b, cost = pair.a, pair.b, pair.cost
        if not (type(a) is str and type(b) is str and a in sizes and b in sizes and a != b):
            where = Pair(i, a, b)
            for name in (a, b):
                if not isinstance(name, str) or name not in sizes:
                    fail(f"{where}: unknown unit {show(name)}")
            if a == b:
                fail(f"{where}: a unit paired with itself (put the cost in its choices)")
        rows, cols = sizes[a], sizes[b]
        # map/all keep the row check at C speed (an IOPDDL instance has 430,000 rows).
        if len(cost) != rows or not all(map(cols.__eq__, map(len, cost))):
            got = f"{len(cost)} x {[len(row) for row in cost][:4]}"
            fail(f"{Pair(i, a, b)}: cost must be {rows} x {cols} (choices of a x choices of b), "
                 f"got {got}")  # fmt: skip
        lengths.append(rows * cols)
    # One array for all matrices (an IOPDDL instance holds millions of entries).
    values = _float_array(pairwise_entries(problem.pairwise))
    if values is None:
        for i, pair in enumerate(problem.pairwise):
            at = f"pairwise[{i}] ({show(pair.a)}, {show(pair.b)})"
            for r, row in enumerate(pair.cost):
                for c, value in enumerate(row):
                    _check_price(value, f"{at} cost[{r}][{c}]", fail)
        return 0.0  # not reached: some entry failed
    starts = np.cumsum([0, *lengths[:-1]], dtype=np.int64)
    kept = np.where(values < MAX_TOTAL, values, 0.0)
    nonempty = np.array(lengths, dtype=np.int64) > 0
    if not nonempty.any():
        return 0.0
    return float(np.maximum.reduceat(kept, starts[nonempty]).sum())


@dataclass(frozen=True, slots=True)
class Pair:
    """``pairwise[i] ('a', 'b')`` in an error message, formatted only when the message is."""

    i: int
    a: Any
    b: Any

    def __str__(self) -> str:
        return f"pairwise[{self.i}] ({show(self.a)}, {show(self.b)})"


def pairwise_entries(pairwise: Sequence[Pairwise]) -> list[Any]:
    """Every entry of every matrix, matrix by matrix, row by row (one flat list)."""
    return list(chain.from_iterable(chain.from_iterable(p.cost for p in pairwise)))


def _check_text(value: Any, what: str, fail: Callable[[str], NoReturn]) -> None:
    if not isinstance(value, str) or not value:
        fail(f"{what} must be a non-empty string, got {show(value)}")
    if BAD_TEXT.search(value):
        fail(f"{what} {show(value)} holds a control character or a lone surrogate")


#: The largest integer cost (an IOPDDL contest's int64); from :data:`MAX_TOTAL` on a cost is
#: "forbidden": plans avoid it when they can, and totals leave it out.
MAX_INT = 2**63 - 1


def _check_price(value: Any, what: str, fail: Callable[[str], NoReturn]) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(f"{what} must be a number, got {show(value)}")
    number: Any = value  # numbers.Real promises no comparison operators to mypy
    if type(number) is int and MAX_TOTAL < number <= MAX_INT:
        return  # "forbidden" (an IOPDDL contest's infinity): left out of every total
    if not 0 <= number <= MAX_TOTAL:  # False for NaN; exact for ints of any size
        fail(f"{what} must be finite, >= 0 and <= {MAX_TOTAL:g}, got {show(value)}")


def _check_units(units: Sequence[Unit], fail: Callable[[str], NoReturn]) -> np.ndarray:
    """Check every unit; return each unit's largest cost.

    A few whole-problem checks decide quickly that 50,000 units are fine; only when one of them
    fails does :func:`_check_unit` go unit by unit, to name the first culprit.
    """
    names = [u.name for u in units]
    flat = [c for u in units for c in u.choices]
    devices = [c.device for c in flat]
    types = [c.type for c in flat]
    variants = [c.variant for c in flat]
    counts = [len(u.choices) for u in units]
    costs = _float_array([c.cost for c in flat])
    memory = [c.memory for c in flat]
    fine = (
        costs is not None
        and _are_bytes(memory)
        and 0 not in counts
        and set(map(type, names)) <= {str}
        and len(set(names)) == len(names)
        and set(map(type, devices)) <= {str}
        and set(map(type, types)) <= {str}
        and set(types) <= ACTIVATION_FORMAT.keys()
        and "" not in set(devices)
        and set(map(type, variants)) <= {str}
        and not BAD_TEXT.search("".join(names) + "".join(devices) + "".join(variants))
        and set(map(type, (u.initial for u in units))) <= {int}
        and all(0 <= u.initial < n for u, n in zip(units, counts))
        and all(u.interval is None or _is_interval(u.interval) for u in units)
        and not _any_pair_twice(counts, devices, types, variants)
    )
    if fine and costs is not None:
        if not units:
            return costs
        # A cost of MAX_TOTAL is "forbidden" (the contest's infinity): the totals leave it out.
        return np.maximum.reduceat(np.where(costs < MAX_TOTAL, costs, 0.0),
                                   np.cumsum([0, *counts[:-1]]))  # fmt: skip
    seen: set[str] = set()
    for unit in units:
        _check_unit(unit, seen, fail)
    fail("invalid units")  # not reached: _check_unit names the first culprit


def _any_pair_twice(
    counts: list[int], devices: list[str], types: list[str], variants: list[str]
) -> bool:
    """Whether some unit lists a (device, type, variant) twice; choices are numbered unit by
    unit."""
    dev_code = {d: i for i, d in enumerate(dict.fromkeys(devices))}
    type_code = {t: i for i, t in enumerate(INFERENCE_TYPES)}
    var_code = {v: i for i, v in enumerate(dict.fromkeys(variants))}
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    dev = np.fromiter(map(dev_code.__getitem__, devices), np.int64, len(devices))
    kind = np.fromiter(map(type_code.__getitem__, types), np.int64, len(types))
    var = np.fromiter(map(var_code.__getitem__, variants), np.int64, len(variants))
    keys = ((owner * len(dev_code) + dev) * len(type_code) + kind) * len(var_code) + var
    return len(np.unique(keys)) < len(keys)


def _are_bytes(values: list[Any]) -> bool:
    """Whether every value is a plain int or float from 0 to below 2**63 (NaN is not)."""
    kinds = set(map(type, values))
    if kinds <= {int}:  # exact, at C speed (a contest file's 200,000 usages)
        return not values or (min(values) >= 0 and max(values) < MAX_NBYTES)
    return kinds <= {float, int} and all(0 <= m < MAX_NBYTES for m in values)


def _is_interval(value: Any) -> bool:
    """A pair of step numbers (integers from 0 to 2**63 - 1)."""
    return isinstance(value, tuple) and len(value) == 2 and all(map(_is_count, value))


def _float_array(values: list[Any]) -> np.ndarray | None:
    """``values`` as float64 when they are all plain numbers from 0 to MAX_TOTAL, else None."""
    if not set(map(type, values)) <= {float, int, np.float64}:
        return None
    try:
        array = np.array(values, dtype=np.float64)
    except OverflowError:  # an int beyond float64
        return None
    if not np.all((array >= 0) & (array <= 2.0**63)):  # NaN fails
        return None
    above = np.flatnonzero(array > MAX_TOTAL)  # only integers may be "forbidden"
    return array if all(type(values[i]) is int for i in above.tolist()) else None


def _check_unit(unit: Unit, seen: set[str], fail: Callable[[str], NoReturn]) -> None:
    if not isinstance(unit.name, str):
        fail(f"unit names must be strings, got {show(unit.name)}")
    where = f"unit {show(unit.name)}"
    if BAD_TEXT.search(unit.name):
        fail(f"{where}: the name holds a control character or a lone surrogate")
    if unit.name in seen:
        fail(f"duplicate unit name {show(unit.name)}")
    seen.add(unit.name)
    if not unit.choices:
        fail(f"{where}: no choices")
    pairs: set[tuple[str, str, str]] = set()
    for k, c in enumerate(unit.choices):
        if not isinstance(c.device, str) or not isinstance(c.type, str):
            fail(f"{where} choices[{k}]: device and type must be strings")
        _check_text(c.device, f"{where} choices[{k}] device", fail)
        if c.type not in ACTIVATION_FORMAT:
            known = ", ".join(INFERENCE_TYPES)
            fail(f"{where} choices[{k}]: unknown inference type {show(c.type)}; known: {known}")
        if not isinstance(c.variant, str) or BAD_TEXT.search(c.variant):
            fail(f"{where} choices[{k}]: variant must be a string without control characters")
        label = f"{where} choice {c.label}"
        if c.key in pairs:
            fail(f"{label}: listed twice")
        pairs.add(c.key)
        _check_price(c.cost, f"{label} cost", fail)
        _check_bytes(c.memory, f"{label} memory", fail)
    if isinstance(unit.initial, bool) or not isinstance(unit.initial, int):
        fail(f"{where}: initial choice must be an index, got {show(unit.initial)}")
    if not 0 <= unit.initial < len(unit.choices):
        fail(f"{where}: initial choice {unit.initial} out of range")
    if unit.interval is not None and not _is_interval(unit.interval):
        fail(f"{where}: interval must be [start, end], steps from 0 to 2**63 - 1, got "
             f"{show(unit.interval)}")  # fmt: skip


def _check_tensors(
    tensors: Sequence[TensorEdge], units: set[str], fail: Callable[[str], NoReturn]
) -> None:
    names: set[str] = set()
    for t in tensors:
        if not isinstance(t.name, str):
            fail(f"tensor names must be strings, got {show(t.name)}")
        where = Named("tensor", t.name)
        if t.name in names:
            fail(f"duplicate tensor name {show(t.name)}")
        names.add(t.name)
        if t.producer is not None and t.producer not in units:
            fail(f"{where}: unknown producer unit {show(t.producer)}")
        if not units.issuperset(t.consumers):
            unknown = next(v for v in t.consumers if v not in units)
            fail(f"{where}: unknown consumer unit {show(unknown)}")
        if t.producer in t.consumers:
            fail(f"{where}: unit {t.producer!r} consumes its own output (a cycle)")
        if t.dtype not in PRICED_DTYPE_NBYTES:
            fail(f"{where}: unknown dtype {show(t.dtype)}; known: {', '.join(PRICED_DTYPE_NBYTES)}")
        if not isinstance(t.output, bool):
            fail(f"{where}: output must be true or false, got {show(t.output)}")
        if not all(type(d) is int and 0 <= d < MAX_NBYTES for d in t.shape) and not all(
            _is_count(d) for d in t.shape
        ):
            fail(f"{where}: shape {show(list(t.shape))} must be integers from 0 to 2**63 - 1")
        if 0 not in t.shape:
            nbytes = PRICED_DTYPE_NBYTES[t.dtype]
            for d in t.shape:
                nbytes *= d
                if nbytes >= MAX_NBYTES:
                    fail(f"{where}: shape {show(list(t.shape))} holds 2**63 bytes or more")
    if BAD_TEXT.search("".join(names)):
        bad = next(n for n in names if BAD_TEXT.search(n))
        fail(f"tensor {show(bad)}: the name holds a control character or a lone surrogate")


def _is_count(value: Any) -> bool:
    """A non-negative integer below MAX_NBYTES (numpy integers too, but not booleans)."""
    if type(value) is int:  # the common case, without the abstract-class check
        return 0 <= value < MAX_NBYTES
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    number: Any = value
    return bool(0 <= number < MAX_NBYTES)


def _check_totals(problem: ProblemData, compute: float, fail: Callable[[str], NoReturn]) -> None:
    """Refuse a problem where some plan could cost more than :data:`MAX_TOTAL`.

    The bound adds each unit's dearest choice, and for each tensor the dearest transfer and
    conversion once per destination it could need (distinct consumers plus the host for a
    graph output, at most one per other device or format). Prices are already each at most
    ``MAX_TOTAL`` and byte counts below ``MAX_NBYTES``, so every product here is finite.
    """
    devices = sorted({c.device for u in problem.units for c in u.choices} | {problem.host})
    per_byte, per_byte_field, fixed = 0.0, "transfer.per_byte", 0.0
    for src in devices:
        for dst in devices:
            link = problem.link(src, dst)
            if src != dst and link.per_byte > per_byte:
                per_byte = link.per_byte
                if (src, dst) in problem.links:
                    per_byte_field = f"link {src}->{dst} per_byte"
            if src != dst:
                fixed = max(fixed, link.fixed)
    kept = [t for t in problem.tensors if t.producer is not None or problem.boundaries]
    formats = {activation_format(t) for t in {c.type for u in problem.units for c in u.choices}}
    formats |= {activation_format(type_of_dtype(t.dtype)) for t in kept}
    # Per kept tensor: destinations, elements, bytes per element (one pass, then numpy).
    rows = np.array(
        [(len(set(t.consumers)) + (t.output and problem.boundaries), t.elements,
          PRICED_DTYPE_NBYTES[t.dtype]) for t in kept],
        dtype=np.float64,
    ).reshape(-1, 3)  # fmt: skip
    destinations, elements = rows[:, 0], rows[:, 1]
    quant = problem.quant_per_element
    transfer_total = quant_total = 0.0
    if len(devices) > 1:
        one = np.where(destinations > 0, per_byte * elements * rows[:, 2] + fixed, 0.0)
        if np.any(one > MAX_TOTAL):
            k = int(np.argmax(one > MAX_TOTAL))
            nbytes = kept[k].elements * PRICED_DTYPE_NBYTES[kept[k].dtype]
            fail(f"{Named('tensor', kept[k].name)}: one transfer of its {nbytes} bytes may cost"
                 f" {one[k]:.3g} ({per_byte_field} = {per_byte:g}), more than the {MAX_TOTAL:g}"
                 " any total may reach")  # fmt: skip
        transfer_total = float(np.minimum(destinations, len(devices) - 1) @ one)
    if len(formats) > 1:
        one = np.where(destinations > 0, quant * elements, 0.0)
        if np.any(one > MAX_TOTAL):
            t = kept[int(np.argmax(one > MAX_TOTAL))]
            fail(f"{Named('tensor', t.name)}: one conversion of its {t.elements} elements may"
                 f" cost {quant * t.elements:.3g} (quant.per_element = {quant:g}), more than the"
                 f" {MAX_TOTAL:g} any total may reach")  # fmt: skip
        quant_total = float(np.minimum(destinations, len(formats) - 1) @ one)
    total = compute + transfer_total + quant_total
    if total > MAX_TOTAL:
        parts = {"the units' costs": compute, "the transfer prices": transfer_total,
                 "quant.per_element": quant_total}  # fmt: skip
        fail(f"a plan may cost up to {total:.3g} (compute {compute:.3g}, transfer "
             f"{transfer_total:.3g}, quant {quant_total:.3g}), more than the {MAX_TOTAL:g} "
             f"any total may reach; scale down {max(parts, key=parts.__getitem__)}")  # fmt: skip


def topological_order(problem: ProblemData, fail: Callable[[str], NoReturn]) -> list[int]:
    """Unit indices in an order where producers come first (networkx's topological sort).

    Deterministic: the order depends only on the order of units and tensors in the problem.
    """
    if all(t.producer is None for t in problem.tensors):  # nothing to order (contest files)
        return list(range(len(problem.units)))
    pos = {u.name: i for i, u in enumerate(problem.units)}
    G = nx.DiGraph()
    G.add_nodes_from(range(len(problem.units)))
    G.add_edges_from((pos[t.producer], pos[v]) for t in problem.tensors
                     if t.producer is not None for v in t.consumers)  # fmt: skip
    try:
        return list(nx.topological_sort(G))
    except nx.NetworkXUnfeasible:
        stuck = min(u for u, _ in nx.find_cycle(G))
        fail(f"cycle among units through unit {show(problem.units[stuck].name)}")
