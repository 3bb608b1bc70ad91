"""Two cheap baselines: ``first-fit`` keeps the initial plan, ``greedy`` places units in order."""

from __future__ import annotations

import time

import numpy as np

from tacopt.partitioner.memory import first_overflow
from tacopt.partitioner.plan import NoPlanError, Plan, plan_from_choices
from tacopt.partitioner.problem import PickProblem, ProblemIndex, index_problem


def pick_first_fit(problem: PickProblem) -> Plan:
    """The initial plan as it is (each unit's ``initial`` choice); status HEURISTIC.

    Raises :class:`NoPlanError` (status UNKNOWN) when that plan overflows a capacity.

    Examples
    --------
    >>> from tacopt.partitioner.problem.synthetic import layered_dag_problem
    >>> p = layered_dag_problem(5, seed=0)
    >>> [c.label for c in pick_first_fit(p).assignment.values()] == [
    ...     u.choices[u.initial].label for u in p.units]
    True
    """
    started = time.perf_counter()
    index = index_problem(problem)
    overflow = first_overflow(index, index.initial) if index.has_memory else None
    if overflow is not None:
        raise NoPlanError(f"first-fit picker: the initial plan does not fit: {overflow}")
    return plan_from_choices(
        problem, index, index.initial, picker="first-fit", status="HEURISTIC", started=started
    )


def pick_greedy(problem: PickProblem) -> Plan:
    """Place units in topological order, each on its cheapest choice given what is placed.

    A unit's price for a choice is its compute cost, plus moving and converting each input to
    it (nothing if an earlier consumer already brought the tensor to that device or format),
    plus sending its graph outputs back to the host, plus its pairwise costs with units already
    placed. With capacities, a choice that would make a device overflow at some step (given
    what is placed) is skipped. Status HEURISTIC.

    Raises
    ------
    NoPlanError
        With status UNKNOWN when every choice of some unit would overflow.

    Examples
    --------
    >>> from tacopt.partitioner.problem.synthetic import layered_dag_problem
    >>> p = layered_dag_problem(30, seed=2)
    >>> pick_greedy(p).objective <= pick_first_fit(p).objective
    True
    """
    started = time.perf_counter()
    index = index_problem(problem)
    chosen = greedy_choices(index)
    return plan_from_choices(
        problem, index, chosen, picker="greedy", status="HEURISTIC", started=started
    )


def greedy_choices(index: ProblemIndex) -> np.ndarray:
    """The greedy assignment as global choice indices (also the exact picker's warm start).

    Raises :class:`NoPlanError` when every choice of some unit would overflow a capacity.
    """
    inputs = _group(index.arc_unit, index.arc_tensor, index.n_units)
    has_unit = index.src_unit >= 0
    outputs = _group(index.src_unit[has_unit], np.flatnonzero(has_unit), index.n_units)
    dev = index.choice_dev.tolist()
    fmt = index.choice_fmt.tolist()
    cost = index.choice_cost.tolist()
    start = index.choice_start.tolist()
    src_dev = index.src_dev.tolist()
    src_fmt = index.src_fmt.tolist()
    src_unit = index.src_unit.tolist()
    to_host = index.to_host.tolist()
    host_fmt = index.host_fmt.tolist()
    n_dev = len(index.devices)
    # Price of moving tensor t from device a to b is per_byte[a, b] * nbytes[t] + fixed[a, b].
    per_byte = index.link_per_byte.tolist()
    fixed = index.link_fixed.tolist()
    nbytes = index.nbytes.tolist()
    quant = (index.quant_per_element * index.elements).tolist()
    delivered: set[int] = set()  # t * n_dev + device, and ~(t * n_fmt + format)
    n_fmt = len(index.formats)
    chosen = list(index.initial.tolist())
    pairs = _Pairs(index, chosen)
    memory = _Memory(index, inputs, outputs) if index.has_memory else None
    for u in index.order.tolist():
        best, best_k = float("inf"), -1
        for k in range(start[u], start[u + 1]):
            if memory is not None and not memory.fits(u, k):
                continue
            price = cost[k] + pairs.price(u, k)
            d, f = dev[k], fmt[k]
            for t in inputs[u]:
                s_dev = src_dev[t] if src_unit[t] < 0 else dev[chosen[src_unit[t]]]
                s_fmt = src_fmt[t] if src_unit[t] < 0 else fmt[chosen[src_unit[t]]]
                if d != s_dev and t * n_dev + d not in delivered:
                    price += per_byte[s_dev][d] * nbytes[t] + fixed[s_dev][d]
                if f != s_fmt and ~(t * n_fmt + f) not in delivered:
                    price += quant[t]
            for t in outputs[u]:
                if to_host[t]:
                    h = index.host_dev
                    if d != h:
                        price += per_byte[d][h] * nbytes[t] + fixed[d][h]
                    if f != host_fmt[t]:
                        price += quant[t]
            if price < best or best_k < 0:
                best, best_k = price, k
        if best_k < 0:
            raise NoPlanError(f"greedy picker: every choice of unit {index.unit_names[u]!r} "
                              "overflows a device's capacity", "UNKNOWN")  # fmt: skip
        chosen[u] = best_k
        pairs.placed[u] = True
        if memory is not None:
            memory.place(u, best_k)
        for t in inputs[u]:
            delivered.add(t * n_dev + dev[best_k])
            delivered.add(~(t * n_fmt + fmt[best_k]))
    return np.array(chosen, dtype=np.int64)


