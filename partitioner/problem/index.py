"""A pick problem as flat numpy arrays (:class:`ProblemIndex`), shared by the pickers and by
``evaluate`` so that 50,000-unit problems stay fast."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from tacopt.partitioner.errors import ProblemError
from tacopt.partitioner.problem.checks import pairwise_entries, topological_order
from tacopt.partitioner.problem.records import (
    PRICED_DTYPE_NBYTES,
    ProblemData,
    activation_format,
    type_of_dtype,
)


@dataclass(frozen=True, slots=True)
class ProblemIndex:
    """A problem as flat arrays. Choices are numbered globally, unit by unit.

    Only tensors that can cost something are kept: those with a producer unit, plus graph inputs
    when boundaries count. ``arc_*`` lists each distinct (tensor, consumer unit) pair once;
    ``src_unit`` is -1 for a graph input, whose device and format are then ``src_dev`` and
    ``src_fmt``. ``to_host`` marks graph outputs that must reach the host (boundaries only).

    Memory: unit ``u`` runs at step ``step[u]`` (its place in ``order``); tensor ``t`` is live
    from ``live_start[t]`` to ``live_end[t]`` (inclusive) on every device it is on.
    ``capacity[d]`` is inf for an unlimited device. Pairwise costs: pair ``p`` between units
    ``pair_a[p]`` and ``pair_b[p]`` costs ``pair_cost[pair_offset[p] + i * n_b + j]`` for their
    local choices ``i`` and ``j`` (``n_b`` the choice count of ``pair_b[p]``).
    """

    unit_names: tuple[str, ...]
    devices: tuple[str, ...]
    formats: tuple[str, ...]
    choice_start: np.ndarray  # [n_units + 1]
    choice_unit: np.ndarray  # [n_choices]
    choice_dev: np.ndarray
    choice_fmt: np.ndarray
    choice_cost: np.ndarray
    initial: np.ndarray  # [n_units] global choice index of each unit's initial choice
    order: np.ndarray  # [n_units] a topological order of units
    tensor_names: tuple[str, ...]
    src_unit: np.ndarray  # [n_tensors]
    src_dev: np.ndarray
    src_fmt: np.ndarray
    nbytes: np.ndarray
    elements: np.ndarray
    to_host: np.ndarray
    host_dev: int
    host_fmt: np.ndarray  # [n_tensors] the format the tensor has at the graph boundary
    arc_tensor: np.ndarray  # [n_arcs], sorted by tensor
    arc_unit: np.ndarray
    link_per_byte: np.ndarray  # [n_devices, n_devices]
    link_fixed: np.ndarray
    quant_per_element: float
    choice_memory: np.ndarray  # [n_choices] resident bytes
    capacity: np.ndarray  # [n_devices] bytes, inf when unlimited
    step: np.ndarray  # [n_units]
    live_start: np.ndarray  # [n_tensors]
    live_end: np.ndarray
    pair_a: np.ndarray  # [n_pairs]
    pair_b: np.ndarray
    pair_offset: np.ndarray
    pair_cost: np.ndarray  # flat
    # Memory intervals: unit u holds its choice's memory on steps [hold_start[u], hold_end[u]).
    hold_start: np.ndarray | None = None  # None: every unit holds it for the whole run
    hold_end: np.ndarray | None = None
    n_steps: int = 0  # steps memory is counted at: max(n_units, the last interval's end)
    # Exact integer costs (int64) when every choice cost and pairwise entry is an int and no
    # tensor can cost anything (IOPDDL instances): evaluate then sums them exactly.
    choice_cost_int: np.ndarray | None = None
    pair_cost_int: np.ndarray | None = None

    @property
    def integral(self) -> bool:
        """Whether the objective is summed exactly in integers."""
        return self.choice_cost_int is not None

    @property
    def has_memory(self) -> bool:
        """Whether some device has a capacity."""
        return bool(np.isfinite(self.capacity).any())

    @property
    def has_pairwise(self) -> bool:
        """Whether the problem has pairwise costs."""
        return len(self.pair_a) > 0

    @property
    def n_units(self) -> int:
        return len(self.unit_names)

    def transfer_cost(
        self, src: np.ndarray | int, dst: np.ndarray | int, tensor: np.ndarray | int
    ) -> np.ndarray:
        """Cost of sending ``tensor`` from device ``src`` to ``dst`` (0 where they are equal)."""
        cost = self.link_per_byte[src, dst] * self.nbytes[tensor] + self.link_fixed[src, dst]
        return np.where(src == dst, 0.0, cost)

    def quant_cost(
        self, src: np.ndarray | int, dst: np.ndarray | int, tensor: np.ndarray | int
    ) -> np.ndarray:
        """Cost of converting ``tensor`` from format ``src`` to ``dst`` (0 where equal)."""
        return np.where(src == dst, 0.0, self.quant_per_element * self.elements[tensor])


def index_problem(problem: ProblemData) -> ProblemIndex:
    """Flatten a validated problem into a :class:`ProblemIndex`.

    Examples
    --------
    >>> from tacopt.partitioner.problem import Choice, Link, PickProblem, Unit
    >>> p = PickProblem((Unit("a", (Choice("GPU", "FLOAT", 1.0), Choice("CPU", "HYBRID", 2.0))),),
    ...                 (), Link(5.0, 10.0), 2.0)
    >>> ix = index_problem(p)
    >>> ix.devices, ix.formats, ix.choice_dev.tolist()
    (('CPU', 'GPU'), ('FLOAT',), [1, 0])
    """
    units = problem.units
    flat = [c for u in units for c in u.choices]
    dtypes = {t.dtype for t in problem.tensors}
    dtype_fmt = {dt: activation_format(type_of_dtype(dt)) for dt in dtypes}
    # Per distinct device and type (a contest file has 200,000 choices on one of each).
    choice_devices = [c.device for c in flat]
    choice_types = [c.type for c in flat]
    type_fmt = {t: activation_format(t) for t in set(choice_types)}
    devices = sorted(set(choice_devices) | {problem.host})
    formats = sorted(set(type_fmt.values()) | set(dtype_fmt.values()))
    dev_of = {d: i for i, d in enumerate(devices)}
    fmt_of = {f: i for i, f in enumerate(formats)}
    pos = {u.name: i for i, u in enumerate(units)}
    counts = np.fromiter((len(u.choices) for u in units), dtype=np.int64, count=len(units))
    choice_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    initial = choice_start[:-1] + np.fromiter((u.initial for u in units), np.int64, len(units))

    kept = [t for t in problem.tensors if t.producer is not None or problem.boundaries]
    src_unit = np.array([-1 if t.producer is None else pos[t.producer] for t in kept], np.int64)
    host_fmt = np.array([fmt_of[dtype_fmt[t.dtype]] for t in kept], np.int64)
    elements = np.array([t.elements for t in kept], dtype=np.float64)
    nbytes = elements * np.array([PRICED_DTYPE_NBYTES[t.dtype] for t in kept], dtype=np.float64)
    arc_t = [i for i, t in enumerate(kept) for _ in t.consumers]
    arc_v = [pos[v] for t in kept for v in t.consumers]
    arc_key = np.unique(np.array(arc_t, np.int64) * max(len(units), 1) + np.array(arc_v, np.int64))
    arc_tensor, arc_unit = np.divmod(arc_key, max(len(units), 1))

    n_dev = len(devices)
    per_byte = np.full((n_dev, n_dev), float(problem.transfer.per_byte))
    fixed = np.full((n_dev, n_dev), float(problem.transfer.fixed))
    for (src, dst), link in problem.links.items():
        if src in dev_of and dst in dev_of:
            per_byte[dev_of[src], dev_of[dst]] = link.per_byte
            fixed[dev_of[src], dev_of[dst]] = link.fixed
    # Staying on a device is free; zeros here keep even unvalidated self-links out of products.
    np.fill_diagonal(per_byte, 0.0)
    np.fill_diagonal(fixed, 0.0)

    arc_src = src_unit[arc_tensor]
    order = _unit_order(problem, arc_src, arc_unit)
    step = np.empty(len(units), np.int64)
    step[order] = np.arange(len(units))
    # A tensor lives from its producer's step (0 for a graph input) to its last reader's step,
    # to the end for a graph output that goes back to the host.
    live_start = np.where(src_unit >= 0, step[np.maximum(src_unit, 0)], 0)
    live_end = live_start.copy()
    np.maximum.at(live_end, arc_tensor, step[arc_unit])
    to_host = np.array([t.output and problem.boundaries for t in kept], dtype=bool)
    live_end[to_host] = max(len(units) - 1, 0)
    capacity = np.full(n_dev, np.inf)
    for device, limit in problem.capacity.items():
        if device in dev_of:
            capacity[dev_of[device]] = float(limit)
    pair_a = np.array([pos[p.a] for p in problem.pairwise], np.int64)
    pair_b = np.array([pos[p.b] for p in problem.pairwise], np.int64)
    sizes = [len(p.cost) * (len(p.cost[0]) if p.cost else 0) for p in problem.pairwise]
    pair_offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    flat_pairs = pairwise_entries(problem.pairwise)
    costs = [c.cost for c in flat]
    integral = not kept and set(map(type, costs)) <= {int} and set(map(type, flat_pairs)) <= {int}
    # Integer entries (a contest file's millions) are read once, as int64; below 2^63 all.
    pair_cost_int = np.array(flat_pairs, dtype=np.int64) if integral else None
    pair_cost = (np.array(flat_pairs, dtype=np.float64) if pair_cost_int is None
                 else pair_cost_int.astype(np.float64))  # fmt: skip
    hold_start = hold_end = None
    n_steps = len(units)
    if any(u.interval is not None for u in units):
        whole = (0, -1)  # the end is filled in once the last step is known
        spans = np.array([u.interval or whole for u in units], dtype=np.int64).reshape(-1, 2)
        spans, n_steps = compress_steps(spans, len(units))
        hold_start, hold_end = spans[:, 0].copy(), np.where(spans[:, 1] < 0, n_steps, spans[:, 1])
        hold_end = np.where(np.array([u.interval is None for u in units]), n_steps, hold_end)

    return ProblemIndex(
        unit_names=tuple(u.name for u in units),
        devices=tuple(devices),
        formats=tuple(formats),
        choice_start=choice_start,
        choice_unit=np.repeat(np.arange(len(units), dtype=np.int64), counts),
        choice_dev=np.fromiter(map(dev_of.__getitem__, choice_devices), np.int64, len(flat)),
        choice_fmt=np.fromiter((fmt_of[type_fmt[t]] for t in choice_types), np.int64, len(flat)),
        choice_cost=np.array(costs, dtype=np.float64),
        initial=initial,
        order=order,
        tensor_names=tuple(t.name for t in kept),
        src_unit=src_unit,
        src_dev=np.where(src_unit < 0, dev_of[problem.host], -1),
        src_fmt=np.where(src_unit < 0, host_fmt, -1),
        nbytes=nbytes,
        elements=elements,
        to_host=to_host,
        host_dev=dev_of[problem.host],
        host_fmt=host_fmt,
        arc_tensor=arc_tensor,
        arc_unit=arc_unit,
        link_per_byte=per_byte,
        link_fixed=fixed,
        quant_per_element=float(problem.quant_per_element),
        choice_memory=np.array([c.memory for c in flat], dtype=np.float64),
        capacity=capacity,
        step=step,
        live_start=live_start,
        live_end=live_end,
        pair_a=pair_a,
        pair_b=pair_b,
        pair_offset=pair_offset,
        pair_cost=pair_cost,
        hold_start=hold_start,
        hold_end=hold_end,
        n_steps=n_steps,
        choice_cost_int=np.array(costs, dtype=np.int64) if integral else None,
        pair_cost_int=pair_cost_int,
    )


def compress_steps(spans: np.ndarray, n_units: int) -> tuple[np.ndarray, int]:
    """Memory intervals ``spans`` (``[start, end)`` rows; an end of -1: to the end of the run)
    on a timeline of their distinct endpoints, and its number of steps.

    Steps ``0 .. n_units`` (where tensors live, one unit a step) stay as they are; past them,
    the steps between two consecutive endpoints hold the same intervals, so each such run
    becomes one step. Every step's set of intervals, hence every peak, is kept, and the
    timeline (which the pickers and checkers allocate per device) is bounded by the problem's
    size, not by its numbers: ``[0, 10**15)`` costs what ``[0, 2)`` costs.

    >>> spans, n = compress_steps(np.array([[0, 10**15], [10**15, 2**62], [5, -1]]), 2)
    >>> spans.tolist(), n
    ([[0, 4], [4, 5], [3, -1]], 5)
    """
    given = spans[spans >= 0]
    points = np.union1d(np.arange(n_units + 1, dtype=np.int64), given)
    ranked = np.searchsorted(points, np.maximum(spans, 0)).astype(np.int64)
    out = np.where(spans < 0, spans, ranked)
    return out, max(n_units, int(out[:, 1].max(initial=0)))


def _unit_order(problem: ProblemData, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
    """A topological order of units: the listed one when it is, else Kahn's."""
    produced = tail >= 0
    if np.all(tail[produced] < head[produced]):
        return np.arange(len(problem.units), dtype=np.int64)

    def fail(msg: str) -> NoReturn:
        raise ProblemError(msg)

    return np.array(topological_order(problem, fail), dtype=np.int64)
