"""The op in another inference type: a single-op graph rebuilt in float32 or int8 with the
quantization TFLite's kernels expect, so one op is measured in every type."""

from __future__ import annotations

from dataclasses import replace

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.measurement.records import MeasureError
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph, ops_of

#: ``--types`` names and the inference types they stand for.
TYPE_NAMES = {"float32": "FLOAT", "int8": "QUANTIZED_INT8"}


#: Ops that are not retyped: their operand types are what they are.
NOT_RETYPED = {
    "QUANTIZE": "type conversion: its operand types define the op",
    "DEQUANTIZE": "type conversion: its operand types define the op",
}


#: Ops with no int8 form synthesised here (a UNIDIRECTIONAL_SEQUENCE_LSTM without peepholes,
#: projection or layer norm has one: :func:`_integer_lstm`).
NO_INT8 = {
    "BIDIRECTIONAL_SEQUENCE_LSTM": "int8 LSTM needs calibrated int16 gate intermediates",
    "LSTM": "int8 LSTM needs calibrated int16 gate intermediates",
    "DIV": "int8 DIV fails on a divisor at its zero point, which random int8 operands draw",
    "SQUARE": "TFLite has no int8 SQUARE kernel",
}


#: (weights input, per-channel axis, bias input) of the ops TFLite quantizes per channel.
_WEIGHTED = {
    "CONV_2D": (1, 0, 2),
    "FULLY_CONNECTED": (1, 0, 2),
    "DEPTHWISE_CONV_2D": (1, 3, 2),
    "TRANSPOSE_CONV": (1, 0, 3),
}


#: Ops whose int8 kernels want one quantization on every activation (data movement, pooling,
#: min / max): the converter gives their inputs and outputs the same scale and zero point.
_SAME_QUANT = frozenset(
    "MAX_POOL_2D AVERAGE_POOL_2D RESHAPE SQUEEZE EXPAND_DIMS TRANSPOSE CONCATENATION PAD PADV2 "
    "MIRROR_PAD SLICE STRIDED_SLICE GATHER GATHER_ND SPLIT SPLIT_V UNPACK PACK DEPTH_TO_SPACE "
    "SPACE_TO_DEPTH BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR "
    "REVERSE_V2 MAXIMUM MINIMUM TILE BROADCAST_TO REDUCE_MAX REDUCE_MIN SELECT SELECT_V2 "
    "EMBEDDING_LOOKUP".split()
)


#: Output quantization TFLite's int8 kernels require (scale, zero point).
_FIXED_OUTPUT = {
    "LOGISTIC": (1 / 256, -128),
    "SOFTMAX": (1 / 256, -128),
    "TANH": (1 / 128, 0),
    "LOG_SOFTMAX": (16 / 256, 127),
}


#: int8 kernels that reject inputs below zero: their inputs get zero point -128.
_POSITIVE_INPUT = frozenset({"RSQRT", "SQRT", "LOG"})


class RetypeError(MeasureError):
    """An op that has no counterpart in the requested inference type (the reason says why)."""


