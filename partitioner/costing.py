"""Costing: price every view with a cost model and build the :class:`PickProblem`.

A view costs what the cost model's own view cost says (:func:`tacopt.cost_models.base.view_cost`:
TAC's float32 per-function sum under ``tac``, the sum of op costs otherwise) for the device the
target is priced as (:func:`~tacopt.partitioner.targets.pricing_device`: its own name, else its
alias), divided by the alias's speedup. A non-CPU view the cost model explicitly cannot price is
dropped; a CPU view it cannot price is an error (the model cannot price the fallback). A NaN,
negative or infinite cost is always an error naming the model, the op and the device.
Tensors between units carry their producer, consumers, shape and dtype; links and the conversion
price come from the cost model (``link_cost``, ``conversion_cost_per_element``) for the devices the
targets are priced as, unless a target sets its own link. Two devices priced as the same device
exchange tensors through the host: the link from it to the host and back.

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

import networkx as nx
import numpy as np

from tacopt.cost_models.base import CostModel, CostModelError, check_costs, for_model, view_cost
from tacopt.fusion.ir.vocabulary import PRICED_DTYPE_NBYTES
from tacopt.partitioner.problem import Choice, Link, PickProblem, TensorEdge, Unit
from tacopt.partitioner.subgraphs import boundary
from tacopt.partitioner.targets import Target, TargetError, get_target, pricing_device
from tacopt.partitioner.views import UNFUSED, UnitViews, View


def price_view(view: View, target: Target, cost_model: CostModel) -> float | None:
    """The cost of ``view`` on its target; None when the cost model cannot price one of its ops.

    Raises
    ------
    CostModelError
        For a CPU view the model cannot price, or a NaN, negative or infinite cost.
    """
    device, speedup = pricing_device(target, cost_model)
    nodes = list(view.graph.nodes)
    cost = view_cost(cost_model, view.graph, nodes, device, view.inference_type)
    if cost is None:
        if view.device == "CPU":
            costs = check_costs(
                cost_model.op_costs(view.graph, nodes, device, view.inference_type),
                model=cost_model.name,
                nodes=nodes,
                device=device,
            )
            bad = nodes[int(np.flatnonzero(np.ma.getmaskarray(costs))[0])]
            kind = view.graph.nodes[bad]["op"].kind
            raise CostModelError(
                f"cost model '{cost_model.name}' has no cost for op '{bad}' ({kind}) on "
                f"CPU/{view.inference_type}"
            )
        return None
    return cost if speedup == 1.0 else cost / speedup


def build_problem(
    G: nx.MultiDiGraph,
    units: Sequence[UnitViews],
    targets: Sequence[Target],
    cost_model: CostModel,
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
    cost_model = for_model(cost_model, G)  # a unit's ops priced as parts of the whole model
    problem_units = []
    kept: dict[str, tuple[View, ...]] = {}
    for uv in units:
        choices, views = [], []
        for view in uv.views:
            cost = price_view(view, by_name[view.device], cost_model)
            if cost is not None:
                # A unit's unfused form is another choice of the same device and type: its
                # variant tells the two apart (a plan names its choice by all three).
                variant = UNFUSED if UNFUSED in view.lowerings else ""
                choices.append(Choice(view.device, view.inference_type, cost, variant=variant))
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
        dtype = rec.dtype if rec.dtype in PRICED_DTYPE_NBYTES else "uint8"
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


def _links(
    targets: Sequence[Target], cost_model: CostModel
) -> tuple[Link, dict[tuple[str, str], Link]]:
    """One link per ordered pair of devices, and the default link (host to the first accelerator;
    zero when the CPU is alone)."""
    priced_as = {t.name: _link_device(t, cost_model) for t in targets}

    def priced(src: str, dst: str) -> Link:
        a, b = priced_as[src], priced_as[dst]
        host = priced_as.get("CPU", "CPU")
        if a == b == host:
            raise TargetError(
                f"devices {src} and {dst} are both priced as {host}, so cost model "
                f"'{cost_model.name}' has no link between them: give "
                f"{dst if dst != 'CPU' else src} its own link (link=(per_byte, fixed))"
            )
        if a == b:  # two devices priced as one: through the host, there and back
            there, back = cost_model.link_cost(a, host), cost_model.link_cost(host, b)
            return Link(float(there.per_byte + back.per_byte), float(there.fixed + back.fixed))
        link = cost_model.link_cost(a, b)
        return Link(float(link.per_byte), float(link.fixed))

    links: dict[tuple[str, str], Link] = {}
    for src in targets:
        for dst in targets:
            if src.name == dst.name:
                continue
            own = dst.switching_cost(src.name)
            if own is not None:
                links[(src.name, dst.name)] = Link(float(own[0]), float(own[1]))
            else:
                links[(src.name, dst.name)] = priced(src.name, dst.name)
    accelerators = [t.name for t in targets if t.name != "CPU"]
    default = links[("CPU", accelerators[0])] if accelerators and "CPU" in priced_as else Link(0, 0)
    return default, links


def _link_device(target: Target, cost_model: CostModel) -> str:
    """The device whose links ``target``'s transfers are priced as: its ``link_as`` device's (a
    :class:`~tacopt.partitioner.targets.SimpleTarget`) or its own pricing device."""
    link_as = getattr(target, "link_as", None)
    if link_as is not None:
        target = get_target(link_as)
    return pricing_device(target, cost_model)[0]
