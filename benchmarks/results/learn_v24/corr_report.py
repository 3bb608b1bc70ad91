"""How chain models' whole timings move with the machine, from `corr.py`'s interleaved rounds:
each model's spread, its correlation with a memory-streaming ADD (48 MB per invoke, past the
32 MB L3) and with the L3-streaming `add` reference, the medians of each sixth of the run, and
how much of the chains' movement the memory ADD would take out as a normalizer.

    python corr_report.py corr.jsonl
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main(path: str) -> None:
    rows = [json.loads(line) for line in open(path)]
    names = [k for k in rows[0] if k != "t"]
    logs = {n: np.log(np.array([r[n] for r in rows], dtype=float)) for n in names}
    for n in names:
        logs[n] -= np.median(logs[n])
    minutes = (rows[-1]["t"] - rows[0]["t"]) / 60
    print(f"{len(rows)} rounds over {minutes:.1f} min; each model 4 samples per round")
    k = len(rows) // 6
    print(f"{'model':16s} {'median us':>10s} {'p10':>6s} {'p90':>6s} {'r(mem48)':>9s} "
          f"{'r(add)':>7s}  medians of each sixth of the run")  # fmt: skip
    for n in names:
        v = np.exp(logs[n])
        sixths = " ".join(f"{np.exp(np.median(logs[n][i * k:(i + 1) * k])):.3f}" for i in range(6))
        med = float(np.median([r[n] for r in rows]))
        print(f"{n:16s} {med:10.1f} {np.percentile(v, 10):6.3f} {np.percentile(v, 90):6.3f} "
              f"{np.corrcoef(logs[n], logs['mem48'])[0, 1]:+9.2f} "
              f"{np.corrcoef(logs[n], logs['ref_add'])[0, 1]:+7.2f}  {sixths}")  # fmt: skip
    chains = [n for n in names if n.startswith("netchain")]
    mean = np.mean([logs[c] for c in chains], axis=0)
    slope = float(np.polyfit(logs["mem48"], mean, 1)[0])
    r = float(np.corrcoef(mean, logs["mem48"])[0, 1])
    print(f"chains' geometric mean against mem48: r {r:+.2f}, slope {slope:.3f} (log-log)")
    pairs = np.corrcoef([logs[c] for c in chains])
    off = pairs[~np.eye(len(chains), dtype=bool)]
    print(f"chains against each other: r {off.min():+.2f}..{off.max():+.2f}, "
          f"median {np.median(off):+.2f}")  # fmt: skip
    print("normalized by mem48^slope: spread (sd of log) and range of the sixths' medians")
    for c in chains:
        d = logs[c] - slope * logs["mem48"]
        six = [np.median(logs[c][i * k:(i + 1) * k]) for i in range(6)]
        six_d = [np.median(d[i * k:(i + 1) * k]) for i in range(6)]
        print(f"  {c:16s} sd {logs[c].std():.4f} -> {d.std():.4f}   sixths range "
              f"{np.ptp(six):.4f} -> {np.ptp(six_d):.4f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
