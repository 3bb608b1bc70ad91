"""The built-in pattern fusions: each a :class:`~tacopt.fusion.rules.base.Rule` in the list
``RULES``.

Order matters only for overlapping patterns: recognizers run before activation folding (so
HARD_SWISH's RELU6 is still visible), folding of fp16 weights before bias folding. The driver
(:func:`tacopt.fusion.fuse.fuse`) repeats the list until nothing changes.

Fused ops that TFLite has no builtin for are CUSTOM ops whose options are a flexbuffer map:

==================  ====================================  ==========================
fused op            inputs                                custom options
==================  ====================================  ==========================
``CUSTOM:Swish``    x                                     ``{}``
``CUSTOM:LayerNorm`` x, gamma                             ``{"epsilon", "axis"}``
==================  ====================================  ==========================

(Their numpy kernels are in :mod:`tacopt.fusion.rules.custom`, imported here.) Rules that
create custom ops have ``builtin=False``; :data:`BUILTIN_RULES` leaves them out so the written model
loads in ai-edge-litert.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from flatbuffers import flexbuffers

from tacopt.fusion.ir import Op, Tensor
from tacopt.fusion.rules import custom as _custom  # noqa: F401  (kernels of the custom kinds below)
from tacopt.fusion.rules.base import Editor, Rewrite, Rule, op_name, replace
from tacopt.fusion.rules.matching import C, P, match

ACTIVATIONS = {"RELU": "RELU", "RELU6": "RELU6", "RELU_N1_TO_1": "RELU_N1_TO_1"}
ACT_PRODUCERS = frozenset(
    "CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED AVERAGE_POOL_2D MAX_POOL_2D ADD SUB MUL DIV".split()
)
#: Output-channel axis of each weighted kind's filter (bias and scale folding).
FILTER_CHANNEL_AXIS = {
    "CONV_2D": 0,
    "DEPTHWISE_CONV_2D": 3,
    "TRANSPOSE_CONV": 0,
    "FULLY_CONNECTED": 0,
}
#: Slot of the filter and the bias of each weighted kind.
FILTER_SLOTS = {
    "CONV_2D": (1, 2),
    "DEPTHWISE_CONV_2D": (1, 2),
    "TRANSPOSE_CONV": (1, 3),
    "FULLY_CONNECTED": (1, 2),
}


def _is_float(ed: Editor, *tensors: str | None) -> bool:
    return all(
        t is None or (ed.tensor(t).dtype == "float32" and not ed.tensor(t).is_quantized)
        for t in tensors
    )


def _same_quantization_kind(ed: Editor, a: str, b: str) -> bool:
    return ed.tensor(a).is_quantized == ed.tensor(b).is_quantized


def _fused(ed: Editor, kind: str, anchor: Op, inputs, outputs, options=None, custom=None) -> Op:
    return Op(
        op_name(ed, kind, anchor),
        kind,
        tuple(inputs),
        tuple(outputs),
        options or {},
        custom_options=custom,
    )


# --------------------------------------------------------------------------------------------
# activation folding
# --------------------------------------------------------------------------------------------


def fold_activation(ed: Editor, act: Op) -> Rewrite | None:
    """RELU / RELU6 / RELU_N1_TO_1 after an op with ``fused_activation_function = NONE``."""
    x = act.input(0)
    prod = ed.producer_of(x)
    if prod is None or prod.kind not in ACT_PRODUCERS or len(prod.outputs) != 1:
        return None
    if prod.options.get("fused_activation_function", "NONE") != "NONE":
        return None
    if ed.sole_reader(x) is None or not _same_quantization_kind(ed, x, act.outputs[0]):
        return None
    new = replace(
        prod, outputs=act.outputs, options={"fused_activation_function": ACTIVATIONS[act.kind]}
    )
    return Rewrite((prod.name, act.name), (new,))


# --------------------------------------------------------------------------------------------
# bias and scale folding
# --------------------------------------------------------------------------------------------


def _per_channel(ed: Editor, c: str, channels: int) -> bool:
    shape = ed.tensor(c).shape
    return (
        math.prod(shape) in (1, channels)
        and all(d == 1 for d in shape[:-1])
        and (not shape or shape[-1] in (1, channels))
    )


def fold_bias_scale(ed: Editor, op: Op) -> Rewrite | None:
    """A per-channel constant ADD / SUB / MUL / DIV after a weighted op, folded into its weights.

    ``conv(x) + c`` adds ``c`` to the bias; ``conv(x) * c`` scales the filter's output channels
    and the bias (batch norm left as MUL + ADD folds in two steps). The ADD's fused activation
    moves to the weighted op.
    """
    act = op.options.get("fused_activation_function", "NONE")
    a, b = op.input(0), op.input(1)
    if ed.is_const(b) and not ed.is_const(a):
        x, c = a, b
    elif ed.is_const(a) and not ed.is_const(b) and op.kind in ("ADD", "MUL"):
        x, c = b, a
    else:
        return None
    prod = ed.producer_of(x)
    if prod is None or prod.kind not in FILTER_SLOTS or ed.sole_reader(x) is None:
        return None
    if prod.options.get("fused_activation_function", "NONE") != "NONE":
        return None
    w_slot, b_slot = FILTER_SLOTS[prod.kind]
    w = prod.input(w_slot)
    bias = prod.inputs[b_slot] if len(prod.inputs) > b_slot else None
    if not ed.is_const(w) or (bias is not None and not ed.is_const(bias)):
        return None
    if not _is_float(ed, x, c, w, bias, op.outputs[0]):
        return None
    channels = ed.tensor(x).shape[-1]
    if not _per_channel(ed, c, channels) or ed.tensor(op.outputs[0]).shape != ed.tensor(x).shape:
        return None
    cv = ed.value(c)
    cvec = None if cv is None else np.broadcast_to(cv.reshape(-1), (channels,)).astype(np.float32)
    bv = np.zeros(channels, np.float32) if bias is None else ed.value(bias)
    tensors: list[Tensor] = []
    inputs = list(prod.inputs) + [None] * (b_slot + 1 - len(prod.inputs))
    if op.kind in ("ADD", "SUB"):
        sign = 1.0 if op.kind == "ADD" else -1.0
        new_b = None if cvec is None or bv is None else bv + sign * cvec
    else:
        if cvec is not None and op.kind == "DIV" and np.any(cvec == 0):
            return None
        scale = None if cvec is None else (cvec if op.kind == "MUL" else 1.0 / cvec)
        wv = ed.value(w)
        new_w = None
        if scale is not None and wv is not None:
            shape = [1] * wv.ndim
            shape[FILTER_CHANNEL_AXIS[prod.kind]] = channels
            new_w = wv * scale.reshape(shape)
        wt = ed.const(f"{w}_scaled", new_w, ed.tensor(w).shape, "float32")
        tensors.append(wt)
        inputs[w_slot] = wt.name
        new_b = None if scale is None or bv is None else bv * scale
        if bias is None:
            new_b = None if scale is None else np.zeros(channels, np.float32)
    if op.kind in ("MUL", "DIV") and bias is None:
        fused = replace(
            prod,
            inputs=tuple(inputs),
            outputs=op.outputs,
            options={"fused_activation_function": act},
        )
        return Rewrite((prod.name, op.name), (fused,), tuple(tensors))
    bt = ed.const(f"{prod.name}_bias", new_b, (channels,), "float32")
    tensors.append(bt)
    inputs[b_slot] = bt.name
    fused = replace(
        prod, inputs=tuple(inputs), outputs=op.outputs, options={"fused_activation_function": act}
    )
    return Rewrite((prod.name, op.name), (fused,), tuple(tensors))


# --------------------------------------------------------------------------------------------
# PAD + VALID conv -> SAME conv; fp16 weights
# --------------------------------------------------------------------------------------------


def _same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def fold_pad(ed: Editor, conv: Op) -> Rewrite | None:
    """PAD (zeros) followed by a VALID conv becomes a SAME conv when the pads equal SAME's."""
    if conv.options.get("padding") != "VALID":
        return None
    pad = ed.producer_of(conv.inputs[0])
    if pad is None or pad.kind not in ("PAD", "PADV2") or ed.sole_reader(pad.outputs[0]) is None:
        return None
    pads = ed.value(pad.inputs[1])
    if pads is None or pads.shape != (4, 2):
        return None
    if pad.kind == "PADV2" and ed.scalar(pad.inputs[2]) != 0.0:
        return None
    x = ed.tensor(pad.input(0))
    if x.is_quantized or len(x.shape) != 4:
        return None  # a quantized PAD pads with its zero point, which SAME may not reproduce
    kh, kw = ed.tensor(conv.input(1)).shape[1:3]
    o = conv.options
    want = [
        (0, 0),
        _same_pads(x.shape[1], kh, o["stride_h"], o.get("dilation_h_factor", 1)),
        _same_pads(x.shape[2], kw, o["stride_w"], o.get("dilation_w_factor", 1)),
        (0, 0),
    ]
    if [tuple(int(v) for v in p) for p in pads] != want:
        return None
    fused = replace(conv, inputs=(pad.inputs[0], *conv.inputs[1:]), options={"padding": "SAME"})
    return Rewrite((pad.name, conv.name), (fused,))


