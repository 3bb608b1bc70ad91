"""Device lowerings: rewrite ops a device lacks into ops it has, keeping the numerics.

The table :data:`LOWERINGS` lists ``(name, kind, predicate, rewrite)`` rows, tinygrad-style. A
rewrite returns a :class:`Rewrite` (new ops and tensors) whose last ops write the original op's
outputs, so consumers are untouched. :func:`lower_graph` applies rows to every op a ``supports``
predicate rejects, again on what they produce, until the ops are supported or no row applies
(TAC's GPU / NNAPI transformations: ``LowerPackIntoConcatReshape``, ``UnrollSplit(V)``,
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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from tacopt.fusion.ir import FLOAT_DTYPES, Buffer, Op, Quantization, Tensor, make_graph, ops_of

Supports = Callable[[nx.MultiDiGraph, str], bool]


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Ops replacing one op (in execution order) and the tensors they add."""

    ops: tuple[Op, ...]
    tensors: tuple[Tensor, ...]


@dataclass(frozen=True, slots=True)
class Lowering:
    """A row of the lowering table: rewrite ``kind`` ops for which ``applies`` holds."""

    name: str
    kind: str
    applies: Callable[[dict[str, Tensor], Op], bool]
    rewrite: Callable[[dict[str, Tensor], Op], Rewrite]


# --------------------------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------------------------


class _Emitter:
    """Collects the ops and tensors of one rewrite, naming them after the op they replace."""

    def __init__(self, tensors: dict[str, Tensor], op: Op, tag: str) -> None:
        self.tensors, self.op, self.tag = tensors, op, tag
        self.ops: list[Op] = []
        self.new: list[Tensor] = []

    def tensor(self, like: str, shape: Sequence[int], suffix: str, **changes) -> str:
        name = f"{self.op.name}/{self.tag}/{suffix}"
        rec = self.tensors[like]
        self.new.append(
            replace(
                rec,
                name=name,
                shape=tuple(shape),
                shape_signature=None,
                buffer=None,
                is_variable=False,
                **changes,
            )
        )
        return name

    def const(self, values: np.ndarray, suffix: str, **changes) -> str:
        values = np.ascontiguousarray(values)
        name = f"{self.op.name}/{self.tag}/{suffix}"
        self.new.append(
            Tensor(
                name,
                tuple(values.shape),
                str(values.dtype),
                buffer=Buffer.from_bytes(values),
                **changes,
            )
        )
        return name

    def emit(
        self,
        kind: str,
        inputs: Sequence[str | None],
        outputs: Sequence[str],
        options: dict | None = None,
    ) -> None:
        name = f"{self.op.name}__{self.tag}{len(self.ops)}"
        self.ops.append(Op(name, kind, tuple(inputs), tuple(outputs), options or {}))

    def reshape(self, src: str, shape: Sequence[int], out: str | None = None) -> str:
        out = out or self.tensor(src, shape, f"reshape{len(self.ops)}")
        shape_const = self.const(np.array(shape, np.int32), f"shape{len(self.ops)}")
        self.emit("RESHAPE", (src, shape_const), (out,))
        return out

    def result(self) -> Rewrite:
        return Rewrite(tuple(self.ops), tuple(self.new))


def _shape(tensors: dict[str, Tensor], name: str) -> tuple[int, ...]:
    return tensors[name].shape


def _static(tensors: dict[str, Tensor], op: Op) -> bool:
    names = [t for t in (*op.inputs, *op.outputs) if t is not None]
    return all(
        -1 not in (tensors[t].shape_signature or ()) and all(d >= 0 for d in tensors[t].shape)
        for t in names
    )


def _required(op: Op) -> tuple[str, ...]:
    """All of ``op``'s inputs, none of them omitted (:class:`GraphError` otherwise)."""
    return tuple(op.input(i) for i in range(len(op.inputs)))


