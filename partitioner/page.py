"""The plan page: one self-contained HTML file that shows where every op runs, and why.

:func:`page_data` gathers one or more plans of the same pick problem (``tacopt partition
--html``, with ``--compare`` a plan per picker) into JSON-ready data: the fused DAG with a
layout, the units, every unit's views with their costs, each op's refusals per device, and per
plan the chosen views, the objective and each device's memory over the steps.
:func:`render_page` puts that data, the script and the styles into one HTML file that fetches
nothing: the browser only draws.

The layout is computed here, in Python, not in the browser: a layered (Sugiyama-style) layout
nested by unit. Units are layered over the unit DAG (networkx's topological generations, each
node then pulled down to just above its first consumer), ops inside each unit over its own ops,
and every layer is ordered by a few barycenter sweeps to reduce crossings. The graph's inputs
sit in a row above, its outputs in a row below (:func:`place_io`). Doing it here keeps
the page fast to open for 1,000+-op models (the browser places nothing), deterministic, and free
of a vendored JavaScript library.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> from tacopt.partitioner.pipeline import partition
>>> G = make_graph("g", [Tensor(n, (1, 8), "float32") for n in "xyz"],
...     [Op("relu_0", "RELU", ("x",), ("y",)), Op("tanh_1", "TANH", ("y",), ("z",))], ["x"], ["z"])
>>> data = page_data([partition(G, "GPU,CPU")])
>>> [op["name"] for op in data["ops"]], data["plans"][0]["picker"]
(['relu_0', 'tanh_1'], 'exact')
>>> html = render_page(data)
>>> html.startswith("<!DOCTYPE html>") and "<script src" not in html
True
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.base import CostModel
from tacopt.errors import TacoptError, one_line
from tacopt.partitioner.apply import apply_plan
from tacopt.partitioner.draw import DEVICE_COLORS
from tacopt.partitioner.explain import op_costs, op_refusals
from tacopt.partitioner.memory import graph_usage
from tacopt.partitioner.pickers import pick, picker_options
from tacopt.partitioner.plan import choice_indices, unit_label
from tacopt.partitioner.problem import activation_format, index_problem
from tacopt.partitioner.targets import PartitionError, Target, get_target

#: Node box and gaps of the layout, in SVG user units.
NODE_W, NODE_H, GAP_X, GAP_Y, UNIT_PAD = 150.0, 30.0, 14.0, 34.0, 8.0
_SPARE_COLORS = ("#f2e394", "#e8a0a0", "#b5e3e0", "#cccccc", "#c9b3e6")
_SWEEPS = 4


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each op's box is centred, each unit's box, and the drawing's size."""

    centers: dict[str, tuple[float, float]]
    boxes: dict[str, tuple[float, float, float, float]]  # unit -> (x, y, width, height)
    width: float
    height: float


