"""Building and querying graphs of the IR (see :mod:`tacopt.fusion.ir` for the invariants).

Examples
--------
>>> from tacopt.fusion.ir.records import Op, Tensor
>>> G = make_graph("g", [Tensor(n, (2,), "float32") for n in "xyz"],
...                [Op("a", "RELU", ("x",), ("y",)), Op("b", "NEG", ("y",), ("z",))], ["x"], ["z"])
>>> producers(G)["y"], consumers(G)["y"], [n for n, _ in ops_of(G)]
('a', ['b'], ['a', 'b'])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import networkx as nx

from tacopt.errors import GraphError
from tacopt.fusion.ir.records import ModelInfo, Op, Tensor


def make_graph(
    name: str,
    tensors: Iterable[Tensor],
    ops: Iterable[Op],
    inputs: Iterable[str],
    outputs: Iterable[str],
    *,
    model: ModelInfo | None = None,
    subgraphs: Mapping[str, nx.MultiDiGraph] | None = None,
) -> nx.MultiDiGraph:
    """Build a graph from records; ops must come in execution order.

    This and :func:`add_op` are the only ways passes create graphs, so edges always agree with
    the ops' inputs and outputs.
    """
    G = nx.MultiDiGraph()
    G.graph["name"] = name
    G.graph["tensors"] = {t.name: t for t in tensors}
    G.graph["inputs"] = tuple(inputs)
    G.graph["outputs"] = tuple(outputs)
    if model is not None:
        G.graph["model"] = model
    if subgraphs is not None:
        G.graph["subgraphs"] = dict(subgraphs)
    producer: dict[str, str] = {}
    for op in ops:
        _add_op(G, op, producer)
    return G


def add_op(G: nx.MultiDiGraph, op: Op) -> None:
    """Append ``op`` to ``G`` (in place) and connect it to the producers of its inputs."""
    _add_op(G, op, producers(G))


def _add_op(G: nx.MultiDiGraph, op: Op, producer: dict[str, str]) -> None:
    if op.name in G:
        raise GraphError(f"graph '{G.graph.get('name')}': duplicate op name '{op.name}'")
    G.add_node(op.name, op=op)
    tensors = G.graph["tensors"]
    for t in dict.fromkeys(i for i in op.inputs if i is not None):
        src = producer.get(t)
        if src is not None:
            G.add_edge(src, op.name, key=t, tensor=tensors[t])
    for t in op.outputs:
        producer[t] = op.name


def producers(G: nx.MultiDiGraph) -> dict[str, str]:
    """Tensor name -> name of the op producing it."""
    return {t: n for n, op in ops_of(G) for t in op.outputs}


def consumers(G: nx.MultiDiGraph) -> dict[str, list[str]]:
    """Tensor name -> names of the ops consuming it, in execution order (each op once)."""
    out: dict[str, list[str]] = {}
    for n, op in ops_of(G):
        for t in dict.fromkeys(i for i in op.inputs if i is not None):
            out.setdefault(t, []).append(n)
    return out


def ops_of(G: nx.MultiDiGraph) -> Iterator[tuple[str, Op]]:
    """(name, op) pairs in execution order."""
    for n, data in G.nodes(data=True):
        yield n, data["op"]


def op_of(G: nx.MultiDiGraph, name: str) -> Op:
    return G.nodes[name]["op"]


def all_graphs(G: nx.MultiDiGraph) -> list[nx.MultiDiGraph]:
    """The main graph followed by its nested graphs in their stored order."""
    return [G, *G.graph.get("subgraphs", {}).values()]


def ir_diff(A: nx.MultiDiGraph, B: nx.MultiDiGraph, *, limit: int = 10) -> list[str]:
    """Human-readable differences between two IRs (empty when they are identical).

    Compares, for the main and every nested graph: ops (name, kind, version, options, inputs,
    outputs, custom options, intermediates) in order, tensor records (constant bytes included),
    inputs and outputs; and the model info. Used by the reader/writer round-trip tests.
    """
    diffs: list[str] = []
    if A.graph.get("model") != B.graph.get("model"):
        diffs.append("model info differs")
    subs_a = [A, *A.graph.get("subgraphs", {}).values()]
    subs_b = [B, *B.graph.get("subgraphs", {}).values()]
    if len(subs_a) != len(subs_b):
        diffs.append(f"{len(subs_a)} vs {len(subs_b)} graphs")
    for GA, GB in zip(subs_a, subs_b):
        name = GA.graph.get("name")
        for key in ("name", "inputs", "outputs"):
            if GA.graph.get(key) != GB.graph.get(key):
                diffs.append(f"graph '{name}': {key} differ")
        ops_a, ops_b = list(ops_of(GA)), list(ops_of(GB))
        if len(ops_a) != len(ops_b):
            diffs.append(f"graph '{name}': {len(ops_a)} vs {len(ops_b)} ops")
        for (_, oa), (_, ob) in zip(ops_a, ops_b):
            if oa != ob:
                diffs.append(f"graph '{name}': op '{oa.name}' differs: {oa} != {ob}")
        ta, tb = GA.graph["tensors"], GB.graph["tensors"]
        if set(ta) != set(tb):
            diffs.append(f"graph '{name}': tensor names differ: {sorted(set(ta) ^ set(tb))[:5]}")
        for t in sorted(set(ta) & set(tb)):
            if ta[t] != tb[t]:
                diffs.append(f"graph '{name}': tensor '{t}' differs: {ta[t]} != {tb[t]}")
        if sorted(GA.edges(keys=True)) != sorted(GB.edges(keys=True)):
            diffs.append(f"graph '{name}': edges differ")
        if len(diffs) >= limit:
            break
    return diffs[:limit]