def retype_op(S: nx.MultiDiGraph, inference: str, *, seed: int = 0) -> nx.MultiDiGraph:
    """The single-op graph ``S`` (from :func:`cut_op`, constants filled) as the same op in
    another inference type.

    ``"QUANTIZED_INT8"``: full-integer quantization as TFLite's converter does it: float
    activations become int8 with a plausible per-tensor scale and zero point (seeded; one shared
    quantization for data-movement / pooling ops; the fixed output quantization of LOGISTIC,
    SOFTMAX, TANH, LOG_SOFTMAX), weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED /
    TRANSPOSE_CONV symmetric int8 per output channel, their bias int32 with scale input scale x
    weight scale, other float constants int8 per tensor; a UNIDIRECTIONAL_SEQUENCE_LSTM in the
    kernel's integer form (:func:`_integer_lstm`). ``"FLOAT"``: every quantized tensor is
    dequantized to float32 (constants keep their real values). Integer tensors (shapes, indices)
    are left alone.

    Raises
    ------
    RetypeError
        For ops without a counterpart (type conversions; int8 bidirectional LSTMs, or LSTMs
        with peepholes, projection or layer norm), or when nothing changes.

    Examples
    --------
    >>> from tacopt.cost_models.ops import inference_type
    >>> from tacopt.cost_models.learned.measurement.singleop import cut_op, fill_constants
    >>> S = fill_constants(cut_op(_fc_graph(), "fc_0"), seed=0)
    >>> Q = retype_op(S, "QUANTIZED_INT8")
    >>> [(t.dtype, len(t.quantization.scale)) for t in Q.graph["tensors"].values()]
    [('int8', 1), ('int8', 4), ('int32', 4), ('int8', 1)]
    >>> inference_type(Q, "fc_0"), inference_type(retype_op(Q, "FLOAT"), "fc_0")
    ('QUANTIZED_INT8', 'FLOAT')
    """
    (node, op), *rest = ops_of(S)
    if rest:
        raise MeasureError(f"retype_op: graph '{S.graph['name']}' holds more than one op")
    if op.kind in NOT_RETYPED:
        raise RetypeError(NOT_RETYPED[op.kind])
    if inference == "QUANTIZED_INT8" and op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        return _integer_lstm(S, op, seed=seed)
    if inference == "QUANTIZED_INT8":
        if op.kind in NO_INT8:
            raise RetypeError(NO_INT8[op.kind])
        tensors = _quantized_tensors(S, op, seed=seed)
        new_op = op
    elif inference == "FLOAT":
        tensors = {n: _dequantized(t) for n, t in S.graph["tensors"].items()}
        new_op = replace(op, intermediates=())  # float kernels keep no calibrated intermediates
    else:
        raise RetypeError(f"no synthesised {inference} variant")
    if all(tensors[n] == t for n, t in S.graph["tensors"].items()):
        raise RetypeError("no float or quantized operand: the same op in every type")
    keep = [n for n in S.graph["tensors"] if n not in op.intermediates or new_op.intermediates]
    return make_graph(
        S.graph["name"], [tensors[n] for n in keep], [new_op], S.graph["inputs"], S.graph["outputs"]
    )


