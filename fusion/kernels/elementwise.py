"""Element-wise kernels: unary math, activations, binary arithmetic, comparisons, casts."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

from tacopt.fusion.ir import numpy_dtype
from tacopt.fusion.kernels.common import ACTIVATIONS, OpCall, kernel_table

KERNELS, kernel = kernel_table()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # Split by sign so exp never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _floats(x: np.ndarray) -> np.ndarray:
    return x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float32)


_UNARY = {
    "ABS": np.abs,
    "NEG": np.negative,
    "SQUARE": np.square,
    "SIGN": np.sign,
    "RSQRT": lambda x: 1 / np.sqrt(_floats(x)),
    "SQRT": lambda x: np.sqrt(_floats(x)),
    "EXP": lambda x: np.exp(_floats(x)),
    "LOG": lambda x: np.log(_floats(x)),
    "SIN": lambda x: np.sin(_floats(x)),
    "COS": lambda x: np.cos(_floats(x)),
    "TANH": lambda x: np.tanh(_floats(x)),
    "LOGISTIC": lambda x: _sigmoid(_floats(x)),
    "FLOOR": np.floor,
    "CEIL": np.ceil,
    "ROUND": np.round,  # half to even, like TFLite's RoundToNearest
    "LOGICAL_NOT": np.logical_not,
    "ELU": lambda x: np.where(x > 0, x, np.expm1(np.minimum(_floats(x), 0))),
    "HARD_SWISH": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "RELU": ACTIVATIONS["RELU"],
    "RELU6": ACTIVATIONS["RELU6"],
    "RELU_N1_TO_1": ACTIVATIONS["RELU_N1_TO_1"],
    "RELU_0_TO_1": ACTIVATIONS["RELU_0_TO_1"],
}


def _unary(fn):
    return lambda call: fn(call.input(0))


for _kind, _fn in _UNARY.items():
    kernel(_kind)(_unary(_fn))


@kernel("GELU")
def _gelu(call: OpCall) -> np.ndarray:
    x = _floats(call.input(0))
    if call.option("approximate", False):
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(x.dtype)


@kernel("LEAKY_RELU")
def _leaky_relu(call: OpCall) -> np.ndarray:
    x = call.input(0)
    return np.where(x >= 0, x, x * np.float32(call.option("alpha", 0.2)))


@kernel("PRELU")
def _prelu(call: OpCall) -> np.ndarray:
    x, alpha = call.input(0), call.input(1)
    return np.where(x >= 0, x, x * alpha)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        q = np.floor_divide(a, b)  # C++ integer division truncates toward zero
        return q + ((q < 0) & (q * b != a))
    return a / b


def _floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.mod(a, b)


_BINARY = {
    "ADD": np.add,
    "SUB": np.subtract,
    "MUL": np.multiply,
    "DIV": _div,
    "MAXIMUM": np.maximum,
    "MINIMUM": np.minimum,
    "SQUARED_DIFFERENCE": lambda a, b: np.square(a - b),
    "POW": np.power,
    "FLOOR_DIV": lambda a, b: np.floor(a / b) if a.dtype.kind == "f" else np.floor_divide(a, b),
    "FLOOR_MOD": _floor_mod,
    "LESS": np.less,
    "LESS_EQUAL": np.less_equal,
    "GREATER": np.greater,
    "GREATER_EQUAL": np.greater_equal,
    "EQUAL": np.equal,
    "NOT_EQUAL": np.not_equal,
    "LOGICAL_AND": np.logical_and,
    "LOGICAL_OR": np.logical_or,
    "ATAN2": np.arctan2,
}


def _binary(fn):
    return lambda call: fn(call.input(0), call.input(1))


for _kind, _fn in _BINARY.items():
    kernel(_kind)(_binary(_fn))


@kernel("ADD_N")
def _add_n(call: OpCall) -> np.ndarray:
    out = call.input(0)
    for x in call.inputs[1:]:
        out = out + x
    return out


@kernel("SELECT", "SELECT_V2")
def _select(call: OpCall) -> np.ndarray:
    cond, x, y = call.input(0), call.input(1), call.input(2)
    if call.op.kind == "SELECT" and cond.ndim == 1 and x.ndim > 1:
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))  # rank-1 condition picks rows
    return np.where(cond.astype(bool), x, y)


@kernel("QUANTIZE", "DEQUANTIZE")
def _identity(call: OpCall) -> np.ndarray:
    # The executor dequantizes the input and (re)quantizes into the output tensor.
    return call.input(0)


@kernel("CAST", raw=True)
def _cast(call: OpCall) -> np.ndarray:
    x = call.input(0)
    dtype = numpy_dtype(call.output_tensors[0].dtype)
    if dtype == np.bool_:
        return x != 0
    return x.astype(dtype)
