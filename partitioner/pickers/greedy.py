"""Two cheap baselines: ``first-fit`` keeps the initial plan, ``greedy`` places units in order."""

from __future__ import annotations

import time

import numpy as np

from tacopt.partitioner.pickers.registry import register_picker
from tacopt.partitioner.plan import Plan, plan_from_choices
from tacopt.partitioner.problem import PickProblem, ProblemIndex, index_problem


def pick_first_fit(problem: PickProblem) -> Plan:
    """The initial plan as it is (each unit's ``initial`` choice); status HEURISTIC.

    Examples
    --------
    >>> from tacopt.benchmarks.synthetic import layered_dag_problem
    >>> p = layered_dag_problem(5, seed=0)
    >>> [c.label for c in pick_first_fit(p).assignment.values()] == [
    ...     u.choices[u.initial].label for u in p.units]
    True
    """
    started = time.perf_counter()
    index = index_problem(problem)
    return plan_from_choices(
        problem, index, index.initial, picker="first-fit", status="HEURISTIC", started=started
    )


def pick_greedy(problem: PickProblem) -> Plan:
    """Place units in topological order, each on its cheapest choice given what is placed.

    A unit's price for a choice is its compute cost, plus moving and converting each input to
    it (nothing if an earlier consumer already brought the tensor to that device or format),
    plus sending its graph outputs back to the host. Status HEURISTIC.

    Examples
    --------
    >>> from tacopt.benchmarks.synthetic import layered_dag_problem
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
    """The greedy assignment as global choice indices (also the exact picker's warm start)."""
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
    for u in index.order.tolist():
        best, best_k = float("inf"), start[u]
        for k in range(start[u], start[u + 1]):
            price = cost[k]
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
            if price < best:
                best, best_k = price, k
        chosen[u] = best_k
        for t in inputs[u]:
            delivered.add(t * n_dev + dev[best_k])
            delivered.add(~(t * n_fmt + fmt[best_k]))
    return np.array(chosen, dtype=np.int64)


def _group(keys: np.ndarray, values: np.ndarray, n: int) -> list[list[int]]:
    """``values`` grouped by ``keys`` in ``range(n)``, keeping their order."""
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(n + 1))
    flat = values[order].tolist()
    return [flat[bounds[i] : bounds[i + 1]] for i in range(n)]


register_picker("first-fit", pick_first_fit)
register_picker("greedy", pick_greedy)