def _quantized_tensors(S: nx.MultiDiGraph, op: Op, *, seed: int) -> dict[str, Tensor]:
    tensors: dict[str, Tensor] = S.graph["tensors"]
    rng = np.random.default_rng(seed)
    acts = [
        n
        for n in dict.fromkeys([*(t for t in op.inputs if t), *op.outputs])
        if tensors[n].dtype == "float32" and not tensors[n].is_constant
    ]
    # activations: scales 2^-9 .. 2^-3, zero points -128 .. 32 (what calibrated models show)
    quant = {
        n: Quantization((float(2.0 ** rng.uniform(-9, -3)),), (int(rng.integers(-128, 33)),))
        for n in acts
    }
    if op.kind in _SAME_QUANT and acts:
        quant = {n: quant[acts[0]] for n in acts}
    if op.kind in ("RELU", "RELU6"):  # the converter gives a ReLU's output zero point -128
        quant.update({n: Quantization(quant[n].scale, (-128,)) for n in op.outputs if n in quant})
    if op.kind == "BATCH_MATMUL" and len(op.inputs) > 1 and op.inputs[1] in quant:
        rhs = op.inputs[1]  # XNNPACK runs int8 BATCH_MATMUL only with a symmetric right side
        quant[rhs] = Quantization(quant[rhs].scale, (0,))
    if op.kind in _POSITIVE_INPUT:  # random inputs must stay in the kernel's domain
        quant.update({n: Quantization(quant[n].scale, (-128,)) for n in op.inputs if n in quant})
    if op.kind in _FIXED_OUTPUT:
        fixed = Quantization((_FIXED_OUTPUT[op.kind][0],), (_FIXED_OUTPUT[op.kind][1],))
        quant.update({n: fixed for n in op.outputs if n in quant})
    out = {n: replace(tensors[n], dtype="int8", quantization=q) for n, q in quant.items()}
    w_slot, axis, b_slot = _WEIGHTED.get(op.kind, (-1, 0, -1))
    w_scale: np.ndarray | None = None
    for slot, n in enumerate(op.inputs):
        if n is None or n in out:
            continue
        t = tensors[n]
        if t.dtype != "float32" or not t.is_constant:
            continue
        x = _finite(np.asarray(t.data(), dtype=np.float64))  # masks may hold -inf
        if slot == w_slot and x.ndim > axis:
            moved = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
            w_scale = np.maximum(np.abs(moved).max(axis=1), 1e-8) / 127
            shape = [1] * x.ndim
            shape[axis] = -1
            q = np.clip(np.round(x / w_scale.reshape(shape)), -127, 127).astype(np.int8)
            qp = Quantization(tuple(w_scale.tolist()), (0,) * len(w_scale), axis=axis)
            out[n] = _with_data(t, q, "int8", qp)
        elif op.kind == "PADV2" and slot == 2 and op.outputs[0] in out:
            qo = out[op.outputs[0]].quantization  # the pad value shares the output's quantization
            assert qo is not None
            q = np.clip(np.round(x / qo.scale[0]) + qo.zero_point[0], -128, 127).astype(np.int8)
            out[n] = _with_data(t, q, "int8", qo)
        elif op.kind in ("CONCATENATION", "PACK") and acts:
            # a constant part (a ViT's class token) shares the activations' quantization, as
            # the converter writes it: XNNPACK fails to prepare a concatenation of two scales
            qa = out[acts[0]].quantization
            assert qa is not None
            q = np.clip(np.round(x / qa.scale[0]) + qa.zero_point[0], -128, 127).astype(np.int8)
            out[n] = _with_data(t, q, "int8", qa)
        elif slot != b_slot:
            c_scale = max(float(np.abs(x).max(initial=0.0)), 1e-8) / 127
            q = np.clip(np.round(x / c_scale), -127, 127).astype(np.int8)
            out[n] = _with_data(t, q, "int8", Quantization((c_scale,), (0,)))
    bias = op.inputs[b_slot] if 0 <= b_slot < len(op.inputs) else None
    if bias is not None and w_scale is not None:
        t = tensors[bias]
        if t.dtype == "float32" and t.is_constant:
            x_q = out.get(op.inputs[2 if op.kind == "TRANSPOSE_CONV" else 0] or "")
            in_scale = x_q.quantization.scale[0] if x_q and x_q.quantization else 1.0
            b_scale = np.broadcast_to(in_scale * w_scale, t.shape or (1,))
            q = np.round(np.asarray(t.data(), np.float64) / b_scale).astype(np.int32)
            qp = Quantization(tuple(b_scale.tolist()), (0,) * b_scale.size)
            out[bias] = _with_data(t, q, "int32", qp)
    return {n: out.get(n, t) for n, t in tensors.items()}


#: Input slots of a UNIDIRECTIONAL_SEQUENCE_LSTM: the input-to-gate and recurrent weights
#: (i, f, c, o each), the gate biases, the output and cell states; the rest (peepholes,
#: projection, layer norm) must be absent for :func:`_integer_lstm`.
_LSTM_WEIGHTS, _LSTM_BIASES, _LSTM_STATES = range(1, 9), range(12, 16), (18, 19)
_LSTM_OPTIONAL = (9, 10, 11, 16, 17, 20, 21, 22, 23)


