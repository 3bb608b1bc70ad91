"""Wall time of ``tacopt partition`` on MobileNetV2, start-up included (median of runs).

Usage::

    python -m benchmarks.bench_partition [--runs 7] [MODEL.tflite] [-- extra tacopt args]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODEL = Path(__file__).resolve().parent / "models" / "keras__mobilenet_v2_float32.tflite"
BUDGET_S = 1.5


def time_run(cmd: list[str]) -> float:
    """Wall seconds of one subprocess run (raises if it fails)."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, default=MODEL)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--devices", default="GPU,CPU")
    parser.add_argument("--granularity", default="subgraph")
    args, extra = parser.parse_known_args()
    cmd = [sys.executable, "-m", "partitioner.cli", "partition", str(args.model),
           "--devices", args.devices, "--granularity", args.granularity, *extra]
    time_run(cmd)  # warm the file cache
    walls = [time_run(cmd) for _ in range(args.runs)]
    median = statistics.median(walls)
    print(f"tacopt partition {args.model.name} --devices {args.devices} "
          f"--granularity {args.granularity}: median {median:.3f} s over {args.runs} runs "
          f"(min {min(walls):.3f}, max {max(walls):.3f}; budget {BUDGET_S} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