class _Pairs:
    """Pairwise costs of a unit's choices against the units already placed."""

    def __init__(self, index: ProblemIndex, chosen: list[int]) -> None:
        self.placed = [False] * index.n_units
        self.chosen = chosen
        self.start = index.choice_start.tolist()
        self.cost = index.pair_cost.tolist()
        self.mine: list[list[tuple[int, int, bool]]] = [[] for _ in range(index.n_units)]
        for p, (a, b) in enumerate(zip(index.pair_a.tolist(), index.pair_b.tolist())):
            self.mine[a].append((p, b, True))
            self.mine[b].append((p, a, False))
        self.offset = index.pair_offset.tolist()
        self.n_b = np.diff(index.choice_start)[index.pair_b].tolist()

    def price(self, u: int, k: int) -> float:
        total = 0.0
        for p, other, is_a in self.mine[u]:
            if self.placed[other]:
                i = k - self.start[u]
                j = self.chosen[other] - self.start[other]
                i, j = (i, j) if is_a else (j, i)
                total += self.cost[self.offset[p] + i * self.n_b[p] + j]
        return total


class _Memory:
    """Bytes held per device and step by the units placed so far."""

    def __init__(self, index: ProblemIndex, inputs: list[list[int]], outputs: list[list[int]]):
        self.index = index
        self.inputs, self.outputs = inputs, outputs
        self.n_steps = max(index.n_steps, index.n_units, 1)
        self.usage = np.zeros((len(index.devices), self.n_steps))
        self.on: set[tuple[int, int]] = set()  # (tensor, device) pairs already counted
        for t in np.flatnonzero(index.src_unit < 0).tolist():  # graph inputs: on the host
            for d, lo, hi, nbytes in self._tensor(t, index.host_dev):
                self.usage[d, lo:hi] += nbytes
            self.on.add((t, index.host_dev))

    def _tensor(self, t: int, d: int) -> list[tuple[int, int, int, float]]:
        ix = self.index
        return [(d, int(ix.live_start[t]), int(ix.live_end[t]) + 1, float(ix.nbytes[t]))]

    def _footprint(self, u: int, k: int) -> list[tuple[int, int]]:
        """The (tensor, device) pairs choice ``k`` of ``u`` adds."""
        ix = self.index
        d = int(ix.choice_dev[k])
        new = [(t, d) for t in self.inputs[u] if (t, d) not in self.on]
        new += [(t, d) for t in self.outputs[u]]
        new += [(t, ix.host_dev) for t in self.outputs[u] if ix.to_host[t] and d != ix.host_dev]
        return list(dict.fromkeys(new))

    def _spans(self, u: int, k: int) -> list[tuple[int, int, int, float]]:
        """(device, first step, end step, bytes) of everything choice ``k`` of ``u`` adds."""
        ix = self.index
        if ix.hold_start is not None and ix.hold_end is not None:
            lo, hi = int(ix.hold_start[u]), int(ix.hold_end[u])
        else:
            lo, hi = 0, self.n_steps
        spans = [(int(ix.choice_dev[k]), lo, hi, float(ix.choice_memory[k]))] if lo < hi else []
        for t, d in self._footprint(u, k):
            spans += self._tensor(t, d)
        return spans

    def fits(self, u: int, k: int) -> bool:
        by_device: dict[int, list[tuple[int, int, int, float]]] = {}
        for span in self._spans(u, k):
            if np.isfinite(self.index.capacity[span[0]]) and span[3]:
                by_device.setdefault(span[0], []).append(span)
        for d, spans in by_device.items():  # only the steps the choice touches
            lo, hi = min(s[1] for s in spans), max(s[2] for s in spans)
            trial = self.usage[d, lo:hi].copy()
            for _, a, b, nbytes in spans:
                trial[a - lo : b - lo] += nbytes
            if trial.max(initial=0.0) > self.index.capacity[d]:
                return False
        return True

    def place(self, u: int, k: int) -> None:
        for d, lo, hi, nbytes in self._spans(u, k):
            self.usage[d, lo:hi] += nbytes
        self.on.update(self._footprint(u, k))


def _group(keys: np.ndarray, values: np.ndarray, n: int) -> list[list[int]]:
    """``values`` grouped by ``keys`` in ``range(n)``, keeping their order."""
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(n + 1))
    flat = values[order].tolist()
    return [flat[bounds[i] : bounds[i + 1]] for i in range(n)]
