"""The two-choice picker: an s-t minimum cut, exact and polynomial.

When all units choose between the same two choices A and B (two devices, one type), a plan is
a cut: units on the source side run as A, on the sink side as B. Unit costs are terminal edges.
A tensor from ``p`` read on device B costs ``c(A->B)`` when ``p`` is on A and *any* consumer is
on B, charged once: a helper node ``h`` with ``p -c-> h`` and ``h -c-> v`` for every consumer
``v`` does that (and the mirror image, ``v -c-> g -c-> p``, for reads on A). Graph inputs
hang off the terminals; graph outputs add a terminal edge (or share the delivery when the
host is A or B); units with a single choice are merged into their terminal. Every capacity is
then one cost, never a sum, so they scale to ``scipy.sparse.csgraph.maximum_flow``'s int32.

Optimality. Costs with at most nine decimals (all of TAC's and the benchmarks') scale exactly,
and the minimum cut is the optimum. Otherwise capacities are rounded *down*: the max flow F is
then feasible for the true capacities, so ``constant + F / scale`` is a lower bound on every
plan (weak duality), and the plan, whose objective ``evaluate`` recomputes, is OPTIMAL when
within a relative 1e-9 of it and FEASIBLE with that bound otherwise.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from tacopt.partitioner.errors import PickerError
from tacopt.partitioner.plan import Plan, plan_from_choices, relative_gap
from tacopt.partitioner.problem import PickProblem, ProblemIndex, index_problem

_CAPACITY_LIMIT = 2**30  # scipy's max flow works in int32
_OPTIMAL_TOL = 1e-9  # relative; the tolerance at which an inexactly scaled cut is OPTIMAL


def mincut_scope(problem: PickProblem) -> str | None:
    """Why :func:`pick_mincut` cannot solve ``problem`` (None when it can), without solving it.

    >>> from tacopt.partitioner.problem.synthetic import layered_dag_problem
    >>> mincut_scope(layered_dag_problem(20, seed=0))  # doctest: +ELLIPSIS
    'mincut picker needs units that together use at most 2 choices on 2 devices in one type; ...'
    """
    return _scope(problem, index_problem(problem))


def _scope(problem: PickProblem, index: ProblemIndex) -> str | None:
    if index.has_memory or index.has_pairwise:
        return "mincut picker does not handle capacities or pairwise costs; use exact"
    devices = np.unique(index.choice_dev)
    counts = np.diff(index.choice_start)
    two = counts == 2
    same_device = (
        index.choice_dev[index.choice_start[:-1][two]]
        == index.choice_dev[index.choice_start[:-1][two] + 1]
    )
    if (
        len(devices) > 2
        or len(np.unique(index.choice_fmt)) > 1
        or (counts > 2).any()
        or (same_device.any())
    ):
        used = sorted({c.label for u in problem.units for c in u.choices})
        return (
            "mincut picker needs units that together use at most 2 choices on 2 devices in "
            f"one type; this problem uses: {', '.join(used)}"
        )
    return None


def pick_mincut(problem: PickProblem) -> Plan:
    """Exact plan for problems whose units use at most two choices, by minimum cut.

    Raises
    ------
    PickerError
        If the units together use more than two (device, type) choices, or two that differ
        in type rather than device, or the problem has capacities or pairwise costs (outside
        this picker's scope: a cut cannot hold a memory row).

    Examples
    --------
    >>> from tacopt.partitioner.problem.synthetic import two_choice_problem
    >>> plan = pick_mincut(two_choice_problem(50, seed=0))
    >>> plan.status
    'OPTIMAL'
    """
    started = time.perf_counter()
    index = index_problem(problem)
    reason = _scope(problem, index)
    if reason is not None:
        raise PickerError(reason)
    devices = np.unique(index.choice_dev)
    if len(devices) < 2:
        return plan_from_choices(
            problem, index, index.initial, picker="mincut", status="OPTIMAL", started=started
        )
    dev_a, dev_b = (int(d) for d in devices)
    tails, heads, caps, n_nodes = _network(index, dev_a, dev_b)
    # Units with one choice are part of a terminal: merging them keeps every capacity finite.
    merged = np.arange(n_nodes)
    merged[2 + np.flatnonzero(_unit_cost(index, dev_b) == np.inf)] = 0
    merged[2 + np.flatnonzero(_unit_cost(index, dev_a) == np.inf)] = 1
    tails, heads = merged[tails], merged[heads]
    always = (tails == 0) & (heads == 1)  # cut by every plan
    keep = (tails != heads) & ~always & (heads != 0) & (tails != 1)
    offset = math.fsum(caps[always].tolist()) + math.fsum(_unit_low(index).tolist())
    # Parallel edges are summed first, so that each scaled capacity is one int32.
    graph = sp.csr_matrix((caps[keep], (tails[keep], heads[keep])), shape=(n_nodes, n_nodes))
    graph.sum_duplicates()
    scale, exact = _capacity_scale(graph.data)
    # Floor: every scaled cut is <= the true one, so the max flow F gives offset + F / scale
    # as a lower bound on any plan even when the scaling is not exact.
    scaled = np.round(graph.data * scale) if exact else np.floor(graph.data * scale)
    graph = sp.csr_matrix((scaled.astype(np.int32), graph.indices, graph.indptr), graph.shape)
    # csgraph loads scipy.sparse.linalg: imported here so that `tacopt` starts without it
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    flow = maximum_flow(graph, 0, 1).flow
    residual = (graph - flow).tocsr()
    residual.data[residual.data < 0] = 0
    residual.eliminate_zeros()
    source_side = np.zeros(n_nodes, dtype=bool)
    source_side[breadth_first_order(residual, 0, return_predecessors=False)] = True
    flow_value = int(flow[0].sum(dtype=np.int64))  # int64: the total may not fit in int32

    on_a = source_side[merged[2 : 2 + index.n_units]]
    choice_a = _choice_on(index, dev_a)
    choice_b = _choice_on(index, dev_b)
    chosen = np.where(on_a, choice_a, choice_b)
    plan = plan_from_choices(
        problem, index, chosen, picker="mincut", status="OPTIMAL", started=started,
        params={"scale": scale, "exact_scaling": exact},
    )  # fmt: skip
    # One type: conversions are the same for every plan (graph boundary formats only).
    bound = offset + plan.breakdown.quant + flow_value / scale
    # Exact scaling: the cut is a minimum of the true costs (up to float rounding of the sums).
    # Otherwise the floor bound decides; it is off by less than (cut edges) / scale.
    plan = dataclasses.replace(plan, params={**plan.params, "flow_bound": bound})
    if exact or plan.objective - bound <= _OPTIMAL_TOL * max(1.0, abs(plan.objective)):
        return plan
    return dataclasses.replace(
        plan, status="FEASIBLE", bound=bound, gap=relative_gap(plan.objective, bound)
    )


def _choice_on(index: ProblemIndex, device: int) -> np.ndarray:
    """Per unit: the global index of its choice on ``device``, or -1."""
    out = np.full(index.n_units, -1)
    on = np.flatnonzero(index.choice_dev == device)
    out[index.choice_unit[on]] = on
    return out


def _network(
    index: ProblemIndex, dev_a: int, dev_b: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Edges (tail, head, capacity) of the cut network; node 0 = source (A), 1 = sink (B)."""
    tails: list[np.ndarray] = []
    heads: list[np.ndarray] = []
    caps: list[np.ndarray] = []

    def edge(tail: np.ndarray | int, head: np.ndarray | int, cap: np.ndarray) -> None:
        t, h, c = np.broadcast_arrays(tail, head, cap)
        keep = c > 0
        tails.append(t[keep])
        heads.append(h[keep])
        caps.append(c[keep].astype(np.float64))

    # Unit u on A pays cost_A (edge u -> sink is cut), on B pays cost_B (source -> u is cut);
    # a missing choice costs infinity. Subtracting the smaller cost changes no cut.
    node = 2 + np.arange(index.n_units)
    cost_a = _unit_cost(index, dev_a)
    cost_b = _unit_cost(index, dev_b)
    low = np.minimum(cost_a, cost_b)
    edge(node, 1, cost_a - low)
    edge(0, node, cost_b - low)

    n_tensors = len(index.src_unit)
    has_unit = index.src_unit >= 0
    fixed = np.where(has_unit, -1, index.src_dev)
    host = index.host_dev
    idx = np.arange(n_tensors)
    readers = np.bincount(index.arc_tensor, minlength=n_tensors)
    to_a = index.to_host & (host == dev_a)
    to_b = index.to_host & (host == dev_b)
    to_other = index.to_host & (host != dev_a) & (host != dev_b)
    n_nodes = 2 + index.n_units

    # Reads on B: the tensor starts on A (its producer on A, or a fixed source not on B).
    cost = np.where(
        has_unit,
        index.transfer_cost(np.full(n_tensors, dev_a), dev_b, idx),
        index.transfer_cost(np.maximum(fixed, 0), dev_b, idx),
    )
    tail = np.where(has_unit, 2 + index.src_unit, 0)
    edge(tail[to_b & has_unit], 1, cost[to_b & has_unit])
    n_nodes = _fan_out(edge, index, ~to_b, readers, tail, cost, n_nodes, toward_b=True)

    # Reads on A: the tensor starts on B (its producer on B, or a fixed source not on A).
    cost = np.where(
        has_unit,
        index.transfer_cost(np.full(n_tensors, dev_b), dev_a, idx),
        index.transfer_cost(np.maximum(fixed, 0), dev_a, idx),
    )
    head = np.where(has_unit, 2 + index.src_unit, 1)
    edge(0, head[to_a & has_unit], cost[to_a & has_unit])
    n_nodes = _fan_out(edge, index, ~to_a, readers, head, cost, n_nodes, toward_b=False)

    # Graph outputs to a host that is neither A nor B: a unary cost on the producer.
    out = to_other & has_unit
    producer = 2 + index.src_unit[out]
    hosts = np.full(int(out.sum()), host)
    edge(producer, 1, index.transfer_cost(np.full(len(hosts), dev_a), hosts, idx[out]))
    edge(0, producer, index.transfer_cost(np.full(len(hosts), dev_b), hosts, idx[out]))
    return np.concatenate(tails), np.concatenate(heads), np.concatenate(caps), n_nodes


def _fan_out(
    edge: Callable[[np.ndarray | int, np.ndarray | int, np.ndarray], None],
    index: ProblemIndex,
    active: np.ndarray,
    readers: np.ndarray,
    end: np.ndarray,
    cost: np.ndarray,
    n_nodes: int,
    *,
    toward_b: bool,
) -> int:
    """Charge ``cost[t]`` once if any reader of ``t`` is on the far side; return node count.

    Toward B: ``end -c-> v`` for one reader, else ``end -c-> h -c-> v``. Toward A mirrored.
    """
    arc_t, arc_v = index.arc_tensor, 2 + index.arc_unit
    single = active & (readers == 1)
    many = active & (readers > 1)
    on_single = single[arc_t]
    if toward_b:
        edge(end[arc_t[on_single]], arc_v[on_single], cost[arc_t[on_single]])
    else:
        edge(arc_v[on_single], end[arc_t[on_single]], cost[arc_t[on_single]])
    helper = np.full(len(readers), -1)
    helper[many] = n_nodes + np.arange(int(many.sum()))
    on_many = many[arc_t]
    # The helper's fan-out edges need not be infinite: capacity ``c`` suffices, since a cut
    # through k >= 1 of them costs k * c >= c, what moving the helper across would cost.
    # Finite capacities keep the int32 scaling fine.
    fan = cost[arc_t[on_many]]
    if toward_b:
        edge(end[many], helper[many], cost[many])
        edge(helper[arc_t[on_many]], arc_v[on_many], fan)
    else:
        edge(helper[many], end[many], cost[many])
        edge(arc_v[on_many], helper[arc_t[on_many]], fan)
    return n_nodes + int(many.sum())


def _unit_cost(index: ProblemIndex, device: int) -> np.ndarray:
    cost = np.full(index.n_units, np.inf)
    on = index.choice_dev == device
    cost[index.choice_unit[on]] = index.choice_cost[on]
    return cost


def _unit_low(index: ProblemIndex) -> np.ndarray:
    """Per unit: the cost it pays whatever side it is on (the cheaper of its two choices)."""
    return np.minimum(_unit_cost(index, int(index.choice_dev.min())),
                      _unit_cost(index, int(index.choice_dev.max())))  # fmt: skip


def _capacity_scale(caps: np.ndarray) -> tuple[float, bool]:
    """A power of ten for int32 capacities, and whether it makes every capacity an integer.

    The smallest power of ten up to ``1e9`` that leaves every scaled capacity within 1e-6 of
    an integer is exact (decimal costs); otherwise the largest one that fits.
    """
    top = float(caps.max()) if len(caps) else 1.0
    largest = 10.0 ** min(9, math.floor(math.log10(_CAPACITY_LIMIT / max(top, 1e-300))))
    for candidate in (10.0**k for k in range(10)):
        if candidate > largest:
            break
        scaled = caps * candidate
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-6):
            return candidate, True
    return largest, False


pick_mincut.scope = mincut_scope  # type: ignore[attr-defined]
