"""Parse speed of :func:`tacopt.fusion.tflite.reader.read_tflite` against the issue's targets.

Prints the median of several runs (after one warm-up) for MobileNetV2 float (65 ops), NASNetMobile
int8 (567 ops) and the whole shared zoo (48 models), each from the file path.

    python -m tacopt.benchmarks bench_parse [--zoo ../shared/zoo] [--runs 15]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from tacopt.fusion.tflite.reader import read_tflite

ROOT = Path(__file__).resolve().parents[3]
TARGETS_MS = {
    "keras__mobilenet_v2_float32.tflite": 10.0,
    "keras__nasnet_mobile_int8.tflite": 50.0,
    "whole zoo": 1500.0,
}


def median_ms(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median wall and CPU time of ``fn`` in ms over ``runs`` runs, after one warm-up.

    CPU time (``time.process_time``) is reported too because on a shared machine the wall time
    also counts the time other processes hold the cores.
    """
    fn()
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1e3)
        cpu.append((time.process_time() - start_cpu) * 1e3)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo", type=Path, default=ROOT.parent / "shared" / "zoo")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    zoo = args.zoo if args.zoo.is_dir() else ROOT / "benchmarks" / "models"
    files = sorted(zoo.glob("*.tflite"))
    print(f"zoo: {zoo} ({len(files)} models), median of {args.runs} runs")
    print(f"{'case':<40} {'wall ms':>10} {'cpu ms':>10} {'target ms':>10}  ok")
    for name, target in TARGETS_MS.items():
        if name == "whole zoo":
            runs = max(3, args.runs // 3)
            ms, cpu = median_ms(lambda: [read_tflite(p) for p in files], runs)
        elif (zoo / name).is_file():
            ms, cpu = median_ms(functools.partial(read_tflite, zoo / name), args.runs)
        else:
            print(f"{name:<40} {'absent':>10}")
            continue
        ok = "yes" if ms <= target else "NO"
        print(f"{name:<40} {ms:>10.1f} {cpu:>10.1f} {target:>10.0f}  {ok}")


if __name__ == "__main__":
    main()