def fold_dequantize(ed: Editor, op: Op) -> Rewrite | None:
    """DEQUANTIZE of a float16 constant becomes a float32 constant (fp16 weights)."""
    src = ed.tensor(op.input(0))
    if not src.is_constant or src.dtype != "float16" or ed.is_output(op.outputs[0]):
        return None
    v = ed.value(src.name)
    out = ed.tensor(op.outputs[0])
    const = ed.const(out.name, None if v is None else v.astype(np.float32), out.shape, "float32")
    const = Tensor(out.name, out.shape, "float32", out.shape_signature, buffer=const.buffer)
    return Rewrite((op.name,), (), (const,))


# --------------------------------------------------------------------------------------------
# recognizers
# --------------------------------------------------------------------------------------------


def _alternatives(*choices):
    return list(itertools.product(*choices))


_RELU6_X_PLUS_3 = (P("RELU6", P("ADD", "x", 3.0)), P("ADD", "x", 3.0, act="RELU6"))
HARD_SWISH_PATTERNS = [
    p
    for r in _RELU6_X_PLUS_3
    for p in (
        P("MUL", "x", P("MUL", r, 1 / 6)),
        P("MUL", P("MUL", "x", r), 1 / 6),
        P("DIV", P("MUL", "x", r), 6.0),
    )
]

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_CUBES = (P("MUL", P("MUL", "x", "x"), "x"), P("POW", "x", 3.0))
_TANH_INNER = [
    P("TANH", P("MUL", P("ADD", "x", P("MUL", cube, 0.044715)), _SQRT_2_OVER_PI)) for cube in _CUBES
]
ERF_KINDS = ("CUSTOM:Erf", "CUSTOM:FlexErf")
_ERF_INNER = [
    P(ERF_KINDS, P("MUL", "x", 1 / math.sqrt(2))),
    P(ERF_KINDS, P("DIV", "x", math.sqrt(2))),
]


