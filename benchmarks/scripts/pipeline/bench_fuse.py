"""Time ``fuse`` on the largest zoo model (target: <= 0.5 s); prints the median of several runs.

Run: ``python -m tacopt.benchmarks bench_fuse [MODEL.tflite] [--runs N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from tacopt.fusion.fuse import fuse
from tacopt.fusion.tflite.reader import read_tflite

ZOO = Path(__file__).resolve().parents[4] / "shared" / "zoo"
DEFAULT_MODEL = ZOO / "keras__text_gru_unrolled_float32.tflite"


def time_fuse(path: Path, runs: int) -> tuple[list[float], dict]:
    G = read_tflite(path)
    walls, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fuse(G)
        walls.append(time.perf_counter() - t0)
    assert result is not None, "runs >= 1"
    return walls, {
        "ops_before": result.ops_before,
        "ops_after": result.ops_after,
        "fusions": result.counts,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    walls, info = time_fuse(Path(args.model), args.runs)
    print(f"model: {Path(args.model).name}  {info}")
    print(
        f"fuse wall_s: median {statistics.median(walls):.4f}  min {min(walls):.4f}  "
        f"max {max(walls):.4f}  over {len(walls)} runs"
    )
