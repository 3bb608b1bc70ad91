"""Memory a plan needs on each device, step by step (the capacity side of the objective).

One model, at two scales. A step runs one unit; a weight (a constant tensor) is held by the
device that reads it for the whole run; an activation tensor occupies its bytes on every device it
is on from its producer's step to its last reader's step. :func:`graph_peak_memory` applies it to
a partitioned graph with each OP a step: what ``tacopt partition`` reports, the same for the same
plan at ``subgraph`` and ``op`` granularity (an all-CPU MobileNetV2: 19,968,392 B either way).
The pick problem applies it with each UNIT a step (below, what pickers constrain): at ``op``
granularity that is the same count (up to the order of independent units, and a weight read by
two units on one device counted twice); at ``subgraph`` granularity a unit's internal activations
are not tensors of the problem, so each choice's ``memory`` adds its view's peak of internal
activations (:func:`internal_activation_peak`) to its weights, held for the whole run: an upper
bound, so that a plan the pickers find within the capacities fits.

A choice holds its ``memory`` bytes on its device for the whole run. A tensor occupies its bytes
(shape x dtype size) on every device it is on -- its producer's device (the host for a graph
input) and each device it is copied to (its readers' devices, the host for a graph output) --
from its producer's step to its last reader's step (to the last step for a graph output), steps
being the units' places in the problem's execution order. XLA's auto-sharding form: at every
step, resident plus live bytes on a device must stay within its capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tacopt.partitioner.problem import ProblemIndex


@dataclass(frozen=True, slots=True)
class Overflow:
    """The first (device, step) where a plan holds more than the device's capacity."""

    device: str
    step: int
    unit: str | None  # the unit run at that step (None when steps are the problem's own)
    nbytes: float
    capacity: float

    def __str__(self) -> str:
        at = f" (unit {self.unit!r})" if self.unit is not None else ""
        return (f"device {self.device} holds {self.nbytes:.0f} bytes at step {self.step}"
                f"{at}, over its capacity of {self.capacity:.0f}")  # fmt: skip


def graph_peak_memory(H: Any, host: str = "CPU") -> dict[str, float]:
    """Peak bytes per device of a partitioned graph (ops tagged ``device``), each op a step.

    The peak of :func:`graph_usage`.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> H = make_graph("g", [Tensor(n, (1, 8), "float32") for n in "xyz"],
    ...     [Op("a", "RELU", ("x",), ("y",)), Op("b", "TANH", ("y",), ("z",))], ["x"], ["z"])
    >>> H.nodes["a"]["device"], H.nodes["b"]["device"] = "GPU", "CPU"
    >>> graph_peak_memory(H)  # CPU: x and y at step 0, y and z at step 1; GPU: x, y
    {'CPU': 64.0, 'GPU': 64.0}
    """
    devices, usage = graph_usage(H, host)
    peak = usage.max(axis=1)
    return {device: float(peak[i]) for i, device in enumerate(devices)}