def _const_values(tensors: dict[str, Tensor], name: str | None) -> np.ndarray | None:
    buffer = None if name is None else tensors[name].buffer
    if name is None or not tensors[name].is_constant or buffer is None or buffer.is_placeholder:
        return None
    return np.asarray(tensors[name].data()).reshape(-1)


def _is_float(tensors: dict[str, Tensor], op: Op) -> bool:
    return all(tensors[t].dtype in FLOAT_DTYPES for t in op.outputs)


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _act(op: Op) -> str:
    return op.options.get("fused_activation_function", "NONE")


# --------------------------------------------------------------------------------------------
# the rewrites
# --------------------------------------------------------------------------------------------


def _pack_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    return _static(tensors, op)


def _pack(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "pack")
    shape = _shape(tensors, op.input(0))
    axis = _axis(int(op.options.get("axis", 0)), len(shape) + 1)
    expanded = shape[:axis] + (1,) + shape[axis:]
    parts = [e.reshape(t, expanded) for t in _required(op)]
    e.emit("CONCATENATION", parts, op.outputs, {"axis": axis, "fused_activation_function": "NONE"})
    return e.result()


def _split_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    if not _static(tensors, op):
        return False
    if op.kind == "SPLIT":
        return _const_values(tensors, op.inputs[0]) is not None
    return all(_const_values(tensors, t) is not None for t in op.inputs[1:3])


