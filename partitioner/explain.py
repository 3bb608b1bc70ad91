"""Why an op runs where it does: each device's refusal of it, and the price of overriding a plan.

:func:`op_refusals` answers "why is this op not on the GPU?" for every op and device at once: a
:class:`Refusal` names the reason -- the device lacks the op's ``kind``, its inference ``type``,
a condition of its support table (``predicate``), room for it (``memory``: its weights and
activations alone exceed the device's capacity), or another device holds it by a ``pin`` -- or
None when the device can run it, directly or after a lowering (as the views do). A quantized op
a float-only device refuses in its own type is not refused when its float form runs there.

:func:`explain_op` adds the numbers behind ``tacopt partition --explain OP``: the op's cost on
each device, and the plan's cost if the op were pinned to each other device (a re-solve).

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> from tacopt.partitioner.targets import resolve_devices
>>> G = make_graph("g", [Tensor(n, (1, 8, 8, 4), "float32") for n in "xyz"],
...     [Op("relu_0", "RELU", ("x",), ("y",)), Op("cumsum_1", "CUMSUM", ("y",), ("z",))],
...     ["x"], ["z"])
>>> why = op_refusals(G, resolve_devices("GPU,CPU"))
>>> why["relu_0"]["GPU"] is None, str(why["cumsum_1"]["GPU"])
(True, 'GPU refuses it (kind): GPU does not run CUMSUM')
"""

from __future__ import annotations

import difflib
import glob
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from tacopt.cost_models.base import CostModel, for_model, get_cost_model
from tacopt.errors import printable
from tacopt.fusion.ir import ops_of
from tacopt.partitioner.annotate import Annotation, annotated_inference_type
from tacopt.partitioner.costing import price_view
from tacopt.partitioner.pipeline import partition
from tacopt.partitioner.plan import NoPlanError
from tacopt.partitioner.refusals import REASONS, Refusal, refusal, runnable_refusal
from tacopt.partitioner.subgraphs import Partition, Subgraph
from tacopt.partitioner.targets import PartitionError, Target
from tacopt.partitioner.views import enumerate_views


def op_refusals(
    G: nx.MultiDiGraph,
    targets: Sequence[Target],
    *,
    annotations: Mapping[str, Annotation] | None = None,
    capacity: Mapping[str, float] | None = None,
) -> dict[str, dict[str, Refusal | None]]:
    """For each op of ``G`` and each device of ``targets``: why it refuses the op, or None.

    Parameters
    ----------
    G : nx.MultiDiGraph
        The graph partitioned (``PartitionResult.source``: the fused model).
    targets : sequence of Target
        The devices, in the user's order.
    annotations : mapping, optional
        op -> :class:`~tacopt.partitioner.annotate.Annotation`; a pinned op is refused by every
        device but its own (reason ``pin``), and its type is the annotated one.
    capacity : mapping, optional
        device -> bytes; a device whose capacity is below the op's weights plus its activations
        (inputs and outputs, in the op's type) refuses it (reason ``memory``).

    Returns
    -------
    dict
        op name -> {device name -> :class:`Refusal` or None}, ops in execution order, devices
        in ``targets``' order.
    """
    out: dict[str, dict[str, Refusal | None]] = {}
    for name, op in ops_of(G):
        ann = (annotations or {}).get(name)
        itype = ann.inference_type if ann is not None else annotated_inference_type(G, name)
        row: dict[str, Refusal | None] = {}
        for target in targets:
            if ann is not None and ann.pinned and ann.device != target.name:
                row[target.name] = Refusal(
                    target.name, "pin", f"a pin puts {op.kind} '{name}' on {ann.device}"
                )
                continue
            why = runnable_refusal(G, name, target, itype, float_form=True)
            if why is None and capacity and target.name in capacity:
                need = op_nbytes(G, name)
                if need > capacity[target.name]:
                    why = Refusal(
                        target.name,
                        "memory",
                        f"its weights and activations take {need:,} B, over {target.name}'s "
                        f"capacity of {capacity[target.name]:,.0f} B",
                    )
            row[target.name] = why
        out[name] = row
    return out


def op_nbytes(G: nx.MultiDiGraph, node: str) -> int:
    """Bytes op ``node`` holds while it runs: its constant inputs, its other inputs and outputs.

    The least any device running it must hold (:mod:`tacopt.partitioner.memory`'s model).
    """
    tensors = G.graph["tensors"]
    op = G.nodes[node]["op"]
    names = dict.fromkeys(t for t in (*op.inputs, *op.outputs) if t is not None)
    return sum(tensors[n].priced_nbytes for n in names)


def op_costs(
    G: nx.MultiDiGraph, node: str, targets: Sequence[Target], cost_model: CostModel, itype: str
) -> dict[str, float]:
    """The cost of op ``node`` alone on each device that can run it (its cheapest view there).

    Views are enumerated as for a unit of this one op in inference type ``itype`` (a quantized
    op in float too) and priced as :func:`tacopt.partitioner.costing.price_view` prices them.
    """
    unit = Subgraph(node, "CPU", itype, (node,))
    (views,) = enumerate_views(G, Partition((unit,)), targets)
    by_name = {t.name: t for t in targets}
    cost_model = for_model(cost_model, G)  # the op as a part of the whole model
    out: dict[str, float] = {}
    for v in views.views:
        cost = price_view(v, by_name[v.device], cost_model)
        if cost is not None and cost < out.get(v.device, float("inf")):
            out[v.device] = cost
    return out


def result_refusals(result: Any) -> dict[str, dict[str, Refusal | None]]:
    """:func:`op_refusals` of a :class:`~tacopt.partitioner.pipeline.PartitionResult`.

    Ops are those of ``result.source`` (the units' ops); pins and capacities are the run's.
    """
    return op_refusals(
        result.source,
        result.targets,
        annotations=result.annotations,
        capacity=dict(getattr(result.problem, "capacity", {}) or {}),
    )