def _integer_lstm(S: nx.MultiDiGraph, op: Op, *, seed: int) -> nx.MultiDiGraph:
    """A float UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite's converter quantizes one fully to
    integers (the kernel's 8x8->16 path): int8 input, output and output state (symmetric), int8
    weights per tensor (symmetric), int32 gate biases of scale input x input-weight scale, an
    int16 cell state of a power-of-two scale, and the five intermediates the kernel reads: the
    four gates' (float and empty, as the converter writes them for an LSTM without layer norm)
    and the hidden state's (int8, its scale). The scales are drawn as
    :func:`_quantized_tensors` draws activations'."""
    tensors: dict[str, Tensor] = dict(S.graph["tensors"])
    slots = list(op.inputs) + [None] * (24 - len(op.inputs))
    if any(slots[i] is not None for i in _LSTM_OPTIONAL) or any(
        slots[i] is None or not tensors[str(slots[i])].is_constant for i in _LSTM_WEIGHTS
    ):
        raise RetypeError("int8 LSTM: only without peepholes, projection or layer norm")
    if tensors[str(slots[0])].dtype != "float32":
        raise RetypeError("int8 LSTM: the op is not float")
    rng = np.random.default_rng(seed)
    s_in, s_out = (float(2.0 ** rng.uniform(-9, -5)) for _ in range(2))
    x, y = str(slots[0]), op.outputs[0]
    tensors[x] = replace(tensors[x], dtype="int8", quantization=Quantization((s_in,), (0,)))
    out_q = Quantization((s_out,), (0,))
    tensors[y] = replace(tensors[y], dtype="int8", quantization=out_q)
    w_scales = []
    for i in _LSTM_WEIGHTS:
        t = tensors[str(slots[i])]
        w = _finite(np.asarray(t.data(), dtype=np.float64))
        scale = max(float(np.abs(w).max(initial=0.0)), 1e-8) / 127
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        tensors[t.name] = _with_data(t, q, "int8", Quantization((scale,), (0,)))
        w_scales.append(scale)
    for gate, i in enumerate(_LSTM_BIASES):
        if slots[i] is None:
            continue
        t = tensors[str(slots[i])]
        b_scale = s_in * w_scales[gate]
        q = np.round(np.asarray(t.data(), np.float64) / b_scale).astype(np.int32)
        tensors[t.name] = _with_data(t, q, "int32", Quantization((b_scale,), (0,)))
    h, c = (str(slots[i]) for i in _LSTM_STATES)
    tensors[h] = replace(tensors[h], dtype="int8", quantization=out_q)
    tensors[c] = replace(tensors[c], dtype="int16", quantization=Quantization((2.0**-11,), (0,)))
    gates = [f"{op.name}_input_to_{g}_intermediate" for g in ("input", "forget", "cell", "output")]
    hidden = f"{op.name}_effective_hidden_scale_intermediate"
    inter = [Tensor(n, (0,), "float32") for n in gates] + [Tensor(hidden, (0,), "int8",
                                                                  quantization=out_q)]  # fmt: skip
    new_op = replace(op, intermediates=tuple(t.name for t in inter))
    return make_graph(
        S.graph["name"], [*tensors.values(), *inter], [new_op], S.graph["inputs"],
        S.graph["outputs"],
    )  # fmt: skip


def _finite(x: np.ndarray) -> np.ndarray:
    ok = x[np.isfinite(x)]
    lo, hi = (float(ok.min()), float(ok.max())) if ok.size else (0.0, 0.0)
    return np.nan_to_num(x, nan=0.0, posinf=hi, neginf=lo)


def _dequantized(t: Tensor) -> Tensor:
    if not t.is_quantized or t.dtype not in ("int8", "uint8", "int16", "int32"):
        return t
    if not t.is_constant:
        return replace(t, dtype="float32", quantization=None)
    q = t.quantization
    assert q is not None
    x = np.asarray(t.data(), dtype=np.float64)
    shape = [1] * x.ndim
    if q.per_channel and x.ndim:
        shape[q.axis] = -1
    scale = np.asarray(q.scale).reshape(shape)
    zp = np.asarray(q.zero_point).reshape(shape)
    return _with_data(t, ((x - zp) * scale).astype(np.float32), "float32", None)


def _with_data(t: Tensor, x: np.ndarray, dtype: str, q: Quantization | None) -> Tensor:
    return replace(t, dtype=dtype, quantization=q, buffer=Buffer.from_bytes(x.tobytes()))


def _fc_graph() -> nx.MultiDiGraph:
    w = Tensor("w", (4, 8), "float32", buffer=Buffer.placeholder(128))
    b = Tensor("b", (4,), "float32", buffer=Buffer.placeholder(16))
    ts = [Tensor("x", (1, 8), "float32"), w, b, Tensor("y", (1, 4), "float32")]
    return make_graph(
        "g", ts, [Op("fc_0", "FULLY_CONNECTED", ("x", "w", "b"), ("y",))], ["x"], ["y"]
    )
