"""The device lowerings' rewrites: each turns one op a device lacks into ops it has.

Each ``x_applies(tensors, op)`` says whether rewrite ``x(tensors, op)`` can lower ``op``; the
rewrite returns a :class:`~tacopt.fusion.rules.base.Rewrite` whose last ops write ``op``'s
outputs. The table that says which rewrite lowers which kind is
:data:`tacopt.partitioner.lowerings.LOWERINGS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from tacopt.fusion.ir import FLOAT_DTYPES, Buffer, Op, Quantization, Tensor, make_graph
from tacopt.fusion.rules.base import Rewrite
from tacopt.fusion.unfuse import unfuse as unfuse_graph

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
        return Rewrite((self.op.name,), tuple(self.ops), tuple(self.new))


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


def pack_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    return _static(tensors, op)


def pack(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "pack")
    shape = _shape(tensors, op.input(0))
    axis = _axis(int(op.options.get("axis", 0)), len(shape) + 1)
    expanded = shape[:axis] + (1,) + shape[axis:]
    parts = [e.reshape(t, expanded) for t in _required(op)]
    e.emit("CONCATENATION", parts, op.outputs, {"axis": axis, "fused_activation_function": "NONE"})
    return e.result()


def split_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    if not _static(tensors, op):
        return False
    if op.kind == "SPLIT":
        return _const_values(tensors, op.inputs[0]) is not None
    return all(_const_values(tensors, t) is not None for t in op.inputs[1:3])


def split(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    if op.kind == "SPLIT":
        value = op.input(1)
        axis_values = _const_values(tensors, op.inputs[0])
    else:
        value = op.input(0)
        axis_values = _const_values(tensors, op.inputs[2])
    assert axis_values is not None, "checked by split_applies"
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


def sub_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    return _is_float(tensors, op)


def sub(tensors: dict[str, Tensor], op: Op) -> Rewrite:
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


def neg(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "neg")
    dtype = np.dtype(tensors[op.outputs[0]].dtype)
    e.emit(
        "MUL",
        (op.inputs[0], e.const(np.array([-1], dtype), "minus_one")),
        op.outputs,
        {"fused_activation_function": "NONE"},
    )
    return e.result()


def squared_difference(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "sqdiff")
    diff = e.tensor(op.outputs[0], _shape(tensors, op.outputs[0]), "diff")
    e.emit(
        "SUB", op.inputs, (diff,), {"fused_activation_function": "NONE", "pot_scale_int16": True}
    )
    e.emit("MUL", (diff, diff), op.outputs, {"fused_activation_function": "NONE"})
    return e.result()


def rank_below_4(tensors: dict[str, Tensor], op: Op) -> bool:
    return len(_shape(tensors, op.outputs[0])) < 4 and _static(tensors, op)


def slice_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    return rank_below_4(tensors, op) and all(
        _const_values(tensors, t) is not None for t in op.inputs[1:3]
    )


def _pad4(shape: Sequence[int]) -> tuple[int, ...]:
    return (1,) * (4 - len(shape)) + tuple(shape)


def pad_slice(tensors: dict[str, Tensor], op: Op) -> Rewrite:
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


def pad_concat(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    e = _Emitter(tensors, op, "concat4d")
    out = op.outputs[0]
    rank = len(_shape(tensors, out))
    axis = _axis(int(op.options.get("axis", 0)), rank) + 4 - rank
    parts = [e.reshape(t, _pad4(_shape(tensors, t))) for t in _required(op)]
    y4 = e.tensor(out, _pad4(_shape(tensors, out)), "y4")
    e.emit("CONCATENATION", parts, (y4,), {"axis": axis, "fused_activation_function": _act(op)})
    e.reshape(y4, _shape(tensors, out), out)
    return e.result()


def fc_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    w = op.input(1)
    if not _static(tensors, op) or not tensors[w].is_constant or len(_shape(tensors, w)) != 2:
        return False
    if op.options.get("weights_format", "DEFAULT") != "DEFAULT":
        return False
    x = tensors[op.input(0)]
    # Hybrid FCs (float input, int8 weights) have no CONV_2D counterpart.
    return (x.dtype in FLOAT_DTYPES) == (tensors[w].dtype in FLOAT_DTYPES)


def fc(tensors: dict[str, Tensor], op: Op) -> Rewrite:
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


def mean_applies(tensors: dict[str, Tensor], op: Op) -> bool:
    x = op.input(0)
    axes = _const_values(tensors, op.inputs[1])
    if axes is None or len(_shape(tensors, x)) != 4 or not _static(tensors, op):
        return False
    return sorted(_axis(int(a), 4) for a in axes) == [1, 2]


def mean(tensors: dict[str, Tensor], op: Op) -> Rewrite:
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


def unfusable(tensors: dict[str, Tensor], op: Op) -> bool:
    out = tensors[op.outputs[0]] if op.outputs else None
    return out is not None and out.dtype == "float32" and not out.is_quantized


def unfuse(tensors: dict[str, Tensor], op: Op) -> Rewrite:
    """The primitive ops fusion made ``op`` from (fusion's own unfusing, used as a lowering)."""
    names = list(dict.fromkeys([*(t for t in op.inputs if t is not None), *op.outputs]))
    inputs = [t for t in names if t not in op.outputs and not tensors[t].is_constant]
    alone = make_graph(op.name, [tensors[t] for t in names], [op], inputs, op.outputs)
    expanded = unfuse_graph(alone)
    added = tuple(t for name, t in expanded.graph["tensors"].items() if name not in tensors)
    ops = tuple(data["op"] for _, data in expanded.nodes(data=True))
    return Rewrite((op.name,), ops, added)


def _always(tensors: dict[str, Tensor], op: Op) -> bool:
    return True
