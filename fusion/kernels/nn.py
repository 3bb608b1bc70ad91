"""Neural-network kernels: convolutions, matmuls, pools, softmax, normalisation, resize, LSTMs.

Convolutions and pools loop over the kernel taps (at most KH*KW strided views, each a BLAS
matmul or a vector op), which is an im2col done one column block at a time: it never builds the
big patch matrix and keeps a 224x224 MobileNetV2 to a few hundred milliseconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tacopt.fusion.kernels.common import (
    OpCall,
    activate,
    conv_geometry,
    fake_quantize,
    kernel_table,
    pad_hw,
    round_half_away,
    taps,
)

KERNELS, kernel = kernel_table()


def _is_hybrid(call: OpCall, weight_slot: int) -> bool:
    """Float activations with int8 weights: TFLite's dynamic-range ("hybrid") kernels."""
    x, w = call.input_tensors[0], call.input_tensors[weight_slot]
    return (
        x is not None
        and x.dtype in ("float32", "float16")
        and w is not None
        and w.is_quantized
        and w.dtype in ("int8", "uint8")
    )


def hybrid_round(x: np.ndarray, asymmetric: bool = False) -> np.ndarray:
    """What a hybrid kernel sees of a float activation: quantized to int8 per row, dequantized.

    TFLite's dynamic-range kernels quantize each batch row (symmetric, or asymmetric when the
    op asks) before the integer matmul, so the reference does the same to stay within a step.
    """
    rows = x.reshape(-1, x.shape[-1]).astype(np.float32)
    if asymmetric:
        lo = np.minimum(rows.min(axis=1, keepdims=True), 0)
        hi = np.maximum(rows.max(axis=1, keepdims=True), 0)
        scale = np.where(hi > lo, (hi - lo) / 255, 1).astype(np.float32)
        zp = round_half_away(-128 - lo / scale)
        q = np.clip(round_half_away(rows / scale) + zp, -128, 127)
        return ((q - zp) * scale).reshape(x.shape)
    amax = np.abs(rows).max(axis=1, keepdims=True)
    scale = np.where(amax > 0, amax / 127, 1).astype(np.float32)
    q = np.clip(round_half_away(rows / scale), -127, 127)
    return (q * scale).reshape(x.shape)


@kernel("CONV_2D")
def _conv2d(call: OpCall) -> np.ndarray:
    x, w, b = call.input(0), call.input(1), call.optional(2)
    if _is_hybrid(call, 1):
        x = hybrid_round(x, bool(call.option("asymmetric_quantize_inputs", False)))
    n, _, _, c = x.shape
    o, kh, kw, ci = w.shape
    if c % ci:
        raise call.fail(f"input channels {c} not a multiple of filter channels {ci}")
    groups = c // ci
    s, d, oh, ow, pads = conv_geometry(call, x, kh, kw)
    xp = pad_hw(x, pads)
    # One 2-D GEMM per tap (a 4-D matmul would loop over rows in numpy).
    out = np.zeros((n * oh * ow, o), dtype=np.float32)
    og = o // groups
    for i, j, view in taps(xp, kh, kw, oh, ow, s, d):
        cols = view.reshape(-1, c)
        if groups == 1:
            out += cols @ w[:, i, j, :].T
        else:
            for g in range(groups):
                out[:, g * og : (g + 1) * og] += (
                    cols[:, g * ci : (g + 1) * ci] @ w[g * og : (g + 1) * og, i, j, :].T
                )
    out = out.reshape(n, oh, ow, o)
    return out if b is None else out + b


@kernel("DEPTHWISE_CONV_2D")
def _depthwise(call: OpCall) -> np.ndarray:
    x, w, b = call.input(0), call.input(1), call.optional(2)
    _, kh, kw, oc = w.shape
    mult = oc // x.shape[3]
    if mult * x.shape[3] != oc:
        raise call.fail(f"filter channels {oc} not a multiple of input channels {x.shape[3]}")
    if mult > 1:
        x = np.repeat(x, mult, axis=3)  # output channel c*mult + m reads input channel c
    s, d, oh, ow, pads = conv_geometry(call, x, kh, kw)
    xp = pad_hw(x, pads)
    out = np.zeros((x.shape[0], oh, ow, oc), dtype=np.float32)
    for i, j, view in taps(xp, kh, kw, oh, ow, s, d):
        out += view * w[0, i, j]
    return out if b is None else out + b