def _gelu_forms(inner):
    return [
        f
        for t in inner
        for f in (
            P("MUL", P("MUL", "x", 0.5), P("ADD", t, 1.0)),
            P("MUL", "x", P("MUL", P("ADD", t, 1.0), 0.5)),
            P("MUL", P("MUL", "x", P("ADD", t, 1.0)), 0.5),
        )
    ]


GELU_PATTERNS = [(True, p) for p in _gelu_forms(_TANH_INNER)] + [
    (False, p) for p in _gelu_forms(_ERF_INNER)
]

_MEAN_KEEP = {"keep_dims": True}
LAYER_NORM_PATTERN = P(
    "ADD",
    P(
        "MUL",
        "x",
        P(
            "MUL",
            P(
                "RSQRT",
                P(
                    "ADD",
                    P(
                        "MEAN",
                        P(
                            "SQUARED_DIFFERENCE",
                            "x",
                            P("MEAN", "x", C("axes"), opts=_MEAN_KEEP, bind="m"),
                        ),
                        C("axes2"),
                        opts=_MEAN_KEEP,
                    ),
                    C("eps"),
                ),
            ),
            C("gamma"),
            bind="g",
        ),
    ),
    P("MUL", P("NEG", "m"), "g"),
)

SOFTMAX_PATTERN = P(
    "DIV",
    P("EXP", P("SUB", "x", P("REDUCE_MAX", "x", C("ax1"), opts=_MEAN_KEEP)), bind="e"),
    P("SUM", "e", C("ax2"), opts=_MEAN_KEEP),
)

