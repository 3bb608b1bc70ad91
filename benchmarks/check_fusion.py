"""Full-zoo fusion check: unfuse -> fuse round trip of op kinds/counts, and executor numerics.

For every zoo model: ``fuse(unfuse(G))`` must have the op histogram of ``fuse(G)`` (and of ``G``
when ``G`` is already a fixed point of the rules); on rehydrated weights, ``G``, ``unfuse(G)`` and
``fuse(unfuse(G))`` must give the same outputs on random inputs (rtol 1e-4, atol 1e-5).

Run: ``python -m tacopt.benchmarks.check_fusion [--no-numerics]``; exits 1 when a model fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ZOO = Path(__file__).resolve().parents[2] / "shared" / "zoo"


def check_model(path: Path, numerics: bool) -> tuple[str, str]:
    import numpy as np

    from tacopt.fusion.errors import TacoptError
    from tacopt.fusion.executor import random_inputs, run_graph
    from tacopt.fusion.fuse import fuse, op_histogram
    from tacopt.fusion.ir import validate_graph
    from tacopt.fusion.reader import read_tflite
    from tacopt.fusion.rehydrate import rehydrate
    from tacopt.fusion.unfuse import unfuse

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
        worst = 0.0
        for H in (RU, fuse(RU).graph):
            got = run_graph(H, inputs)
            for k, v in want.items():
                if not np.allclose(got[k].astype(np.float64), v, rtol=1e-4, atol=1e-5):
                    return "FAIL", f"numerics differ on '{k}'"
                worst = max(worst, float(np.max(np.abs(got[k].astype(np.float64) - v))))
    except TacoptError as exc:
        return "SKIP", f"{structure}; numerics not run: {exc}"
    return "OK", f"{structure}; max |diff| {worst:.2e}"


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