def graph_usage(H: Any, host: str = "CPU") -> tuple[list[str], np.ndarray]:
    """Bytes held per device at each step of a partitioned graph, each op a step.

    Ops run in ``H``'s order. Each constant counts once on each device whose ops read it, for
    the whole run; each other tensor occupies its bytes on its producer's device (``host`` for
    a graph input) and on each reader's device (``host`` for a graph output), from its
    producer's step to its last reader's step (the last step for a graph output).

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> H = make_graph("one", [Tensor("x", (2, 4), "float32"), Tensor("y", (2, 4), "float32")],
    ...                [Op("a", "TANH", ("x",), ("y",))], ["x"], ["y"])
    >>> H.nodes["a"]["device"] = "GPU"
    >>> graph_usage(H)  # one step: the host and the GPU both hold x and y
    (['CPU', 'GPU'], array([[64.],
           [64.]]))
    """
    tensors = H.graph["tensors"]
    ops = [(H.nodes[n]["op"], H.nodes[n]["device"]) for n in H]
    n_steps = max(len(ops), 1)
    devices = sorted({d for _, d in ops} | {host})
    dev_of = {d: i for i, d in enumerate(devices)}

    def nbytes(name: str) -> float:
        return float(tensors[name].priced_nbytes)

    resident = np.zeros(len(devices))
    weights: set[tuple[str, int]] = set()
    start: dict[str, int] = {name: 0 for name in H.graph["inputs"]}
    end: dict[str, int] = {}
    where: dict[str, set[int]] = {name: {dev_of[host]} for name in H.graph["inputs"]}
    for step, (op, device) in enumerate(ops):
        d = dev_of[device]
        for name in op.inputs:
            if name is None:
                continue
            if tensors[name].is_constant:
                if (name, d) not in weights:
                    weights.add((name, d))
                    resident[d] += nbytes(name)
                continue
            end[name] = step
            where.setdefault(name, set()).add(d)
        for name in op.outputs:
            start[name] = step
            end.setdefault(name, step)
            where.setdefault(name, set()).add(d)
    for name in H.graph["outputs"]:
        end[name] = n_steps - 1
        where.setdefault(name, set()).add(dev_of[host])
    delta = np.zeros((len(devices), n_steps + 1))
    for name, on in where.items():
        if name not in start:
            continue  # a constant graph output or an unread input without a step
        for d in on:
            delta[d, start[name]] += nbytes(name)
            delta[d, end.get(name, start[name]) + 1] -= nbytes(name)
    return devices, np.cumsum(delta, axis=1)[:, :n_steps] + resident[:, None]


def internal_activation_peak(S: Any) -> float:
    """Peak bytes of the activations a graph makes and reads itself (not its outputs), each op a
    step in ``S``'s order: what a unit holds at its own step beyond its boundary tensors.

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> S = make_graph("s", [Tensor(n, (1, 8), "float32") for n in "xyz"],
    ...     [Op("a", "RELU", ("x",), ("y",)), Op("b", "TANH", ("y",), ("z",))], ["x"], ["z"])
    >>> internal_activation_peak(S)  # y, 32 bytes, between a and b
    32.0
    """
    tensors = S.graph["tensors"]
    outputs = set(S.graph["outputs"])
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for step, n in enumerate(S):
        op = S.nodes[n]["op"]
        for name in op.inputs:
            if name in start:
                end[name] = step
        for name in op.outputs:
            if name not in outputs and not tensors[name].is_constant:
                start[name] = end[name] = step
    n_steps = max(S.number_of_nodes(), 1)
    delta = np.zeros(n_steps + 1)
    for name, first in start.items():
        size = tensors[name].priced_nbytes
        delta[first] += size
        delta[end[name] + 1] -= size
    return float(np.cumsum(delta)[:n_steps].max()) if start else 0.0


