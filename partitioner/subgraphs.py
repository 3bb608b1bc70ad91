"""Raise target subgraphs: cluster ops of one (device, inference type) without creating cycles.

:func:`raise_subgraphs` proposes a :class:`Partition` (pure data); :func:`extract_subgraph` is
the apply step that cuts one subgraph out as a graph of its own; :func:`validate_partition` is
the independent checker (every op in exactly one subgraph, subgraphs form a DAG).

Clustering merges an op into the subgraph of a producer with the same label (device, inference
type, pinned) whenever the merge leaves the quotient graph acyclic, as torch.fx's
``CapabilityBasedPartitioner`` does; ops need not be adjacent in program order. A merge of
subgraphs ``A -> B`` is refused if another path leads from ``A`` to ``B``. A second pass
merges same-label subgraphs that no path joins (siblings), as TAC does.

TAC's README example (``ADD, MUL, ADD -> PACK`` on ``GPU,CPU``)::

    x0  x1  x2  x3
     \\ /   |   \\ /
     add_0  |   add_2          GPU: {add_0, mul_1, add_2}
       \\    |    |
        mul_1    |
           \\    /
           pack_3              CPU: {pack_3}

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> G = make_graph("g", [Tensor(n, (2,), "float32") for n in "abcd"],
...     [Op("relu_0", "RELU", ("a",), ("b",)), Op("neg_1", "NEG", ("b",), ("c",)),
...      Op("relu_2", "RELU", ("c",), ("d",))], ["a"], ["d"])
>>> ann = {"relu_0": Annotation("GPU", "FLOAT"), "neg_1": Annotation("CPU", "FLOAT"),
...        "relu_2": Annotation("GPU", "FLOAT")}
>>> [s.ops for s in raise_subgraphs(G, ann).subgraphs]
[('relu_0',), ('neg_1',), ('relu_2',)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from tacopt.fusion.ir import make_graph
from tacopt.partitioner.targets import PartitionError


@dataclass(frozen=True, slots=True)
class Annotation:
    """Where an op runs first (TAC's initial placement) and in which inference type."""

    device: str
    inference_type: str
    pinned: bool = False


#: How many earlier same-label subgraphs an unconnected one may join (bounds the search).
_SIBLING_WINDOW = 4


@dataclass(frozen=True, slots=True)
class Subgraph:
    """A set of ops placed together: its initial device and inference type, ops in order."""

    name: str
    device: str
    inference_type: str
    ops: tuple[str, ...]
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class Partition:
    """Subgraphs in a topological order of the quotient graph."""

    subgraphs: tuple[Subgraph, ...]

    def unit_of(self) -> dict[str, str]:
        """op name -> subgraph name."""
        return {op: s.name for s in self.subgraphs for op in s.ops}

    def as_sets(self) -> set[frozenset[str]]:
        """The partition as a set of frozensets of op names (order-free, for comparisons)."""
        return {frozenset(s.ops) for s in self.subgraphs}


def _label(a: Annotation) -> tuple[str, str, bool]:
    return (a.device, a.inference_type, a.pinned)


def raise_subgraphs(G: nx.MultiDiGraph, annotations: Mapping[str, Annotation]) -> Partition:
    """Cluster the ops of ``G`` into subgraphs of one label each, keeping subgraphs acyclic.

    Parameters
    ----------
    G : nx.MultiDiGraph
    annotations : Mapping
        op name -> :class:`~tacopt.partitioner.annotate.Annotation` for every op of ``G``.

    Returns
    -------
    Partition
        Subgraphs named ``subgraph_<i>`` in a topological order.
    """
    order = {n: i for i, n in enumerate(G.nodes)}
    parent = {n: n for n in G.nodes}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    succ: dict[str, set[str]] = {n: set() for n in G.nodes}
    pred: dict[str, set[str]] = {n: set() for n in G.nodes}
    for u, v in G.edges():
        succ[u].add(v)
        pred[v].add(u)

    def reaches(src: str, dst: str, skip_direct: bool) -> bool:
        stack = [s for s in succ[src] if not (skip_direct and s == dst)]
        seen = set(stack)
        while stack:
            x = stack.pop()
            if x == dst:
                return True
            for y in succ[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return False

    def merge(a: str, b: str) -> None:
        parent[b] = a
        for x in succ.pop(b):
            pred[x].discard(b)
            if x != a:
                pred[x].add(a)
                succ[a].add(x)
        for x in pred.pop(b):
            succ[x].discard(b)
            if x != a:
                succ[x].add(a)
                pred[a].add(x)
        succ[a].discard(a)
        pred[a].discard(a)

    for v in G.nodes:
        for u in sorted(set(G.predecessors(v)), key=order.__getitem__):
            if _label(annotations[u]) != _label(annotations[v]):
                continue
            a, b = find(u), find(v)
            if a == b:
                continue
            # u -> v makes a -> b an edge of the quotient; merging is safe iff no other
            # path leads from a to b (it would become a cycle through the merged subgraph).
            if reaches(a, b, skip_direct=True):
                continue
            merge(a, b)

    # Second pass: same-label subgraphs that no path joins merge too (TAC groups the ADD, MUL
    # and ADD of its README example although the second ADD touches neither of the others).
    recent: dict[tuple[str, str, bool], list[str]] = {}
    for root in dict.fromkeys(find(n) for n in G.nodes):
        label = _label(annotations[root])
        for other in reversed(recent.get(label, [])[-_SIBLING_WINDOW:]):
            a = find(other)
            if a != root and not reaches(a, root, False) and not reaches(root, a, False):
                merge(a, root)
                root = a
                break
        recent.setdefault(label, []).append(root)

    members: dict[str, list[str]] = {}
    for n in G.nodes:
        members.setdefault(find(n), []).append(n)
    quotient = nx.DiGraph()
    quotient.add_nodes_from(members)
    quotient.add_edges_from((r, s) for r, outs in succ.items() for s in outs)
    ranked = nx.lexicographical_topological_sort(quotient, key=lambda r: order[members[r][0]])
    subgraphs = []
    for i, root in enumerate(ranked):
        ann = annotations[members[root][0]]
        subgraphs.append(
            Subgraph(
                f"subgraph_{i}", ann.device, ann.inference_type, tuple(members[root]), ann.pinned
            )
        )
    return Partition(tuple(subgraphs))


def op_units(G: nx.MultiDiGraph, annotations: Mapping[str, Annotation]) -> Partition:
    """The ``op`` granularity: every op is its own subgraph, named like the op.

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor("a", (2,), "float32"), Tensor("b", (2,), "float32")],
    ...                [Op("relu_0", "RELU", ("a",), ("b",))], ["a"], ["b"])
    >>> op_units(G, {"relu_0": Annotation("GPU", "FLOAT")}).subgraphs[0].name
    'relu_0'
    """
    return Partition(
        tuple(
            Subgraph(
                n, annotations[n].device, annotations[n].inference_type, (n,), annotations[n].pinned
            )
            for n in G.nodes
        )
    )


def validate_partition(G: nx.MultiDiGraph, partition: Partition) -> None:
    """Check that every op of ``G`` is in exactly one subgraph and the subgraphs form a DAG.

    Raises
    ------
    PartitionError
        Naming the op or subgraph at fault.
    """
    unit: dict[str, str] = {}
    names: set[str] = set()
    for s in partition.subgraphs:
        if s.name in names:
            raise PartitionError(f"subgraph name '{s.name}' is used twice")
        names.add(s.name)
        if not s.ops:
            raise PartitionError(f"subgraph '{s.name}' is empty")
        for op in s.ops:
            if op not in G:
                raise PartitionError(f"subgraph '{s.name}' holds unknown op '{op}'")
            if op in unit:
                raise PartitionError(f"op '{op}' is in both '{unit[op]}' and '{s.name}'")
            unit[op] = s.name
    missing = [n for n in G.nodes if n not in unit]
    if missing:
        raise PartitionError(f"op '{missing[0]}' is in no subgraph")
    quotient = nx.DiGraph()
    quotient.add_nodes_from(names)
    quotient.add_edges_from((unit[u], unit[v]) for u, v in G.edges() if unit[u] != unit[v])
    if not nx.is_directed_acyclic_graph(quotient):
        cycle = nx.find_cycle(quotient)
        raise PartitionError(
            f"subgraphs form a cycle: {' -> '.join(u for u, _ in cycle)} -> {cycle[0][0]}"
        )


def boundary(G: nx.MultiDiGraph, ops: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inputs, outputs) of a set of ops: activations read from outside, and written to outside.

    Inputs are in order of first use; outputs in order of production. Constants and variables
    are not inputs.
    """
    inside = set(ops)
    tensors = G.graph["tensors"]
    produced = {t for n in ops for t in G.nodes[n]["op"].outputs}
    graph_outputs = set(G.graph["outputs"])
    inputs: dict[str, None] = {}
    for n in ops:
        for t in G.nodes[n]["op"].inputs:
            if t is None or t in produced:
                continue
            rec = tensors[t]
            if not rec.is_constant and not rec.is_variable:
                inputs[t] = None
    read_outside = {k for _, v, k in G.out_edges(ops, keys=True) if v not in inside}
    outputs = [
        t for n in ops for t in G.nodes[n]["op"].outputs if t in read_outside or t in graph_outputs
    ]
    return tuple(inputs), tuple(outputs)


def extract_subgraph(G: nx.MultiDiGraph, subgraph: Subgraph) -> nx.MultiDiGraph:
    """Cut ``subgraph`` out of ``G`` as a graph of its own (the apply step; ``G`` is untouched).

    The result's inputs and outputs are the subgraph's boundary tensors (:func:`boundary`); it
    shares tensor records and nested graphs with ``G``.
    """
    tensors = G.graph["tensors"]
    inputs, outputs = boundary(G, subgraph.ops)
    ops = [G.nodes[n]["op"] for n in subgraph.ops]
    names = dict.fromkeys(
        t for op in ops for t in (*op.inputs, *op.outputs, *op.intermediates) if t is not None
    )
    return make_graph(
        subgraph.name,
        [tensors[t] for t in names],
        ops,
        inputs,
        outputs,
        subgraphs=G.graph.get("subgraphs", {}),
    )
