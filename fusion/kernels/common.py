"""What a kernel receives (:class:`OpCall`), how kernels are tabled, and shared helpers."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tacopt.fusion.errors import ExecutionError
from tacopt.fusion.ir import Op, Tensor, numpy_dtype


@dataclass(frozen=True, slots=True)
class OpCall:
    """One op about to run: its record, its input values and the records of its tensors.

    ``inputs`` hold one array per input slot (``None`` for an omitted optional input). For a
    kernel registered with ``raw=False`` (the default) quantized inputs arrive dequantized to
    float32 and the kernel returns real values, which the executor requantizes into the output
    tensors; a ``raw=True`` kernel sees and returns the stored values. ``call_graph(name, args)``
    runs a nested graph of the model and returns its outputs; ``state`` is the run's mutable
    store (resource variables, CALL_ONCE flags).
    """

    op: Op
    inputs: tuple[np.ndarray | None, ...]
    input_tensors: tuple[Tensor | None, ...]
    output_tensors: tuple[Tensor, ...]
    call_graph: Callable[[str, Sequence[np.ndarray]], list[np.ndarray]]
    state: dict[str, Any] = field(default_factory=dict)

    def option(self, key: str, default: Any = None) -> Any:
        """The op option ``key`` (snake_case schema name), or ``default`` when absent."""
        return self.op.options.get(key, default)

    def fail(self, why: str) -> ExecutionError:
        """An :class:`ExecutionError` naming this op; ``raise call.fail("...")``."""
        return ExecutionError(f"op '{self.op.name}' ({self.op.kind}): {why}")

    def input(self, slot: int) -> np.ndarray:
        """The value at ``slot``; raises when the slot is missing or omitted."""
        value = self.inputs[slot] if slot < len(self.inputs) else None
        if value is None:
            raise self.fail(f"input {slot} is required but missing")
        return value

    def optional(self, slot: int) -> np.ndarray | None:
        return self.inputs[slot] if slot < len(self.inputs) else None

    def ints(self, slot: int) -> list[int]:
        """A small integer input (axis, shape, paddings) as a flat list of Python ints."""
        return [int(v) for v in np.asarray(self.input(slot)).reshape(-1)]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.output_tensors[0].shape)


#: A kernel maps an :class:`OpCall` to its output arrays (a single array for one output).
Kernel = Callable[[OpCall], "np.ndarray | Sequence[np.ndarray]"]


@dataclass(frozen=True, slots=True)
class KernelSpec:
    """A registered kernel: the function, whether it works on stored (raw) values, an
    optional exact integer kernel (raw) for int8 / uint8 ops, and the (rtol, atol) within which
    its float outputs match TFLite."""

    fn: Kernel
    raw: bool = False
    integer: Kernel | None = None
    tolerance: tuple[float, float] = (0.0, 0.0)


def kernel_table() -> tuple[dict[str, KernelSpec], Callable[..., Callable[[Kernel], Kernel]]]:
    """A fresh table and a decorator ``@kernel("ADD", "SUB", raw=False)`` that fills it."""
    table: dict[str, KernelSpec] = {}

    def kernel(*kinds: str, raw: bool = False) -> Callable[[Kernel], Kernel]:
        def deco(fn: Kernel) -> Kernel:
            for kind in kinds:
                assert kind not in table, kind
                table[kind] = KernelSpec(fn, raw)
            return fn

        return deco

    return table, kernel


# --------------------------------------------------------------------------------------------
# activations and geometry shared by several families
# --------------------------------------------------------------------------------------------

ACTIVATIONS: Mapping[str, Callable[[np.ndarray], np.ndarray]] = {
    "NONE": lambda x: x,
    "RELU": lambda x: np.maximum(x, 0),
    "RELU_N1_TO_1": lambda x: np.clip(x, -1, 1),
    "RELU6": lambda x: np.clip(x, 0, 6),
    "RELU_0_TO_1": lambda x: np.clip(x, 0, 1),
    "TANH": np.tanh,
    "SIGN_BIT": lambda x: np.signbit(x).astype(x.dtype),
}


def activate(x: np.ndarray, name: str | None, where: str) -> np.ndarray:
    """Apply a fused activation by its schema name (``None`` / ``"NONE"`` = identity)."""
    if not name or name == "NONE":
        return x
    fn = ACTIVATIONS.get(str(name))
    if fn is None:
        raise ExecutionError(f"{where}: unknown fused activation '{name}'")
    return fn(x)


def window_geometry(
    size: int, k: int, stride: int, dilation: int, padding: str
) -> tuple[int, int, int]:
    """(output size, padding before, padding after) of one spatial axis, TFLite's rules."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = math.ceil(size / stride)
    elif padding == "VALID":
        out = math.ceil((size - eff + 1) / stride)
    else:
        raise ExecutionError(f"unsupported padding '{padding}'")
    total = max((out - 1) * stride + eff - size, 0)
    return max(out, 0), total // 2, total - total // 2