def layout_units(G: nx.MultiDiGraph, units: Sequence[tuple[str, Sequence[str]]]) -> Layout:
    """A layered layout of ``G``'s ops nested by unit (``units``: name and ops, in order).

    Units are placed in layers of the unit DAG, top to bottom; each unit's ops in layers of their
    own. Within every layer, nodes are ordered by barycenter sweeps (down, then up).

    Raises
    ------
    PartitionError
        When the units do not form a DAG, or an op is in no unit.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (2,), "float32") for n in "abc"],
    ...     [Op("p", "RELU", ("a",), ("b",)), Op("q", "TANH", ("b",), ("c",))], ["a"], ["c"])
    >>> lay = layout_units(G, [("u0", ["p"]), ("u1", ["q"])])
    >>> lay.centers["p"][1] < lay.centers["q"][1]
    True
    """
    unit_of = {op: name for name, ops in units for op in ops}
    missing = [n for n in G if n not in unit_of]
    if missing:
        raise PartitionError(f"op '{missing[0]}' is in no unit")
    U = nx.DiGraph()
    U.add_nodes_from(name for name, _ in units)
    U.add_edges_from((unit_of[u], unit_of[v]) for u, v in G.edges() if unit_of[u] != unit_of[v])
    if not nx.is_directed_acyclic_graph(U):
        raise PartitionError("the units do not form a DAG")

    # Inside each unit: its ops' layers, ordered, and the unit's size in slots.
    inner: dict[str, list[list[str]]] = {}
    for name, ops in units:
        inner[name] = [list(ops)] if len(ops) == 1 else _ordered_layers(nx.DiGraph(G.subgraph(ops)))
    size = {
        name: (
            max(len(layer) for layer in layers) * (NODE_W + GAP_X) - GAP_X + 2 * UNIT_PAD,
            len(layers) * (NODE_H + GAP_Y) - GAP_Y + 2 * UNIT_PAD,
        )
        for name, layers in inner.items()
    }
    unit_layers = _ordered_layers(U)

    boxes: dict[str, tuple[float, float, float, float]] = {}
    widths = [sum(size[u][0] for u in layer) + GAP_X * (len(layer) - 1) for layer in unit_layers]
    width = max(widths, default=0.0)
    y = 0.0
    for layer, layer_w in zip(unit_layers, widths):
        x = (width - layer_w) / 2
        for u in layer:
            w, h = size[u]
            boxes[u] = (x, y, w, h)
            x += w + GAP_X
        y += max(size[u][1] for u in layer) + GAP_Y
    centers: dict[str, tuple[float, float]] = {}
    for name, layers in inner.items():
        bx, by, bw, _ = boxes[name]
        for r, layer in enumerate(layers):
            row_w = len(layer) * (NODE_W + GAP_X) - GAP_X
            x0 = bx + (bw - row_w) / 2 + NODE_W / 2
            cy = by + UNIT_PAD + r * (NODE_H + GAP_Y) + NODE_H / 2
            for i, op in enumerate(layer):
                centers[op] = (x0 + i * (NODE_W + GAP_X), cy)
    return Layout(centers, boxes, width, max(y - GAP_Y, 0.0))


@dataclass(frozen=True, slots=True)
class IONode:
    """A graph input or output drawn as a node: its tensor, where it is centred, and the ops it
    feeds (an input) or the op that writes it (an output; none for a passed-through input)."""

    tensor: str
    kind: str  # "input" or "output"
    x: float
    y: float
    ops: tuple[str, ...]


def place_io(G: nx.MultiDiGraph, layout: Layout) -> tuple[list[IONode], Layout]:
    """The graph's inputs in a row above ``layout`` and its outputs in a row below, each near the
    ops it touches; and the layout moved down to make room for the inputs' row.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (2,), "float32") for n in "ab"],
    ...     [Op("p", "RELU", ("a",), ("b",))], ["a"], ["b"])
    >>> io, lay = place_io(G, layout_units(G, [("u", ["p"])]))
    >>> [(n.kind, n.tensor, n.ops) for n in io]
    [('input', 'a', ('p',)), ('output', 'b', ('p',))]
    >>> io[0].y < lay.centers["p"][1] < io[1].y
    True
    """
    inputs, outputs = list(G.graph.get("inputs", ())), list(G.graph.get("outputs", ()))
    row = NODE_H + GAP_Y
    dy = row if inputs else 0.0
    centers = {n: (x, y + dy) for n, (x, y) in layout.centers.items()}
    boxes = {u: (x, y + dy, w, h) for u, (x, y, w, h) in layout.boxes.items()}
    readers: dict[str, list[str]] = {}
    writer: dict[str, str] = {}
    for n, data in G.nodes(data=True):
        op = data["op"]
        for t in op.inputs:
            if t is not None:
                readers.setdefault(t, []).append(n)
        for t in op.outputs:
            writer[t] = n
    height = layout.height + dy + (row if outputs else 0.0)
    bottom = layout.height + dy + GAP_Y + NODE_H / 2 if layout.centers else NODE_H / 2 + dy
    nodes: list[IONode] = []
    width = layout.width
    for kind, names, y in (("input", inputs, NODE_H / 2), ("output", outputs, bottom)):
        touched = [tuple(readers.get(t, ())) if kind == "input"
                   else ((writer[t],) if t in writer else ()) for t in names]  # fmt: skip
        wanted = [sum(centers[o][0] for o in ops) / len(ops) if ops else NODE_W / 2
                  for ops in touched]  # fmt: skip
        xs = _spread(wanted)
        width = max(width, max(xs, default=0.0) + NODE_W / 2)
        nodes += [IONode(t, kind, x, y, ops) for t, x, ops in zip(names, xs, touched)]
    return nodes, Layout(centers, boxes, width, height)


