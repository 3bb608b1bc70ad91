"""TAC's pick-subgraphs pass, re-implemented as the baseline the exact picker is measured against.

Source: ``tensorflow/compiler/mlir/lite/experimental/tac/transforms/pick_subgraphs.cc``
(``PickSubgraphsPass::ProcessSubgraph`` and ``MakeDecisions``) and the cost helpers of
``transforms/cost_model.cc`` (``GetTransferCost``, ``GetQuantDequantCost``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from tacopt.partitioner.memory import first_overflow
from tacopt.partitioner.plan import NoPlanError, Plan, plan_from_choices
from tacopt.partitioner.problem import (
    Choice,
    PickProblem,
    TensorEdge,
    Unit,
    activation_format,
    dtype_nbytes,
    index_problem,
)


@dataclass(frozen=True, slots=True)
class _View:
    """TAC's ``GraphView``: a unit's total for one choice and the choices it wants its inputs on."""

    total: float
    wants: dict[str, int]  # producer unit -> choice index, in operand order


def pick_tac(problem: PickProblem) -> Plan:
    """TAC's greedy picker: one-step lookahead from the outputs, abort on conflict.

    Reproduced behaviour of ``pick_subgraphs.cc``:

    * ``ProcessSubgraph``: for each unit and choice, the total is its own cost plus, for every
      *operand* produced by another unit, the minimum over that producer's choices of the
      producer's *own* cost (not its aggregated cost: a one-step lookahead) plus the transfer
      and quant/dequant cost of the edge. The per-operand counting is kept: a unit that reads
      two tensors of the same producer counts that producer twice, and each time with the
      bytes of *all* tensors between the two units (``GetTransferredTensorBytes``) and one
      fixed cost. The producer's wished choice is the argmin of its last operand.
    * Graph inputs are skipped (``GetProducerCallOpOrNull`` returns null) and graph outputs cost
      nothing, whatever ``boundaries`` says.
    * ``MakeDecisions``: each output unit takes its cheapest total (first on ties, in choice
      order), then a breadth-first walk from the outputs fixes each producer to the choice
      its consumer's view wants. If a producer is wanted on two different choices the pass
      gives up and the initial plan is kept (TAC's "we cannot find the best scenarios for your
      case" warning); ``params["aborted"]`` is then True.
    * Units never reached from an output keep their initial choice (``RewireSubgraphs`` only
      touches decided calls).

    Adaptations: output units are the producers of ``output`` tensors plus units whose tensors
    nobody reads (TAC's return op); transfer prices come from the problem's links (TAC's
    ``GetHardwareSwitchingCost`` is ``5 * bytes + 10`` between different devices); the
    conversion price is ``quant_per_element`` per element for any change of activation format
    (TAC charges 2 for quant, dequant and requant alike and nothing for FLOAT <-> HYBRID).
    The objective reported is :func:`tacopt.partitioner.plan.evaluate` of the result. Status
    HEURISTIC.

    Capacities (TAC has none): a choice whose own memory exceeds its device's capacity is never
    a unit's view nor a producer's wish; if the plan still overflows a device at some step,
    :class:`~tacopt.partitioner.plan.NoPlanError` (status UNKNOWN) is raised rather than an
    invalid plan returned. Pairwise costs (TAC has none either) count only in the objective.

    Examples
    --------
    The chain W -> X -> Y of the module tests: TAC puts W on GPU but X and Y on CPU.

    >>> from tacopt.partitioner.problem import Choice, Link, TensorEdge, Unit
    >>> def unit(name, cpu, gpu):
    ...     return Unit(name, (Choice("CPU", "FLOAT", cpu), Choice("GPU", "FLOAT", gpu)))
    >>> p = PickProblem((unit("W", 1e6, 0), unit("X", 0, 0), unit("Y", 0, 1000)),
    ...     (TensorEdge("w", "W", ("X",), (100,), "float32"),
    ...      TensorEdge("x", "X", ("Y",), (100,), "float32"),
    ...      TensorEdge("y", "Y", (), (100,), "float32", output=True)),
    ...     Link(5.0, 10.0), 2.0, boundaries=False)
    >>> plan = pick_tac(p)
    >>> plan.objective, [c.device for c in plan.assignment.values()]
    (2010.0, ['GPU', 'CPU', 'CPU'])
    """
    started = time.perf_counter()
    index = index_problem(problem)
    units = {u.name: u for u in problem.units}
    operands = _operands(problem)
    views = {
        u.name: [_process(problem, units, u, k, operands[u.name]) for k in range(len(u.choices))]
        for u in problem.units
    }
    if problem.capacity:
        for limited in problem.units:
            own = views[limited.name]
            views[limited.name] = [_View(math.inf, {}) if _too_big(problem, c) else view
                                   for c, view in zip(limited.choices, own)]  # fmt: skip
    decisions = _make_decisions(views, _output_units(problem))
    aborted = decisions is None
    chosen = index.initial.copy()
    for u, unit in enumerate(problem.units):
        if decisions is not None and unit.name in decisions:
            chosen[u] = index.choice_start[u] + decisions[unit.name]
    overflow = first_overflow(index, chosen) if index.has_memory else None
    if overflow is not None:
        raise NoPlanError(f"tac picker: its plan does not fit: {overflow}", "UNKNOWN")
    return plan_from_choices(
        problem,
        index,
        chosen,
        picker="tac",
        status="HEURISTIC",
        started=started,
        params={"aborted": aborted},
    )


def _operands(problem: PickProblem) -> dict[str, list[TensorEdge]]:
    """Each unit's operands produced by another unit, one entry per read, in problem order."""
    out: dict[str, list[TensorEdge]] = {u.name: [] for u in problem.units}
    for t in problem.tensors:
        if t.producer is not None:
            for v in t.consumers:
                out[v].append(t)
    return out


def _process(
    problem: PickProblem, units: dict[str, Unit], unit: Unit, k: int, operands: list[TensorEdge]
) -> _View:
    """``ProcessSubgraph`` for one choice ``k`` of ``unit``."""
    mine = unit.choices[k]
    # (bytes, elements) of all operands from one producer, summed once (not per operand)
    per_producer: dict[str | None, tuple[int, int]] = {}
    for t in operands:
        b, e = per_producer.get(t.producer, (0, 0))
        per_producer[t.producer] = (b + t.elements * dtype_nbytes(t.dtype), e + t.elements)
    total = 0.0
    wants: dict[str, int] = {}
    for operand in operands:
        producer = units[operand.producer]  # type: ignore[index]
        # GetTransferredTensorBytes / ElementCount: all operands of `unit` from this producer.
        nbytes, elements = per_producer[operand.producer]
        best = float("inf")
        for j, theirs in enumerate(producer.choices):
            if problem.capacity and _too_big(problem, theirs):
                continue
            cost = theirs.cost
            if theirs.device != mine.device:
                cost += problem.link(theirs.device, mine.device).cost(nbytes)
            if activation_format(theirs.type) != activation_format(mine.type):
                cost += problem.quant_per_element * elements
            if cost < best:
                best = cost
                wants[producer.name] = j
        total += best
    return _View(total + mine.cost, wants)


def _too_big(problem: PickProblem, choice: Choice) -> bool:
    """Whether ``choice`` alone holds more than its device's capacity."""
    return choice.memory > problem.capacity.get(choice.device, math.inf)


def _output_units(problem: PickProblem) -> list[str]:
    """Units feeding the graph outputs or whose results nobody reads, in unit order."""
    read = {t.producer for t in problem.tensors if t.consumers}
    outputs = {t.producer for t in problem.tensors if t.output}
    return [u.name for u in problem.units if u.name in outputs or u.name not in read]


def _make_decisions(views: dict[str, list[_View]], outputs: list[str]) -> dict[str, int] | None:
    """``MakeDecisions``: outputs take their cheapest view, then BFS; None on a conflict."""
    decisions: dict[str, int] = {}
    queue: list[_View] = []
    for name in outputs:
        k = min(range(len(views[name])), key=lambda i: views[name][i].total)
        decisions[name] = k
        queue.append(views[name][k])
    head = 0
    while head < len(queue):
        view = queue[head]
        head += 1
        for producer, wanted in view.wants.items():
            if producer not in decisions:
                decisions[producer] = wanted
                queue.append(views[producer][wanted])
            elif decisions[producer] != wanted:
                return None
    return decisions
