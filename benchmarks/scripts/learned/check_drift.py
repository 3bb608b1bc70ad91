"""Drift across runs: the same ops measured in two runs far apart, raw and speed-normalized.

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks check_drift measure DIR/a.jsonl
    # ... an hour later ...
    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks check_drift measure DIR/b.jsonl
    python -m tacopt.benchmarks check_drift compare DIR/a.jsonl DIR/b.jsonl

``measure`` times every op of every ``--every``-th shared-zoo model (sorted names; default 2)
into a fresh records file; each record carries the machine's speed beside it (``speed``: the
reference models of :mod:`tacopt.cost_models.learned.measurement.speed`, timed in every chunk). With
``--background-load`` another process streams a 64 MB array all through the run: a machine
slower in a way the gate's tiny probe cannot see (memory bandwidth), a larger drift than an
hour brings on a quiet day. ``compare`` prints, for the ops measured in both, the share whose
latencies agree within ±10 % raw and after normalization (each latency divided by a speed
index against a common anchor, the first run's median speed: ``probe`` by the gate's probe
time, ``run`` by the run's median speed, ``speed`` by the record's own running speed, as the
learned model does), by latency band, and the median speed ratio of the two runs.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tacopt.cost_models.learned.measurement.measure import measure_models
from tacopt.cost_models.learned.measurement.records import gate_summary, read_records
from tacopt.cost_models.learned.measurement.speed import normalize_records, run_speed, speed_index
from tacopt.cost_models.learned.measurement.timing import MeasureConfig

ROOT = Path(__file__).resolve().parents[3]
ZOO = ROOT.parent / "shared" / "zoo"
BANDS = ((0.0, 5.0), (5.0, 50.0), (50.0, 500.0), (500.0, float("inf")))


def _stream(stop: Any) -> None:
    """Copy a 64 MB array back and forth until ``stop`` is set: memory-bandwidth pressure from
    the other core, a slower machine that the gate's tiny probe does not see."""
    a = np.ones(8 * 1024 * 1024)
    b = np.empty_like(a)
    while not stop.is_set():
        np.copyto(b, a)
        np.copyto(a, b)


def measure(out: Path, every: int, background: bool = False) -> int:
    models = sorted(ZOO.glob("*.tflite"))[::every]
    if not models:
        print(f"no models in {ZOO}", file=sys.stderr)
        return 1
    stop = mp.Event()
    streamer = mp.Process(target=_stream, args=(stop,), daemon=True) if background else None
    if streamer is not None:
        streamer.start()
        print("background load: a 64 MB copy loop in another process", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    load0, t0 = os.getloadavg(), time.perf_counter()
    print(f"{time.strftime('%H:%M:%S')} load average before: {load0}", flush=True)
    try:
        measure_models(models, out, MeasureConfig())
    finally:
        if streamer is not None:
            stop.set()
            streamer.join()
    recs = read_records(out)
    print(
        f"{time.strftime('%H:%M:%S')} {len(models)} models in {time.perf_counter() - t0:.0f} s,"
        f" load average after {os.getloadavg()}; {gate_summary(recs)}; speed {run_speed(recs)}"
    )
    return 0


def normalized(
    r: Mapping[str, Any], anchor: Mapping[str, float], run: Mapping[str, float], how: str
) -> float:
    """``r``'s latency raw, or in ``anchor``'s units by: the gate's probe (``probe``), the
    record's own speed (``speed``, as the learned model does), the run's median speed (``run``).
    """
    if how == "raw":
        return float(r["latency_us"])
    if how == "probe":
        return float(r["latency_us"]) * anchor["probe_us"] / r["probe_us"]
    return float(r["latency_us"]) / speed_index(r["speed"] if how == "speed" else run, anchor)


def compare(a_path: Path, b_path: Path) -> int:
    runs = [read_records(a_path), read_records(b_path)]
    ops = [{r["key"]: r for r in recs if r["type"] == "op"} for recs in runs]
    speeds = [run_speed(recs) for recs in runs]
    for name, s in zip("ab", speeds, strict=True):
        print(f"run {name}: speed {s}")
    print(f"speed index b / a: {speed_index(speeds[1], speeds[0]):.3f}")
    anchor: dict[str, float] = {
        **speeds[0],
        "probe_us": statistics.median(r["probe_us"] for r in ops[0].values()),
    }
    keys = sorted(k for k in ops[0] if k in ops[1])
    # as the learned model normalizes: per kernel family, references pooled over blocks
    family = [
        {r["key"]: r for r in normalize_records(recs, speeds[0]) if r["type"] == "op"}
        for recs in runs
    ]
    for how in ("raw", "probe", "run", "speed", "family"):
        if how == "family":
            a = np.array([family[0][k]["latency_us"] for k in keys])
            b = np.array([family[1][k]["latency_us"] for k in keys])
        else:
            a = np.array([normalized(ops[0][k], anchor, speeds[0], how) for k in keys])
            b = np.array([normalized(ops[1][k], anchor, speeds[1], how) for k in keys])
        dev = np.abs(b / a - 1)
        lat = np.array([ops[0][k]["latency_us"] for k in keys])
        bands = "; ".join(
            f"[{lo:g},{hi:g}) us {np.mean(dev[(lat >= lo) & (lat < hi)] <= 0.1) * 100:.0f} %"
            f" of {int(np.sum((lat >= lo) & (lat < hi)))}"
            for lo, hi in BANDS
        )
        print(
            f"{how:6s} within ±10 %: {np.mean(dev <= 0.1) * 100:5.1f} % of {len(keys)} ops, median"
            f" ratio b/a {np.median(b / a):.3f}, median deviation {np.median(dev) * 100:.1f} %"
            f"  ({bands})"
        )
    # what a fit uses: records timed with no quiet sample are left out (records.quiet_records)
    quiet = [k for k in keys if ops[0][k].get("quiet", True) and ops[1][k].get("quiet", True)]
    if quiet:
        a = np.array([family[0][k]["latency_us"] for k in quiet])
        b = np.array([family[1][k]["latency_us"] for k in quiet])
        share = np.mean(np.abs(b / a - 1) <= 0.1) * 100
        print(
            f"family, quiet in both (what a fit uses): {share:5.1f} % of {len(quiet)} ops"
            f" ({len(keys) - len(quiet)} with no quiet sample in a or b)"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="measure the ops into a fresh records file")
    m.add_argument("out", type=Path)
    m.add_argument("--every", type=int, default=2, help="every N-th zoo model (sorted names)")
    m.add_argument(
        "--background-load",
        action="store_true",
        help="measure while another process streams memory (a persistently slower machine)",
    )
    c = sub.add_parser("compare", help="compare two runs raw and normalized")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "measure":
        return measure(args.out, args.every, args.background_load)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