def _spread(wanted: Sequence[float]) -> list[float]:
    """Centres as near ``wanted`` as boxes of one row allow (left to right, none overlapping)."""
    out = [0.0] * len(wanted)
    edge = NODE_W / 2
    for i in sorted(range(len(wanted)), key=lambda i: (wanted[i], i)):
        out[i] = max(wanted[i], edge)
        edge = out[i] + NODE_W + GAP_X
    return out


def _ordered_layers(D: nx.DiGraph) -> list[list[str]]:
    """The layers of ``D``, each ordered by barycenter sweeps.

    A node starts in its topological generation (its longest path from a source) and is then
    pulled down to just above its first consumer, so what a later step reads is drawn next to
    it (an unrolled RNN's per-step ops sit with their step) and long edges leave shared producers.
    """
    order = {n: i for i, n in enumerate(D)}
    depth = {n: i for i, g in enumerate(nx.topological_generations(D)) for n in g}
    for n in reversed(list(nx.topological_sort(D))):
        below = [depth[s] for s in D.successors(n)]
        if below:
            depth[n] = max(depth[n], min(below) - 1)
    rows: dict[int, list[str]] = {}
    for n in sorted(D, key=order.__getitem__):
        rows.setdefault(depth[n], []).append(n)
    layers = [rows[k] for k in sorted(rows)]
    pos = {n: i - (len(layer) - 1) / 2 for layer in layers for i, n in enumerate(layer)}
    for sweep in range(_SWEEPS):
        down = sweep % 2 == 0
        for layer in layers[1:] if down else layers[-2::-1]:

            def key(n: str, near: Any = D.predecessors if down else D.successors) -> float:
                xs = [pos[m] for m in near(n)]
                return sum(xs) / len(xs) if xs else pos[n]

            layer.sort(key=key)
            for i, n in enumerate(layer):
                pos[n] = i - (len(layer) - 1) / 2
    return layers


# --------------------------------------------------------------------------------------------
# the page's data
# --------------------------------------------------------------------------------------------


def compare_plans(
    result: Any, pickers: Sequence[str], *, time_limit_s: float | None = None
) -> tuple[list[Any], dict[str, str]]:
    """``result`` re-planned by each of ``pickers`` on the same pick problem.

    ``result`` is a :class:`~tacopt.partitioner.pipeline.PartitionResult`; the problem, units and
    views are shared, so plans differ only by their picker. A result whose picker is in
    ``pickers`` is reused rather than re-solved. A picker that gives no plan (it does not take
    the problem, or finds none within the capacities) does not stop the others, as in
    ``tacopt pick --compare``: it is returned with its one-line reason.

    Returns
    -------
    (list, dict)
        A result per picker that gave a plan, in ``pickers``' order; picker -> why it gave none.

    Raises
    ------
    TacoptError
        For an unknown picker (before any solve).

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> from tacopt.partitioner.pipeline import partition
    >>> G = make_graph("g", [Tensor(n, (1, 8), "float32") for n in "xy"],
    ...     [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
    >>> results, failed = compare_plans(partition(G, "GPU,CPU"), ["tac", "exact"])
    >>> [r.plan.picker for r in results], failed
    (['tac', 'exact'], {})
    """
    accepted = {name: picker_options(name) for name in pickers}  # unknown names fail here
    out, failed = [], {}
    for name in pickers:
        if name == result.plan.picker:
            out.append(result)
            continue
        options: dict[str, Any] = {}
        if time_limit_s is not None:
            key = next((k for k in ("time_limit_s", "time_limit") if k in accepted[name]), None)
            if key or "*" in accepted[name]:
                options[key or "time_limit_s"] = time_limit_s
        clock = time.perf_counter()
        try:
            plan = pick(result.problem, name, **options)
        except TacoptError as exc:
            failed[name] = one_line(exc)
            continue
        seconds = dict(result.seconds, pick=time.perf_counter() - clock)
        H = apply_plan(result.source, result.partition, result.views, plan.assignment)
        out.append(replace(result, plan=plan, graph=H, seconds=seconds))
    return out, failed


def device_colors(devices: Sequence[str]) -> dict[str, str]:
    """A fill colour per device: the built-ins' own (:data:`DEVICE_COLORS`), then spares."""
    spare = iter(_SPARE_COLORS * (len(devices) + 1))
    return {d: DEVICE_COLORS.get(d) or next(spare) for d in devices}


