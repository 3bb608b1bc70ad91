"""Measure every op of ../shared/zoo on this machine (ai-edge-litert, 1 thread) and time the run.

    python -m tacopt.benchmarks measure_zoo [--out benchmarks/out/zoo_records.jsonl] [--fresh]
                                     [--types float32,int8]

Prints the wall time and load average, the counts (measured / reused / skipped ops, models)
and, per model, the measured model latency next to the sum of its measured op latencies (minus
the invoke overhead).
Resumable: re-running continues an interrupted file unless --fresh.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from tacopt.cost_models.learned.measurement.measure import measure_models
from tacopt.cost_models.learned.measurement.records import gate_summary, read_records
from tacopt.cost_models.learned.measurement.retype import TYPE_NAMES
from tacopt.cost_models.learned.measurement.timing import MeasureConfig

ROOT = Path(__file__).resolve().parents[3]
ZOO = ROOT.parent / "shared" / "zoo"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "zoo_records.jsonl")
    ap.add_argument("--fresh", action="store_true", help="delete the records file first")
    ap.add_argument("--types", default="", help="also measure every op in these types")
    args = ap.parse_args()
    types = [TYPE_NAMES[t] for t in args.types.split(",") if t]
    models = sorted(ZOO.glob("*.tflite"))
    if not models:
        print(f"no models in {ZOO}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.fresh:
        args.out.unlink(missing_ok=True)
    print(f"load average before: {os.getloadavg()}")
    t0 = time.perf_counter()
    stats = measure_models(models, args.out, MeasureConfig(threads=1), types=types)
    wall = time.perf_counter() - t0
    print(f"measured {len(models)} models in {wall / 60:.1f} min ({wall:.0f} s): {stats}")
    print(f"load average after: {os.getloadavg()}")
    recs = read_records(args.out)
    print(gate_summary(recs))
    skips = [r for r in recs if r["type"] == "skip"]
    n_ops = sum(1 for r in recs if r["type"] == "op")
    print(f"skips: {len(skips)} of {len(skips) + n_ops} op records")
    for r in skips:
        print(f"  {r['model']}: {r['kind']}: {r['reason']}")
    ops = {r["key"]: r["latency_us"] - r["overhead_us"] for r in recs if r["type"] == "op"}
    ratios = []
    for r in recs:
        if r["type"] != "model":
            continue
        if r.get("latency_us") is None:  # the runtime could not run it whole
            print(f"{r['model']:48s} not timed whole: {r.get('untimed')}")
            continue
        total = sum(ops.get(k, 0.0) * c for k, c in r["ops"])
        ratios.append(total / r["latency_us"])
        print(f"{r['model']:48s} model {r['latency_us']:11.1f} us   sum of ops {total:11.1f} us")
    print(f"median (sum of ops / model latency) = {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
