"""``tacopt measure`` and ``tacopt fit``: measure op latencies, fit and evaluate a learned model."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class MeasureArgs:
    models: tuple[Path, ...]
    out: Path
    repeats: int
    warmup: int
    threads: int
    quiet: bool
    types: tuple[str, ...]


def register_measure(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "measure",
        help="time every op of .tflite models alone on the ai-edge-litert interpreter",
        description="Cut each op into a single-op model with random weights, time it (thread CPU "
        "time of >= 2 ms batches of invokes, only those taken while a probe shows the machine "
        "quiet; lowest per interpreter instance, median over 3 instances), optionally also "
        "rebuilt in other inference "
        "types (--types), time the whole model, append one JSON record per op configuration to "
        "--out (resumable).",
    )
    p.add_argument("models", nargs="+", type=Path, metavar="MODEL")
    p.add_argument("--out", type=Path, required=True, help="records file (JSON lines)")
    p.add_argument(
        "--repeats",
        type=int,
        default=9,
        help="timed samples per op, each a >= 2 ms batch of invokes, over 3 interpreter instances;"
        " the lowest quiet one of each instance, median over instances, counts (default 9)",
    )
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    p.add_argument("--threads", type=int, default=1, help="interpreter threads (default 1)")
    p.add_argument(
        "--types",
        default="",
        help="also measure each op rebuilt in these inference types, comma-separated: float32, "
        "int8 (int8 = full-integer quantization, float32 = dequantized); default: as-is only",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run_measure)


def run_measure(args: argparse.Namespace) -> int:
    from tacopt.cost_models.measure import measure_models
    from tacopt.cost_models.records import MeasureError
    from tacopt.cost_models.retype import TYPE_NAMES
    from tacopt.cost_models.timing import MeasureConfig

    names = tuple(t.strip() for t in args.types.split(",") if t.strip())
    for name in names:
        if name not in TYPE_NAMES:
            raise MeasureError(f"--types: unknown type '{name}' (known: {', '.join(TYPE_NAMES)})")
    opts = MeasureArgs(
        tuple(args.models), args.out, args.repeats, args.warmup, args.threads, args.quiet, names
    )
    for m in opts.models:
        if not m.is_file():
            raise MeasureError(f"model '{m}' does not exist")
    samples = max(opts.repeats, 1)
    cfg = MeasureConfig(
        threads=opts.threads, warmup=opts.warmup, samples=samples, min_samples=min(3, samples)
    )
    bar = None
    if not opts.quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=0, unit="op", file=sys.stderr)

    def progress(done: int, total: int, label: str) -> None:
        if bar is not None:
            bar.total = total
            bar.set_postfix_str(label[-40:], refresh=False)
            bar.update(1)

    try:
        types = [TYPE_NAMES[t] for t in opts.types]
        stats = measure_models(opts.models, opts.out, cfg, types=types, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    print(json.dumps(stats))
    return 0


def register_fit(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "fit",
        help="fit a learned latency model on measured records (JSON, loadable as a cost model)",
    )
    p.add_argument("records", type=Path, help="records from `tacopt measure`")
    p.add_argument("-o", "--out", type=Path, required=True, help="model file (.json)")
    p.add_argument("--eval", type=Path, help="held-out records to evaluate on")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    p.set_defaults(run=run_fit)


def run_fit(args: argparse.Namespace) -> int:
    from tacopt.cost_models.accuracy import evaluate
    from tacopt.cost_models.learned import LearnedCostModel, fit
    from tacopt.cost_models.records import read_records
    from tacopt.fusion.io import atomic_write

    train = read_records(args.records)
    doc = fit(train)
    atomic_write(args.out, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if args.eval is None:
        if not args.json:
            print(
                f"wrote {args.out}: {doc['trained_on']['configs']} configurations, "
                f"{len(doc['fits'])} fits"
            )
        return 0
    train_keys = {r["key"] for r in train if r.get("type") == "op"}
    result = evaluate(LearnedCostModel(doc), read_records(args.eval), train_keys=train_keys)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"ops {result['ops']}, models {result['models']}")
        print(
            f"within ±10 %: {result['within_10pct'] * 100:.1f} % "
            f"(net of invoke overhead: {result['within_10pct_net'] * 100:.1f} %; "
            f"configurations not in training: {result['within_10pct_unseen'] * 100:.1f} %)"
        )
        print(
            f"MAPE {result['mape']:.1f} %, Spearman {result['spearman']:.3f}, "
            f"median whole-model error {result['model_error_median']:.1f} %"
        )
    return 0
