"""Memory a plan needs on each device, step by step (the capacity side of the objective).

A choice holds its ``memory`` bytes on its device for the whole run. A tensor occupies its bytes
(shape x dtype size) on every device it is on -- its producer's device (the host for a graph
input) and each device it is copied to (its readers' devices, the host for a graph output) --
from its producer's step to its last reader's step (to the last step for a graph output), steps
being the units' places in the problem's execution order. XLA's auto-sharding form: at every
step, resident plus live bytes on a device must stay within its capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

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
