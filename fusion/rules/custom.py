"""numpy kernels of the custom fused ops LiteRT cannot run, in one registry.

The fusion rules create ``CUSTOM:Swish`` (x * sigmoid(x)) and ``CUSTOM:LayerNorm`` (over the
last axis, options ``{"epsilon", "axis"}`` as a flexbuffer map, inputs x and gamma); unfusing an
exact GELU creates ``CUSTOM:Erf``. LiteRT has no kernel for them
(:data:`tacopt.fusion.ir.vocabulary.FUSION_ONLY_KINDS`), so
:func:`tacopt.fusion.tflite.litert.run_graph` runs them with these kernels and everything else in
LiteRT. The modules that create the kinds (:mod:`tacopt.fusion.rules.patterns`,
:mod:`tacopt.fusion.unfuse`) import this one, so the kernels exist whenever the fusion does.

A kernel is ``fn(op, inputs) -> ndarray``: the :class:`~tacopt.fusion.ir.Op` and its input
values in slot order (float32 arrays; ``None`` for an omitted input).

Examples
--------
>>> from tacopt.fusion.ir import Op
>>> swish = kernel_for("CUSTOM:Swish")
>>> swish(Op("s", "CUSTOM:Swish", ("x",), ("y",)), [np.zeros(2, np.float32)])
array([0., 0.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from flatbuffers import flexbuffers

from tacopt.errors import ExecutionError
from tacopt.fusion.ir import Op
from tacopt.registry import Registry

#: ``fn(op, inputs) -> ndarray``.
Kernel = Callable[[Op, Sequence["np.ndarray | None"]], np.ndarray]

_KERNELS: Registry[Kernel] = Registry("kernel", ExecutionError)


def register_kernel(kind: str, fn: Kernel, *, replace: bool = False) -> None:
    """Register the numpy kernel of the custom op ``kind`` (``"CUSTOM:<code>"``).

    Raises
    ------
    ExecutionError
        If ``kind`` already has a kernel and ``replace`` is False.

    Examples
    --------
    >>> register_kernel("CUSTOM:DoubleExample", lambda op, xs: 2 * xs[0])
    >>> "CUSTOM:DoubleExample" in kernel_kinds()
    True
    """
    _KERNELS.add(kind, fn, replace=replace)


def kernel_for(kind: str) -> Kernel:
    """The kernel of ``kind``; :class:`ExecutionError` listing the known kinds if there is none."""
    return _KERNELS.get(kind)


def kernel_kinds() -> tuple[str, ...]:
    """The custom kinds that have a numpy kernel, sorted."""
    return tuple(sorted(_KERNELS.names()))


def _swish(op: Op, xs: Sequence[np.ndarray | None]) -> np.ndarray:
    x = np.asarray(xs[0], np.float32)
    return x / (1.0 + np.exp(-x))


def _layer_norm(op: Op, xs: Sequence[np.ndarray | None]) -> np.ndarray:
    opts = flexbuffers.Loads(bytes(op.custom_options or b"")) or {}
    x, gamma = np.asarray(xs[0], np.float32), np.asarray(xs[1], np.float32)
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    eps = np.float32(opts.get("epsilon", 1e-3))
    return ((x - mean) / np.sqrt(var + eps) * gamma).astype(np.float32)


def _erf(op: Op, xs: Sequence[np.ndarray | None]) -> np.ndarray:
    from scipy.special import erf  # scipy.special takes longer to import than most commands run

    return erf(np.asarray(xs[0], np.float32)).astype(np.float32)


for _kind, _fn in (
    ("CUSTOM:Swish", _swish),
    ("CUSTOM:LayerNorm", _layer_norm),
    ("CUSTOM:Erf", _erf),
):
    register_kernel(_kind, _fn)