_SQUARES = (P("MUL", "x", "x"), P("SQUARE", "x"))
L2_PATTERNS = [
    p
    for sq in _SQUARES
    for s in (P("SUM", sq, C("ax"), opts=_MEAN_KEEP),)
    for p in (
        P("MUL", "x", P("RSQRT", P("MAXIMUM", s, C("eps")))),
        P("MUL", "x", P("RSQRT", s)),
        P("DIV", "x", P("SQRT", P("MAXIMUM", s, C("eps")))),
        P("DIV", "x", P("SQRT", s)),
    )
]
LEAKY_PATTERN = P("MAXIMUM", "x", P("MUL", "x", C("alpha")))


def _last_axis(ed: Editor, axes: str, x: str) -> bool:
    v = ed.value(axes)
    rank = len(ed.tensor(x).shape)
    return v is not None and v.size == 1 and int(v.reshape(-1)[0]) % rank == rank - 1


def recognize_hard_swish(ed: Editor, op: Op) -> Rewrite | None:
    """x * relu6(x + 3) / 6 -> HARD_SWISH."""
    for pat in HARD_SWISH_PATTERNS:
        m = match(ed, pat, op.outputs[0])
        if m and _is_float(ed, m.env["x"]):
            new = _fused(ed, "HARD_SWISH", op, [m.env["x"]], op.outputs)
            return Rewrite(m.ops, (new,))
    return None


def recognize_gelu(ed: Editor, op: Op) -> Rewrite | None:
    """The tanh and erf forms of GELU -> GELU(approximate=True / False)."""
    for approximate, pat in GELU_PATTERNS:
        m = match(ed, pat, op.outputs[0])
        if m and _is_float(ed, m.env["x"]):
            new = _fused(ed, "GELU", op, [m.env["x"]], op.outputs, {"approximate": approximate})
            return Rewrite(m.ops, (new,))
    return None


def recognize_swish(ed: Editor, op: Op) -> Rewrite | None:
    """x * LOGISTIC(x) -> CUSTOM:Swish."""
    m = match(ed, P("MUL", "x", P("LOGISTIC", "x")), op.outputs[0])
    if m is None or not _is_float(ed, m.env["x"]):
        return None
    new = _fused(ed, "CUSTOM:Swish", op, [m.env["x"]], op.outputs, custom=flexbuffers.Dumps({}))
    return Rewrite(m.ops, (new,))


def recognize_layer_norm(ed: Editor, op: Op) -> Rewrite | None:
    """Keras' LayerNormalization lowering over the last axis -> CUSTOM:LayerNorm(x, gamma)."""
    m = match(ed, LAYER_NORM_PATTERN, op.outputs[0])
    if m is None:
        return None
    x, gamma = m.env["x"], m.env["gamma"]
    eps = ed.scalar(m.env["eps"])
    channels = ed.tensor(x).shape[-1]
    if eps is None or not eps > 0 or not _is_float(ed, x, gamma):
        return None
    if not (_last_axis(ed, m.env["axes"], x) and _last_axis(ed, m.env["axes2"], x)):
        return None
    if not _per_channel(ed, gamma, channels):
        return None
    opts = {"epsilon": float(eps), "axis": -1}
    new = _fused(ed, "CUSTOM:LayerNorm", op, [x, gamma], op.outputs, custom=flexbuffers.Dumps(opts))
    return Rewrite(m.ops, (new,))


