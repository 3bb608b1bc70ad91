"""Exact integer paths of the int8 / uint8 GEMM ops, as TFLite's builtin kernels compute them.

For CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED with quantized input, weights and output:

1. accumulate ``sum((q_in - zp_in) * (q_w - zp_w)) + bias`` exactly (the integer-valued GEMM
   runs in float64, exact while sums stay below 2**53: int8 products summed over fewer than
   2**38 terms);
2. requantize with TFLite's fixed-point multiplier: the real multiplier
   ``in_scale * w_scale / out_scale`` (per output channel) becomes a Q31 integer and a shift
   (``QuantizeMultiplier``), applied with one rounding (``TFLITE_SINGLE_ROUNDING``);
3. add the output zero point and clamp to the fused activation's quantized range.

These kernels are ``raw``: they see and return stored integers. The executor uses them only
when every one of those tensors is int8 / uint8 and quantized (see :mod:`tacopt.fusion.executor`).
"""

from __future__ import annotations

import math

import numpy as np

from tacopt.fusion.ir import Tensor, numpy_dtype
from tacopt.fusion.kernels.common import Kernel, OpCall, conv_geometry, pad_hw, taps

_INT32_MIN = -(2**31)


def quantize_multiplier(m: float) -> tuple[int, int]:
    """(Q31 multiplier, shift) with ``m ~= multiplier * 2**(shift - 31)``, as TFLite rounds it.

    Examples
    --------
    >>> quantize_multiplier(0.5), quantize_multiplier(0.0)
    ((1073741824, 0), (0, 0))
    """
    if m == 0:
        return 0, 0
    frac, shift = math.frexp(m)
    q = int(math.floor(abs(frac) * 2**31 + 0.5)) * (1 if frac >= 0 else -1)  # round half away
    if q == 2**31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def multiply_by_quantized_multiplier(x: np.ndarray, q: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """TFLite's ``MultiplyByQuantizedMultiplier`` in its single-rounding form, in int64.

    ``(x * q + 2**(30 - shift)) >> (31 - shift)``: one rounding, ties toward +inf. LiteRT is
    built with ``TFLITE_SINGLE_ROUNDING`` (the double-rounding gemmlowp form differs by one step
    on about 0.1 % of the outputs of a typical int8 conv; measured against ai-edge-litert 2.3).

    Examples
    --------
    >>> multiply_by_quantized_multiplier(np.array([7, -7]), np.array(1 << 30), np.array(0))
    array([ 4, -3])
    """
    x, q, shift = (np.asarray(a, dtype=np.int64) for a in (x, q, shift))
    total = 31 - shift
    y = (x * q + (np.int64(1) << (total - 1))) >> total
    return np.clip(y, _INT32_MIN, 2**31 - 1)


def activation_range(call: OpCall, out: Tensor) -> tuple[int, int]:
    """Quantized clamp bounds of the op's fused activation (``CalculateActivationRange``)."""
    info = np.iinfo(numpy_dtype(out.dtype))
    qp = out.quantization
    assert qp is not None
    scale, zp = qp.scale[0], qp.zero_point[0] if qp.zero_point else 0

    def q(v: float) -> int:
        r = v / scale
        return zp + int(math.floor(abs(r) + 0.5)) * (1 if r >= 0 else -1)

    act = str(call.option("fused_activation_function", "NONE"))
    lo, hi = int(info.min), int(info.max)
    if act == "RELU":
        lo = max(lo, q(0.0))
    elif act == "RELU6":
        lo, hi = max(lo, q(0.0)), min(hi, q(6.0))
    elif act == "RELU_N1_TO_1":
        lo, hi = max(lo, q(-1.0)), min(hi, q(1.0))
    elif act == "RELU_0_TO_1":
        lo, hi = max(lo, q(0.0)), min(hi, q(1.0))
    elif act != "NONE":
        raise call.fail(f"fused activation {act} has no integer kernel")
    return lo, hi


def _zero_point(t: Tensor) -> int:
    assert t.quantization is not None
    return int(t.quantization.zero_point[0]) if t.quantization.zero_point else 0


def _requantize(call: OpCall, acc: np.ndarray, multipliers: list[float]) -> np.ndarray:
    out = call.output_tensors[0]
    qs = [quantize_multiplier(m) for m in multipliers]
    q = np.array([a for a, _ in qs], np.int64)
    shift = np.array([b for _, b in qs], np.int64)
    y = multiply_by_quantized_multiplier(acc, q, shift) + _zero_point(out)
    lo, hi = activation_range(call, out)
    return np.clip(y, lo, hi).astype(numpy_dtype(out.dtype))


def _accumulator(call: OpCall) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Zero-point-corrected input and weights as integer-valued float64, and the int64 bias."""
    x_t, w_t = call.input_tensors[0], call.input_tensors[1]
    assert x_t is not None and w_t is not None
    x = call.input(0).astype(np.float64) - _zero_point(x_t)
    w = call.input(1).astype(np.float64) - _zero_point(w_t)
    bias = call.optional(2)
    return x, w, None if bias is None else bias.astype(np.int64)


def _multipliers(call: OpCall, n: int, *, float_product: bool = False) -> list[float]:
    x_t, w_t, out = call.input_tensors[0], call.input_tensors[1], call.output_tensors[0]
    assert x_t and w_t and out and x_t.quantization and w_t.quantization and out.quantization
    s_in, s_out = x_t.quantization.scale[0], out.quantization.scale[0]
    w_scales = w_t.quantization.scale
    scales = w_scales if len(w_scales) == n else w_scales[:1] * n
    if float_product:  # FULLY_CONNECTED multiplies the two scales in float32 first
        return [float(np.float32(s_in) * np.float32(s)) / s_out for s in scales]
    return [s_in * s / s_out for s in scales]


def _geometry(call: OpCall, x: np.ndarray, kh: int, kw: int):
    s, d, oh, ow, pads = conv_geometry(call, x, kh, kw)
    return s, d, oh, ow, pad_hw(x, pads)  # zero = the input zero point (x is zp-corrected)


def integer_conv2d(call: OpCall) -> np.ndarray:
    x, w, bias = _accumulator(call)
    n, _, _, c = x.shape
    o, kh, kw, ci = w.shape
    groups, og = c // ci, o // (c // ci)
    s, d, oh, ow, xp = _geometry(call, x, kh, kw)
    acc = np.zeros((n * oh * ow, o))
    for i, j, view in taps(xp, kh, kw, oh, ow, s, d):
        cols = view.reshape(-1, c)
        for g in range(groups):
            acc[:, g * og : (g + 1) * og] += (
                cols[:, g * ci : (g + 1) * ci] @ w[g * og : (g + 1) * og, i, j, :].T
            )
    acc = np.rint(acc).astype(np.int64).reshape(n, oh, ow, o)
    if bias is not None:
        acc += bias
    return _requantize(call, acc, _multipliers(call, o))


def integer_depthwise(call: OpCall) -> np.ndarray:
    x, w, bias = _accumulator(call)
    _, kh, kw, oc = w.shape
    mult = oc // x.shape[3]
    if mult > 1:
        x = np.repeat(x, mult, axis=3)
    s, d, oh, ow, xp = _geometry(call, x, kh, kw)
    acc = np.zeros((x.shape[0], oh, ow, oc))
    for i, j, view in taps(xp, kh, kw, oh, ow, s, d):
        acc += view * w[0, i, j]
    acc = np.rint(acc).astype(np.int64)
    if bias is not None:
        acc += bias
    return _requantize(call, acc, _multipliers(call, oc))


def integer_fully_connected(call: OpCall) -> np.ndarray:
    x, w, bias = _accumulator(call)
    if str(call.option("weights_format", "DEFAULT")) != "DEFAULT":
        raise call.fail("shuffled weights have no integer kernel")
    acc = np.rint(x.reshape(-1, w.shape[1]) @ w.T).astype(np.int64)
    if bias is not None:
        acc += bias
    y = _requantize(call, acc, _multipliers(call, w.shape[0], float_product=True))
    if call.option("keep_num_dims", False):
        return y.reshape(x.shape[:-1] + (w.shape[0],))
    return y.reshape(call.out_shape) if math.prod(call.out_shape) == y.size else y


#: Op kind -> exact integer kernel (raw), used instead of the float kernel on int8 / uint8 ops.
INTEGER_KERNELS: dict[str, Kernel] = {
    "CONV_2D": integer_conv2d,
    "DEPTHWISE_CONV_2D": integer_depthwise,
    "FULLY_CONNECTED": integer_fully_connected,
}
