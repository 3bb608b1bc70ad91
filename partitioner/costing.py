"""Costing: price every view with a cost model and build the :class:`PickProblem`.

A view costs the sum of its ops' costs on its device (through the target, which asks the cost
model: built-ins for their own name, :class:`~tacopt.partitioner.targets.SimpleTarget` for the CPU
cost over its advantage). A non-CPU view the cost model has no number for is dropped; a CPU view
without a number is an error (the model cannot price the fallback). Tensors between units carry
their producer, consumers, shape and dtype; links and the conversion price come from the cost
model (``link_cost``, ``conversion_cost_per_element``) unless a target sets its own link.

Examples
--------
>>> from tacopt.cost_models.base import get_cost_model
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> from tacopt.partitioner.annotate import annotate_targets
>>> from tacopt.partitioner.subgraphs import raise_subgraphs
>>> from tacopt.partitioner.targets import resolve_devices
>>> from tacopt.partitioner.views import enumerate_views
>>> G = make_graph("g", [Tensor(n, (1, 8), "float32") for n in "xyz"],
...     [Op("relu_0", "RELU", ("x",), ("y",)), Op("tanh_1", "TANH", ("y",), ("z",))], ["x"], ["z"])
>>> targets = resolve_devices("GPU,CPU")
>>> units = enumerate_views(G, raise_subgraphs(G, annotate_targets(G, targets)), targets)
>>> problem, views = build_problem(G, units, targets, get_cost_model("tac"))
>>> [c.label for c in problem.units[0].choices], problem.tensors[0].consumers
(['GPU/FLOAT', 'CPU/FLOAT'], ('subgraph_0',))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.base import CostModelError
from tacopt.partitioner.problem import Choice, Link, PickProblem, TensorEdge, Unit
from tacopt.partitioner.subgraphs import boundary
from tacopt.partitioner.targets import Target
from tacopt.partitioner.views import UnitViews, View

#: Dtypes a pick problem prices; others (string, resource) travel as one byte per element.
_PRICED = frozenset({"bool", "int8", "uint8", "float16", "bfloat16", "int16", "uint16",
                     "float32", "int32", "uint32", "float64", "int64", "uint64", "complex64",
                     "complex128"})  # fmt: skip


def view_cost(view: View, target: Target, cost_model: Any) -> float | None:
    """The cost of ``view`` on its target, None when the cost model has no number for an op."""
    nodes = list(view.graph.nodes)
    costs = np.asarray(target.op_costs(view.graph, nodes, view.inference_type, cost_model), float)
    if np.isnan(costs).any():
        if view.device == "CPU":
            bad = nodes[int(np.flatnonzero(np.isnan(costs))[0])]
            kind = view.graph.nodes[bad]["op"].kind
            raise CostModelError(
                f"cost model '{cost_model.name}' has no cost for op '{bad}' ({kind}) on "
                f"CPU/{view.inference_type}"
            )
        return None
    return float(costs.sum())


def build_problem(
    G: nx.MultiDiGraph,
    units: Sequence[UnitViews],
    targets: Sequence[Target],
    cost_model: Any,
) -> tuple[PickProblem, dict[str, tuple[View, ...]]]:
    """Cost every view and assemble the pick problem.

    Parameters
    ----------
    G : nx.MultiDiGraph
        The model graph the units were cut from.
    units : sequence of UnitViews
        From :func:`tacopt.partitioner.views.enumerate_views`.
    targets : sequence of Target
        The user's devices (CPU included).
    cost_model : CostModel
        From :func:`tacopt.cost_models.base.get_cost_model`.

    Returns
    -------
    (PickProblem, dict)
        The problem, and unit name -> its costed views, aligned with the unit's choices.

    Raises
    ------
    CostModelError
        When the cost model has no number for an op of a CPU view.
    """
    by_name = {t.name: t for t in targets}
    problem_units = []
    kept: dict[str, tuple[View, ...]] = {}
    for uv in units:
        choices, views = [], []
        for view in uv.views:
            cost = view_cost(view, by_name[view.device], cost_model)
            if cost is not None:
                choices.append(Choice(view.device, view.inference_type, cost))
                views.append(view)
        initial = next(
            (
                i
                for i, c in enumerate(choices)
                if (c.device, c.type) == (uv.subgraph.device, uv.subgraph.inference_type)
            ),
            0,
        )
        problem_units.append(Unit(uv.subgraph.name, tuple(choices), initial))
        kept[uv.subgraph.name] = tuple(views)
    transfer, links = _links(targets, cost_model)
    quant = float(cost_model.conversion_cost_per_element("FLOAT", "QUANTIZED_INT8"))
    problem = PickProblem(
        tuple(problem_units), _tensor_edges(G, units), transfer, quant, "CPU", True, links
    )
    return problem, kept


def _tensor_edges(G: nx.MultiDiGraph, units: Sequence[UnitViews]) -> tuple[TensorEdge, ...]:
    tensors = G.graph["tensors"]
    producer: dict[str, str | None] = {t: None for t in G.graph["inputs"]}
    consumers: dict[str, dict[str, None]] = {t: {} for t in G.graph["inputs"]}
    for uv in units:
        inputs, outputs = boundary(G, uv.subgraph.ops)
        for t in outputs:
            producer[t] = uv.subgraph.name
            consumers.setdefault(t, {})
        for t in inputs:
            consumers.setdefault(t, {})[uv.subgraph.name] = None
    graph_outputs = set(G.graph["outputs"])
    edges = []
    for t, readers in consumers.items():
        if t not in producer:
            continue  # read before any producer: a variable or state tensor, never moved
        rec = tensors[t]
        dtype = rec.dtype if rec.dtype in _PRICED else "uint8"
        edges.append(
            TensorEdge(
                t,
                producer[t],
                tuple(readers),
                tuple(max(int(d), 0) for d in rec.shape),
                dtype,
                t in graph_outputs,
            )
        )
    return tuple(edges)


def _cost_device(target: Target) -> str:
    return getattr(target, "cost_device", None) or target.name


def _links(targets: Sequence[Target], cost_model: Any) -> tuple[Link, dict[tuple[str, str], Link]]:
    """The default CPU<->accelerator link and one link per ordered pair of devices."""
    known = set(getattr(cost_model, "devices", ()) or ())

    def priced(src: str, dst: str) -> Link:
        if known and not {src, dst} <= known or src == dst:
            src, dst = "CPU", "GPU"
        link = cost_model.link_cost(src, dst)
        return Link(float(link.per_byte), float(link.fixed))

    default = priced("CPU", "GPU")
    links: dict[tuple[str, str], Link] = {}
    for src in targets:
        for dst in targets:
            if src.name == dst.name:
                continue
            own = dst.switching_cost(src.name)
            if own is not None:
                links[(src.name, dst.name)] = Link(float(own[0]), float(own[1]))
            else:
                links[(src.name, dst.name)] = priced(_cost_device(src), _cost_device(dst))
    return default, links