def _split(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    if op.kind == "SPLIT":
        value = op.input(1)
        axis_values = _const_values(tensors, op.inputs[0])
    else:
        value = op.input(0)
        axis_values = _const_values(tensors, op.inputs[2])
    assert axis_values is not None, "checked by _split_applies"
    shape = _shape(tensors, value)
    axis = _axis(int(axis_values[0]), len(shape))
    sizes = [_shape(tensors, t)[axis] for t in op.outputs]
    e = _Emitter(tensors, op, "split")
    start = 0
    for i, (out, size) in enumerate(zip(op.outputs, sizes)):
        begin = np.zeros(len(shape), np.int32)
        begin[axis] = start
        extent = np.array(shape, np.int32)
        extent[axis] = size
        e.emit("SLICE", (value, e.const(begin, f"begin{i}"), e.const(extent, f"size{i}")), (out,))
        start += size
    return e.result()


def _sub_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    return _is_float(tensors, op)


def _sub(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "sub")
    a, b = _required(op)
    dtype = np.dtype(tensors[op.outputs[0]].dtype)
    neg = e.tensor(b, _shape(tensors, b), "neg")
    e.emit(
        "MUL",
        (b, e.const(np.array([-1], dtype), "minus_one")),
        (neg,),
        {"fused_activation_function": "NONE"},
    )
    e.emit(
        "ADD",
        (a, neg),
        op.outputs,
        {"fused_activation_function": _act(op), "pot_scale_int16": True},
    )
    return e.result()


def _neg(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "neg")
    dtype = np.dtype(tensors[op.outputs[0]].dtype)
    e.emit(
        "MUL",
        (op.inputs[0], e.const(np.array([-1], dtype), "minus_one")),
        op.outputs,
        {"fused_activation_function": "NONE"},
    )
    return e.result()


def _squared_difference(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "sqdiff")
    diff = e.tensor(op.outputs[0], _shape(tensors, op.outputs[0]), "diff")
    e.emit(
        "SUB", op.inputs, (diff,), {"fused_activation_function": "NONE", "pot_scale_int16": True}
    )
    e.emit("MUL", (diff, diff), op.outputs, {"fused_activation_function": "NONE"})
    return e.result()


def _rank_below_4(tensors: dict[str, Tensor], op: Op) -> bool:
    return len(_shape(tensors, op.outputs[0])) < 4 and _static(tensors, op)


def _slice_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    return _rank_below_4(tensors, op) and all(
        _const_values(tensors, t) is not None for t in op.inputs[1:3]
    )


def _pad4(shape: Sequence[int]) -> tuple[int, ...]:
    return (1,) * (4 - len(shape)) + tuple(shape)


def _slice(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "slice4d")
    x, begin, size = _required(op)
    lead = 4 - len(_shape(tensors, x))
    x4 = e.reshape(x, _pad4(_shape(tensors, x)))
    begin4 = np.concatenate([np.zeros(lead), _const_values(tensors, begin)]).astype(np.int32)
    size4 = np.concatenate([np.ones(lead), _const_values(tensors, size)]).astype(np.int32)
    out = op.outputs[0]
    y4 = e.tensor(out, _pad4(_shape(tensors, out)), "y4")
    e.emit("SLICE", (x4, e.const(begin4, "begin"), e.const(size4, "size")), (y4,))
    e.reshape(y4, _shape(tensors, out), out)
    return e.result()


def _concat(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "concat4d")
    out = op.outputs[0]
    rank = len(_shape(tensors, out))
    axis = _axis(int(op.options.get("axis", 0)), rank) + 4 - rank
    parts = [e.reshape(t, _pad4(_shape(tensors, t))) for t in _required(op)]
    y4 = e.tensor(out, _pad4(_shape(tensors, out)), "y4")
    e.emit("CONCATENATION", parts, (y4,), {"axis": axis, "fused_activation_function": _act(op)})
    e.reshape(y4, _shape(tensors, out), out)
    return e.result()


def _fc_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    w = op.input(1)
    if not _static(tensors, op) or not tensors[w].is_constant or len(_shape(tensors, w)) != 2:
        return False
    if op.options.get("weights_format", "DEFAULT") != "DEFAULT":
        return False
    x = tensors[op.input(0)]
    # Hybrid FCs (float input, int8 weights) have no CONV_2D counterpart.
    return (x.dtype in FLOAT_DTYPES) == (tensors[w].dtype in FLOAT_DTYPES)


def _fc(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "fc")
    x, w = op.input(0), op.input(1)
    bias = op.inputs[2] if len(op.inputs) > 2 else None
    out_ch, depth = _shape(tensors, w)
    rows = math.prod(_shape(tensors, x)) // depth
    x4 = e.reshape(x, (rows, 1, 1, depth))
    # Same bytes, same layout: an [O, K] matrix is an [O, 1, 1, K] filter.
    e.new.append(
        replace(
            tensors[w],
            name=f"{op.name}/fc/filter",
            shape=(out_ch, 1, 1, depth),
            shape_signature=None,
        )
    )
    filt = e.new[-1].name
    if bias is None:
        bias = _zero_bias(e, tensors, x, w, out_ch)
    out = op.outputs[0]
    y4 = e.tensor(out, (rows, 1, 1, out_ch), "y4")
    e.emit(
        "CONV_2D",
        (x4, filt, bias),
        (y4,),
        {
            "padding": "VALID",
            "stride_w": 1,
            "stride_h": 1,
            "fused_activation_function": _act(op),
            "dilation_w_factor": 1,
            "dilation_h_factor": 1,
        },
    )
    e.reshape(y4, _shape(tensors, out), out)
    return e.result()


def _zero_bias(e: _Emitter, tensors: dict[str, Tensor], x: str, w: str, n: int) -> str:
    if tensors[w].dtype in FLOAT_DTYPES:
        return e.const(np.zeros(n, np.float32), "bias")

    xq, wq = tensors[x].quantization, tensors[w].quantization
    assert xq is not None and wq is not None, "an integer FC has quantized input and weights"
    xs, ws = xq.scale, wq.scale
    scales = tuple(float(xs[0] * s) for s in (ws if len(ws) == n else ws * n))
    return e.const(np.zeros(n, np.int32), "bias", quantization=Quantization(scales, (0,) * n, 0))


def _mean_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    x = op.input(0)
    axes = _const_values(tensors, op.inputs[1])
    if axes is None or len(_shape(tensors, x)) != 4 or not _static(tensors, op):
        return False
    return sorted(_axis(int(a), 4) for a in axes) == [1, 2]


def _mean(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "mean")
    x, out = op.input(0), op.outputs[0]
    n, h, w, c = _shape(tensors, x)
    requant = tensors[x].is_quantized and tensors[x].quantization != tensors[out].quantization
    pooled_q = tensors[x].quantization if requant else tensors[out].quantization
    keep = bool(op.options.get("keep_dims", False))
    direct = keep and not requant
    pooled = out if direct else e.tensor(out, (n, 1, 1, c), "pooled", quantization=pooled_q)
    e.emit(
        "AVERAGE_POOL_2D",
        (x,),
        (pooled,),
        {
            "padding": "VALID",
            "stride_w": 1,
            "stride_h": 1,
            "filter_width": w,
            "filter_height": h,
            "fused_activation_function": "NONE",
        },
    )
    if requant:
        # An int8 pool keeps its input's scale; requantize to the MEAN's output scale.
        target = out if keep else e.tensor(out, (n, 1, 1, c), "requant")
        e.emit("QUANTIZE", (pooled,), (target,))
        pooled = target
    if not direct and pooled != out:
        e.reshape(pooled, _shape(tensors, out), out)
    return e.result()


def _unfusable(tensors: dict[str, Tensor], op: Op) -> bool:
    out = tensors[op.outputs[0]] if op.outputs else None
    return out is not None and out.dtype == "float32" and not out.is_quantized


def _unfuse(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    """The primitive ops fusion made ``op`` from (fusion's own unfusing, used as a lowering)."""
    from tacopt.fusion.unfuse import unfuse

    names = list(dict.fromkeys([*(t for t in op.inputs if t is not None), *op.outputs]))
    inputs = [t for t in names if t not in op.outputs and not tensors[t].is_constant]
    alone = make_graph(op.name, [tensors[t] for t in names], [op], inputs, op.outputs)
    expanded = unfuse(alone)
    added = tuple(t for name, t in expanded.graph["tensors"].items() if name not in tensors)
    return Rewrite(tuple(data["op"] for _, data in expanded.nodes(data=True)), added)


def _always(tensors: dict[str, Tensor], op: Op) -> bool:
    return True


#: Fused kinds (made by :func:`tacopt.fusion.fuse.fuse`) a device may lack, lowered by unfusing.
UNFUSABLE_KINDS = ("HARD_SWISH", "GELU", "CUSTOM:Swish", "CUSTOM:LayerNorm")

#: The lowering table, tried in order for an op its device does not support.
LOWERINGS: tuple[Lowering, ...] = (
    Lowering("pack_to_concat", "PACK", _pack_applies, _pack),
    Lowering("split_to_slices", "SPLIT", _split_applies, _split),
    Lowering("split_v_to_slices", "SPLIT_V", _split_applies, _split),
    Lowering("sub_to_add", "SUB", _sub_applies, _sub),
    Lowering("neg_to_mul", "NEG", _sub_applies, _neg),
    Lowering("squared_difference_to_mul", "SQUARED_DIFFERENCE", _sub_applies, _squared_difference),
    Lowering("slice_to_4d", "SLICE", _slice_applies, _slice),
    Lowering("concat_to_4d", "CONCATENATION", _rank_below_4, _concat),
    Lowering("fully_connected_to_conv", "FULLY_CONNECTED", _fc_applies, _fc),
    Lowering("mean_to_average_pool", "MEAN", _mean_applies, _mean),
    # fused ops a device lacks go back to the primitive ops fusion made them from, so the
    # picker weighs "fused on one device" against "unfused on another"
    *(Lowering(f"unfuse_{kind.lower()}", kind, _unfusable, _unfuse) for kind in UNFUSABLE_KINDS),
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