def page_data(
    results: Sequence[Any],
    *,
    title: str | None = None,
    cost_model: CostModel | None = None,
    targets: Sequence[Target] | None = None,
    failed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The page's data for plans of one pick problem (one per picker).

    Each op carries why each device refuses it
    (:func:`tacopt.partitioner.explain.op_refusals`: kind, type, predicate, memory or pin) and,
    given the ``cost_model``, its own cost on each device that runs it
    (:func:`tacopt.partitioner.explain.op_costs`; at op granularity the unit's views are the
    op's, so it is skipped).

    Parameters
    ----------
    results : sequence of PartitionResult
        From :func:`tacopt.partitioner.pipeline.partition`, then :func:`compare_plans` for more
        pickers. All share the first one's problem, units and views.
    title : str, optional
        Default: the model's name.
    cost_model : CostModel, optional
        The model the plans were costed with, for each op's own cost per device.
    targets : sequence of Target, optional
        The devices' records (default: the registered devices of the results' names).
    failed : mapping, optional
        Pickers that gave no plan -> why (:func:`compare_plans`), listed on the page.

    Returns
    -------
    dict
        JSON-ready: ``ops`` (with layout and refusals), ``edges``, ``io`` (the graph's inputs
        and outputs as nodes, with the ops each touches), ``units`` (with views and costs),
        ``plans`` (chosen view per unit, objective, breakdown, memory per step).

    Raises
    ------
    PartitionError
        For no results, or results of different problems.
    """
    if not results:
        raise PartitionError("no plan to show")
    first = results[0]
    if any(r.problem is not first.problem for r in results[1:]):
        raise PartitionError("the plans to compare are not of one pick problem")
    G = first.source if first.source is not None else first.graph
    problem = first.problem
    unit_list = [(s.name, s.ops) for s in first.partition.subgraphs]
    unit_index = {name: i for i, (name, _) in enumerate(unit_list)}
    io_nodes, layout = place_io(G, layout_units(G, unit_list))
    targets = tuple(targets) if targets is not None else tuple(map(get_target, first.devices))
    tensors = G.graph["tensors"]
    finite = {d: c for d, c in problem.capacity.items() if math.isfinite(c)}
    refusals = op_refusals(G, targets, annotations=first.annotations, capacity=finite)
    own_costs = cost_model is not None and any(len(s.ops) > 1 for s in first.partition.subgraphs)

    def tensor_info(name: str | None) -> list[Any] | None:
        if name is None or name not in tensors:
            return None
        t = tensors[name]
        return [name, list(t.shape), t.dtype, bool(t.is_constant)]

    ops: list[dict[str, Any]] = []
    op_index: dict[str, int] = {}
    for name, ops_of_unit in unit_list:
        for n in ops_of_unit:
            op = G.nodes[n]["op"]
            ann = first.annotations.get(n)
            itype = ann.inference_type if ann is not None else "FLOAT"
            refused = {d: f"{why.reason}: {why.detail}" for d, why in refusals[n].items() if why}
            costs = {}
            if own_costs and cost_model is not None:
                costs = op_costs(G, n, targets, cost_model, itype)
            x, y = layout.centers[n]
            op_index[n] = len(ops)
            ops.append({
                "name": n, "kind": op.kind, "unit": unit_index[name], "type": itype,
                "x": round(x, 1), "y": round(y, 1),
                "inputs": [tensor_info(t) for t in op.inputs if t is not None],
                "outputs": [tensor_info(t) for t in op.outputs],
                "pinned": bool(ann is not None and ann.pinned),
                "initial": ann.device if ann is not None else None,
                "refused": refused, "costs": costs,
            })  # fmt: skip
    edges = []
    for u, v, k in G.edges(keys=True):
        t = tensors[k]
        nbytes = math.prod(max(int(d), 0) for d in t.shape) * _itemsize(t.dtype)
        edges.append([op_index[u], op_index[v], k, nbytes])

    io = [{"tensor": n.tensor, "kind": n.kind, "x": round(n.x, 1), "y": round(n.y, 1),
           "info": tensor_info(n.tensor), "ops": [op_index[o] for o in n.ops]}
          for n in io_nodes]  # fmt: skip

    index = index_problem(problem)
    by_unit = {u.name: u for u in problem.units}
    units = []
    for name, ops_of_unit in unit_list:
        x, y, w, h = layout.boxes[name]
        unit = by_unit[name]
        views = first.views[name]
        units.append({
            "name": name, "ops": [op_index[n] for n in ops_of_unit],
            "box": [round(x, 1), round(y, 1), round(w, 1), round(h, 1)],
            "views": [
                {"device": c.device, "type": c.type, "format": activation_format(c.type),
                 "cost": c.cost, "memory": c.memory, "lowerings": list(v.lowerings)}
                for c, v in zip(unit.choices, views)
            ],
        })  # fmt: skip

    plans = []
    for r in results:
        chosen = choice_indices(problem, index, r.plan.assignment)
        held, usage = graph_usage(r.graph)
        at = {n: i for i, n in enumerate(r.graph)}
        local = chosen - index.choice_start[:-1]
        by_name = dict(zip(index.unit_names, local.tolist()))
        b = r.plan.breakdown
        plans.append({
            "picker": r.plan.picker, "status": r.plan.status, "objective": r.plan.objective,
            "bound": r.plan.bound, "seconds": r.plan.seconds,
            "breakdown": {"compute": b.compute, "transfer": b.transfer, "quant": b.quant,
                          "pairwise": b.pairwise},
            "choice": [int(by_name[name]) for name, _ in unit_list],
            "peak": dict(r.plan.peak_memory),
            "memory": {d: np.round(usage[held.index(d)]).astype(np.int64).tolist()
                       if d in held else [0] * usage.shape[1] for d in first.devices},
            "op_step": [at.get(op["name"], -1) for op in ops],
        })  # fmt: skip
    return {
        "title": title or str(G.graph.get("name") or "model"),
        "devices": list(first.devices),
        "colors": device_colors(first.devices),
        "granularity": first.granularity,
        "cost_model": first.cost_model,
        "cost_unit": unit_label(getattr(problem, "cost_unit", "cost")),
        "capacity": finite,
        "host": problem.host,
        "boundaries": bool(problem.boundaries),
        "size": [round(layout.width, 1), round(layout.height, 1)],
        "node": [NODE_W, NODE_H],
        "ops": ops,
        "edges": edges,
        "io": io,
        "units": units,
        "plans": plans,
        "failed": dict(failed or {}),
        "pins": [f"{pattern}={device}" for pattern, device in getattr(first, "pins", ())],
    }


def _itemsize(dtype: str) -> int:
    try:
        return int(np.dtype(dtype).itemsize)
    except TypeError:
        return 1


# --------------------------------------------------------------------------------------------
# the HTML
# --------------------------------------------------------------------------------------------


def _asset(name: str) -> str:
    return (resources.files("tacopt.partitioner") / "assets" / name).read_text(encoding="utf-8")


def render_page(data: Mapping[str, Any]) -> str:
    """One self-contained HTML page of :func:`page_data`'s data (nothing is fetched)."""
    payload = json_for_html(data)
    title = _escape(str(data.get("title", "plan")))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>tacopt plan: {title}</title>\n<style>\n{_asset('page.css')}</style>\n</head>\n"
        f"<body>\n{_asset('page.html')}"
        f'<script type="application/json" id="plan-data">{payload}</script>\n'
        f"<script>\n{_asset('page.js')}</script>\n</body>\n</html>\n"
    )


#: What the page's embedded JSON writes as ``\\uXXXX`` escapes: ``<``, ``>`` and ``&`` (so no
#: ``</script>``, ``<!--`` or ``<script`` can reach the HTML parser, which reads a script
#: element's text before JSON does) and the line separators older JavaScript parsers refused.
_HTML_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                "\u2029": "\\u2029"}  # fmt: skip
_HTML_UNSAFE_RE = re.compile("[<>&\u2028\u2029]")


def json_for_html(data: Any) -> str:
    r"""``data`` as JSON text safe inside an HTML ``<script>`` element: the one place the page's
    data is written, every ``<``, ``>`` and ``&`` as a ``\u`` escape (JSON reads it back as is).

    >>> json_for_html({"name": "<!--<script></script>&"})
    '{"name":"\\u003c!--\\u003cscript\\u003e\\u003c/script\\u003e\\u0026"}'
    >>> json.loads(json_for_html({"name": "</script>"}))["name"]
    '</script>'
    """
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return _HTML_UNSAFE_RE.sub(lambda m: _HTML_UNSAFE[m.group()], text)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
