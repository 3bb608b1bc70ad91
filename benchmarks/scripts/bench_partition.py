"""Wall and CPU time of ``tacopt partition`` on MobileNetV2, start-up included (medians).

CPU time (user + sys of the child process) is printed next to the wall time: on a machine
loaded by other jobs the wall time mostly measures waiting for a core.

Usage::

    python -m tacopt.benchmarks bench_partition [--runs 7] [MODEL.tflite] [-- extra tacopt args]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "models" / "keras__mobilenet_v2_float32.tflite"
BUDGET_S = 1.5


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_run(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one subprocess run (raises if it fails)."""
    cpu, start = _children_cpu_s(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu_s() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, default=MODEL)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--devices", default="GPU,CPU")
    parser.add_argument("--granularity", default="subgraph")
    args, extra = parser.parse_known_args()
    cmd = [
        sys.executable,
        "-m",
        "tacopt.partitioner.cli",
        "partition",
        str(args.model),
        "--devices",
        args.devices,
        "--granularity",
        args.granularity,
        *extra,
    ]
    time_run(cmd)  # warm the file cache
    runs = [time_run(cmd) for _ in range(args.runs)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    print(
        f"tacopt partition {args.model.name} --devices {args.devices} "
        f"--granularity {args.granularity}: over {args.runs} runs, wall median "
        f"{statistics.median(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f}; "
        f"budget {BUDGET_S} s), CPU user+sys median {statistics.median(cpus):.3f} s "
        f"(min {min(cpus):.3f}, max {max(cpus):.3f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
