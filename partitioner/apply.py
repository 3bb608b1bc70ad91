"""Apply a plan: inline each unit's chosen view into one graph, ops tagged with their device.

Units are inlined in the partition's (topological) order. Where a tensor reaches a unit in a
format other than the one it was produced in (a float view next to an int8 one), a DEQUANTIZE
or QUANTIZE is inserted once per tensor and format, and graph outputs are converted back to
their original dtype, so the applied graph keeps the model's inputs and outputs. Every op gets
node attributes ``device`` and ``inference_type``; conversions run on the CPU.

Examples
--------
>>> from tacopt.partitioner.pipeline import partition
>>> from tacopt.fusion.ir import Op, Tensor, make_graph, validate_graph
>>> G = make_graph("g", [Tensor(n, (1, 8), "float32") for n in "xyz"],
...     [Op("relu_0", "RELU", ("x",), ("y",)), Op("tanh_1", "TANH", ("y",), ("z",))], ["x"], ["z"])
>>> H = partition(G, "GPU,CPU").graph
>>> validate_graph(H); [H.nodes[n]["device"] for n in H]
['GPU', 'GPU']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import networkx as nx

from tacopt.fusion.ir import Op, make_graph
from tacopt.partitioner.subgraphs import Partition
from tacopt.partitioner.targets import PartitionError
from tacopt.partitioner.views import FLOAT_SUFFIX, View, float_name

CONVERSION_DEVICE = "CPU"


def chosen_views(
    partition: Partition,
    views: Mapping[str, tuple[View, ...]],
    assignment: Mapping[str, Any],
) -> list[View]:
    """The view each unit runs as, in partition order.

    ``assignment`` maps unit name -> a ``Choice`` (with ``device`` and ``type``) or a
    ``(device, type)`` pair. Raises :class:`PartitionError` for a missing unit or unknown view.
    """
    out = []
    for s in partition.subgraphs:
        if s.name not in assignment:
            raise PartitionError(f"plan has no choice for unit '{s.name}'")
        choice = assignment[s.name]
        key = (choice.device, choice.type) if hasattr(choice, "device") else tuple(choice)
        match = [v for v in views[s.name] if (v.device, v.inference_type) == key]
        if not match:
            raise PartitionError(f"unit '{s.name}' has no view {key[0]}/{key[1]}")
        out.append(match[0])
    return out


def apply_plan(
    G: nx.MultiDiGraph,
    partition: Partition,
    views: Mapping[str, tuple[View, ...]],
    assignment: Mapping[str, Any],
) -> nx.MultiDiGraph:
    """Build the partitioned graph (``G`` is untouched).

    Parameters
    ----------
    G : nx.MultiDiGraph
        The model the partition was made from.
    partition : Partition
    views : Mapping
        unit name -> its views (from :func:`tacopt.partitioner.costing.build_problem`).
    assignment : Mapping
        unit name -> chosen ``Choice`` or ``(device, type)`` (a plan's ``assignment``).

    Returns
    -------
    nx.MultiDiGraph
        A new graph; every op has node attributes ``device`` and ``inference_type``.
    """
    tensors = dict(G.graph["tensors"])
    available = set(G.graph["inputs"]) | {
        n for n, t in tensors.items() if t.is_constant or t.is_variable
    }
    ops: list[Op] = []
    tags: dict[str, tuple[str, str]] = {}

    def convert(want: str) -> None:
        if want.endswith(FLOAT_SUFFIX) and want[: -len(FLOAT_SUFFIX)] in available:
            src, kind = want[: -len(FLOAT_SUFFIX)], "DEQUANTIZE"
        elif float_name(want) in available:
            src, kind = float_name(want), "QUANTIZE"
        else:
            raise PartitionError(f"tensor '{want}' is read before it is produced")
        name = f"{kind.lower()}__{want}"
        ops.append(Op(name, kind, (src,), (want,)))
        tags[name] = (CONVERSION_DEVICE, "FLOAT")
        available.add(want)

    for view in chosen_views(partition, views, assignment):
        H = view.graph
        tensors.update(H.graph["tensors"])
        for t in H.graph["inputs"]:
            if t not in available:
                convert(t)
        for n, data in H.nodes(data=True):
            ops.append(data["op"])
            tags[n] = (view.device, view.inference_type)
            available.update(data["op"].outputs)
    for t in G.graph["outputs"]:
        if t not in available:
            convert(t)
    used = dict.fromkeys(
        t for op in ops for t in (*op.inputs, *op.outputs, *op.intermediates) if t is not None
    )
    used.update(dict.fromkeys((*G.graph["inputs"], *G.graph["outputs"])))
    out = make_graph(
        G.graph["name"],
        [tensors[t] for t in used],
        ops,
        G.graph["inputs"],
        G.graph["outputs"],
        model=G.graph.get("model"),
        subgraphs=G.graph.get("subgraphs"),
    )
    for n, (device, itype) in tags.items():
        out.nodes[n]["device"] = device
        out.nodes[n]["inference_type"] = itype
    return out
