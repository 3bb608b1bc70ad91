"""Repeatability of single-op latencies: measure the same ops twice and compare.

    python -m tacopt.benchmarks check_repeatability [--every 1] [--out benchmarks/out/repeat]

Measures every op configuration of ../shared/zoo (or every N-th model with --every N) twice,
into two fresh records files (``a.jsonl``, ``b.jsonl`` under --out), with the default
:class:`tacopt.cost_models.learned.measurement.measure.MeasureConfig`, and prints for each recorded
statistic (``latency_us``: lowest quiet sample per instance, median over instances; median quiet
sample; the same on the wall clock) the share of ops whose two measurements agree within ±10 %
and the median |b/a - 1|, overall and by latency band, plus the same for whole-model latencies.
The ``latency_us`` line is the ceiling for a learned model's ``within_10pct`` on a fresh
measurement. Each run's line says how many samples the gate rejected (the machine was slow) and
the invoke overhead it read at the start and the end.

    python -m tacopt.benchmarks check_repeatability --retype

checks the synthetic quantization of ``tacopt measure --types`` instead: every int8 op of the
training half's int8 models (split of benchmarks/scripts/learned/bench_learned.py) timed as it is
and rebuilt (dequantized, then quantized by
:func:`tacopt.cost_models.learned.measurement.measure.retype_op`), interleaved; prints the share
within ±10 % per kind.

    python -m tacopt.benchmarks check_repeatability --episodes 60

shows why op timing is gated (docs/cost-models.md, "How an op is timed"): for 60 s, one sample
after another of 300+ single ops, each bracketed by probe reads; prints, per latency band, how
much slower than the op's fastest sample its samples are in quiet times and in slow episodes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from tacopt.cost_models.learned.measurement.measure import measure_models
from tacopt.cost_models.learned.measurement.records import gate_summary, read_records
from tacopt.cost_models.learned.measurement.retype import RetypeError, retype_op
from tacopt.cost_models.learned.measurement.singleop import (
    cut_op,
    fill_constants,
    model_ops,
    op_features,
    op_key,
)
from tacopt.cost_models.learned.measurement.timing import Gate, MeasureConfig, Timer, time_models
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.writer import serialize_tflite

ROOT = Path(__file__).resolve().parents[3]
ZOO = ROOT.parent / "shared" / "zoo"
STATS = ("latency_us", "latency_median_us", "wall_us", "wall_median_us")
BANDS = ((0.0, 5.0), (5.0, 50.0), (50.0, 500.0), (500.0, float("inf")))


def agreement(a: dict[str, dict], b: dict[str, dict], stat: str) -> tuple[int, float, float]:
    """(n, share within ±10 %, median |b/a - 1|) over keys in both."""
    ratios = np.array(
        [b[k][stat] / a[k][stat] for k in sorted(a) if k in b and a[k].get(stat) and b[k].get(stat)]
    )
    dev = np.abs(ratios - 1)
    return len(dev), float(np.mean(dev <= 0.1)), float(np.median(dev))


def check_retype() -> int:
    train = sorted(p.stem for p in ZOO.glob("*.tflite"))[0::2]  # bench_learned.py's split
    pairs: list[bytes] = []
    labels: list[str] = []
    seen: set[str] = set()
    for name in (m for m in train if "int8" in m):
        G = read_tflite(ZOO / f"{name}.tflite")
        for S, node, _ in model_ops(G):
            feats = op_features(S, node, root=G)
            if feats["inference_type"] != "QUANTIZED_INT8" or op_key(feats) in seen:
                continue
            seen.add(op_key(feats))
            real = fill_constants(cut_op(S, node), seed=0)
            try:
                synthetic = retype_op(retype_op(real, "FLOAT"), "QUANTIZED_INT8")
            except RetypeError:
                continue
            pairs += [serialize_tflite(real), serialize_tflite(synthetic)]
            labels.append(feats["kind"])
    print(f"load average before: {os.getloadavg()}")
    timings = time_models(pairs, MeasureConfig())
    by_kind: dict[str, list[float]] = {}
    for i, kind in enumerate(labels):
        a, b = timings[2 * i], timings[2 * i + 1]
        if isinstance(a, Exception) or isinstance(b, Exception):
            print(f"{kind}: {a if isinstance(a, Exception) else b}")
            continue
        by_kind.setdefault(kind, []).append(b.cpu_us / a.cpu_us)
    dev = np.abs(np.concatenate([np.array(v) for v in by_kind.values()]) - 1)
    print(
        f"synthetic / real int8 latency within ±10 %: {np.mean(dev <= 0.1) * 100:.1f} % of "
        f"{len(dev)} configurations (median |ratio - 1| {np.median(dev) * 100:.1f} %)"
    )
    for kind, ratios in sorted(by_kind.items()):
        r = np.array(ratios)
        print(
            f"  {kind:24s} {len(r):3d}  within ±10 %: {np.mean(np.abs(r - 1) <= 0.1) * 100:5.1f} %"
            f"  median ratio {np.median(r):.3f}"
        )
    return 0


def check_episodes(seconds: float) -> int:
    """Alternate probe reads and one sample of one of 300+ single ops (every 7th op of the first
    12 zoo models) for ``seconds``; print how much slower ops run when the probe shows a slow
    episode, by latency band, and the share of time in slow episodes."""
    cfg = MeasureConfig()
    singles = []
    for path in sorted(ZOO.glob("*.tflite"))[:12]:
        G = read_tflite(path)
        for S, node, _ in model_ops(G):
            try:
                singles.append(serialize_tflite(fill_constants(cut_op(S, node), seed=0)))
            except Exception:  # ops that cannot be written alone
                continue
    timers = []
    for m in singles[::7]:
        try:
            timers.append(Timer(m, None, cfg, seed=0, samples=1))
        except Exception:  # ops the runtime refuses alone
            continue
    gate = Gate(cfg)
    print(f"load average before: {os.getloadavg()}; {len(timers)} ops for {seconds:g} s")
    rows = []  # (op index, sample us, slower probe read around it)
    t0, k = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        t = timers[k % len(timers)]
        t.sample(1, gate)
        rows.append((k % len(timers), t.cpu[-1], t.probes[-1]))
        k += 1
    ref = gate.reference()
    op = np.array([r[0] for r in rows])
    us = np.array([r[1] for r in rows])
    slow = np.array([r[2] for r in rows]) > cfg.gate * ref
    best = np.array([us[op == i].min() for i in range(len(timers))])
    ratio = us / best[op]
    print(
        f"probe reference {ref:.3f} us; {np.mean(slow) * 100:.0f} % of {len(rows)} samples in"
        f" slow episodes; load average after: {os.getloadavg()}"
    )
    for lo, hi in ((0.0, 1.0), (1.0, 5.0), (5.0, 50.0), (50.0, 500.0), (500.0, float("inf"))):
        band = (best[op] >= lo) & (best[op] < hi)
        fast, sl = ratio[band & ~slow], ratio[band & slow]
        print(
            f"  ops [{lo:g},{hi:g}) us: sample / op's fastest, median: quiet x"
            f"{np.median(fast) if fast.size else float('nan'):.2f}, slow episode x"
            f"{np.median(sl) if sl.size else float('nan'):.2f}"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=1, help="use every N-th model (sorted names)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "repeat")
    ap.add_argument(
        "--models", type=Path, help="a folder of .tflite models to measure instead of the zoo"
    )
    ap.add_argument("--per-kind", action="store_true", help="latency_us agreement per op kind")
    ap.add_argument("--retype", action="store_true", help="check the synthetic int8 instead")
    ap.add_argument(
        "--episodes", type=float, metavar="S", help="study the machine's slow episodes for S s"
    )
    args = ap.parse_args()
    if args.retype:
        return check_retype()
    if args.episodes:
        return check_episodes(args.episodes)
    folder = args.models or ZOO
    models = sorted(folder.glob("*.tflite"))[:: args.every]
    if not models:
        print(f"no models in {folder}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}")
    runs = []
    for name in ("a", "b"):
        path = args.out / f"{name}.jsonl"
        path.unlink(missing_ok=True)
        t0 = time.perf_counter()
        measure_models(models, path, MeasureConfig())
        runs.append(read_records(path))
        print(
            f"run {name}: {len(models)} models in {time.perf_counter() - t0:.0f} s, load average"
            f" {os.getloadavg()}; {gate_summary(runs[-1])}"
        )
    print(f"load average after: {os.getloadavg()}")
    ops = [{r["key"]: r for r in recs if r["type"] == "op"} for recs in runs]
    whole = [{r["model"]: r for r in recs if r["type"] == "model"} for recs in runs]
    for stat in STATS:
        n, share, dev = agreement(ops[0], ops[1], stat)
        bands = []
        for lo, hi in BANDS:
            sub = {k: r for k, r in ops[0].items() if lo <= r["latency_us"] < hi}
            bn, bshare, _ = agreement(sub, ops[1], stat)
            bands.append(f"[{lo:g},{hi:g}) us: {bshare * 100:.0f} % of {bn}")
        print(
            f"ops    {stat:18s} within ±10 %: {share * 100:5.1f} % of {n}, "
            f"median deviation {dev * 100:.2f} %   ({'; '.join(bands)})"
        )
    if args.per_kind:
        for kind in sorted({r["kind"] for r in ops[0].values()}):
            sub = {k: r for k, r in ops[0].items() if r["kind"] == kind}
            n, share, dev = agreement(sub, ops[1], "latency_us")
            lat = statistics.median(r["latency_us"] for r in sub.values())
            print(
                f"  {kind:28s} n={n:<4d} within ±10 %: {share * 100:5.1f} %, median deviation"
                f" {dev * 100:5.2f} %, median latency {lat:.1f} us"
            )
    for stat in STATS:
        n, share, dev = agreement(whole[0], whole[1], stat)
        print(
            f"models {stat:18s} within ±10 %: {share * 100:5.1f} % of {n}, "
            f"median deviation {dev * 100:.2f} %"
        )
    ratio = [
        sum(
            c * (ops[0][k]["latency_us"] - ops[0][k]["overhead_us"])
            for k, c in m["ops"]
            if k in ops[0]
        )
        / m["latency_us"]
        for m in whole[0].values()
        if m.get("latency_us")
    ]
    print(
        f"median over models of sum(net op latency) / model latency: {statistics.median(ratio):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