@kernel("TRANSPOSE_CONV")
def _transpose_conv(call: OpCall) -> np.ndarray:
    shape, w, x, b = call.ints(0), call.input(1), call.input(2), call.optional(3)
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    sh, sw = int(call.option("stride_h", 1)), int(call.option("stride_w", 1))
    padding = str(call.option("padding", "SAME"))
    pads = []
    for out_size, in_size, k, st in ((shape[1], h, kh, sh), (shape[2], wd, kw, sw)):
        total = max((in_size - 1) * st + k - out_size, 0) if padding == "SAME" else 0
        pads.append(total // 2)
    full_h = max((h - 1) * sh + kh, pads[0] + shape[1])
    full_w = max((wd - 1) * sw + kw, pads[1] + shape[2])
    full = np.zeros((n, full_h, full_w, o), dtype=np.float32)
    for i in range(kh):
        for j in range(kw):
            full[:, i : i + (h - 1) * sh + 1 : sh, j : j + (wd - 1) * sw + 1 : sw] += (
                x.reshape(-1, x.shape[3]) @ w[:, i, j, :].T
            ).reshape(n, h, wd, o)
    out = full[:, pads[0] : pads[0] + shape[1], pads[1] : pads[1] + shape[2]]
    return out if b is None else out + b


@kernel("FULLY_CONNECTED")
def _fully_connected(call: OpCall) -> np.ndarray:
    x, w, b = call.input(0), call.input(1), call.optional(2)
    fmt = str(call.option("weights_format", "DEFAULT"))
    if fmt != "DEFAULT":
        raise call.fail(f"weights_format {fmt} is not supported")
    if _is_hybrid(call, 1):
        x = hybrid_round(x, bool(call.option("asymmetric_quantize_inputs", False)))
    k = w.shape[-1]
    y = x.reshape(-1, k) @ w.T
    if b is not None:
        y = y + b
    if call.option("keep_num_dims", False):
        return y.reshape(x.shape[:-1] + (w.shape[0],))
    return y.reshape(call.out_shape) if np.prod(call.out_shape) == y.size else y


@kernel("BATCH_MATMUL")
def _batch_matmul(call: OpCall) -> np.ndarray:
    a, b = call.input(0), call.input(1)
    if call.option("adj_x", False):
        a = np.swapaxes(a, -1, -2)
    if call.option("adj_y", False):
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


# --------------------------------------------------------------------------------------------
# pools
# --------------------------------------------------------------------------------------------


def _pool_geometry(call: OpCall, x: np.ndarray):
    kh, kw = int(call.option("filter_height", 1)), int(call.option("filter_width", 1))
    s, _, oh, ow, pads = conv_geometry(call, x, kh, kw)
    return kh, kw, s, oh, ow, pads


@kernel("MAX_POOL_2D")
def _max_pool(call: OpCall) -> np.ndarray:
    x = call.input(0)
    kh, kw, s, oh, ow, pads = _pool_geometry(call, x)
    xp = pad_hw(x, pads, value=-np.inf)
    out = np.full((x.shape[0], oh, ow, x.shape[3]), -np.inf, dtype=xp.dtype)
    for _, _, view in taps(xp, kh, kw, oh, ow, s, (1, 1)):
        np.maximum(out, view, out=out)
    return out


@kernel("AVERAGE_POOL_2D")
def _average_pool(call: OpCall) -> np.ndarray:
    x = call.input(0)
    kh, kw, s, oh, ow, pads = _pool_geometry(call, x)
    xp = pad_hw(x.astype(np.float32), pads)
    ones = pad_hw(np.ones((1,) + x.shape[1:3] + (1,), np.float32), pads)
    total = np.zeros((x.shape[0], oh, ow, x.shape[3]), np.float32)
    count = np.zeros((1, oh, ow, 1), np.float32)
    for (_, _, view), (_, _, one) in zip(
        taps(xp, kh, kw, oh, ow, s, (1, 1)), taps(ones, kh, kw, oh, ow, s, (1, 1))
    ):
        total += view
        count += one
    return total / count  # TFLite averages over the taps inside the input only


@kernel("L2_POOL_2D")
def _l2_pool(call: OpCall) -> np.ndarray:
    x = call.input(0)
    kh, kw, s, oh, ow, pads = _pool_geometry(call, x)
    xp = pad_hw(np.square(x), pads)
    ones = pad_hw(np.ones((1,) + x.shape[1:3] + (1,), np.float32), pads)
    total = sum(v for _, _, v in taps(xp, kh, kw, oh, ow, s, (1, 1)))
    count = sum(v for _, _, v in taps(ones, kh, kw, oh, ow, s, (1, 1)))
    return np.sqrt(total / count)


# --------------------------------------------------------------------------------------------
# normalisation
# --------------------------------------------------------------------------------------------


@kernel("SOFTMAX")
def _softmax(call: OpCall) -> np.ndarray:
    x = call.input(0).astype(np.float32)
    z = (x - x.max(axis=-1, keepdims=True)) * np.float32(call.option("beta", 1.0))
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@kernel("LOG_SOFTMAX")
def _log_softmax(call: OpCall) -> np.ndarray:
    x = call.input(0).astype(np.float32)
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


@kernel("L2_NORMALIZATION")
def _l2_norm(call: OpCall) -> np.ndarray:
    x = call.input(0)
    norm = np.sqrt(np.square(x).sum(axis=-1, keepdims=True))
    return x / np.maximum(norm, np.float32(1e-6))


@kernel("LOCAL_RESPONSE_NORMALIZATION")
def _lrn(call: OpCall) -> np.ndarray:
    x = call.input(0)
    r = int(call.option("radius", 5))
    bias, alpha, beta = (
        float(call.option(k, v)) for k, v in (("bias", 1), ("alpha", 1), ("beta", 0.5))
    )
    sq = np.pad(np.square(x), ((0, 0),) * 3 + ((r, r),))
    acc = sum(sq[..., i : i + x.shape[3]] for i in range(2 * r + 1))
    return x / np.power(bias + alpha * acc, beta)


# --------------------------------------------------------------------------------------------
# resize
# --------------------------------------------------------------------------------------------


def _resize_scale(call: OpCall, n_in: int, n_out: int) -> float:
    if call.option("align_corners", False) and n_out > 1:
        return (n_in - 1) / (n_out - 1)
    return n_in / n_out


@kernel("RESIZE_BILINEAR")
def _resize_bilinear(call: OpCall) -> np.ndarray:
    x = call.input(0).astype(np.float32)
    size = call.ints(1)
    half = bool(call.option("half_pixel_centers", False))
    out = x
    for axis, n_out in ((1, size[0]), (2, size[1])):
        n_in = x.shape[axis]
        scale = _resize_scale(call, n_in, n_out)
        pos = np.arange(n_out, dtype=np.float64)
        src = (pos + 0.5) * scale - 0.5 if half else pos * scale
        lo = np.maximum(np.floor(src), 0).astype(np.int64)
        hi = np.minimum(np.ceil(src), n_in - 1).astype(np.int64)
        frac = (src - lo).astype(np.float32)
        shape = [1, 1, 1, 1]
        shape[axis] = n_out
        frac = frac.reshape(shape)
        out = np.take(out, lo, axis=axis) * (1 - frac) + np.take(out, hi, axis=axis) * frac
    return out


@kernel("RESIZE_NEAREST_NEIGHBOR")
def _resize_nearest(call: OpCall) -> np.ndarray:
    x = call.input(0)
    size = call.ints(1)
    align = bool(call.option("align_corners", False))
    offset = 0.5 if call.option("half_pixel_centers", False) else 0.0
    out = x
    for axis, n_out in ((1, size[0]), (2, size[1])):
        n_in = x.shape[axis]
        src = (np.arange(n_out) + offset) * _resize_scale(call, n_in, n_out)
        idx = round_half_away(src) if align else np.floor(src)
        idx = np.clip(idx.astype(np.int64), 0, n_in - 1)
        out = np.take(out, idx, axis=axis)
    return out


# --------------------------------------------------------------------------------------------
# LSTM
# --------------------------------------------------------------------------------------------

_GATES = ("input", "forget", "cell", "output")


def _layer_norm(x: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-8)


def _lstm(
    call: OpCall,
    x: np.ndarray,
    slots: dict[str, int | None],
    h: np.ndarray,
    c: np.ndarray,
    reverse: bool,
) -> np.ndarray:
    """Run one LSTM direction over batch-major ``x`` [B, T, I]; return the outputs [B, T, O]."""

    def get(key: str) -> Any:
        slot = slots.get(key)
        return None if slot is None else call.optional(slot)

    if call.option("diagonal_recurrent_tensors", False):
        raise call.fail("diagonal recurrent weights are not supported")
    act = str(call.option("fused_activation_function", "TANH"))
    cell_clip = float(call.option("cell_clip", 0.0) or 0.0)
    proj_clip = float(call.option("proj_clip", 0.0) or 0.0)
    cifg = get("input_to_input") is None
    w_in = {g: get(f"input_to_{g}") for g in _GATES}
    w_rec = {g: get(f"recurrent_to_{g}") for g in _GATES}
    peep = {g: get(f"cell_to_{g}") for g in ("input", "forget", "output")}
    bias = {g: get(f"{g}_bias") for g in _GATES}
    norm = {g: get(f"{g}_layer_norm") for g in _GATES}
    proj_w, proj_b = get("projection_weights"), get("projection_bias")
    hybrid = _is_hybrid(call, slots["input_to_forget"] or 2)
    asym = bool(call.option("asymmetric_quantize_inputs", False))
    gates = [g for g in _GATES if not (cifg and g == "input")]
    # Full-integer LSTMs keep h in int8 and c in int16: both saturate at their tensors' ranges.
    h_tensor, c_tensor = (
        call.input_tensors[slot] if slot is not None and slot < len(call.inputs) else None
        for slot in (slots.get("h_state"), slots.get("c_state"))
    )
    # Input contributions for all steps at once: one matmul per gate.
    xs = hybrid_round(x, asym) if hybrid else x
    pre_x = {g: xs @ w_in[g].T for g in gates}
    steps = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
    out = np.zeros(x.shape[:2] + (h.shape[-1],), dtype=np.float32)

    def gate(g: str, t: int, hq: np.ndarray, cell: np.ndarray) -> np.ndarray:
        z = pre_x[g][:, t] + hq @ w_rec[g].T
        if g != "cell" and peep.get(g) is not None:
            z = z + cell * peep[g]
        if norm[g] is not None:
            z = _layer_norm(z) * norm[g]
        if bias[g] is not None:
            z = z + bias[g]
        return activate(z, act, call.op.name) if g == "cell" else 1 / (1 + np.exp(-z))

    for t in steps:
        hq = hybrid_round(h, asym) if hybrid else h
        f = gate("forget", t, hq, c)
        i = 1 - f if cifg else gate("input", t, hq, c)
        g = gate("cell", t, hq, c)
        c = f * c + i * g
        if cell_clip > 0:
            c = np.clip(c, -cell_clip, cell_clip)
        c = fake_quantize(c, c_tensor)
        o = gate("output", t, hq, c)
        h = o * activate(c, act, call.op.name)
        if proj_w is not None:
            h = (hybrid_round(h, asym) if hybrid else h) @ proj_w.T
            if proj_b is not None:
                h = h + proj_b
            if proj_clip > 0:
                h = np.clip(h, -proj_clip, proj_clip)
        h = fake_quantize(h, h_tensor)
        out[:, t] = h
    return out


def _lstm_slots(base: int, proj: int, norm: int | None, state: int) -> dict[str, int | None]:
    slots: dict[str, int | None] = {"h_state": state, "c_state": state + 1}
    for k, g in enumerate(_GATES):
        slots[f"input_to_{g}"] = base + k
        slots[f"recurrent_to_{g}"] = base + 4 + k
        slots[f"{g}_bias"] = base + 11 + k
        slots[f"{g}_layer_norm"] = None if norm is None else norm + k
    for k, g in enumerate(("input", "forget", "output")):
        slots[f"cell_to_{g}"] = base + 8 + k
    slots["projection_weights"], slots["projection_bias"] = proj, proj + 1
    return slots


def _state(call: OpCall, slot: int, batch: int, size: int) -> np.ndarray:
    s = call.optional(slot)
    return np.zeros((batch, size), np.float32) if s is None else s.reshape(batch, size)


@kernel("UNIDIRECTIONAL_SEQUENCE_LSTM")
def _unidirectional_lstm(call: OpCall) -> np.ndarray:
    x = call.input(0)
    time_major = bool(call.option("time_major", False))
    xb = np.swapaxes(x, 0, 1) if time_major else x
    n_cell = call.input(2).shape[0]
    proj = call.optional(16)
    n_out = n_cell if proj is None else proj.shape[0]
    slots = _lstm_slots(1, 16, 20 if len(call.inputs) > 20 else None, 18)
    h0 = _state(call, 18, xb.shape[0], n_out)
    c0 = _state(call, 19, xb.shape[0], n_cell)
    out = _lstm(call, xb, slots, h0, c0, reverse=False)
    return np.swapaxes(out, 0, 1) if time_major else out


@kernel("BIDIRECTIONAL_SEQUENCE_LSTM")
def _bidirectional_lstm(call: OpCall) -> list[np.ndarray]:
    x = call.input(0)
    if call.optional(39) is not None:
        raise call.fail("auxiliary inputs are not supported")
    time_major = bool(call.option("time_major", True))
    xb = np.swapaxes(x, 0, 1) if time_major else x
    outs = []
    for base, proj, state in ((1, 16, 35), (18, 33, 37)):
        n_cell = call.input(base + 1).shape[0]
        p = call.optional(proj)
        n_out = n_cell if p is None else p.shape[0]
        h0 = _state(call, state, xb.shape[0], n_out)
        c0 = _state(call, state + 1, xb.shape[0], n_cell)
        y = _lstm(call, xb, _lstm_slots(base, proj, None, state), h0, c0, reverse=base != 1)
        outs.append(np.swapaxes(y, 0, 1) if time_major else y)
    if call.option("merge_outputs", False):
        return [np.concatenate(outs, axis=-1)]
    return outs


@kernel("LSTM")
def _lstm_step(call: OpCall) -> np.ndarray:
    x = call.input(0)
    if str(call.option("kernel_type", "FULL")) != "FULL":
        raise call.fail("only the FULL LSTM kernel is supported")
    n_cell = call.input(2).shape[0]
    proj = call.optional(16)
    n_out = n_cell if proj is None else proj.shape[0]
    slots = _lstm_slots(1, 16, 20 if len(call.inputs) > 20 else None, 18)
    h0 = _state(call, 18, x.shape[0], n_out)
    c0 = _state(call, 19, x.shape[0], n_cell)
    return _lstm(call, x[:, None, :], slots, h0, c0, reverse=False)[:, 0]


def _rnn(call: OpCall, x: np.ndarray) -> np.ndarray:
    """Basic RNN over batch-major ``x`` [B, T, I]: h = act(x W^T + h R^T + b)."""
    w, r, b = call.input(1), call.input(2), call.input(3)
    h = _state(call, 4, x.shape[0], w.shape[0])
    act = str(call.option("fused_activation_function", "TANH"))
    if _is_hybrid(call, 1):
        x = hybrid_round(x, bool(call.option("asymmetric_quantize_inputs", False)))
    pre_x = x @ w.T + b
    out = np.zeros(x.shape[:2] + (w.shape[0],), np.float32)
    for t in range(x.shape[1]):
        h = activate(pre_x[:, t] + h @ r.T, act, call.op.name)
        out[:, t] = h
    return out


@kernel("RNN")
def _rnn_step(call: OpCall) -> np.ndarray:
    return _rnn(call, call.input(0)[:, None, :])[:, 0]


@kernel("UNIDIRECTIONAL_SEQUENCE_RNN")
def _sequence_rnn(call: OpCall) -> np.ndarray:
    x = call.input(0)
    if call.option("time_major", False):
        return np.swapaxes(_rnn(call, np.swapaxes(x, 0, 1)), 0, 1)
    return _rnn(call, x)
