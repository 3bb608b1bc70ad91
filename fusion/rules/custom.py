"""Reference kernels of the custom fused ops the rules create, registered with the executor.

``CUSTOM:Swish`` (x * sigmoid(x)), ``CUSTOM:LayerNorm`` (over the last axis, options
``{"epsilon", "axis"}`` as a flexbuffer map, inputs x and gamma) and ``CUSTOM:Erf`` (the erf
that the exact GELU expands to).
"""

from __future__ import annotations

import numpy as np
from flatbuffers import flexbuffers
from scipy.special import erf

from tacopt.fusion.executor import register_kernel, supported_kinds


def _swish(call) -> np.ndarray:
    x = call.input(0).astype(np.float32)
    return x / (1.0 + np.exp(-x))


def _layer_norm(call) -> np.ndarray:
    opts = flexbuffers.Loads(bytes(call.op.custom_options or b"")) or {}
    x, gamma = call.input(0).astype(np.float32), call.input(1)
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + np.float32(opts.get("epsilon", 1e-3))) * gamma).astype(
        np.float32
    )


def _erf(call) -> np.ndarray:
    return erf(call.input(0)).astype(np.float32)


for _kind, _fn in (
    ("CUSTOM:Swish", _swish),
    ("CUSTOM:LayerNorm", _layer_norm),
    ("CUSTOM:Erf", _erf),
):
    if _kind not in supported_kinds():
        register_kernel(_kind, _fn, tolerance=(1e-5, 1e-5))
