"""Which ops of constants does LiteRT compute once, at init? Measured, per kind and resolver.

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks check_folding [--size 256]

For each kind, two models are timed (gated, as ops are:
``cost_models/learned/measurement/timing.py``):
``y = x + c`` with ``c`` a stored constant, and the same with ``c`` computed by the op from
constants only (a DEQUANTIZE of float16 or int8 weights, a DENSIFY of sparse ones, a
SELECT_V2 of a mask, ...). When the op is folded at init the two take the same time; when it
runs on every invoke the second takes longer by the op's cost. Prints, per resolver, the extra
time per invoke and whether it is within the noise (``folded``: extra <= 10 % of the base and
<= 2 us).

This decides :data:`tacopt.cost_models.learned.measurement.singleop.FOLDED_KINDS`: the kinds
``measure`` and the learned model price at 0 when every input is constant.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from collections.abc import Callable

import numpy as np

from tacopt.benchmarks.scripts.zoo.zoo_variants import csr_last_dim
from tacopt.cost_models.learned.measurement.timing import MeasureConfig, time_model
from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph
from tacopt.fusion.ir.records import Quantization
from tacopt.fusion.tflite.writer import serialize_tflite


def _case(n: int, kind: str) -> bytes:
    shape = (1, 1, n, n)
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal(shape).astype(np.float32)
    ts = [Tensor(name, shape, "float32") for name in ("x", "y", "c")]

    def const(name: str, value: np.ndarray, quantization: Quantization | None = None) -> str:
        ts.append(Tensor(name, value.shape, str(value.dtype), quantization=quantization,
                         buffer=Buffer.from_bytes(np.ascontiguousarray(value))))  # fmt: skip
        return name

    add = Op("add", "ADD", ("x", "c"), ("y",), {"fused_activation_function": "NONE"})
    if kind == "stored":
        ts[2] = Tensor("c", shape, "float32", buffer=Buffer.from_bytes(f32))
        return serialize_tflite(make_graph("g", ts, [add], ["x"], ["y"]))
    ops: list[Op]
    if kind == "DEQUANTIZE float16":
        ops = [Op("k", "DEQUANTIZE", (const("h", f32.astype(np.float16)),), ("c",))]
    elif kind == "DEQUANTIZE int8":
        q = Quantization(scale=(0.05,), zero_point=(0,))
        ops = [Op("k", "DEQUANTIZE", (const("q", (f32 * 20).astype(np.int8), quantization=q),),
                  ("c",))]  # fmt: skip
    elif kind == "DENSIFY":
        keep = n // 2
        idx = np.concatenate([np.sort(rng.choice(n, keep, replace=False)) for _ in range(n)])
        seg = np.arange(n + 1, dtype=np.int32) * keep
        vals = rng.standard_normal(n * keep).astype(np.float32)
        ts.append(Tensor("s", shape, "float32", buffer=Buffer.from_bytes(vals),
                         sparsity=csr_last_dim(shape, seg, idx.astype(np.int32))))  # fmt: skip
        ops = [Op("k", "DENSIFY", ("s",), ("c",))]
    elif kind == "SELECT_V2":
        m = const("m", rng.random(shape) > 0.5)
        ops = [Op("k", "SELECT_V2", (m, const("a", f32), const("b", -f32)), ("c",))]
    elif kind in ("ADD", "MUL"):
        opts = {"fused_activation_function": "NONE"}
        ops = [Op("k", kind, (const("a", f32), const("b", f32 * 2)), ("c",), opts)]
    elif kind == "CAST":
        ops = [Op("k", "CAST", (const("i", (f32 * 10).astype(np.int32)),), ("c",))]
    elif kind == "TRANSPOSE":
        perm = const("p", np.array([0, 1, 3, 2], np.int32))
        ops = [Op("k", "TRANSPOSE", (const("a", f32), perm), ("c",))]
    elif kind == "RESHAPE":
        to = const("s", np.array(shape, np.int32))
        ops = [Op("k", "RESHAPE", (const("a", f32.reshape(n, n)), to), ("c",))]
    elif kind == "CONCATENATION":
        half = (1, 1, n // 2, n)
        parts = (const("a", f32[:, :, : n // 2].reshape(half)),
                 const("b", f32[:, :, n // 2 :].reshape(half)))  # fmt: skip
        cat = {"axis": 2, "fused_activation_function": "NONE"}
        ops = [Op("k", "CONCATENATION", parts, ("c",), cat)]
    else:
        raise ValueError(kind)
    return serialize_tflite(make_graph("g", ts, [*ops, add], ["x"], ["y"]))


KINDS = ("DEQUANTIZE float16", "DEQUANTIZE int8", "DENSIFY", "SELECT_V2", "ADD", "MUL", "CAST",
         "TRANSPOSE", "RESHAPE", "CONCATENATION")  # fmt: skip


def _timer(cfg: MeasureConfig) -> Callable[[bytes], float]:
    return lambda model: time_model(model, None, cfg).latency_us


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256, help="c is 1 x 1 x size x size")
    ap.add_argument("--resolvers", default="xnnpack,builtin")
    args = ap.parse_args(argv)
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                         text=True, check=False).stdout.strip()  # fmt: skip
    print(f"{cpu}; load {os.getloadavg()}; c = 1x1x{args.size}x{args.size} float32")
    for resolver in args.resolvers.split(","):
        timed = _timer(MeasureConfig(samples=9, resolver=resolver))
        base = timed(_case(args.size, "stored"))
        print(f"\n{resolver}: y = x + c with c stored: {base:.1f} us")
        print(f"  {'c computed by':22s} {'us':>8s} {'extra':>8s}  verdict")
        for kind in KINDS:
            t = timed(_case(args.size, kind))
            extra = t - base
            verdict = "folded" if extra <= max(0.1 * base, 0) and extra <= 2.0 else "per invoke"
            print(f"  {kind:22s} {t:8.1f} {extra:+8.1f}  {verdict}")
    print(f"\nload {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
