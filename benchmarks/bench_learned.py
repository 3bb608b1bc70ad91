"""Learned cost model accuracy: measure the zoo, fit on half the models, evaluate on the other.

    python benchmarks/bench_learned.py [--records benchmarks/out/zoo_records.jsonl] [--fresh]
                                       [--repeat]

Split (deterministic, by model, fixed before looking at results): the zoo's model files sorted
by name; even positions train, odd positions test. Sorted names put the float32 and int8 twins
of an architecture next to each other, so most keras vision float32 models train and their
int8 twins test: the test half is two-thirds int8 ops while training has few int8 examples of
most kinds (a hard, cross-type split; docs/cost-models.md). A held-out op is every
configuration a test model uses (configurations shared with training models are predicted from
the lookup table, as they would be in use; ``within_10pct_unseen`` leaves them out).
Measures the zoo first (time and load average printed) when the records file is missing or
with --fresh. With --repeat, measures the test half a second time into a fresh file and
reports the repeatability of single-op latencies (benchmarks/check_repeatability.py does it for
the whole zoo and every statistic). Writes the two halves next to the records file
(``train.jsonl``, ``test.jsonl``) so that ``tacopt fit train.jsonl -o m.json --eval test.jsonl``
reproduces the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from cost_models.learned import LearnedCostModel, evaluate, fit
from cost_models.measure import MeasureConfig, measure_models, read_records
from fusion.io import atomic_write

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT.parent / "shared" / "zoo"


def split(records: list[dict]) -> tuple[list[dict], list[dict]]:
    models = sorted((r for r in records if r["type"] == "model"), key=lambda r: r["model"])
    halves: tuple[list[dict], list[dict]] = ([], [])
    for i, m in enumerate(models):
        halves[i % 2].append(m)
    out = []
    for half in halves:
        keys = {k for m in half for k, _ in m["ops"]}
        ops = [r for r in records if r["type"] in ("op", "skip") and r["key"] in keys]
        out.append(ops + half)
    return out[0], out[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=Path, default=ROOT / "benchmarks/out/zoo_records.jsonl")
    ap.add_argument("--repeat", action="store_true", help="re-measure the test half")
    ap.add_argument("--fresh", action="store_true", help="re-measure the zoo first")
    args = ap.parse_args()
    if args.fresh:
        args.records.unlink(missing_ok=True)
    if not args.records.exists():
        args.records.parent.mkdir(parents=True, exist_ok=True)
        print(f"measuring {ZOO} (load average {os.getloadavg()})")
        t0 = time.perf_counter()
        stats = measure_models(sorted(ZOO.glob("*.tflite")), args.records, MeasureConfig())
        print(f"measured in {time.perf_counter() - t0:.0f} s: {stats}")
        print(f"load average after: {os.getloadavg()}")
    records = read_records(args.records)
    train, test = split(records)
    for name, half in (("train", train), ("test", test)):  # for `tacopt fit ... --eval ...`
        lines = "".join(json.dumps(r, sort_keys=True) + "\n" for r in half)
        atomic_write(args.records.with_name(f"{name}.jsonl"), lines)
    t0 = time.perf_counter()
    doc = fit(train)
    fit_s = time.perf_counter() - t0
    train_keys = {r["key"] for r in train if r["type"] == "op"}
    result = evaluate(LearnedCostModel(doc), test, train_keys=train_keys)
    print(f"train: {doc['trained_on']['models']}")
    print(f"fit in {fit_s:.2f} s on {doc['trained_on']['configs']} configurations")
    print(json.dumps(result, indent=1, sort_keys=True))
    if args.repeat:
        again = args.records.with_name("zoo_records_repeat.jsonl")
        again.unlink(missing_ok=True)
        models = sorted({m["model"] for m in test if m["type"] == "model"})
        measure_models([ZOO / f"{m}.tflite" for m in models], again, MeasureConfig())
        first = {r["key"]: r["latency_us"] for r in test if r["type"] == "op"}
        ratios = [
            r["latency_us"] / first[r["key"]]
            for r in read_records(again)
            if r["type"] == "op" and r["key"] in first
        ]
        dev = np.abs(np.array(ratios) - 1)
        print(
            f"repeatability over {len(ratios)} ops: median |ratio-1| = "
            f"{statistics.median(dev) * 100:.1f} %, within ±10 %: "
            f"{np.mean(dev <= 0.1) * 100:.1f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
