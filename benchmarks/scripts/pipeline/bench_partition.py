"""Wall and CPU time of ``tacopt partition`` on MobileNetV2, start-up included (medians).

CPU time (user + sys of the child process) is printed next to the wall time: on a machine
loaded by other jobs the wall time mostly measures waiting for a core.

With ``--pairs``, each run is a pair, in one process tree and back to back: the bare imports
of numpy, networkx, scipy.sparse and ortools (what any solver front end pays), then the command;
the figure is the ratio of their medians (the goal: at most 1.2x), with the min-max of the
per-pair ratios, the machine's CPU and its load average before and after. The CPU time (user +
sys) of each side is compared too: on a shared machine it moves less than the wall time.

The children run with bytecode caching on, as an installed tacopt does (``pip install``
compiles it; an editable install caches it on first run, here the warm-up run): an inherited
``PYTHONDONTWRITEBYTECODE`` would make every run compile tacopt's modules from source again
while the bare imports load their cached bytecode. ``--no-bytecode-cache`` keeps it.

Usage::

    python -m tacopt.benchmarks bench_partition [--runs 7] [--pairs] [MODEL.tflite] [-- extra]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODEL = Path(__file__).resolve().parents[2] / "models" / "keras__mobilenet_v2_float32.tflite"
BUDGET_S = 1.5
#: The bare imports the start-up is compared with (issue 23: goal <= 1.2x).
BARE = "import numpy, networkx, scipy.sparse, ortools"
RATIO_GOAL = 1.2


def machine() -> str:
    """The CPU model and the flags that matter for timing, from /proc/cpuinfo (Linux)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                 if line.startswith("model name")), "unknown CPU")  # fmt: skip
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])  # fmt: skip
    wanted = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni") if f in flags]
    return f"{name} ({', '.join(wanted) or 'no avx2'})"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one subprocess run (raises if it fails)."""
    cpu, start = _children_cpu_s(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start, _children_cpu_s() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, default=MODEL)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--devices", default="GPU,CPU")
    parser.add_argument("--granularity", default="subgraph")
    parser.add_argument("--pairs", action="store_true", help="time against the bare imports")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep an inherited PYTHONDONTWRITEBYTECODE (see above)")  # fmt: skip
    args, extra = parser.parse_known_args()
    env = dict(os.environ)
    if not args.no_bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
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
    time_run(cmd, env)  # warm the file cache (and write tacopt's bytecode cache)
    if args.pairs:
        return _pairs(cmd, args, env)
    runs = [time_run(cmd, env) for _ in range(args.runs)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    print(
        f"tacopt partition {args.model.name} --devices {args.devices} "
        f"--granularity {args.granularity}: over {args.runs} runs, wall median "
        f"{statistics.median(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f}; "
        f"budget {BUDGET_S} s), CPU user+sys median {statistics.median(cpus):.3f} s "
        f"(min {min(cpus):.3f}, max {max(cpus):.3f})"
    )
    return 0


def _pairs(cmd: list[str], args: argparse.Namespace, env: dict[str, str]) -> int:
    bare_cmd = [sys.executable, "-c", BARE]
    time_run(bare_cmd, env)
    before = load()
    bare, full = [], []
    for _ in range(args.runs):
        bare.append(time_run(bare_cmd, env))
        full.append(time_run(cmd, env))
    print(f"machine: {machine()}; load average before {before}, after {load()}; bytecode cache "
          f"{'as inherited' if args.no_bytecode_cache else 'on'}")  # fmt: skip
    for i, what in enumerate(("wall", "CPU user+sys")):
        b, f = [run[i] for run in bare], [run[i] for run in full]
        ratios = [y / x for x, y in zip(b, f)]
        print(f"{what}: bare imports ({BARE}) median {statistics.median(b):.3f} s "
              f"({min(b):.3f}-{max(b):.3f}); tacopt partition {args.model.name} --devices "
              f"{args.devices} median {statistics.median(f):.3f} s "
              f"({min(f):.3f}-{max(f):.3f})")  # fmt: skip
        print(f"  {what} ratio of medians {statistics.median(f) / statistics.median(b):.2f}x "
              f"(per pair {min(ratios):.2f}-{max(ratios):.2f}x, {args.runs} pairs; goal <= "
              f"{RATIO_GOAL}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
