"""Does LiteRT's XNNPACK add a zero PAD to the next convolution's padding? Measured per case.

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks check_absorption

For each case (float and int8; a 3x3 CONV_2D of stride 1 and 2, a DEPTHWISE_CONV_2D) four
models are timed (gated, as ops are: ``cost_models/learned/measurement/timing.py``): the PAD
then a VALID convolution, the convolution alone on the input padded beforehand, the PAD alone,
and the PAD then a SAME convolution. When XNNPACK absorbs the PAD the first two take the same
time (``absorbed``: within 10 % and 2 us, or faster); with SAME padding XNNPACK cannot, and
the PAD's own time is added.

This decides :func:`tacopt.cost_models.learned.measurement.singleop.absorbed_reason`: the PADs
``measure`` lists under a model's ``absorbed`` and the learned model prices at 0 inside a model.
The pads are not SAME's: fusion makes those a SAME convolution already (``fold_pad``).
"""

from __future__ import annotations

import argparse
import os
import subprocess

import numpy as np

from tacopt.cost_models.learned.measurement.timing import MeasureConfig, time_model
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.ir.records import Quantization
from tacopt.fusion.tflite.writer import serialize_tflite

#: (kind, input size, channels, stride, pads of H and W)
CASES = (
    ("CONV_2D", 56, 32, 1, (0, 1)),
    ("CONV_2D", 112, 16, 2, (1, 1)),
    ("DEPTHWISE_CONV_2D", 112, 32, 2, (1, 1)),
    ("DEPTHWISE_CONV_2D", 56, 64, 1, (2, 1)),
)
VARIANTS = ("PAD + VALID", "padded input, VALID", "PAD alone", "PAD + SAME")


def _model(kind: str, size: int, c: int, stride: int, pads: tuple[int, int], variant: str,
           int8: bool) -> bytes:  # fmt: skip
    rng = np.random.default_rng(0)
    q = Quantization((0.05,), (-3,)) if int8 else None
    b = GraphBuilder("m")
    h = size + sum(pads) if variant == "padded input, VALID" else size
    t = b.input("x", (1, h, h, c), "int8" if int8 else "float32", quantization=q)
    if variant != "padded input, VALID":
        t = b.op("PAD", t, np.array([[0, 0], pads, pads, [0, 0]], np.int32), quantization=q)
    if variant != "PAD alone":
        cout, depthwise = (32, False) if kind == "CONV_2D" else (c, True)
        shape = (1, 3, 3, c) if depthwise else (cout, 3, 3, c)
        if int8:
            axis = 3 if depthwise else 0
            wq = Quantization(tuple([0.01] * cout), tuple([0] * cout), axis)
            w = b.const(rng.integers(-100, 100, shape), dtype="int8", quantization=wq)
            bq = Quantization(tuple([0.0005] * cout), tuple([0] * cout))
            bias = b.const(np.zeros(cout), dtype="int32", quantization=bq)
        else:
            w, bias = b.const(rng.normal(0, 0.1, shape)), b.const(np.zeros(cout))
        opts = {"stride_h": stride, "stride_w": stride,
                "padding": "SAME" if variant == "PAD + SAME" else "VALID"}  # fmt: skip
        if depthwise:
            opts["depth_multiplier"] = 1
        out_q = Quantization((0.1,), (5,)) if int8 else None
        t = b.op(kind, t, w, bias, quantization=out_q, **opts)
    return serialize_tflite(b.build(outputs=[t]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args(argv)
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                         text=True, check=False).stdout.strip()  # fmt: skip
    print(f"{cpu}; load {os.getloadavg()}; XNNPACK, 1 thread; us per invoke")
    cfg = MeasureConfig(samples=9)
    print(f"{'case':50s} " + " ".join(f"{v:>20s}" for v in VARIANTS) + "  verdict")
    for int8 in (False, True):
        for kind, size, c, stride, pads in CASES:
            t = {v: time_model(_model(kind, size, c, stride, pads, v, int8), None, cfg).latency_us
                 for v in VARIANTS}  # fmt: skip
            fused, alone = t["PAD + VALID"], t["padded input, VALID"]
            absorbed = fused - alone <= max(0.1 * alone, 2.0)
            name = f"{'int8' if int8 else 'float'} {kind} {size}x{size}x{c} s{stride} pads {pads}"
            print(f"{name:50s} " + " ".join(f"{t[v]:20.1f}" for v in VARIANTS)
                  + f"  {'absorbed' if absorbed else 'runs'}")  # fmt: skip
    print(f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
