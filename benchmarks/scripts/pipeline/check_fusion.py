"""Full-zoo fusion check: unfuse -> fuse round trip of op kinds/counts, and numerics in LiteRT.

For every zoo model: ``fuse(unfuse(G))`` must have the op histogram of ``fuse(G)`` (and of ``G``
when ``G`` is already a fixed point of the rules); on rehydrated weights, ``G``, ``unfuse(G)``,
``fuse(unfuse(G))`` and ``fuse(G)`` must give the same outputs in LiteRT on random inputs, within
the tolerance of their dtype (:func:`tacopt.fusion.tflite.litert.output_mismatches`; custom fused
ops run by their numpy kernels), and every custom fused op must match the region it replaced
(:func:`tacopt.fusion.tflite.litert.check_fused_regions`).

Run: ``python -m tacopt.benchmarks check_fusion [--no-numerics]``; exits 1 when a model fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tacopt.errors import TacoptError
from tacopt.fusion.fuse import fuse, op_histogram
from tacopt.fusion.ir import validate_graph
from tacopt.fusion.tflite.litert import (
    check_fused_regions,
    output_mismatches,
    random_inputs,
    run_graph,
)
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import rehydrate
from tacopt.fusion.unfuse import unfuse

ZOO = Path(__file__).resolve().parents[4] / "shared" / "zoo"


def check_model(path: Path, numerics: bool) -> tuple[str, str]:
    G = read_tflite(path)
    U = unfuse(G)
    FU = fuse(U).graph
    validate_graph(U)
    validate_graph(FU)
    h_fu, h_f, h_g = op_histogram(FU), op_histogram(fuse(G).graph), op_histogram(G)
    if h_fu != h_f:
        return "FAIL", f"structure: {h_fu} != {h_f}"
    structure = "=G" if h_fu == h_g else "=fuse(G)"
    if not numerics:
        return "OK", structure
    try:
        R = rehydrate(G, seed=0)
        inputs = random_inputs(R, seed=1)
        want = run_graph(R, inputs)
        RU = unfuse(R)
        fused = {"unfuse": RU, "fuse(unfuse)": fuse(RU).graph, "fuse": fuse(R).graph}
        for what, H in fused.items():
            bad = output_mismatches(want, run_graph(H, inputs), R.graph["tensors"])
            if bad:
                return "FAIL", f"{what}: {'; '.join(bad)}"
        regions = check_fused_regions(R, fused["fuse"])
        regions += check_fused_regions(RU, fused["fuse(unfuse)"])
    except TacoptError as exc:
        return "SKIP", f"{structure}; numerics not run: {exc}"
    return "OK", f"{structure}; outputs agree; {regions} custom fused regions agree"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-numerics", action="store_true")
    args = parser.parse_args()
    failed = 0
    for path in sorted(ZOO.glob("*.tflite")):
        t0 = time.perf_counter()
        status, note = check_model(path, not args.no_numerics)
        failed += status == "FAIL"
        print(f"{status:4s} {path.name:48s} {time.perf_counter() - t0:6.1f}s  {note}", flush=True)
    print(f"{failed} failed")
    sys.exit(1 if failed else 0)