def recognize_softmax(ed: Editor, op: Op) -> Rewrite | None:
    """exp(x - max(x)) / sum(exp(...)) over the last axis -> SOFTMAX(beta=1)."""
    m = match(ed, SOFTMAX_PATTERN, op.outputs[0])
    if m is None or not _is_float(ed, m.env["x"]):
        return None
    if not (_last_axis(ed, m.env["ax1"], m.env["x"]) and _last_axis(ed, m.env["ax2"], m.env["x"])):
        return None
    return Rewrite(m.ops, (_fused(ed, "SOFTMAX", op, [m.env["x"]], op.outputs, {"beta": 1.0}),))


def recognize_l2_normalization(ed: Editor, op: Op) -> Rewrite | None:
    """x / sqrt(max(sum(x^2), eps)) over the last axis -> L2_NORMALIZATION (eps <= 1e-6)."""
    for pat in L2_PATTERNS:
        m = match(ed, pat, op.outputs[0])
        if (
            m is None
            or not _is_float(ed, m.env["x"])
            or not _last_axis(ed, m.env["ax"], m.env["x"])
        ):
            continue
        eps = ed.scalar(m.env["eps"]) if "eps" in m.env else 0.0
        if eps is None or not 0 <= eps <= 1e-6:
            continue
        opts = {"fused_activation_function": "NONE"}
        return Rewrite(m.ops, (_fused(ed, "L2_NORMALIZATION", op, [m.env["x"]], op.outputs, opts),))
    return None


def recognize_leaky_relu(ed: Editor, op: Op) -> Rewrite | None:
    """max(x, alpha * x) with 0 <= alpha <= 1 -> LEAKY_RELU (scalar) or PRELU (per channel)."""
    m = match(ed, LEAKY_PATTERN, op.outputs[0])
    if m is None or not _is_float(ed, m.env["x"]):
        return None
    alpha = ed.value(m.env["alpha"])
    if alpha is None or not np.all((alpha >= 0) & (alpha <= 1)):
        return None
    x = m.env["x"]
    if np.all(alpha == alpha.reshape(-1)[0]):
        opts = {"alpha": float(alpha.reshape(-1)[0])}
        return Rewrite(m.ops, (_fused(ed, "LEAKY_RELU", op, [x], op.outputs, opts),))
    return Rewrite(m.ops, (_fused(ed, "PRELU", op, [x, m.env["alpha"]], op.outputs),))


RULES: list[Rule] = [
    Rule("fold_dequantize", frozenset({"DEQUANTIZE"}), fold_dequantize),
    Rule("hard_swish", frozenset({"MUL", "DIV"}), recognize_hard_swish),
    Rule("gelu", frozenset({"MUL"}), recognize_gelu),
    Rule("layer_norm", frozenset({"ADD"}), recognize_layer_norm, builtin=False),
    Rule("softmax", frozenset({"DIV"}), recognize_softmax),
    Rule("l2_normalization", frozenset({"MUL", "DIV"}), recognize_l2_normalization),
    Rule("leaky_relu", frozenset({"MAXIMUM"}), recognize_leaky_relu),
    Rule("swish", frozenset({"MUL"}), recognize_swish, builtin=False),
    Rule("fold_pad", frozenset({"CONV_2D", "DEPTHWISE_CONV_2D"}), fold_pad),
    Rule("fold_bias_scale", frozenset({"ADD", "SUB", "MUL", "DIV"}), fold_bias_scale),
    Rule("fold_activation", frozenset(ACTIVATIONS), fold_activation),
]
BUILTIN_RULES: list[Rule] = [r for r in RULES if r.builtin]
