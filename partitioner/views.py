"""Alternative views: every subgraph as it would run on each device and inference type.

For each unit (a raised subgraph, or one op at ``op`` granularity) :func:`enumerate_views`
clones the unit for every device of the user's list in the unit's own inference type, and, for
a quantized unit, in FLOAT as well (:func:`float_view`: activations and weights dequantized).
Each clone is lowered for its device (:func:`tacopt.partitioner.lowerings.lower_graph`); a clone
that still holds an op its device cannot run is dropped, never the CPU one. Pinned units only get
views on their pinned device (a pin fixes the device, not the type: a quantized unit pinned to a
float-only device runs there in float).

Activation tensors of a view are named by the format they travel in: a quantized tensor ``t``
keeps its name in its own format and is called ``t + FLOAT_SUFFIX`` in a float view, so
:mod:`tacopt.partitioner.apply` can tell where a conversion (QUANTIZE / DEQUANTIZE) is needed.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> from tacopt.partitioner.annotate import annotate_targets
>>> from tacopt.partitioner.subgraphs import raise_subgraphs
>>> from tacopt.partitioner.targets import resolve_devices
>>> ts = [Tensor(n, (1, 4), "float32") for n in ("a", "b")] + [Tensor("c", (2, 1, 4), "float32")]
>>> G = make_graph("g", ts, [Op("pack_0", "PACK", ("a", "b"), ("c",), {"axis": 0})],
...                ["a", "b"], ["c"])
>>> targets = resolve_devices("GPU,CPU")
>>> part = raise_subgraphs(G, annotate_targets(G, targets))
>>> [(v.device, v.lowerings) for v in enumerate_views(G, part, targets)[0].views]
[('CPU', ()), ('GPU', ('pack_to_concat', 'concat_to_4d'))]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from tacopt.errors import TacoptError
from tacopt.fusion.ir import Buffer, Tensor, make_graph, ops_of
from tacopt.partitioner.lowerings import LOWERINGS, lower_graph
from tacopt.partitioner.subgraphs import Partition, Subgraph, extract_subgraph
from tacopt.partitioner.targets import Target

FLOAT_SUFFIX = "__float"
_QUANTIZED_DTYPES = frozenset({"int8", "uint8"})
#: Ops that change the format themselves; a unit holding one has no float view.
_FORMAT_OPS = frozenset({"QUANTIZE", "DEQUANTIZE"})


@dataclass(frozen=True, slots=True)
class View:
    """One way to run a unit: its graph on ``device`` as ``inference_type``, lowerings used."""

    unit: str
    device: str
    inference_type: str
    graph: nx.MultiDiGraph
    lowerings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UnitViews:
    """A unit and its views, the initial (annotated) one first when it survived."""

    subgraph: Subgraph
    views: tuple[View, ...]


def is_quantized_activation(t: Tensor) -> bool:
    """An int8 / uint8 activation with quantization parameters (what a float view converts)."""
    return t.dtype in _QUANTIZED_DTYPES and t.is_quantized and not t.is_constant


def float_name(name: str) -> str:
    """The name of tensor ``name`` in a float view of a quantized unit."""
    return name + FLOAT_SUFFIX


def float_view(S: nx.MultiDiGraph) -> nx.MultiDiGraph | None:
    """``S`` with quantized activations and weights in float32, or None if it has no float form.

    Quantized activations ``t`` become float32 tensors ``float_name(t)``; quantized constants
    are dequantized (placeholders stay placeholders, four bytes per element). Units holding a
    QUANTIZE / DEQUANTIZE op, int8 state variables or int8 activations without quantization have
    no float view.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Quantization, Tensor, make_graph
    >>> q = Quantization((0.1,), (0,))
    >>> S = make_graph("s", [Tensor("x", (4,), "int8", quantization=q),
    ...                      Tensor("y", (4,), "int8", quantization=q)],
    ...                [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
    >>> F = float_view(S)
    >>> F.graph["inputs"], F.graph["tensors"]["y__float"].dtype
    (('x__float',), 'float32')
    """
    tensors = S.graph["tensors"]
    renamed: dict[str, Tensor] = {}
    for name, t in tensors.items():
        if (
            t.dtype in _QUANTIZED_DTYPES
            and not t.is_constant
            and (t.is_variable or not t.is_quantized)
        ):
            return None  # int8 state (LSTM cells) or unquantized int8: no float counterpart
        if is_quantized_activation(t):
            renamed[name] = Tensor(float_name(name), t.shape, "float32", t.shape_signature)
        elif t.is_constant and t.is_quantized:
            dequantized = _dequantized_constant(t)
            if dequantized is None:
                return None  # packed (int4) weights: no element-wise float counterpart
            renamed[name] = dequantized
    ops = []
    for op in (data["op"] for _, data in S.nodes(data=True)):
        if op.kind in _FORMAT_OPS:
            return None
        ops.append(
            replace(
                op,
                inputs=tuple(
                    None if i is None else renamed.get(i, tensors[i]).name for i in op.inputs
                ),
                outputs=tuple(renamed.get(o, tensors[o]).name for o in op.outputs),
            )
        )
    kept = [t for name, t in tensors.items() if name not in renamed]
    return make_graph(
        S.graph["name"],
        [*kept, *renamed.values()],
        ops,
        [renamed[t].name if t in renamed else t for t in S.graph["inputs"]],
        [renamed[t].name if t in renamed else t for t in S.graph["outputs"]],
        subgraphs=S.graph.get("subgraphs"),
    )


def _dequantized_constant(t: Tensor) -> Tensor | None:
    """The float32 counterpart of a quantized constant (its parameters passed validate_graph)."""
    name = float_name(t.name)
    if t.buffer is None or t.buffer.is_placeholder:
        buffer = Buffer.placeholder(4 * t.num_elements)
    else:
        q = t.quantization
        assert q is not None, "only quantized constants are dequantized"
        values = t.data()
        if values.shape != tuple(t.shape):
            return None  # packed or sparse storage: values are not one per element
        shape = [1] * len(t.shape)
        if shape and q.per_channel:
            shape[q.axis] = -1
        scale = np.asarray(q.scale, np.float64).reshape(shape or ())
        zero = np.asarray(q.zero_point, np.float64).reshape(shape or ())
        real = (np.asarray(values, np.float64) - zero) * scale
        buffer = Buffer.from_bytes(real.astype(np.float32))
    return Tensor(name, t.shape, "float32", t.shape_signature, buffer=buffer)


def view_weight_bytes(view: View) -> int:
    """Bytes of the constant tensors (weights) the ops of ``view`` read, in the view's types.

    Each constant counts once, at its element count times its dtype's size (a float view's
    dequantized weights at four bytes an element); this is the memory the view holds on its
    device for the whole run.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> w = Tensor("w", (4, 4), "float32", buffer=Buffer.placeholder(64))
    >>> G = make_graph("g", [Tensor("x", (1, 4), "float32"), w, Tensor("y", (1, 4), "float32")],
    ...                [Op("fc_0", "FULLY_CONNECTED", ("x", "w"), ("y",))], ["x"], ["y"])
    >>> view_weight_bytes(View("u", "GPU", "FLOAT", G))
    64
    """
    H = view.graph
    tensors = H.graph["tensors"]
    names = {i for _, data in H.nodes(data=True) for i in data["op"].inputs if i is not None}
    constants = [tensors[n] for n in sorted(names) if n in tensors and tensors[n].is_constant]
    return sum(t.priced_nbytes for t in constants)


#: The lowering name a view of a unit's unfused form carries (fusion regions back to the
#: original ops, :func:`unfused_form`).
UNFUSED = "unfused_form"


def fusion_regions(F: nx.MultiDiGraph, original: nx.MultiDiGraph) -> list[tuple[str, ...]]:
    """Groups of ops of the fused graph ``F`` that stand for other kinds of ops of ``original``.

    Ops that share an ``origin`` index (:func:`tacopt.fusion.fuse.fuse`) form one group; a
    group is kept when one of its ops has a kind none of its original ops has (an LSTM that was
    a WHILE loop, a HARD_SWISH that was ADD / RELU6 / MUL), not when an op only absorbed others
    (a CONV_2D with its activation). Groups in ``F``'s order.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> from dataclasses import replace
    >>> G = make_graph("g", [Tensor(n, (1, 4), "float32") for n in "xyz"],
    ...     [Op("a", "LOGISTIC", ("x",), ("y",)), Op("b", "MUL", ("x", "y"), ("z",))], ["x"], ["z"])
    >>> F = make_graph("f", [Tensor(n, (1, 4), "float32") for n in "xz"],
    ...     [replace(Op("s", "CUSTOM:Swish", ("x",), ("z",)), origin=(0, 1))], ["x"], ["z"])
    >>> fusion_regions(F, G)
    [('s',)]
    """
    kinds = [op.kind for _, op in ops_of(original)]
    by_index: dict[int, list[str]] = {}
    for name, op in ops_of(F):
        for i in op.origin:
            by_index.setdefault(i, []).append(name)
    # union the ops that share an origin index
    parent = {name: name for name, _ in ops_of(F)}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for names in by_index.values():
        for other in names[1:]:
            parent[root(other)] = root(names[0])
    groups: dict[str, list[str]] = {}
    for name, _ in ops_of(F):
        groups.setdefault(root(name), []).append(name)
    out = []
    for members in groups.values():
        origin = {i for n in members for i in F.nodes[n]["op"].origin}
        if not origin or max(origin) >= len(kinds):
            continue
        was = {kinds[i] for i in origin}
        if any(F.nodes[n]["op"].kind not in was for n in members):
            out.append(tuple(members))
    return out


def unfused_form(
    S: nx.MultiDiGraph,
    F: nx.MultiDiGraph,
    original: nx.MultiDiGraph,
    regions: Sequence[tuple[str, ...]],
) -> nx.MultiDiGraph | None:
    """Unit ``S`` (cut from ``F``) with each fusion region inside it replaced by the original
    ops it stands for, or None when no region lies inside it or the swap does not fit (an
    original op reads a tensor the unit does not have, or a boundary output goes missing).
    """
    inside = [r for r in regions if all(n in S for n in r)]
    if not inside:
        return None
    originals = [(n, op) for n, op in ops_of(original)]
    swapped = {n for r in inside for n in r}
    ops: list = []
    tensors = dict(S.graph["tensors"])
    orig_tensors = original.graph["tensors"]
    for n in S:
        if n not in swapped:
            ops.append(S.nodes[n]["op"])
            continue
        region = next(r for r in inside if n in r)
        if n != region[0]:
            continue  # the region's original ops go where its first op was
        for i in sorted({i for m in region for i in F.nodes[m]["op"].origin}):
            op = originals[i][1]
            ops.append(op)
            for t in (*op.inputs, *op.outputs, *op.intermediates):
                if t is not None and t not in tensors:
                    tensors[t] = orig_tensors[t]
    produced = {t for op in ops for t in op.outputs}
    available = produced | set(S.graph["inputs"])
    for op in ops:
        for t in op.inputs:
            if t is not None and t not in available and not tensors[t].is_constant:
                return None  # the original ops read something the unit does not hold
    if not set(S.graph["outputs"]) <= produced | set(S.graph["inputs"]):
        return None
    used = {t for op in ops for t in (*op.inputs, *op.outputs, *op.intermediates) if t}
    subgraphs = {**(original.graph.get("subgraphs") or {}), **(S.graph.get("subgraphs") or {})}
    try:
        return make_graph(
            S.graph["name"],
            [tensors[t] for t in tensors if t in used],
            ops,
            S.graph["inputs"],
            S.graph["outputs"],
            subgraphs=subgraphs,
        )
    except TacoptError:
        return None


def enumerate_views(
    G: nx.MultiDiGraph,
    partition: Partition,
    targets: Sequence[Target],
    *,
    original: nx.MultiDiGraph | None = None,
    regions: Sequence[tuple[str, ...]] = (),
) -> tuple[UnitViews, ...]:
    """Every runnable view of every unit of ``partition``.

    Parameters
    ----------
    G : nx.MultiDiGraph
        The model graph (not modified).
    partition : Partition
        The units (raised subgraphs or single ops).
    targets : sequence of Target
        The user's devices; must include the CPU.
    original, regions : optional
        The model before fusion and :func:`fusion_regions` of ``G``: a unit holding a whole
        region also gets views of its unfused form (:func:`unfused_form`, lowering name
        ``unfused_form``), so that fusing never removes a plan the model as it is had.

    Returns
    -------
    tuple of UnitViews
        In the partition's order; within a unit, the annotated (device, type) first, then the
        others by device order and type.
    """
    out = []
    for s in partition.subgraphs:
        S = extract_subgraph(G, s)
        types = [s.inference_type]
        if s.inference_type in ("QUANTIZED_INT8", "QUANTIZED_UINT8"):
            types.append("FLOAT")
        views = _views_of(s, S, targets, types)
        alt = None if original is None else unfused_form(S, G, original, regions)
        if alt is not None:
            views += [replace(view, lowerings=(UNFUSED, *view.lowerings))
                      for view in _views_of(s, alt, targets, types)]  # fmt: skip
        views.sort(key=lambda v: (v.device, v.inference_type) != (s.device, s.inference_type))
        out.append(UnitViews(s, tuple(views)))
    return tuple(out)


def _views_of(
    s: Subgraph, S: nx.MultiDiGraph, targets: Sequence[Target], types: Sequence[str]
) -> list[View]:
    """The runnable views of unit ``s`` with ops ``S`` on each target and inference type (the
    float form of ``S`` built once, when a type needs it)."""
    bases: dict[str, nx.MultiDiGraph | None] = {s.inference_type: S}
    views = []
    for target in targets:
        if s.pinned and target.name != s.device:
            continue
        for itype in types:
            if itype not in bases:
                bases[itype] = float_view(S)
            view = lowered_view(s, bases[itype], target, itype)
            if view is not None:
                views.append(view)
    return views


def lowered_view(
    s: Subgraph, base: nx.MultiDiGraph | None, target: Target, itype: str
) -> View | None:
    """Unit ``s``'s view on ``target`` in ``itype``: ``base`` lowered until the target runs every
    op; None when there is no ``base`` or a lowered op still is not supported."""
    if base is None:
        return None

    def supports(H: nx.MultiDiGraph, node: str) -> bool:
        return target.supports(H, node, itype)

    H, used = lower_graph(base, supports, (*target.lowerings, *LOWERINGS))
    if not all(supports(H, n) for n in H):
        return None
    return View(s.name, target.name, itype, H, used)