def usage_batch(index: ProblemIndex, chosen: np.ndarray) -> np.ndarray:
    """Bytes held per (row, device, step) for each row of ``chosen`` (``[m, n_units]``).

    Examples
    --------
    >>> from tacopt.partitioner.problem import Choice, Link, PickProblem, TensorEdge, Unit
    >>> cpu, gpu = Choice("CPU", "FLOAT", 1.0, memory=100), Choice("GPU", "FLOAT", 1.0)
    >>> p = PickProblem((Unit("a", (cpu, gpu)), Unit("b", (cpu,))),
    ...     (TensorEdge("t", "a", ("b",), (10,), "float32"),), Link(0.0, 0.0), 0.0)
    >>> from tacopt.partitioner.problem import index_problem
    >>> usage_batch(index_problem(p), np.array([[1, 2]]))[0].tolist()  # CPU, GPU by step
    [[140.0, 140.0], [40.0, 40.0]]
    """
    chosen = _rows(index, chosen)
    m, n_dev, n_steps = len(chosen), len(index.devices), max(index.n_steps, index.n_units, 1)
    rows = np.arange(m)
    dev = index.choice_dev[chosen]
    resident = np.zeros((m, n_dev))
    delta = np.zeros((m, n_dev, n_steps + 1))
    if index.hold_start is None:  # every choice holds its memory for the whole run
        np.add.at(resident, (np.repeat(rows, index.n_units), dev.ravel()),
                  index.choice_memory[chosen].ravel())  # fmt: skip
    else:  # over its unit's interval; an empty one (end <= start) holds nothing
        assert index.hold_start is not None and index.hold_end is not None
        held = index.hold_start < index.hold_end
        unit_rows = np.repeat(rows, int(held.sum()))
        nbytes = index.choice_memory[chosen[:, held]].ravel()
        d = dev[:, held].ravel()
        np.add.at(delta, (unit_rows, d, np.tile(index.hold_start[held], m)), nbytes)
        np.add.at(delta, (unit_rows, d, np.tile(index.hold_end[held], m)), -nbytes)
    n_tensors = len(index.src_unit)
    if n_tensors:
        # Where each tensor is: its source, its readers' devices, the host for an output.
        producer = np.where(index.src_unit >= 0, index.src_unit, index.n_units)
        src = np.concatenate([dev, np.full((m, 1), index.host_dev)], 1)[:, producer]
        out = np.flatnonzero(index.to_host)
        tensor = np.concatenate([np.arange(n_tensors), index.arc_tensor, out])
        where = np.concatenate(
            [src, dev[:, index.arc_unit], np.full((m, len(out)), index.host_dev)], 1
        )
        key = np.unique(((rows[:, None] * n_tensors + tensor) * n_dev + where).ravel())
        row, rest = np.divmod(key, n_tensors * n_dev)
        t, d = np.divmod(rest, n_dev)
        np.add.at(delta, (row, d, index.live_start[t]), index.nbytes[t])
        np.add.at(delta, (row, d, index.live_end[t] + 1), -index.nbytes[t])
    return np.cumsum(delta, axis=2)[:, :, :n_steps] + resident[:, :, None]


def _rows(index: ProblemIndex, chosen: np.ndarray) -> np.ndarray:
    """``chosen`` as ``[m, n_units]`` rows; a problem with no units has one empty row per row."""
    chosen = np.asarray(chosen, dtype=np.int64)
    if index.n_units == 0:  # reshape(-1, 0) cannot tell how many rows: a 1-D array is one row
        return chosen.reshape(chosen.shape[0] if chosen.ndim == 2 else 1, 0)
    return chosen.reshape(-1, index.n_units)


def peak_batch(index: ProblemIndex, chosen: np.ndarray) -> np.ndarray:
    """Peak bytes per (row, device) of each row of ``chosen``."""
    return usage_batch(index, chosen).max(axis=2)


def fits_batch(index: ProblemIndex, chosen: np.ndarray) -> np.ndarray:
    """Whether each row of ``chosen`` stays within every capacity."""
    if not index.has_memory:
        return np.ones(len(_rows(index, chosen)), dtype=bool)
    return np.all(peak_batch(index, chosen) <= index.capacity, axis=1)


def peak_memory(index: ProblemIndex, chosen: np.ndarray) -> dict[str, float]:
    """Peak bytes on each device for one assignment (global choice indices per unit)."""
    peak = peak_batch(index, chosen)[0]
    return {device: float(peak[d]) for d, device in enumerate(index.devices)}


def first_overflow(index: ProblemIndex, chosen: np.ndarray) -> Overflow | None:
    """The first (device, step) over capacity for one assignment, or None if it fits."""
    usage = usage_batch(index, chosen)[0]
    over = usage > index.capacity[:, None]
    if not over.any():
        return None
    s, d = (int(v) for v in np.argwhere(over.T)[0])
    # A step is a unit's place in the order, unless the problem gives intervals of its own.
    unit = index.unit_names[int(index.order[s])] if s < index.n_units else None
    unit = None if index.hold_start is not None else unit
    return Overflow(index.devices[d], s, unit, float(usage[d, s]), float(index.capacity[d]))