def taps(
    xp: np.ndarray, kh: int, kw: int, oh: int, ow: int, s: tuple[int, int], d: tuple[int, int]
):
    """Yield ``(i, j, view)``: the strided NHWC window of padded ``xp`` seen by kernel tap i, j."""
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * d[0], j * d[1]
            yield (
                i,
                j,
                xp[:, y0 : y0 + (oh - 1) * s[0] + 1 : s[0], x0 : x0 + (ow - 1) * s[1] + 1 : s[1]],
            )


def conv_geometry(call: OpCall, x: np.ndarray, kh: int, kw: int):
    """Strides, dilations, output height and width, and ((top, bottom), (left, right)) padding
    of a 2-D window op on NHWC ``x`` with a ``kh`` x ``kw`` kernel, from the op's options."""
    s = (int(call.option("stride_h", 1)), int(call.option("stride_w", 1)))
    d = (int(call.option("dilation_h_factor", 1)), int(call.option("dilation_w_factor", 1)))
    padding = str(call.option("padding", "SAME"))
    oh, pt, pb = window_geometry(x.shape[1], kh, s[0], d[0], padding)
    ow, pl, pr = window_geometry(x.shape[2], kw, s[1], d[1], padding)
    return s, d, oh, ow, ((pt, pb), (pl, pr))


def pad_hw(x: np.ndarray, pads: tuple[tuple[int, int], tuple[int, int]], value=0.0) -> np.ndarray:
    """``x`` (NHWC) padded in height and width with ``value`` (no copy when there is nothing)."""
    if not any(pads[0]) and not any(pads[1]):
        return x
    return np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)), constant_values=value)


def axis_of(axis: int, rank: int, call: OpCall) -> int:
    """Normalise a possibly negative axis; raise naming the op when out of range."""
    if not -rank <= axis < max(rank, 1):
        raise call.fail(f"axis {axis} out of range for rank {rank}")
    return axis % max(rank, 1)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (C ``round``, what TFLite quantization uses)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# --------------------------------------------------------------------------------------------
# quantization
# --------------------------------------------------------------------------------------------

_QUANTIZED_DTYPES = frozenset({"int8", "uint8", "int16", "int32", "int64"})


def is_quantized(t: Tensor | None) -> bool:
    """True for an integer tensor with affine quantization parameters."""
    return t is not None and t.is_quantized and t.dtype in _QUANTIZED_DTYPES


def _per_axis(values: tuple[float, ...] | tuple[int, ...], axis: int, ndim: int) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 1 or ndim == 0:
        return a.reshape(()) if a.size == 1 else a
    shape = [1] * ndim
    shape[axis] = -1
    return a.reshape(shape)


def dequantize(q: np.ndarray, t: Tensor) -> np.ndarray:
    """Real float32 values of stored values ``q`` of quantized tensor ``t``.

    Examples
    --------
    >>> from tacopt.fusion.ir import Quantization, Tensor
    >>> t = Tensor("q", (2,), "int8", quantization=Quantization((0.5,), (1,)))
    >>> dequantize(np.array([1, 5], np.int8), t)
    array([0., 2.], dtype=float32)
    """
    qp = t.quantization
    assert qp is not None
    scale = _per_axis(qp.scale, qp.axis, q.ndim)
    zp = _per_axis(qp.zero_point or (0,), qp.axis, q.ndim)
    return ((q.astype(np.float64) - zp) * scale).astype(np.float32)


def quantize(x: np.ndarray, t: Tensor) -> np.ndarray:
    """Stored values of real values ``x`` in quantized tensor ``t`` (round half away, clamp).

    Examples
    --------
    >>> from tacopt.fusion.ir import Quantization, Tensor
    >>> t = Tensor("q", (3,), "int8", quantization=Quantization((0.5,), (0,)))
    >>> quantize(np.array([0.25, -0.25, 100.0]), t)
    array([  1,  -1, 127], dtype=int8)
    """
    qp = t.quantization
    assert qp is not None
    dtype = numpy_dtype(t.dtype)
    info = np.iinfo(dtype)
    x = np.asarray(x, dtype=np.float64)
    scale = _per_axis(qp.scale, qp.axis, x.ndim)
    zp = _per_axis(qp.zero_point or (0,), qp.axis, x.ndim)
    q = round_half_away(x / scale) + zp
    return np.clip(q, info.min, info.max).astype(dtype)


def fake_quantize(x: np.ndarray, t: Tensor | None) -> np.ndarray:
    """``x`` rounded and clamped to what quantized tensor ``t`` can hold (identity if float)."""
    if not is_quantized(t):
        return x
    assert t is not None
    return dequantize(quantize(x, t), t)
