"""The innermost runs a kernel walks (learned model version 15): a broadcast's, a reduction's, a
strided transposed convolution's, as tree features (:data:`~.features.FEATURES`' ``log_runs``,
``log_run_length``) and a kind model's base step (:func:`~.kind_models.base_step`).

A kernel loops over contiguous runs, so a run costs a fixed few ns beside its elements, which
bytes and FLOPs do not show: measured here (Zen 5, LiteRT 2.3.0), a detector's
``(1, N, 4) x (1, 1, 4)`` MUL 2.5 ns a row, ``(1, 13824, 1) > scalar`` 34.8 us where the same
elements as ``(1, 13824)`` take 2.1 us.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: Reductions whose axes input says what they walk (and :func:`~.features.global_pool`).
REDUCTIONS = frozenset({"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY"})


def deconv_runs(weights: Sequence[int], x: Sequence[int], out_shape: Sequence[int]) -> list[float]:
    """A transposed convolution's ``[log runs, log run length]``: each output pixel sums the
    taps of the kernel that land on it (kernel area / stride area of them), each a run over the
    input channels. XNNPACK's deconvolution of few output channels costs ~10 ns a tap here
    whatever those channels (a segmenter's 8 -> 8 head of 2x2 kernel and stride 2: 9.8 ns an
    output pixel on a 256 x 256 plane, 10.0 on 128 x 128), where its GEMM view counts MACs.

    >>> [round(v, 3) for v in deconv_runs([8, 2, 2, 8], [1, 64, 64, 8], [1, 128, 128, 8])]
    [9.704, 2.197]
    """
    _, kh, kw, cin = (max(int(d), 1) for d in weights)
    sh = max(int(out_shape[1]) // max(int(x[1]), 1), 1)
    sw = max(int(out_shape[2]) // max(int(x[2]), 1), 1)
    taps = max(kh // sh, 1) * max(kw // sw, 1)
    return [math.log1p(int(out_shape[1]) * int(out_shape[2]) * taps), math.log1p(cin)]


#: Kinds the builtin kernels run (XNNPACK takes no comparison here): a broadcast walks the
#: output's last dimension as its run, collapsing nothing (``(1, N, 1) > scalar``: N runs of 1).
_BUILTIN_BROADCASTS = frozenset(
    "LESS LESS_EQUAL GREATER GREATER_EQUAL EQUAL NOT_EQUAL LOGICAL_AND LOGICAL_OR".split()
)
#: Element-wise kinds of two or three operands that may broadcast (:func:`run_terms`).
_BROADCASTING = frozenset(
    "ADD SUB MUL DIV POW MAXIMUM MINIMUM SQUARED_DIFFERENCE FLOOR_DIV FLOOR_MOD LESS LESS_EQUAL "
    "GREATER GREATER_EQUAL EQUAL NOT_EQUAL LOGICAL_AND LOGICAL_OR SELECT_V2 PRELU".split()
)


def run_terms(kind: str, ins: Sequence[Any], out_shape: Sequence[int]) -> list[float]:
    """``[log runs, log run length]``: the innermost contiguous runs a broadcast or a reduction
    walks (else 0, 0). The kernels loop over runs, so a run costs a fixed few ns beside its
    elements: a detector's ``(1, N, 4) x (1, 1, 4)`` MUL is N runs of 4 (2.5 ns a run here), a
    threshold ``(1, N, 1) > scalar`` in the builtin kernels N runs of 1 (2.4 ns each; ``(1, N)``
    is one run, 0.15 ns an element), a REDUCE_MAX over the anchors of ``(1, N, 1)`` N runs of 1
    (7.3 us for N = 13,824; 0.7 us as ``(1, N)``). The elements two operands broadcast alike
    (both whole, or one of size 1) collapse into one run, as XNNPACK collapses them; a reduction's
    run is the kept dimensions after its last reduced axis, or its reduced trailing block; a
    transposed convolution's are :func:`deconv_runs`.

    >>> t = lambda *s: [list(s), "float32", False, False]
    >>> [round(v, 3) for v in run_terms("MUL", [t(1, 100, 4), t(1, 1, 4)], [1, 100, 4])]
    [4.615, 1.609]
    >>> run_terms("MUL", [t(1, 100, 4), t(1, 100, 4)], [1, 100, 4])[0]  # one run
    0.693...
    >>> [round(v, 3) for v in run_terms("GREATER", [t(1, 100, 1), t(1)], [1, 100, 1])]
    [4.615, 0.693]
    >>> axes = [[1], "int32", True, False, [1]]
    >>> [round(v, 3) for v in run_terms("REDUCE_MAX", [t(1, 100, 1), axes], [1, 1, 1])]
    [4.615, 0.693]
    """
    if kind == "TRANSPOSE_CONV" and len(ins) > 2 and ins[1] and ins[2] and len(out_shape) == 4:
        return deconv_runs(ins[1][0], ins[2][0], out_shape)
    dims = [max(int(d), 1) for d in (ins[0][0] if ins and ins[0] else [])]
    if kind in REDUCTIONS and len(ins) > 1 and ins[1] and dims:
        axes = ins[1][4] if len(ins[1]) > 4 and isinstance(ins[1][4], list) else []
        reduced = {int(a) % len(dims) for a in axes}
        if not reduced:
            return [0.0, 0.0]
        last = max(reduced)
        run = math.prod(dims[last + 1 :])
        if last == len(dims) - 1:  # the last axis is reduced: a run is the reduced trailing block
            first = last
            while first - 1 in reduced:
                first -= 1
            run = math.prod(dims[first:])
        return [math.log1p(math.prod(dims) / run), math.log1p(run)]
    if kind not in _BROADCASTING or len(ins) < 2 or not out_shape:
        return [0.0, 0.0]
    out = [max(int(d), 1) for d in out_shape]
    if kind in _BUILTIN_BROADCASTS and any(
        d and math.prod(max(int(v), 1) for v in d[0]) != math.prod(out) for d in ins[:2]
    ):
        return [math.log1p(math.prod(out) / out[-1]), math.log1p(out[-1])]
    # each operand's dims aligned right to the output's: whole (True) or broadcast per axis
    shapes = [[1] * (len(out) - len(d[0])) + [max(int(v), 1) for v in d[0]] for d in ins[:3] if d]
    run, inner = 1, None
    for i in range(len(out) - 1, -1, -1):
        if out[i] == 1:
            continue
        whole = tuple(len(s) == len(out) and s[i] == out[i] for s in shapes)
        if inner is not None and whole != inner:
            break
        inner, run = whole, run * out[i]
    return [math.log1p(math.prod(out) / run), math.log1p(run)]
