"""Device lowerings: rewrite ops a device lacks into ops it has, keeping the numerics.

The table :data:`LOWERINGS` lists ``(name, kind, predicate, rewrite)`` rows, tinygrad-style. A
rewrite returns fusion's :class:`~tacopt.fusion.rules.base.Rewrite` (the one rewrite record of
fusion rules and device lowerings: the op it removes, new ops and tensors) whose last ops write the
original op's outputs, so consumers are untouched. The rewrites themselves are in
:mod:`tacopt.partitioner.lowerings.rewrites`. :func:`lower_graph` applies rows to every op a
``supports`` predicate rejects, again on what they produce, until the ops are supported or no
row applies (TAC's GPU / NNAPI transformations: ``LowerPackIntoConcatReshape``, ``UnrollSplit(V)``,
``SubToAdd``, ``SquaredDifference``, ``PadSlice``, ``PadConcat``, ``FullyConnectedToConv``,
``ReduceMeanToAvgPool`` + ``InsertRequantForReduceMean``; plus NEG -> MUL(-1)).

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> G = make_graph("g", [Tensor(n, (1, 4), "float32") for n in "abc"],
...                [Op("sub_0", "SUB", ("a", "b"), ("c",), {"fused_activation_function": "NONE"})],
...                ["a", "b"], ["c"])
>>> H, used = lower_graph(G, lambda H, n: H.nodes[n]["op"].kind != "SUB")
>>> [H.nodes[n]["op"].kind for n in H], used
(['MUL', 'ADD'], ('sub_to_add',))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import networkx as nx

from tacopt.fusion.ir import Op, Tensor, make_graph, ops_of
from tacopt.fusion.rules.base import Rewrite
from tacopt.partitioner.lowerings import rewrites as rules

Supports = Callable[[nx.MultiDiGraph, str], bool]


@dataclass(frozen=True, slots=True)
class Lowering:
    """A row of the lowering table: rewrite ``kind`` ops for which ``applies`` holds."""

    name: str
    kind: str
    applies: Callable[[dict[str, Tensor], Op], bool]
    rewrite: Callable[[dict[str, Tensor], Op], Rewrite]


#: Fused kinds (made by :func:`tacopt.fusion.fuse.fuse`) a device may lack, lowered by unfusing.
UNFUSABLE_KINDS = ("HARD_SWISH", "GELU", "CUSTOM:Swish", "CUSTOM:LayerNorm")

#: The lowering table, tried in order for an op its device does not support.
LOWERINGS: tuple[Lowering, ...] = (
    Lowering("pack_to_concat", "PACK", rules.pack_applies, rules.pack),
    Lowering("split_to_slices", "SPLIT", rules.split_applies, rules.split),
    Lowering("split_v_to_slices", "SPLIT_V", rules.split_applies, rules.split),
    Lowering("sub_to_add", "SUB", rules.sub_applies, rules.sub),
    Lowering("neg_to_mul", "NEG", rules.sub_applies, rules.neg),
    Lowering(
        "squared_difference_to_mul", "SQUARED_DIFFERENCE", rules.sub_applies,
        rules.squared_difference,
    ),
    Lowering("slice_to_4d", "SLICE", rules.slice_applies, rules.pad_slice),
    Lowering("concat_to_4d", "CONCATENATION", rules.rank_below_4, rules.pad_concat),
    Lowering("fully_connected_to_conv", "FULLY_CONNECTED", rules.fc_applies, rules.fc),
    Lowering("mean_to_average_pool", "MEAN", rules.mean_applies, rules.mean),
    # fused ops a device lacks go back to the primitive ops fusion made them from, so the
    # picker weighs "fused on one device" against "unfused on another"
    *(
        Lowering(f"unfuse_{kind.lower()}", kind, rules.unfusable, rules.unfuse)
        for kind in UNFUSABLE_KINDS
    ),
)

_MAX_DEPTH = 4


def lower_graph(
    G: nx.MultiDiGraph,
    supports: Supports,
    lowerings: Sequence[Lowering] = LOWERINGS,
) -> tuple[nx.MultiDiGraph, tuple[str, ...]]:
    """Rewrite every op of ``G`` that ``supports`` rejects with the first applicable lowering.

    Parameters
    ----------
    G : nx.MultiDiGraph
        A graph (not modified).
    supports : callable
        ``supports(H, node)`` on the graph being built; ops it accepts are kept as they are.
    lowerings : sequence of Lowering
        The rows to try, in order (a target's own rows first, then :data:`LOWERINGS`).

    Returns
    -------
    (graph, names)
        The lowered graph (``G`` itself when nothing changed) and the names of the lowerings
        used, in order of first use. Ops no row can lower are kept: the caller decides.
    """
    tensors = dict(G.graph["tensors"])
    scratch = nx.MultiDiGraph()
    scratch.graph.update(G.graph, tensors=tensors)
    out: list[Op] = []
    used: dict[str, None] = {}

    def place(op: Op, depth: int) -> None:
        scratch.add_node(op.name, op=op)
        if supports(scratch, op.name) or depth >= _MAX_DEPTH:
            out.append(op)
            return
        for row in lowerings:
            if row.kind == op.kind and row.applies(tensors, op):
                rewrite = row.rewrite(tensors, op)
                scratch.remove_node(op.name)
                used[row.name] = None
                tensors.update((t.name, t) for t in rewrite.tensors)
                for new in rewrite.ops:
                    place(new, depth + 1)
                return
        out.append(op)

    for _, data in G.nodes(data=True):
        place(data["op"], 0)
    if not used:
        return G, ()
    H = make_graph(
        G.graph["name"],
        tensors.values(),
        out,
        G.graph["inputs"],
        G.graph["outputs"],
        model=G.graph.get("model"),
        subgraphs=G.graph.get("subgraphs"),
    )
    return H, tuple(used)


def unfuse_unrunnable(G: nx.MultiDiGraph, runs: Supports) -> tuple[nx.MultiDiGraph, dict[str, int]]:
    """Unfuse the fused ops (:data:`UNFUSABLE_KINDS`) of ``G`` that no device runs as they are.

    A fused op that some device runs stays one op, and every other device's view lowers it (the
    picker weighs the two); one that no device runs would only ever be lowered, and as one unit
    it could not split across devices as its primitive ops can, so it is unfused up front.

    Parameters
    ----------
    G : nx.MultiDiGraph
        A fused graph (not modified).
    runs : callable
        ``runs(H, node)``: whether some device runs the op as it is.

    Returns
    -------
    (graph, counts)
        The graph (``G`` itself when nothing was unfused) and the unfused ops per kind.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (1, 4), "float32") for n in "xy"],
    ...                [Op("hs_0", "HARD_SWISH", ("x",), ("y",))], ["x"], ["y"])
    >>> H, counts = unfuse_unrunnable(G, lambda H, n: H.nodes[n]["op"].kind != "HARD_SWISH")
    >>> [H.nodes[n]["op"].kind for n in H], counts
    (['ADD', 'RELU6', 'MUL', 'MUL'], {'HARD_SWISH': 1})
    """
    rows = tuple(row for row in LOWERINGS if row.name.startswith("unfuse_"))
    counts: dict[str, int] = {}
    for _, op in ops_of(G):
        if op.kind in UNFUSABLE_KINDS and not runs(G, op.name):
            counts[op.kind] = counts.get(op.kind, 0) + 1
    if not counts:
        return G, {}

    def keep(H: nx.MultiDiGraph, node: str) -> bool:
        return H.nodes[node]["op"].kind not in counts or runs(H, node)

    H, _ = lower_graph(G, keep, rows)
    return H, dict(sorted(counts.items()))
