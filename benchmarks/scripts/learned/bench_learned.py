"""Learned cost model accuracy: fit on ops measured from half of the zoo, evaluate on the other.

    python -m tacopt.benchmarks bench_learned [--fresh] [--validate] [--types float32,int8]

Split (deterministic, by model, fixed before looking at results): the zoo's model files sorted
by name; even positions train, odd positions test. Sorted names put the float32 and int8 twins
of an architecture next to each other, so most keras vision float32 models train and their
int8 twins test: the test half is two-thirds int8 ops.

Measuring (with --fresh, or when a records file is missing), two runs, wall time and load
average printed:

- ``train_records.jsonl``: the training models, every op as it is **and** rebuilt in each of
  ``--types`` (``tacopt measure --types``: float ops quantized to int8, int8 ops dequantized),
- ``test_records.jsonl``: the test models, every op as it is; nothing of them is retyped and
  nothing of them is used for fitting; their ops are measured independently of the training
  run (an op configuration both halves share is timed in both runs).

``--validate`` fits on half of the *training* models (sorted, alternating again) and evaluates
on the other half: the place to compare features and learners; the test half is then evaluated
once. Per-kind ``within_10pct`` is printed for the kinds with >= 10 ops.
``tacopt fit benchmarks/out/train_records.jsonl -o m.json --eval
benchmarks/out/test_records.jsonl --json`` reproduces the test figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.measure import measure_models
from tacopt.cost_models.learned.measurement.records import gate_summary, read_records
from tacopt.cost_models.learned.measurement.retype import TYPE_NAMES
from tacopt.cost_models.learned.measurement.timing import MeasureConfig

ROOT = Path(__file__).resolve().parents[3]
ZOO = ROOT.parent / "shared" / "zoo"
OUT = ROOT / "benchmarks" / "out"


def split_models(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Sorted names, alternating: (even positions, odd positions)."""
    ordered = sorted(names)
    return ordered[0::2], ordered[1::2]


def select(records: Sequence[dict], models: Sequence[str], *, variants: bool) -> list[dict]:
    """The records of ``models``: their model records and the op / skip records of every
    configuration they use (and, with ``variants``, of their retyped configurations)."""
    chosen = [r for r in records if r["type"] == "model" and r["model"] in set(models)]
    keys = {k for m in chosen for k, _ in m["ops"]}
    if variants:
        keys |= {k for m in chosen for k, _ in m.get("variants", [])}
    return [r for r in records if r["type"] in ("op", "skip") and r["key"] in keys] + chosen


def measure(models: Sequence[Path], out: Path, types: Sequence[str]) -> None:
    out.unlink(missing_ok=True)
    print(
        f"measuring {len(models)} models into {out.name} (types {list(types) or 'as-is'}),"
        f" load average {os.getloadavg()}"
    )
    t0 = time.perf_counter()
    stats = measure_models(models, out, MeasureConfig(), types=types)
    print(f"  {time.perf_counter() - t0:.0f} s: {stats}; load average after {os.getloadavg()}")
    print(f"  {gate_summary(read_records(out))}")


def report(name: str, train: list[dict], test: list[dict]) -> dict[str, Any]:
    t0 = time.perf_counter()
    doc = fit(train)
    fit_s = time.perf_counter() - t0
    train_keys = {r["key"] for r in train if r["type"] == "op"}
    result = model_accuracy(LearnedCostModel(doc), test, train_keys=train_keys)
    print(
        f"== {name}: fit in {fit_s:.1f} s on {doc['trained_on']['configs']} configurations "
        f"of {len(doc['trained_on']['models'])} models"
    )
    per_kind = result.pop("per_kind")
    print(json.dumps(result, indent=1, sort_keys=True))
    big = sorted(per_kind.items(), key=lambda kv: -kv[1]["n"])
    for group, v in big:
        if v["n"] >= 10:
            print(
                f"  {group:34s} n={v['n']:4d} within ±10 %: {v['within_10pct'] * 100:5.1f} %"
                f"  unseen {v['unseen']:4d}: {v['within_10pct_unseen'] * 100:5.1f} %"
                f"  mape {v['mape']:6.1f} %"
            )
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--fresh", action="store_true", help="re-measure both halves first")
    ap.add_argument("--validate", action="store_true", help="also fit / evaluate inside training")
    ap.add_argument(
        "--types", default="float32,int8", help="types the training ops are measured in"
    )
    args = ap.parse_args()
    types = [TYPE_NAMES[t] for t in args.types.split(",") if t]
    paths = {p.stem: p for p in sorted(ZOO.glob("*.tflite"))}
    if not paths:
        print(f"no models in {ZOO}", file=sys.stderr)
        return 1
    train_models, test_models = split_models(list(paths))
    args.out.mkdir(parents=True, exist_ok=True)
    train_file, test_file = args.out / "train_records.jsonl", args.out / "test_records.jsonl"
    if args.fresh or not train_file.exists():
        measure([paths[m] for m in train_models], train_file, types)
    if args.fresh or not test_file.exists():
        measure([paths[m] for m in test_models], test_file, ())
    train, test = read_records(train_file), read_records(test_file)
    print(f"train: {train_models}")
    if args.validate:
        fit_models, val_models = split_models(train_models)
        report(
            "validation (inside the training half)",
            select(train, fit_models, variants=True),
            select(train, val_models, variants=False),
        )
    report("test half", train, test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