@dataclass(frozen=True, slots=True)
class DeviceExplanation:
    """One device's side of an op: its refusal (or None), cost, and the re-solved plan's cost.

    ``cost`` is the op's own cost on this device, alone (:func:`op_costs`; None when no view of
    it runs there); ``pinned_objective`` is the plan's objective with the op pinned here (on the
    chosen device: the plan's own objective).
    """

    device: str
    refusal: Refusal | None
    cost: float | None
    pinned_objective: float | None
    status: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    """``--explain OP``: where the plan put the op, and every device's side."""

    op: str
    kind: str
    unit: str
    unit_ops: int
    device: str
    objective: float
    devices: tuple[DeviceExplanation, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "op": self.op,
            "kind": self.kind,
            "unit": self.unit,
            "unit_ops": self.unit_ops,
            "device": self.device,
            "objective": self.objective,
            "devices": {
                d.device: {
                    "refusal": None if d.refusal is None else d.refusal.to_dict(),
                    "cost": d.cost,
                    "pinned_objective": d.pinned_objective,
                    "status": d.status,
                }
                for d in self.devices
            },
        }


def explain_op(
    G: nx.MultiDiGraph,
    result: Any,
    op: str,
    *,
    picker: str | None = None,
    **partition_options: Any,
) -> Explanation:
    """Explain where ``result`` (a :class:`~tacopt.partitioner.pipeline.PartitionResult` of the
    model ``G``) put ``op``, and what pinning it to every other device would cost.

    Each other device the op can run on is tried by re-running :func:`partition` with ``op``
    pinned there (plus the run's own pins), with ``picker`` (default: the run's) and
    ``partition_options`` (give the run's cost model, fuse and capacity; the granularity is the
    run's unless given).

    Raises
    ------
    PartitionError
        When ``op`` is not an op of ``result.source`` (the message lists a few close names).
    """
    source = result.source
    if op not in source:
        close = difflib.get_close_matches(op, [str(n) for n in source], n=3)
        hint = f"; close: {', '.join(close)}" if close else ""
        raise PartitionError(
            f"--explain: no op '{op}' in the partitioned graph "
            f"({source.number_of_nodes()} ops, after fusion){hint}"
        )
    unit_name = result.partition.unit_of()[op]
    chosen = result.plan.assignment[unit_name]
    model = partition_options.get("cost_model", "tac")
    model = get_cost_model(model) if isinstance(model, str) else model
    costs = op_costs(source, op, result.targets, model, result.annotations[op].inference_type)
    refusals = op_refusals(
        source,
        result.targets,
        annotations={op: result.annotations[op]},
        capacity=dict(getattr(result.problem, "capacity", {}) or {}),
    )[op]
    sides = []
    for target in result.targets:
        why = refusals[target.name]
        cost = costs.get(target.name)
        if target.name == chosen.device:
            sides.append(DeviceExplanation(target.name, why, cost, result.plan.objective, "chosen"))
            continue
        if why is not None:
            sides.append(DeviceExplanation(target.name, why, cost, None, "refused"))
            continue
        pins = [(glob.escape(op), target.name), *result.pins]
        options = {"granularity": result.granularity, **partition_options}
        try:
            other = partition(
                G, result.targets, picker=picker or result.plan.picker, pins=pins, **options
            )
        except (NoPlanError, PartitionError) as err:
            sides.append(DeviceExplanation(target.name, why, cost, None, f"no plan: {err}"))
            continue
        sides.append(
            DeviceExplanation(target.name, why, cost, other.plan.objective, other.plan.status)
        )
    return Explanation(
        op,
        source.nodes[op]["op"].kind,
        unit_name,
        len(next(s for s in result.partition.subgraphs if s.name == unit_name).ops),
        chosen.device,
        result.plan.objective,
        tuple(sides),
    )


def format_explanation(e: Explanation, unit: str = "cost") -> str:
    """The text ``tacopt partition --explain`` prints; names from the model (op, kind, unit,
    device, refusal detail) go through :func:`tacopt.errors.printable`."""
    lines = [
        f"{printable(e.op)} ({printable(e.kind)}) runs on {printable(e.device)}"
        + (f", in unit {printable(e.unit)} of {e.unit_ops} ops" if e.unit_ops > 1 else "")
        + f"; plan objective {e.objective:.6g} {unit}"
    ]
    for d in e.devices:
        cost = "-" if d.cost is None else f"{d.cost:.6g}"
        device = printable(d.device)
        if d.status == "chosen":
            lines.append(f"  {device}: chosen; the op alone costs {cost} here")
        elif d.refusal is not None:
            lines.append(f"  {device}: refused ({d.refusal.reason}): {printable(d.refusal.detail)}")
        elif d.pinned_objective is None:
            lines.append(f"  {device}: the op alone costs {cost} here; pinned here: {d.status}")
        else:
            delta = d.pinned_objective - e.objective
            lines.append(
                f"  {device}: the op alone costs {cost} here; pinned here, the plan costs "
                f"{d.pinned_objective:.6g} ({delta:+.6g}, {d.status})"
            )
            if delta < 0 and e.unit_ops > 1:
                lines.append(
                    f"    (less: the pin splits unit {printable(e.unit)}, which held the op with "
                    f"{e.unit_ops - 1} others; --granularity op plans op by op)"
                )
    return "\n".join(lines)


__all__ = [
    "REASONS", "DeviceExplanation", "Explanation", "Refusal", "explain_op", "format_explanation",
    "op_costs", "op_nbytes", "op_refusals", "refusal", "result_refusals", "runnable_refusal",
]  # fmt: skip
